//! JSON-RPC error objects and the codes MCP uses (DIGEST §1.3).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code. The constants are the only codes Tern emits from the
/// reserved ranges (ERR-2); application codes must lie outside
/// `-32768..=-32000` (ERR-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// The body is not valid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// Not a valid JSON-RPC request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// Unknown or unadvertised method.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid parameters: missing `_meta` keys, unknown tool or prompt,
    /// resource not found, a state that does not verify, and more.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// An unexpected failure on the server.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// Mirrored HTTP headers missing, malformed or different from the body.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// The request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// The requested protocol version is not served.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// Legacy "resource not found". Never emitted (ERR-3); clients accept it
    /// from older servers (ERR-C4).
    pub const LEGACY_RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

    /// Whether the code lies in the range JSON-RPC and MCP reserve
    /// (`-32768..=-32000`), which applications must not use (ERR-5).
    pub fn is_reserved(self) -> bool {
        (-32768..=-32000).contains(&self.0)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of an error response: plain data, received or sent.
/// Local failures are not `ErrorObject`s (ERR-6, ERR-A1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// One short sentence (BASE-8).
    pub message: String,
    /// Structured detail, defined per code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` set.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}
