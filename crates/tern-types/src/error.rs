//! JSON-RPC error objects and the codes MCP uses (DIGEST §1.3).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;

/// A JSON-RPC error code. The constants of the reserved range are the only
/// codes Tern emits from it (ERR-2); Tern's application codes lie outside
/// `-32768..=-32000` (ERR-5) and are listed, each with one meaning, in
/// [`ErrorCode::APPLICATION`].
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

    /// The proxy's upstream answered with an error the proxy cannot pass on
    /// as it is (a reserved code, or one of the proxy's own), or with
    /// something that is not a valid response.
    pub const UPSTREAM_FAILED: ErrorCode = ErrorCode(-31000);
    /// The person declined or cancelled what a tool, prompt or resource
    /// asked for (the reference workload of `tern serve`, the conformance
    /// fixtures).
    pub const DECLINED: ErrorCode = ErrorCode(-31001);
    /// The proxy's upstream cannot be reached: it is down, its process
    /// exited, or it did not answer in time.
    pub const UPSTREAM_UNAVAILABLE: ErrorCode = ErrorCode(-31002);
    /// The proxy holds as much for this caller (or for all callers) as its
    /// budget allows: pending calls, or the bytes of one held round.
    pub const PROXY_LIMIT: ErrorCode = ErrorCode(-31003);
    /// The operation needs an authenticated caller and the request had
    /// none (`tern_server::Authenticated`).
    pub const AUTHENTICATION_REQUIRED: ErrorCode = ErrorCode(-31401);

    /// The registry of every application code Tern emits: one number, one
    /// name, one meaning. Codes outside it come from the application (or
    /// from a proxied upstream, passed through).
    pub const APPLICATION: &'static [ApplicationCode] = &[
        ApplicationCode {
            code: ErrorCode::UPSTREAM_FAILED,
            name: "upstream_failed",
            meaning: "a proxied upstream answered with an error the proxy cannot pass on, or with an invalid response",
        },
        ApplicationCode {
            code: ErrorCode::DECLINED,
            name: "declined",
            meaning: "the person declined or cancelled the input a reference-workload or conformance-fixture route asked for",
        },
        ApplicationCode {
            code: ErrorCode::UPSTREAM_UNAVAILABLE,
            name: "upstream_unavailable",
            meaning: "a proxied upstream cannot be reached, exited, or did not answer in time",
        },
        ApplicationCode {
            code: ErrorCode::PROXY_LIMIT,
            name: "proxy_limit",
            meaning: "the proxy's budget is reached: pending calls per principal or in total, or the bytes of one held round",
        },
        ApplicationCode {
            code: ErrorCode::AUTHENTICATION_REQUIRED,
            name: "authentication_required",
            meaning: "the route needs an authenticated caller",
        },
    ];

    /// Whether a proxy emits this code itself: an upstream's error with
    /// such a code could be mistaken for the proxy's and is not passed
    /// through as it is.
    pub fn is_proxy_own(self) -> bool {
        matches!(
            self,
            ErrorCode::UPSTREAM_FAILED | ErrorCode::UPSTREAM_UNAVAILABLE | ErrorCode::PROXY_LIMIT
        )
    }

    /// Whether the code lies in the range JSON-RPC and MCP reserve
    /// (`-32768..=-32000`), which applications must not use (ERR-5).
    pub fn is_reserved(self) -> bool {
        (-32768..=-32000).contains(&self.0)
    }
}

/// One entry of [`ErrorCode::APPLICATION`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplicationCode {
    /// The code, outside the reserved range (ERR-5).
    pub code: ErrorCode,
    /// A short stable name, for logs and documentation.
    pub name: &'static str,
    /// What the code means, in one sentence.
    pub meaning: &'static str,
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

/// The `data` of a `-32022` error (VER-S2): the versions the server serves
/// and the one it was asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionData {
    /// Every version the server serves.
    pub supported: Vec<String>,
    /// The version string the request named, as received.
    pub requested: String,
}

/// The `data` of a `-32021` error (META-S10): the missing capabilities, in
/// `ClientCapabilities` shape (an object of objects, never a list of names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// What the client would have to declare.
    pub required_capabilities: ClientCapabilities,
}

impl ErrorObject {
    /// A `-32022` error naming the supported versions and the requested one.
    pub fn unsupported_protocol_version(
        supported: Vec<String>,
        requested: impl Into<String>,
    ) -> Self {
        let data = UnsupportedProtocolVersionData {
            supported,
            requested: requested.into(),
        };
        // Cannot fail: the data is strings only.
        let data = serde_json::to_value(data).expect("version data serialises to JSON");
        ErrorObject::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(data)
    }

    /// A `-32021` error naming the capabilities the request lacks.
    pub fn missing_required_client_capability(
        message: impl Into<String>,
        required: ClientCapabilities,
    ) -> Self {
        // Cannot fail: ClientCapabilities has string keys only.
        let required = serde_json::to_value(required).expect("capabilities serialise to JSON");
        ErrorObject::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
            .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// A `-32020` error (HTTP header mismatch, HTTP status 400).
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        ErrorObject::new(ErrorCode::HEADER_MISMATCH, message)
    }

    /// `data` parsed as the `-32022` shape, when it has it.
    pub fn unsupported_protocol_version_data(&self) -> Option<UnsupportedProtocolVersionData> {
        self.data
            .as_ref()
            .and_then(|d| UnsupportedProtocolVersionData::deserialize(d).ok())
    }

    /// `data` parsed as the `-32021` shape, when it has it.
    pub fn missing_required_client_capability_data(
        &self,
    ) -> Option<MissingRequiredClientCapabilityData> {
        self.data
            .as_ref()
            .and_then(|d| MissingRequiredClientCapabilityData::deserialize(d).ok())
    }
}
