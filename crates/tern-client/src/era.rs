//! Which era the server speaks, and the 2025-11-25 session when it is the
//! older one (DIGEST §3.4, COMPAT-C5..C10).
//!
//! Under [`EraPolicy::Auto`] (opt-in; `tern` turns it on) the first request of a client is a
//! `server/discover` probe with the modern `_meta`. A discover result, or a
//! recognised modern error (`-32020`, `-32021`, `-32022` with
//! `data.supported`, COMPAT-C-A1), means a modern server. Anything else
//! (another JSON-RPC error, an HTTP refusal without a JSON-RPC body, a
//! result that is not a discover result, or no answer within the probe
//! timeout) means a legacy server, and the client opens a session with
//! `initialize` on the same transport. The decision is never keyed to one
//! error code (COMPAT-C6), and a connection that cannot be made at all is an
//! error, not a fallback. The era is then fixed for the client (COMPAT-C10).
//!
//! In a legacy session a call is one request: the server asks for input
//! with requests of its own on the call's stream, which the client answers
//! through the same [`InputProvider`](crate::InputProvider) as an
//! `input_required` round, so a caller sees the same forms and consent in
//! both eras (the call itself: `legacy.rs`).

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};
use tern_types::legacy::{
    Era, InitializeRequestParams, InitializeResult, LEGACY_VERSIONS, is_legacy_version,
    methods as legacy,
};
use tern_types::{
    DiscoverResult, ErrorCode, ErrorObject, Implementation, ServerCapabilities, meta_keys, methods,
};

use crate::Error;
use crate::budget::Budget;
use crate::client::{Call, Client};

/// How a client finds out which era its server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraPolicy {
    /// Probe with `server/discover`; fall back to an `initialize` session
    /// when the answer is not a modern one (COMPAT-C5, COMPAT-C8). What
    /// `tern` uses.
    Auto,
    /// 2026-07-28 only: no probe, never `initialize`. The library default,
    /// so a modern client's wire is exactly one request per call.
    #[default]
    Modern,
    /// 2025-11-25 sessions only: `initialize` first, no probe.
    Legacy,
}

/// What the client learned when it first reached the server.
pub(crate) enum Connection {
    /// A 2026-07-28 server; the probe's result, if there was one, is kept
    /// for the first [`Client::discover`].
    Modern(Mutex<Option<DiscoverResult>>),
    /// A 2025-11-25 session.
    Legacy(LegacySession),
}

impl Connection {
    fn era(&self) -> Era {
        match self {
            Connection::Modern(_) => Era::Modern,
            Connection::Legacy(_) => Era::Legacy,
        }
    }
}

/// An open 2025-11-25 session: the negotiated version and what the server
/// said in `initialize`.
pub(crate) struct LegacySession {
    pub(crate) version: String,
    pub(crate) init: InitializeResult,
    /// `init.server_info` as the value each question's context carries,
    /// built once rather than per question.
    pub(crate) server_info: Option<Value>,
    /// The level last set with `logging/setLevel` in this session.
    pub(crate) log_level: tokio::sync::Mutex<Option<String>>,
}

/// Codes that only a modern server sends (COMPAT-C-A1); `-32602` is not
/// decisive.
fn is_modern_error(e: &ErrorObject) -> bool {
    e.code == ErrorCode::HEADER_MISMATCH
        || e.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        || (e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            && e.data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .is_some_and(Value::is_array))
}

/// Whether a failed probe reached a server at all (and so says something
/// about its era) rather than failing to connect.
fn reached_the_server(e: &Error) -> bool {
    e.is_remote() || e.is_protocol() || e.is_timeout() || e.status().is_some()
}

impl Client {
    /// Reaches the server and settles its era now, as the first call would
    /// otherwise do. Returns the era; it is kept for the life of the client
    /// (COMPAT-C10).
    pub async fn connect(&self) -> Result<Era, Error> {
        Ok(self.connection().await?.era())
    }

    /// The server's era, once known.
    pub fn era(&self) -> Option<Era> {
        self.known().map(|c| c.era())
    }

    /// What a 2025-11-25 server answered to `initialize`, in a legacy
    /// session.
    pub fn initialize_result(&self) -> Option<InitializeResult> {
        match self.known().as_deref() {
            Some(Connection::Legacy(s)) => Some(s.init.clone()),
            _ => None,
        }
    }

    /// Ends the legacy session, if there is one (HTTP `DELETE`); the next
    /// call reaches the server afresh.
    pub async fn close(&self) -> Result<(), Error> {
        let had = self
            .inner
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match had.as_deref() {
            Some(Connection::Legacy(_)) => self.inner.transport.close().await,
            _ => Ok(()),
        }
    }

    /// The connection, established on first use. Concurrent first calls
    /// wait for one probe.
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, Error> {
        if let Some(c) = self.known() {
            return Ok(c);
        }
        let _one = self.inner.connecting.lock().await;
        if let Some(c) = self.known() {
            return Ok(c);
        }
        let c = Arc::new(self.establish().await?);
        *self
            .inner
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(c.clone());
        Ok(c)
    }

    /// The connection, if the server was reached already.
    pub(crate) fn known(&self) -> Option<Arc<Connection>> {
        self.inner
            .connection
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets a legacy session the server no longer knows.
    pub(crate) fn forget(&self, stale: &Arc<Connection>) {
        let mut known = self
            .inner
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if known.as_ref().is_some_and(|c| Arc::ptr_eq(c, stale)) {
            *known = None;
        }
    }

    async fn establish(&self) -> Result<Connection, Error> {
        match self.inner.era_policy {
            EraPolicy::Modern => Ok(Connection::Modern(Mutex::new(None))),
            EraPolicy::Legacy => self.initialize().await.map(Connection::Legacy),
            EraPolicy::Auto if self.inner.era_hint == Some(Era::Legacy) => {
                // A cached era is an assumption: when the session cannot be
                // opened, probe again (COMPAT-C10).
                match self.initialize().await {
                    Ok(s) => Ok(Connection::Legacy(s)),
                    Err(e) if reached_the_server(&e) => {
                        tracing::debug!(error = %e, "the cached legacy era failed; probing again");
                        self.probe().await
                    }
                    Err(e) => Err(e),
                }
            }
            EraPolicy::Auto => self.probe().await,
        }
    }

    /// COMPAT-C5/C8: `server/discover` with the modern `_meta` first.
    async fn probe(&self) -> Result<Connection, Error> {
        let opts = crate::CallOptions::default();
        let deadline = self.inner.probe_timeout;
        let call = Call {
            method: methods::SERVER_DISCOVER,
            params: Map::new(),
            opts: &opts,
            deadline: crate::transport::instant().checked_add(deadline),
        };
        let answer = tokio::time::timeout(deadline, self.send_modern(&call)).await;
        let legacy_because = match answer {
            Ok(Ok(result)) => match serde_json::from_value::<DiscoverResult>(Value::Object(result))
            {
                Ok(d) if !d.supported_versions.is_empty() => {
                    return Ok(Connection::Modern(Mutex::new(Some(d))));
                }
                _ => "its server/discover result is not a discover result".to_owned(),
            },
            Ok(Err(e)) if e.remote_error().is_some_and(is_modern_error) => {
                // Modern, but the request cannot be served as sent (no
                // common version after the VER-C3 retry, a capability the
                // server requires): say so rather than fall back.
                return if e
                    .remote_error()
                    .is_some_and(|o| o.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
                {
                    Err(e)
                } else {
                    Ok(Connection::Modern(Mutex::new(None)))
                };
            }
            // Busy says nothing of the era (any server may be): the call
            // fails as busy, and the next one probes again.
            Ok(Err(e)) if e.is_busy() => return Err(e),
            Ok(Err(e)) if reached_the_server(&e) => e.to_string(),
            Ok(Err(e)) => return Err(e),
            Err(_) => format!("server/discover got no answer within {deadline:?}"),
        };
        tracing::debug!(reason = %legacy_because, "the server is not modern; opening a 2025-11-25 session");
        self.initialize().await.map(Connection::Legacy)
    }

    /// The 2025-11-25 handshake: `initialize` with the provider's
    /// capabilities, then `notifications/initialized` (lifecycle).
    async fn initialize(&self) -> Result<LegacySession, Error> {
        let info = self.inner.info.clone().unwrap_or_else(|| {
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
        });
        let params = InitializeRequestParams {
            protocol_version: LEGACY_VERSIONS[0].to_owned(),
            capabilities: self.capabilities(),
            client_info: info,
            meta: None,
        };
        let Ok(Value::Object(params)) = serde_json::to_value(params) else {
            return Err(Error::usage("cannot encode the initialize request"));
        };
        let opts = crate::CallOptions::default();
        let call = Call {
            method: legacy::INITIALIZE,
            params,
            opts: &opts,
            deadline: None,
        };
        // The handshake is a request of its own, not a round of the call
        // that happened to reach the server first.
        let mut budget = Budget::new(self.max_rounds(&opts));
        let result = self.send_legacy(&call, None, &mut budget).await?;
        let init: InitializeResult = serde_json::from_value(Value::Object(result))
            .map_err(|e| Error::protocol(format!("malformed initialize result: {e}")))?;
        // Lifecycle: a version the client does not speak ends the attempt.
        if !is_legacy_version(&init.protocol_version) {
            return Err(Error::protocol(format!(
                "the server answered initialize with protocol version {:?}; this client speaks {}",
                init.protocol_version,
                LEGACY_VERSIONS.join(", ")
            )));
        }
        let version = init.protocol_version.clone();
        self.notify_with(
            legacy::NOTIFICATIONS_INITIALIZED,
            Map::new(),
            Some(&version),
        )
        .await?;
        tracing::debug!(%version, server = %init.server_info.name, "2025-11-25 session open");
        let server_info = serde_json::to_value(&init.server_info).ok();
        Ok(LegacySession {
            version,
            init,
            server_info,
            log_level: tokio::sync::Mutex::new(None),
        })
    }

    /// A 2025-11-25 session has no per-request log level: a call that asks
    /// for log messages sets the session's level first with
    /// `logging/setLevel`, when the server offers logging and the level
    /// differs from the one set last. A refusal is not the call's failure,
    /// but the server's requests while it is open are the call's: they
    /// draw on its `budget`.
    pub(crate) async fn set_session_log_level(
        &self,
        session: &LegacySession,
        level: &str,
        budget: &mut Budget,
    ) {
        if !session.init.capabilities.contains_key("logging") {
            return;
        }
        let mut set = session.log_level.lock().await;
        if set.as_deref() == Some(level) {
            return;
        }
        let mut params = Map::new();
        params.insert("level".into(), json!(level));
        let opts = crate::CallOptions::default();
        let call = Call {
            method: legacy::LOGGING_SET_LEVEL,
            params,
            opts: &opts,
            deadline: budget.deadline(),
        };
        match self
            .send_legacy_once(&call, Some(&session.version), budget)
            .await
        {
            Ok(_) => *set = Some(level.to_owned()),
            Err(e) => tracing::debug!(error = %e, "the server refused logging/setLevel"),
        }
    }

    /// A `DiscoverResult` made from the session's `initialize` answer, so
    /// callers that list a server see the same shape in both eras.
    pub(crate) fn discover_from(session: &LegacySession) -> Result<DiscoverResult, Error> {
        let init = &session.init;
        let capabilities: ServerCapabilities =
            serde_json::from_value(Value::Object(init.capabilities.clone())).map_err(|e| {
                Error::protocol(format!(
                    "malformed capabilities in the initialize result: {e}"
                ))
            })?;
        let mut meta = Map::new();
        meta.insert(
            meta_keys::SERVER_INFO.into(),
            serde_json::to_value(&init.server_info).unwrap_or(Value::Null),
        );
        Ok(DiscoverResult {
            result_type: tern_types::ResultType::Complete,
            supported_versions: vec![session.version.clone()],
            capabilities,
            instructions: init.instructions.clone(),
            ttl_ms: 0,
            cache_scope: tern_types::CacheScope::default(),
            meta: Some(meta),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_modern_codes_are_decisive() {
        let e = |code, data: Option<Value>| {
            let mut o = ErrorObject::new(code, "x");
            o.data = data;
            o
        };
        assert!(is_modern_error(&e(ErrorCode::HEADER_MISMATCH, None)));
        assert!(is_modern_error(&e(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            None
        )));
        assert!(is_modern_error(&e(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            Some(json!({"supported": ["2026-07-28"]}))
        )));
        // -32022 without the array is not decisive (COMPAT-C-A1), nor are
        // the codes legacy servers answer unknown methods with (COMPAT-C6).
        assert!(!is_modern_error(&e(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            None
        )));
        assert!(!is_modern_error(&e(ErrorCode::METHOD_NOT_FOUND, None)));
        assert!(!is_modern_error(&e(ErrorCode::INVALID_PARAMS, None)));
        assert!(!is_modern_error(&e(ErrorCode(-32000), None)));
    }
}
