//! The one mapping from protocol failures to JSON-RPC errors and HTTP
//! statuses (DIGEST §1.3, HTTP status code summary).
//!
//! Every rejection Tern sends goes through [`McpError`], so the code, the
//! message and the status cannot drift apart between transports.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{Value, json};
use tern_types::{ClientCapabilities, ErrorCode, ErrorObject};

/// A failure that is answered on the wire.
///
/// Families follow rustls: the peer misbehaved (malformed input, bad
/// headers, bad state), the peer is incompatible (version, capability), or
/// the request cannot be served (unknown method, application errors).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The body is not JSON: malformed, trailing garbage, invalid UTF-8
    /// (-32700, HTTP 400).
    #[error("Parse error: {0}")]
    Parse(String),
    /// Valid JSON but not a single JSON-RPC request or notification
    /// (-32600, HTTP 400; BASE-A2).
    #[error("Invalid request: {0}")]
    InvalidRequest(String),
    /// A required `_meta` key is missing or has the wrong type (-32602,
    /// HTTP 400; META-S7).
    #[error("Invalid params: {message}")]
    MissingMeta {
        /// What is missing or malformed.
        message: String,
        /// The versions served; set when answering `initialize`, so legacy
        /// clients learn why (COMPAT-S2).
        supported: Option<Vec<String>>,
    },
    /// Mirrored HTTP headers missing, malformed or different from the body
    /// (-32020, HTTP 400; HTTP-S11).
    #[error("Header mismatch: {message}")]
    HeaderMismatch {
        /// What did not match.
        message: String,
        /// The versions served, when the failure involves the version
        /// (DIGEST §1.3).
        supported: Option<Vec<String>>,
    },
    /// The requested protocol version is not served (-32022, HTTP 400;
    /// VER-S2).
    #[error("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        /// The version the request named.
        requested: String,
        /// Every version the server serves.
        supported: Vec<String>,
    },
    /// Unknown or unadvertised method (-32601, HTTP 404; HTTP-S13).
    #[error("Method not found: {method}")]
    MethodNotFound {
        /// The method the request named.
        method: String,
        /// The versions served; set when answering `initialize`, so legacy
        /// clients learn why (COMPAT-S2).
        supported: Option<Vec<String>>,
    },
    /// The request needs client capabilities it did not declare (-32021,
    /// HTTP 400; META-S10, MRTR-S9).
    #[error("Missing required client capability")]
    MissingCapability {
        /// What is missing, in `ClientCapabilities` shape.
        required: Box<ClientCapabilities>,
        /// A sentence naming what is needed.
        message: String,
    },
    /// Invalid parameters that are not a `_meta` problem: unknown tool or
    /// prompt, resource not found, malformed `inputResponses` (-32602,
    /// HTTP 200 per HTTP-A4).
    #[error("{message}")]
    InvalidParams {
        /// One short sentence.
        message: String,
        /// Structured detail (e.g. `{"uri": …}` for a missing resource).
        data: Option<Value>,
    },
    /// A `requestState` failed verification. One uniform answer whatever
    /// the reason (MRTR-E-A1, SECURITY.md §3.5); the reason goes to logs.
    #[error("invalid or expired requestState")]
    InvalidState,
    /// The handler asked for one round more than the ceiling allows
    /// (SECURITY.md §3.5).
    #[error("too many input rounds")]
    TooManyRounds,
    /// The body exceeds the configured size (HTTP 413; -32600 on stdio).
    #[error("Request body too large")]
    PayloadTooLarge,
    /// An unexpected server failure (-32603). The text is for the log: the
    /// peer sees only "Internal error" (SECURITY.md §3.5), and the server
    /// turns it into [`McpError::InternalLogged`] once it has logged it.
    #[error("{0}")]
    Internal(String),
    /// An unexpected server failure already logged under `correlation_id`
    /// (-32603). The peer gets the id in `data.correlationId`, so an
    /// operator can find the log line; nothing else.
    #[error("Internal error")]
    InternalLogged {
        /// Names the log line; random, short, carries no detail.
        correlation_id: String,
    },
    /// A store needed for a single-use effect is unavailable: fail closed,
    /// nothing consumed (-32603; SECURITY.md §3.9).
    #[error("temporarily unable to complete")]
    Unavailable,
    /// 2025-11-25 sessions only: the request needs these URL-mode
    /// elicitations finished first, and the client retries it then
    /// (-32042, HTTP 200). Never sent on the modern path, where the code
    /// has no meaning (ERR-3): there URL elicitation is an input request.
    #[error("This request requires more information.")]
    UrlElicitationRequired {
        /// Each elicitation: `mode: "url"`, `elicitationId`, `url`,
        /// `message`.
        elicitations: Vec<Value>,
    },
    /// A limit was reached and the request was refused before it ran:
    /// retry later (-31003, HTTP 429; issue 52). The one refusal for load
    /// and budgets, on every transport: `-32600` says "malformed, do not
    /// retry", which these are not.
    #[error("{message}")]
    Busy {
        /// The limit's short stable name, as `tern_limit_reached_total`
        /// counts it (`data.limit`).
        limit: Cow<'static, str>,
        /// One short sentence.
        message: String,
        /// When to try again, where known (`data.retryAfterMs`, and over
        /// HTTP `Retry-After`).
        retry_after: Option<Duration>,
    },
    /// Something the request waited for did not come in time: the client's
    /// answer, in-task answers, the body (-31004, HTTP 200, or 408 for a
    /// body, where the transport says so).
    #[error("{message}")]
    Timeout {
        /// The deadline's short stable name (`data.limit`).
        limit: Cow<'static, str>,
        /// One short sentence.
        message: String,
    },
    /// An application error with a code outside the reserved range (ERR-5).
    #[error("{message}")]
    Application {
        /// The code; must lie outside `-32768..=-32000`.
        code: ErrorCode,
        /// One short sentence.
        message: String,
        /// Structured detail.
        data: Option<Value>,
    },
}

impl McpError {
    /// A missing or malformed `_meta` key (-32602, HTTP 400).
    pub fn missing_meta(message: impl Into<String>) -> Self {
        McpError::MissingMeta {
            message: message.into(),
            supported: None,
        }
    }

    /// An invalid-params error without data.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        McpError::InvalidParams {
            message: message.into(),
            data: None,
        }
    }

    /// A busy refusal (-31003, HTTP 429): `limit` names it, `retry_after`
    /// says when to come back where that is known.
    pub fn busy(
        limit: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        retry_after: Option<Duration>,
    ) -> Self {
        McpError::Busy {
            limit: limit.into(),
            message: message.into(),
            retry_after,
        }
    }

    /// A timeout (-31004): `limit` names the deadline that passed.
    pub fn timeout(limit: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        McpError::Timeout {
            limit: limit.into(),
            message: message.into(),
        }
    }

    /// An application error. Codes inside the reserved range are moved to
    /// -32603 rather than sent with a meaning the spec does not give them
    /// (ERR-2, ERR-5).
    pub fn application(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        let message = message.into();
        if ErrorCode(code).is_reserved() {
            return McpError::Internal(message);
        }
        McpError::Application {
            code: ErrorCode(code),
            message,
            data,
        }
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> ErrorCode {
        match self {
            McpError::Parse(_) => ErrorCode::PARSE_ERROR,
            McpError::InvalidRequest(_) | McpError::PayloadTooLarge => ErrorCode::INVALID_REQUEST,
            McpError::MissingMeta { .. }
            | McpError::InvalidParams { .. }
            | McpError::InvalidState
            | McpError::TooManyRounds => ErrorCode::INVALID_PARAMS,
            McpError::HeaderMismatch { .. } => ErrorCode::HEADER_MISMATCH,
            McpError::UnsupportedVersion { .. } => ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            McpError::MethodNotFound { .. } => ErrorCode::METHOD_NOT_FOUND,
            McpError::MissingCapability { .. } => ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            McpError::Internal(_) | McpError::InternalLogged { .. } | McpError::Unavailable => {
                ErrorCode::INTERNAL_ERROR
            }
            McpError::Application { code, .. } => *code,
            McpError::Busy { .. } => ErrorCode::BUSY,
            McpError::Timeout { .. } => ErrorCode::TIMEOUT,
            McpError::UrlElicitationRequired { .. } => ErrorCode(-32042),
        }
    }

    /// The HTTP status for this error on Streamable HTTP (DIGEST status code
    /// summary; HTTP-A4 for the unmapped ones).
    pub fn http_status(&self) -> u16 {
        match self {
            McpError::Parse(_)
            | McpError::InvalidRequest(_)
            | McpError::MissingMeta { .. }
            | McpError::HeaderMismatch { .. }
            | McpError::UnsupportedVersion { .. }
            | McpError::MissingCapability { .. } => 400,
            McpError::MethodNotFound { .. } => 404,
            McpError::PayloadTooLarge => 413,
            // The one place a busy refusal gets its status, on every path
            // (the transport adds `Retry-After` from the error's data).
            McpError::Busy { .. } => 429,
            McpError::InvalidParams { .. }
            | McpError::Timeout { .. }
            | McpError::InvalidState
            | McpError::TooManyRounds
            | McpError::Internal(_)
            | McpError::InternalLogged { .. }
            | McpError::Unavailable
            | McpError::Application { .. }
            | McpError::UrlElicitationRequired { .. } => 200,
        }
    }

    /// The error object sent to the peer.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            McpError::Busy {
                limit,
                message,
                retry_after,
            } => return ErrorObject::busy(limit.clone(), message.clone(), *retry_after),
            McpError::Timeout { limit, message } => {
                return ErrorObject::timeout(limit.clone(), message.clone());
            }
            _ => {}
        }
        let message = self.to_string();
        let data = match self {
            McpError::HeaderMismatch {
                supported: Some(s), ..
            }
            | McpError::MethodNotFound {
                supported: Some(s), ..
            }
            | McpError::MissingMeta {
                supported: Some(s), ..
            } => Some(json!({ "supported": s })),
            McpError::UnsupportedVersion {
                requested,
                supported,
            } => Some(json!({ "supported": supported, "requested": requested })),
            McpError::MissingCapability { required, .. } => Some(json!({
                "requiredCapabilities": serde_json::to_value(required)
                    .unwrap_or_else(|_| json!({})),
            })),
            McpError::InvalidParams { data, .. } | McpError::Application { data, .. } => {
                data.clone()
            }
            McpError::InvalidState => Some(json!({ "restart": true })),
            McpError::UrlElicitationRequired { elicitations } => {
                Some(json!({ "elicitations": elicitations }))
            }
            McpError::InternalLogged { correlation_id } => {
                Some(json!({ "correlationId": correlation_id }))
            }
            _ => None,
        };
        let message = match self {
            McpError::MissingCapability { message, .. } => message.clone(),
            // The detail stays local (SECURITY.md §3.5).
            McpError::Internal(_) => "Internal error".to_owned(),
            _ => message,
        };
        ErrorObject {
            code: self.code(),
            message,
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_digest_table() {
        // DIGEST HTTP status code summary.
        assert_eq!(McpError::missing_meta("x").http_status(), 400);
        assert_eq!(McpError::missing_meta("x").code(), ErrorCode(-32602));
        let hm = McpError::HeaderMismatch {
            message: "x".into(),
            supported: None,
        };
        assert_eq!((hm.code(), hm.http_status()), (ErrorCode(-32020), 400));
        let mnf = McpError::MethodNotFound {
            method: "ping".into(),
            supported: None,
        };
        assert_eq!((mnf.code(), mnf.http_status()), (ErrorCode(-32601), 404));
        let uv = McpError::UnsupportedVersion {
            requested: "v999".into(),
            supported: vec!["2026-07-28".into()],
        };
        assert_eq!((uv.code(), uv.http_status()), (ErrorCode(-32022), 400));
        assert_eq!(
            uv.to_error_object().data,
            Some(json!({"supported": ["2026-07-28"], "requested": "v999"}))
        );
        // HTTP-A4: unmapped errors are 200 with the error body.
        assert_eq!(
            McpError::invalid_params("Unknown tool: x").http_status(),
            200
        );
        assert_eq!(McpError::Internal("boom".into()).http_status(), 200);
    }

    #[test]
    fn missing_capability_names_an_object_of_objects() {
        // META-S10: requiredCapabilities is ClientCapabilities-shaped.
        let required: ClientCapabilities = serde_json::from_value(json!({"sampling": {}})).unwrap();
        let e = McpError::MissingCapability {
            required: Box::new(required),
            message: "needs sampling".into(),
        };
        let obj = e.to_error_object();
        assert_eq!(obj.code, ErrorCode(-32021));
        assert_eq!(
            obj.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
        assert_eq!(e.http_status(), 400);
    }

    #[test]
    fn state_failures_are_uniform() {
        // MRTR-E-A1: one generic error, no hint of which check failed.
        let obj = McpError::InvalidState.to_error_object();
        assert_eq!(obj.code, ErrorCode(-32602));
        assert_eq!(obj.message, "invalid or expired requestState");
        assert_eq!(obj.data, Some(json!({"restart": true})));
    }

    #[test]
    fn internal_detail_never_reaches_the_peer() {
        // SECURITY.md §3.5: the text is for the log.
        let obj = McpError::Internal("cannot seal state: key gone".into()).to_error_object();
        assert_eq!(
            (obj.code, obj.message.as_str(), obj.data),
            (ErrorCode(-32603), "Internal error", None)
        );
        let obj = McpError::InternalLogged {
            correlation_id: "c0ffee".into(),
        }
        .to_error_object();
        assert_eq!(
            (obj.code, obj.message.as_str(), obj.data),
            (
                ErrorCode(-32603),
                "Internal error",
                Some(json!({"correlationId": "c0ffee"}))
            )
        );
    }

    #[test]
    fn a_busy_refusal_is_minus_31003_and_429_and_a_timeout_minus_31004() {
        // Issue 52: load and budgets are "busy, retry later", never -32600.
        let e = McpError::busy(
            "requests",
            "try again shortly",
            Some(Duration::from_secs(1)),
        );
        assert_eq!((e.code(), e.http_status()), (ErrorCode(-31003), 429));
        let obj = e.to_error_object();
        assert_eq!(
            (obj.message.as_str(), obj.data),
            (
                "try again shortly",
                Some(json!({"limit": "requests", "retryAfterMs": 1000}))
            )
        );
        let e = McpError::timeout("client_answer", "the client did not answer in time");
        assert_eq!((e.code(), e.http_status()), (ErrorCode(-31004), 200));
        assert_eq!(
            e.to_error_object().data,
            Some(json!({"limit": "client_answer"}))
        );
    }

    #[test]
    fn application_codes_stay_out_of_the_reserved_range() {
        // ERR-2, ERR-3, ERR-5: never -32002 or -32042, nothing reserved.
        for reserved in [-32002, -32042, -32000, -32768] {
            assert_eq!(
                McpError::application(reserved, "x", None).code(),
                ErrorCode(-32603)
            );
        }
        assert_eq!(
            McpError::application(-31001, "declined", None).code(),
            ErrorCode(-31001)
        );
        assert_eq!(
            McpError::application(1001, "declined", None).code(),
            ErrorCode(1001)
        );
    }
}
