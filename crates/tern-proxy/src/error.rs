//! How upstream failures reach the client: the upstream's own errors pass
//! through where their code means the same downstream; the rest get one of
//! the proxy's two codes, with a message that names the upstream.

use tern_proto::McpError;
use tern_types::ErrorCode;

/// The upstream answered with an error the proxy cannot pass on as it is,
/// or with something that is not a valid response.
pub const UPSTREAM_ERROR: i64 = -31000;

/// The upstream cannot be reached: it is down, its process exited, or it
/// did not answer in time. The next call tries it again.
pub const UPSTREAM_UNAVAILABLE: i64 = -31001;

pub(crate) fn unavailable(name: &str, why: &str) -> McpError {
    McpError::application(
        UPSTREAM_UNAVAILABLE,
        format!("the upstream server {name:?} is unavailable: {why}"),
        None,
    )
}

/// Whether `e` says the upstream itself is gone rather than that it
/// refused this call.
pub(crate) fn is_lost(e: &tern_client::Error) -> bool {
    e.is_transport() || e.is_timeout() || e.is_session_expired()
}

/// The client's view of an upstream failure.
pub(crate) fn from_upstream(name: &str, e: &tern_client::Error) -> McpError {
    if is_lost(e) {
        return unavailable(name, &e.to_string());
    }
    let Some(obj) = e.remote_error() else {
        return McpError::application(
            UPSTREAM_ERROR,
            format!("the upstream server {name:?} failed the call: {e}"),
            None,
        );
    };
    let message = obj.message.clone();
    match obj.code {
        ErrorCode::INVALID_PARAMS => McpError::InvalidParams {
            message,
            data: obj.data.clone(),
        },
        // The upstream's capability gate: what the client lacks, as the
        // client declared it through the proxy (MRTR-S9).
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            let required = obj
                .data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            McpError::MissingCapability {
                required: Box::new(required),
                message,
            }
        }
        code if !code.is_reserved() => McpError::application(code.0, message, obj.data.clone()),
        code => McpError::application(
            UPSTREAM_ERROR,
            format!(
                "the upstream server {name:?} answered {}: {message}",
                code.0
            ),
            Some(serde_json::json!({ "upstreamCode": code.0 })),
        ),
    }
}

/// The requests a retry must answer again: a proxy restarted, or another
/// instance of it got the retry (-32602 with `restart`).
pub(crate) fn not_held() -> McpError {
    McpError::InvalidParams {
        message: "this proxy no longer holds the call this retry continues; start the call again"
            .into(),
        data: Some(serde_json::json!({ "restart": true })),
    }
}

/// A continuation that does not belong to the route it arrived on.
pub(crate) fn foreign() -> McpError {
    McpError::InvalidState
}
