//! Newline-delimited JSON over stdin/stdout (DIGEST STDIO-*).
//!
//! With the `server` feature it serves a `tern-server` router on the process's
//! own stdio; with `client` it spawns a server as a child process and speaks to
//! it through its pipes. Logs go to stderr only (STDIO-S3).

#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
pub use server::{StdioOptions, serve, serve_io};

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
pub use client::{StdioClientOptions, StdioTransport};
