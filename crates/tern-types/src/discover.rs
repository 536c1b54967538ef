//! `server/discover` (DIGEST §3.2).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::ServerCapabilities;
use crate::result::{CacheScope, ResultType, de_ttl_ms};

/// Params of a request that carries nothing but `_meta`, such as
/// `server/discover` (`RequestParams` in the schema).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
}

/// The result of `server/discover`. Never interim (MRTR-S2); cacheable
/// (CACHE-S1). Unknown members, such as the top-level `serverInfo` some
/// older mocks send, are ignored (DISC-1); identity lives in
/// `_meta["io.modelcontextprotocol/serverInfo"]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// Every protocol version the server serves.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Guidance for the model, e.g. for a system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Freshness in milliseconds. Always written; missing or negative reads
    /// as 0 (CACHE-C5).
    #[serde(default, deserialize_with = "de_ttl_ms")]
    pub ttl_ms: u64,
    /// Who may reuse the result. Always written; missing reads as private
    /// (A18).
    #[serde(default)]
    pub cache_scope: CacheScope,
    /// Result metadata, with the server's identity (MIG-2).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}
