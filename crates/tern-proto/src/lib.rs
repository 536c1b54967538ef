//! The sans-IO rules of MCP 2026-07-28 shared by Tern's server, client and
//! transports.
//!
//! Nothing here reads a socket, a clock or a random number generator:
//! functions take bytes and return decisions. Transports move the bytes;
//! `tern-server` and `tern-client` act on the decisions.
//!
//! - [`decode`]: one message from bytes, once, with size, depth and duplicate-key
//!   limits.
//! - [`accept`]: the server's checks of a request's envelope, in the order of
//!   DIGEST HTTP-A5.
//! - [`finish`]: `resultType` stamping, the MRTR method gate, encoding.
//! - [`McpError`]: the one mapping from failures to JSON-RPC codes and HTTP
//!   statuses.
//! - [`headers`]: `Mcp-Name`/`Mcp-Param-*` value encoding.
//! - [`era`]: which era a message belongs to (COMPAT-S1).
//! - [`sse`]: Server-Sent Events framing, the server's encoder and the
//!   client's decoder (HTTP-A3).

pub mod accept;
pub mod decode;
pub mod era;
pub mod finish;
pub mod headers;
pub mod sse;

mod contract;
mod error;

pub use contract::{Inbound, McpHeaders, Principal};
pub use error::McpError;

/// The protocol versions this implementation serves.
pub const SUPPORTED_VERSIONS: &[&str] = &[tern_types::PROTOCOL_VERSION];
