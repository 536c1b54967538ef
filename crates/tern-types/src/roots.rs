//! Roots (DIGEST §5.3). **Deprecated** in this revision: pass paths through
//! tool arguments, resource URIs or configuration instead (MIG-27).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A root directory the client exposes. Part of the deprecated roots
/// feature.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI (ROOT-1).
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of a `roots/list` input request (deprecated). The params object
/// itself is optional; see `InputRequest::ListRoots`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsRequestParams {
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The answer to a `roots/list` input request (deprecated). Not a `Result`:
/// it has no `resultType` and travels only in `inputResponses`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots the user permits the server to see (ROOT-C2).
    pub roots: Vec<Root>,
}
