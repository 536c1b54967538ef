//! How upstream failures reach the client: the upstream's own errors pass
//! through where their code means the same downstream; the rest get one of
//! the proxy's codes from Tern's registry ([`ErrorCode::APPLICATION`]),
//! with a message that names the upstream by its configured name. The
//! upstream's address, command line and transport errors go to the log
//! only: they describe the proxy's deployment, not the client's call.

use std::time::Duration;

use tern_proto::McpError;
use tern_types::ErrorCode;

/// The upstream answered with an error the proxy cannot pass on as it is,
/// or with something that is not a valid response
/// ([`ErrorCode::UPSTREAM_FAILED`]).
pub const UPSTREAM_ERROR: i64 = ErrorCode::UPSTREAM_FAILED.0;

/// The upstream cannot be reached: it is down, its process exited, or it
/// did not answer in time ([`ErrorCode::UPSTREAM_UNAVAILABLE`]). The next
/// call tries it again.
pub const UPSTREAM_UNAVAILABLE: i64 = ErrorCode::UPSTREAM_UNAVAILABLE.0;

/// Why an upstream is unavailable, in words that hold nothing of its
/// address or command.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Gone {
    /// It could not be started or connected to.
    Unreachable,
    /// It did not answer within this long.
    Silent(Duration),
    /// The connection or process ended in the middle of the call.
    Lost,
}

pub(crate) fn unavailable(name: &str, why: Gone) -> McpError {
    let why = match why {
        Gone::Unreachable => "it cannot be reached".to_owned(),
        Gone::Silent(wait) if wait.subsec_millis() == 0 => {
            format!("it did not answer within {} s", wait.as_secs())
        }
        Gone::Silent(wait) => format!("it did not answer within {} ms", wait.as_millis()),
        Gone::Lost => "the connection to it was lost".to_owned(),
    };
    McpError::application(
        UPSTREAM_UNAVAILABLE,
        format!("the upstream server {name:?} is unavailable: {why}"),
        Some(serde_json::json!({ "upstream": name })),
    )
}

/// Whether `e` says the upstream itself is gone rather than that it
/// refused this call.
pub(crate) fn is_lost(e: &tern_client::Error) -> bool {
    e.is_transport() || e.is_timeout() || e.is_session_expired()
}

fn failed(name: &str, what: &str, data: serde_json::Value) -> McpError {
    McpError::application(
        UPSTREAM_ERROR,
        format!("the upstream server {name:?} {what}"),
        Some(data),
    )
}

/// The client's view of an upstream failure. The full error is logged.
pub(crate) fn from_upstream(name: &str, e: &tern_client::Error, timeout: Duration) -> McpError {
    let Some(obj) = e.remote_error() else {
        tracing::warn!(upstream = %name, error = %e, "the upstream call failed");
        let data = serde_json::json!({ "upstream": name });
        return if e.is_timeout() {
            unavailable(name, Gone::Silent(timeout))
        } else if is_lost(e) {
            unavailable(name, Gone::Lost)
        } else if e.is_unauthorized() {
            failed(name, "refused the proxy's credentials", data)
        } else if e.is_round_limit() {
            failed(
                name,
                "asked for more input rounds than the proxy relays",
                data,
            )
        } else {
            failed(
                name,
                "answered with something that is not a valid response",
                data,
            )
        };
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
        // The upstream's own application codes pass through, except the
        // proxy's: a client must be able to tell "the proxy could not
        // reach the upstream" from "the upstream said so".
        code if !code.is_reserved() && !code.is_proxy_own() => {
            McpError::application(code.0, message, obj.data.clone())
        }
        code => failed(
            name,
            &format!("answered {}: {message}", code.0),
            serde_json::json!({ "upstream": name, "upstreamCode": code.0 }),
        ),
    }
}

/// An upstream's round larger than the proxy holds: the upstream answered
/// what the proxy cannot pass on (-31000, `data.limit` naming the budget).
/// Not busy: the same call would bring the same round, so a retry later
/// (which a client makes of a busy refusal) would only run it again.
pub(crate) fn too_large(name: &str, len: usize, max: usize) -> McpError {
    failed(
        name,
        &format!("asked a round larger than the proxy holds ({len} bytes; at most {max})"),
        serde_json::json!({ "upstream": name, "limit": "proxy_round_bytes" }),
    )
}

/// A budget of the proxy reached: the busy refusal ([`ErrorCode::BUSY`]),
/// `limit` naming it for the client (`proxy_pending_per_principal`,
/// `proxy_pending`).
pub(crate) fn limit(message: String, limit: &'static str) -> McpError {
    McpError::busy(limit, message, None)
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
