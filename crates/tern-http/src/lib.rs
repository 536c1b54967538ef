//! Streamable HTTP for Tern (DIGEST §7.3).
//!
//! With the `server` feature it serves a `tern-server` [`Server`](tern_server::Server)
//! on hyper/axum: POST only, JSON or SSE responses (SSE exactly when the
//! handler sends notifications before its result and the client accepts
//! it), header validation against the body, `Origin` checks and an
//! authentication hook. With `client` it is a client transport that sends
//! the mirrored headers and decides on the JSON-RPC body.

#[cfg(feature = "server")]
mod auth;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use client::{HttpClientOptions, HttpTransport};

#[cfg(feature = "server")]
pub use auth::{AnyOf, JwtAuthenticator, JwtKeys, TokenFile};
#[cfg(feature = "server")]
pub use server::{Anonymous, Authenticate, HttpOptions, Refusal, router, serve, spawn};
