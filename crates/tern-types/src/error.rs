//! JSON-RPC error objects and the codes MCP uses (DIGEST §1.3).

use std::fmt;
use std::time::Duration;

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

    /// The upstream a relay passes a request on to answered with an error
    /// the relay cannot pass back as it is (a reserved code, or one of the
    /// relay's own), or with something that is not a valid response.
    pub const UPSTREAM_FAILED: ErrorCode = ErrorCode(-31000);
    /// The person declined or cancelled what a tool, prompt or resource
    /// asked for (the reference workload of `tern serve`, the conformance
    /// fixtures).
    pub const DECLINED: ErrorCode = ErrorCode(-31001);
    /// The upstream a relay passes a request on to cannot be reached: it is
    /// down, its process exited, or it did not answer in time.
    pub const UPSTREAM_UNAVAILABLE: ErrorCode = ErrorCode(-31002);
    /// A limit was reached and the request was refused before it ran:
    /// retry later. `data.limit` names the limit and `data.retryAfterMs`
    /// says when to try again, where that is known ([`BusyData`]). A
    /// server's load and budgets (requests running, sessions, bodies being
    /// received, tasks) and a relay's (pending calls, held rounds) all
    /// answer this one code, so a client over any transport reads "busy,
    /// retry later" where `-32600` had said "malformed, do not retry".
    pub const BUSY: ErrorCode = ErrorCode(-31003);
    /// Something the request waited for did not come in time: the client's
    /// answer to the server's question, a task's in-task answers, the
    /// request's own body. `data.limit` names the deadline. Not `-32600`,
    /// which says the request was malformed.
    pub const TIMEOUT: ErrorCode = ErrorCode(-31004);
    /// The operation needs an authenticated caller and the request had
    /// none (`tern_server::Authenticated`).
    pub const AUTHENTICATION_REQUIRED: ErrorCode = ErrorCode(-31401);

    /// The registry of every application code Tern emits: one number, one
    /// name, one meaning. Codes outside it come from the application (or
    /// from a relayed upstream, passed through).
    pub const APPLICATION: &'static [ApplicationCode] = &[
        ApplicationCode {
            code: ErrorCode::UPSTREAM_FAILED,
            name: "upstream_failed",
            meaning: "the upstream a relay passed the request on to answered with an error the relay cannot pass back, or with an invalid response",
        },
        ApplicationCode {
            code: ErrorCode::DECLINED,
            name: "declined",
            meaning: "the person declined or cancelled the input a reference-workload or conformance-fixture route asked for",
        },
        ApplicationCode {
            code: ErrorCode::UPSTREAM_UNAVAILABLE,
            name: "upstream_unavailable",
            meaning: "the upstream a relay passes the request on to cannot be reached, exited, or did not answer in time",
        },
        ApplicationCode {
            code: ErrorCode::BUSY,
            name: "busy",
            meaning: "a limit was reached and the request was not run: retry later; data.limit names the limit, data.retryAfterMs says when where known",
        },
        ApplicationCode {
            code: ErrorCode::TIMEOUT,
            name: "timeout",
            meaning: "what the request waited for (the client's answer, in-task answers, its body) did not arrive in time; data.limit names the deadline",
        },
        ApplicationCode {
            code: ErrorCode::AUTHENTICATION_REQUIRED,
            name: "authentication_required",
            meaning: "the route needs an authenticated caller",
        },
    ];

    /// Whether a relay (a proxy) emits this code itself: an upstream's
    /// error with such a code could be mistaken for the relay's and is not
    /// passed through as it is.
    pub fn is_proxy_own(self) -> bool {
        matches!(
            self,
            ErrorCode::UPSTREAM_FAILED | ErrorCode::UPSTREAM_UNAVAILABLE | ErrorCode::BUSY
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

/// The `data` of a `-31003` busy refusal ([`ErrorCode::BUSY`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BusyData {
    /// The limit reached: a short stable snake_case name, the one
    /// `tern_limit_reached_total{limit}` counts (`requests_per_principal`,
    /// `sessions`, `body_bytes`, `proxy_pending`, ...).
    pub limit: String,
    /// How long to wait before trying again, in milliseconds, when the
    /// server knows; absent, the client picks its own backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl BusyData {
    /// [`retry_after_ms`](Self::retry_after_ms) as a duration.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(Duration::from_millis)
    }
}

/// The `data` of a `-31004` timeout ([`ErrorCode::TIMEOUT`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeoutData {
    /// The deadline passed, by a short stable snake_case name
    /// (`client_answer`, `task_input_wait`, `body_timeout`).
    pub limit: String,
}

impl ErrorObject {
    /// A `-31003` busy refusal: `limit` names the limit reached, and
    /// `retry_after`, when known, says when to try again (sent in whole
    /// milliseconds, rounded up so a client never comes back early).
    pub fn busy(
        limit: impl Into<String>,
        message: impl Into<String>,
        retry_after: Option<Duration>,
    ) -> Self {
        let data = BusyData {
            limit: limit.into(),
            retry_after_ms: retry_after.map(|d| {
                let ms = d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 != 0);
                u64::try_from(ms).unwrap_or(u64::MAX)
            }),
        };
        // Cannot fail: a string and an integer.
        let data = serde_json::to_value(data).expect("busy data serialises to JSON");
        ErrorObject::new(ErrorCode::BUSY, message).with_data(data)
    }

    /// A `-31004` timeout: `limit` names the deadline that passed.
    pub fn timeout(limit: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorObject::new(ErrorCode::TIMEOUT, message)
            .with_data(serde_json::json!({ "limit": limit.into() }))
    }

    /// `data` of a busy refusal: `Some` only for `-31003` whose `data`
    /// names the limit. A `-31003` without it is not one of Tern's
    /// refusals, and nothing says the request did not run.
    pub fn busy_data(&self) -> Option<BusyData> {
        if self.code != ErrorCode::BUSY {
            return None;
        }
        self.data
            .as_ref()
            .and_then(|d| BusyData::deserialize(d).ok())
    }

    /// `data` of a `-31004` timeout, when it names the deadline.
    pub fn timeout_data(&self) -> Option<TimeoutData> {
        if self.code != ErrorCode::TIMEOUT {
            return None;
        }
        self.data
            .as_ref()
            .and_then(|d| TimeoutData::deserialize(d).ok())
    }
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
