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
//! both eras.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern_proto::McpHeaders;
use tern_proto::decode::Message;
use tern_types::legacy::{
    Era, InitializeRequestParams, InitializeResult, LEGACY_VERSIONS, is_legacy_version,
    methods as legacy,
};
use tern_types::{
    DiscoverResult, ElicitRequestParams, ErrorCode, ErrorObject, Implementation, InputRequest,
    InputRequests, InputResponses, JsonRpcVersion, Request, RequestId, ServerCapabilities,
    meta_keys, methods,
};

use crate::Error;
use crate::client::{Call, Client, RoundEvent};
use crate::mrtr::{answer_one, check_declared, target_of};
use crate::provider::InputContext;
use crate::transport::{OutboundRequest, OutboundResponse};

/// `URLElicitationRequiredError` (2025-11-25 only; ERR-3 retires it).
const URL_ELICITATION_REQUIRED: i64 = -32042;
/// How often a call is sent again after its URL elicitations.
const MAX_URL_RETRIES: u32 = 3;

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
        let call = Call {
            method: methods::SERVER_DISCOVER,
            params: Map::new(),
            opts: &opts,
        };
        let deadline = self.inner.probe_timeout;
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
        };
        let result = self.send_legacy(&call, None).await?;
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
        Ok(LegacySession {
            version,
            init,
            log_level: tokio::sync::Mutex::new(None),
        })
    }

    /// A 2025-11-25 session has no per-request log level: a call that asks
    /// for log messages sets the session's level first with
    /// `logging/setLevel`, when the server offers logging and the level
    /// differs from the one set last. A refusal is not the call's failure.
    pub(crate) async fn set_session_log_level(&self, session: &LegacySession, level: &str) {
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
        };
        match self.send_legacy_once(&call, Some(&session.version)).await {
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

    /// One request of a legacy session: no modern `_meta`, only the
    /// session's `MCP-Protocol-Version` (none for `initialize` itself). The
    /// server's requests on the call's stream are answered as they come;
    /// the request timeout bounds each wait for the server, never the time
    /// a person takes to answer.
    /// A call in a legacy session. A `-32042` answer (the request needs
    /// URL-mode elicitations finished first) goes to the provider as URL
    /// elicitations; once the person accepted them all, the call is sent
    /// again, a few times at most (2025-11-25 URLElicitationRequiredError).
    pub(crate) async fn send_legacy(
        &self,
        call: &Call<'_>,
        version: Option<&str>,
    ) -> Result<Map<String, Value>, Error> {
        let mut tries = 0;
        loop {
            let e = match self.send_legacy_once(call, version).await {
                Err(e)
                    if e.remote_error()
                        .is_some_and(|o| o.code.0 == URL_ELICITATION_REQUIRED) =>
                {
                    e
                }
                done => return done,
            };
            tries += 1;
            if tries > MAX_URL_RETRIES || !self.open_urls(call, &e, tries).await? {
                return Err(e);
            }
        }
    }

    /// Shows each URL elicitation of a `-32042` error to the provider;
    /// true when every one was accepted.
    async fn open_urls(&self, call: &Call<'_>, e: &Error, round: u32) -> Result<bool, Error> {
        let listed = e
            .remote_error()
            .and_then(|o| o.data.as_ref())
            .and_then(|d| d.get("elicitations"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if listed.is_empty() {
            return Ok(false);
        }
        for elicitation in listed {
            let method = methods::ELICITATION_CREATE;
            let asked_for = json!({"method": method, "params": elicitation});
            let input = serde_json::from_value::<InputRequest>(asked_for).map_err(|e| {
                Error::protocol(format!("a -32042 error with a malformed elicitation: {e}"))
            })?;
            if !matches!(
                input,
                InputRequest::Elicitation(ElicitRequestParams::Url(_))
            ) {
                return Err(Error::protocol(
                    "a -32042 error listing an elicitation that is not URL mode",
                ));
            }
            check_declared(self.inner.provider.kinds(), method, &input)?;
            let cx = InputContext {
                method: call.method.to_owned(),
                target: target_of(&call.params),
                key: method.to_owned(),
                round,
                server_info: self.legacy_server_info(),
                answer_within: None,
            };
            let answer = answer_one(self.inner.provider.as_ref(), cx, input).await?;
            let accepted = serde_json::to_value(&answer)
                .is_ok_and(|a| a.get("action") == Some(&json!("accept")));
            if !accepted {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn send_legacy_once(
        &self,
        call: &Call<'_>,
        version: Option<&str>,
    ) -> Result<Map<String, Value>, Error> {
        let id = self.next_id();
        let progress_token = call.opts.progress.then(|| json!(format!("progress-{id}")));
        let mut params = call.params.clone();
        let mut meta = Map::new();
        if let Some(token) = &progress_token {
            meta.insert(meta_keys::PROGRESS_TOKEN.into(), token.clone());
        }
        if let Some(tp) = &call.opts.traceparent {
            meta.insert(meta_keys::TRACEPARENT.into(), json!(tp));
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let request = Request {
            jsonrpc: JsonRpcVersion,
            id: id.clone(),
            method: call.method.to_owned(),
            params: Some(params),
        };
        let body = serde_json::to_vec(&request).map_err(|e| Error::usage(e.to_string()))?;
        let headers = session_headers(version);
        let out = OutboundRequest {
            id: id.clone(),
            method: call.method.to_owned(),
            body: Bytes::from(body),
            headers: headers.clone(),
            progress_token,
        };
        let wait = self.inner.request_timeout;
        let mut frames = tokio::time::timeout(wait, self.inner.transport.request(out))
            .await
            .map_err(|_| {
                Error::timeout(format!("{} could not be sent within {wait:?}", call.method))
            })??;
        let mut asked = 0;
        loop {
            let frame = tokio::time::timeout(wait, frames.next())
                .await
                .map_err(|_| {
                    Error::timeout(format!(
                        "no word from the server on {} within {wait:?}",
                        call.method
                    ))
                })?;
            let Some(frame) = frame else {
                return Err(Error::transport(format!(
                    "the response stream of {} ended without a response",
                    call.method
                )));
            };
            match frame? {
                Message::Notification(n) => {
                    if let Some(h) = &call.opts.on_notification {
                        h(&n);
                    }
                }
                Message::Result(r) if r.id == id => return Ok(r.result),
                Message::Error(e) if e.id.is_none() || e.id.as_ref() == Some(&id) => {
                    return Err(Error::remote(e.error));
                }
                Message::Result(_) | Message::Error(_) => {
                    return Err(Error::protocol("a response for another request id"));
                }
                Message::Request(r) => {
                    asked += 1;
                    self.serve_request(call, r, asked, &headers).await?;
                }
            }
        }
    }

    /// Answers one request the server sent during `call`. Input requests go
    /// through the provider exactly as an `input_required` round would
    /// (the capability gate first, MRTR-C-A2); the key is the method name,
    /// as legacy requests have none. A refusal is reported to the server
    /// and ends the call locally (MRTR-C4).
    async fn serve_request(
        &self,
        call: &Call<'_>,
        request: Request,
        asked: u32,
        headers: &McpHeaders,
    ) -> Result<(), Error> {
        let method = request.method.clone();
        let mut ended = None;
        let outcome: Result<Value, ErrorObject> = match method.as_str() {
            legacy::PING => Ok(json!({})),
            methods::ELICITATION_CREATE
            | methods::SAMPLING_CREATE_MESSAGE
            | methods::ROOTS_LIST => {
                let asked_for = json!({"method": method, "params": request.params});
                match serde_json::from_value::<InputRequest>(asked_for) {
                    Err(e) => Err(ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("malformed {method} request: {e}"),
                    )),
                    Ok(input) => match check_declared(self.inner.provider.kinds(), &method, &input)
                    {
                        Err(e) => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, e.to_string())),
                        Ok(()) => {
                            let mut requests = InputRequests::new();
                            requests.insert(method.clone(), input.clone());
                            call.opts.emit(&RoundEvent::InputRequired {
                                round: asked,
                                input_requests: &requests,
                                request_state: None,
                            });
                            let cx = InputContext {
                                method: call.method.to_owned(),
                                target: target_of(&call.params),
                                key: method.clone(),
                                round: asked,
                                server_info: self.legacy_server_info(),
                                answer_within: None,
                            };
                            match answer_one(self.inner.provider.as_ref(), cx, input).await {
                                Ok(answer) => {
                                    let mut responses = InputResponses::new();
                                    responses.insert(method.clone(), &answer);
                                    call.opts.emit(&RoundEvent::Answered {
                                        round: asked,
                                        responses: &responses,
                                    });
                                    serde_json::to_value(&answer).map_err(|e| {
                                        ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string())
                                    })
                                }
                                Err(e) => {
                                    let refusal =
                                        ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string());
                                    ended = Some(e);
                                    Err(refusal)
                                }
                            }
                        }
                    },
                }
            }
            other => Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("this client does not serve {other}"),
            )),
        };
        self.respond(request.id, outcome, headers).await?;
        ended.map_or(Ok(()), Err)
    }

    async fn respond(
        &self,
        id: RequestId,
        outcome: Result<Value, ErrorObject>,
        headers: &McpHeaders,
    ) -> Result<(), Error> {
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        let body = serde_json::to_vec(&message).map_err(|e| Error::usage(e.to_string()))?;
        self.inner
            .transport
            .respond(OutboundResponse {
                id,
                body: Bytes::from(body),
                headers: headers.clone(),
            })
            .await
    }

    fn legacy_server_info(&self) -> Option<Value> {
        self.initialize_result()
            .and_then(|i| serde_json::to_value(i.server_info).ok())
    }
}

/// A legacy session's headers: its version, nothing mirrored.
fn session_headers(version: Option<&str>) -> McpHeaders {
    McpHeaders {
        protocol_version: version.map(str::to_owned),
        ..McpHeaders::default()
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
