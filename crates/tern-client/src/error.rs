//! The client's one error type: opaque, with predicates (hyper style), so it
//! can gain cases without breaking callers. The peer's JSON-RPC error is
//! kept apart from local failures (DIGEST ERR-6, ERR-A1).

use std::fmt;
use std::time::Duration;

use tern_types::{ErrorCode, ErrorObject};

type Source = Box<dyn std::error::Error + Send + Sync>;

/// Why a client call failed. Ask with the `is_*` predicates; the `Display`
/// text is for people and is not a contract.
pub struct Error {
    kind: Kind,
    message: String,
    source: Option<Source>,
    /// The HTTP status of a response that carried no JSON-RPC message: the
    /// peer was reached and refused, which era detection reads (COMPAT-C8).
    status: Option<u16>,
}

#[derive(Debug)]
enum Kind {
    Timeout,
    Protocol,
    Remote(ErrorObject),
    Transport,
    Cancelled,
    RoundLimit,
    Capability,
    Refused,
    Usage,
    SessionExpired,
    Unauthorized,
}

impl Error {
    fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
            status: None,
        }
    }

    /// The peer answered with HTTP `status` and no JSON-RPC message. For
    /// transport implementations.
    pub fn http_status(status: u16, message: impl Into<String>) -> Self {
        let mut e = Error::new(Kind::Transport, message);
        e.status = Some(status);
        e
    }

    /// The server no longer knows the legacy session the request named
    /// (HTTP `404` to a request with `Mcp-Session-Id`); the client opens a
    /// new one. For transport implementations.
    pub fn session_expired(message: impl Into<String>) -> Self {
        let mut e = Error::new(Kind::SessionExpired, message);
        e.status = Some(404);
        e
    }

    /// Signing in to a protected server failed (discovery, registration,
    /// the authorization response, the token endpoint), or the server keeps
    /// refusing the token (DIGEST §8). For transport implementations.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Error::new(Kind::Unauthorized, message)
    }

    /// Whether [`unauthorized`](Self::unauthorized) made this error.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self.kind, Kind::Unauthorized)
    }

    /// A transport failure (connection refused, broken stream, a child
    /// process that exited). For transport implementations.
    pub fn transport(message: impl Into<String>) -> Self {
        Error::new(Kind::Transport, message)
    }

    /// A transport failure caused by `source`. For transport
    /// implementations.
    pub fn transport_from(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let mut e = Error::new(Kind::Transport, message);
        e.source = Some(Box::new(source));
        e
    }

    /// The peer broke the protocol: a body that is not JSON-RPC, an unknown
    /// `resultType` (BASE-C12), a malformed interim result (MRTR-C-A2). For
    /// transport implementations too.
    pub fn protocol(message: impl Into<String>) -> Self {
        Error::new(Kind::Protocol, message)
    }

    /// The peer answered with a JSON-RPC error.
    pub fn remote(error: ErrorObject) -> Self {
        let message = error.to_string();
        Error::new(Kind::Remote(error), message)
    }

    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Error::new(Kind::Timeout, message)
    }

    pub(crate) fn cancelled() -> Self {
        Error::new(Kind::Cancelled, "the call was cancelled")
    }

    pub(crate) fn round_limit(message: impl Into<String>) -> Self {
        Error::new(Kind::RoundLimit, message)
    }

    pub(crate) fn capability(message: impl Into<String>) -> Self {
        Error::new(Kind::Capability, message)
    }

    pub(crate) fn refused(message: impl Into<String>) -> Self {
        Error::new(Kind::Refused, message)
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Error::new(Kind::Usage, message)
    }

    /// A request, or the whole multi round-trip flow, ran out of time.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, Kind::Timeout)
    }

    /// The server broke the protocol (a malformed or unexpected response,
    /// an interim result that may not be acted on). Includes an input
    /// request for a capability the client did not declare, which also
    /// answers [`is_capability`](Self::is_capability) (MRTR-C-A2).
    pub fn is_protocol(&self) -> bool {
        matches!(self.kind, Kind::Protocol | Kind::Capability)
    }

    /// The server answered with a JSON-RPC error; see
    /// [`remote_error`](Self::remote_error).
    pub fn is_remote(&self) -> bool {
        matches!(self.kind, Kind::Remote(_))
    }

    /// The transport failed: nothing, or not all, of the answer arrived.
    pub fn is_transport(&self) -> bool {
        matches!(self.kind, Kind::Transport | Kind::SessionExpired)
    }

    /// The HTTP status of an answer that carried no JSON-RPC message.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The server ended or forgot the legacy session (2025-11-25 transports:
    /// session management).
    pub fn is_session_expired(&self) -> bool {
        matches!(self.kind, Kind::SessionExpired)
    }

    /// The caller cancelled the call through its
    /// [`CancelToken`](crate::CancelToken).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, Kind::Cancelled)
    }

    /// The flow needed more rounds than the client allows, or more
    /// consecutive state-only rounds (MRTR-C-A3, SECURITY.md §3.10).
    pub fn is_round_limit(&self) -> bool {
        matches!(self.kind, Kind::RoundLimit)
    }

    /// A capability gap: the server asked through an input kind the client
    /// did not declare for the request (MRTR-C-A2, SAMP-S2), or answered
    /// `-32021` because the client lacks one (META-S10).
    pub fn is_capability(&self) -> bool {
        match &self.kind {
            Kind::Capability => true,
            Kind::Remote(e) => e.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            _ => false,
        }
    }

    /// The input provider refused to produce an answer that has no refused
    /// form (sampling, roots); the call ended locally without a retry
    /// (MRTR-C4).
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, Kind::Refused)
    }

    /// The caller's request cannot be sent as given (for example an
    /// `x-mcp-header` integer outside ±(2^53−1), DIGEST §11 A14, or a
    /// pending call resumed as the wrong result type).
    pub fn is_usage(&self) -> bool {
        matches!(self.kind, Kind::Usage)
    }

    /// The server refused the request as busy before running it: a limit
    /// was reached, try again later (`-31003` naming the limit, issue 52;
    /// or an HTTP 429 that carried no JSON-RPC message). The client has
    /// already sent it again a few times ([`MAX_BUSY_RETRIES`]) by the time
    /// the caller sees this. A `-31003` without `data.limit` is the
    /// application's own error, not a refusal, and is not busy.
    ///
    /// [`MAX_BUSY_RETRIES`]: crate::MAX_BUSY_RETRIES
    pub fn is_busy(&self) -> bool {
        match &self.kind {
            Kind::Remote(e) => e.busy_data().is_some(),
            Kind::Transport => self.status == Some(429),
            _ => false,
        }
    }

    /// When a busy server asked to be tried again (`data.retryAfterMs`),
    /// if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.remote_error()
            .and_then(ErrorObject::busy_data)
            .and_then(|d| d.retry_after())
    }

    /// The peer's JSON-RPC error, when [`is_remote`](Self::is_remote).
    pub fn remote_error(&self) -> Option<&ErrorObject> {
        match &self.kind {
            Kind::Remote(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            Kind::Timeout => "timed out",
            Kind::Protocol => "protocol violation by the server",
            Kind::Remote(_) => "server error",
            Kind::Transport => "transport error",
            Kind::Cancelled => "cancelled",
            Kind::RoundLimit => "round limit",
            Kind::Capability => "capability not declared",
            Kind::Refused => "input refused",
            Kind::Usage => "invalid request",
            Kind::SessionExpired => "session expired",
            Kind::Unauthorized => "authorization failed",
        };
        write!(f, "{what}: {}", self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}
