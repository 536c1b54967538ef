//! Tern: an implementation of the Model Context Protocol, revision 2026-07-28,
//! built around multi round-trip requests.
//!
//! This facade re-exports the paved path. Features: `server`, `client`,
//! `stdio`, `http`.

pub use tern_proto as proto;
pub use tern_seal as seal;
pub use tern_types as types;

#[cfg(feature = "client")]
pub use tern_client as client;
#[cfg(feature = "http")]
pub use tern_http as http;
#[cfg(feature = "server")]
pub use tern_server as server;
#[cfg(feature = "stdio")]
pub use tern_stdio as stdio;
