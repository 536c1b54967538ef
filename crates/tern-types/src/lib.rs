//! The wire data of MCP revision 2026-07-28, as serde types.
//!
//! One module per page of the specification. The types are plain data: no
//! I/O, no validation beyond what serde's shape checks give, no clock. Rules
//! (which method may return what, which `_meta` keys are required) live in
//! `tern-proto`.
//!
//! Results are told apart by `resultType` explicitly (DIGEST BASE-A3): see
//! [`ResultType`] and [`Outcome`]. An absent `resultType` reads as complete
//! (BASE-C13); an unknown one is an error, never swallowed.

mod capabilities;
mod error;
mod jsonrpc;
mod meta;
mod result;

pub use capabilities::{
    ClientCapabilities, ElicitationCapability, PromptsCapability, ResourcesCapability,
    RootsCapability, SamplingCapability, ServerCapabilities, ToolsCapability,
};
pub use error::{ErrorCode, ErrorObject};
pub use jsonrpc::{
    ErrorResponse, JsonRpcVersion, Notification, Request, RequestId, ResultResponse,
};
pub use meta::{Icon, Implementation, meta_keys};
pub use result::{CacheScope, ResultType};

/// The protocol revision these types describe.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
