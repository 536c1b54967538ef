//! Pagination of list methods (DIGEST §6.6).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An opaque position in a paginated list (PAGE-C1). Clients never parse or
/// change it; any present value, `""` included, means "more results".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursor(pub String);

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for Cursor {
    fn from(s: String) -> Self {
        Cursor(s)
    }
}

impl From<&str> for Cursor {
    fn from(s: &str) -> Self {
        Cursor(s.to_owned())
    }
}

/// Params of `tools/list`, `prompts/list`, `resources/list` and
/// `resources/templates/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// Where to continue: the `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}
