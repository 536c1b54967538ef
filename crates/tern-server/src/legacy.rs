//! Legacy (2025-11-25) sessions: the same handlers serve a client of the
//! older era (DIGEST §3.4, COMPAT-S1, COMPAT-A2).
//!
//! A legacy-shaped `initialize` opens a session scoped to a connection
//! (stdio) or an HTTP session; the version, capabilities and identity it
//! fixes stand in for the `_meta` every modern request carries. Handlers do
//! not know the era. When one needs input, the round goes out as
//! server-initiated requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) on the request's own stream, all
//! at once; each response is validated exactly as an `inputResponses` entry
//! is (the kind asked, the schema, accept/decline/cancel, coherence), and
//! the handler runs again with them, under the same round ceiling. Nothing
//! is sealed on this path: the round lives in the server for the duration
//! of the request, and only responses to ids the server sent count, so a
//! client cannot inject an answer.

use std::collections::{BTreeSet, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tern_proto::accept::{Accepted, Envelope, LOG_LEVELS, RequestMeta};
use tern_proto::decode::{Message, decode_message};
use tern_proto::era::era_of;
use tern_proto::finish::{encode_error, encode_notification, encode_request};
use tern_proto::{Inbound, McpError, Principal};
use tern_seal::random_bytes;
use tern_types::legacy::{
    Era, InitializeRequestParams, InitializeResult, SetLevelRequestParams, SubscribeRequestParams,
    methods as legacy, negotiate_version,
};
use tern_types::methods::{FlowMethod, Method};
use tern_types::{ClientCapabilities, Implementation, Request, RequestId, meta_keys};
use tokio::sync::{broadcast, oneshot};

use crate::ask::{AskContext, Asked};
use crate::content::ToolResult;
use crate::extract::CallContext;
use crate::notify::Sink;
use crate::outcome::Outcome;
use crate::registry::Registry;
use crate::server::{Change, Reply, Server};

/// A legacy session: what `initialize` fixed, the resources subscribed to,
/// and the server-initiated requests waiting for the client. Cheap to
/// clone; a transport keeps one per connection (stdio) or per
/// `Mcp-Session-Id` (HTTP).
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

struct SessionInner {
    state: Mutex<SessionState>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<ClientAnswer>>>,
    next_id: AtomicI64,
    /// Distinguishes this session's request ids from another's in logs.
    tag: String,
}

#[derive(Default)]
struct SessionState {
    version: Option<String>,
    caps: ClientCapabilities,
    client_info: Option<Implementation>,
    log_level: Option<usize>,
    initialized: bool,
    subscriptions: BTreeSet<String>,
}

/// What the client sent back for one server-initiated request.
enum ClientAnswer {
    Result(Map<String, Value>),
    Error(Value),
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("tag", &self.inner.tag)
            .field("version", &self.version())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Session {
    fn new() -> Self {
        let tag: String = random_bytes::<4>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Session {
            inner: Arc::new(SessionInner {
                state: Mutex::default(),
                pending: Mutex::default(),
                next_id: AtomicI64::new(1),
                tag,
            }),
        }
    }

    /// The negotiated version, once `initialize` has run.
    pub fn version(&self) -> Option<String> {
        lock(&self.inner.state).version.clone()
    }

    /// Whether `initialize` opened this session.
    pub fn is_open(&self) -> bool {
        lock(&self.inner.state).version.is_some()
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        lock(&self.inner.state).initialized
    }

    /// Whether the client subscribed to `uri` (`resources/subscribe`).
    pub fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.inner.state).subscriptions.contains(uri)
    }

    /// How many server-initiated requests wait for the client.
    pub fn waiting(&self) -> usize {
        lock(&self.inner.pending).len()
    }

    fn meta(&self) -> RequestMeta {
        let s = lock(&self.inner.state);
        RequestMeta {
            protocol_version: s.version.clone().unwrap_or_default(),
            client_capabilities: s.caps.clone(),
            client_info: s.client_info.clone(),
            log_level: s.log_level,
            progress_token: None,
            raw: Map::new(),
        }
    }

    /// Registers a server-initiated request; its id is fresh in this
    /// session.
    fn expect(&self) -> (RequestId, oneshot::Receiver<ClientAnswer>) {
        let id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id.clone(), tx);
        (id, rx)
    }

    fn forget(&self, id: &RequestId) {
        lock(&self.inner.pending).remove(id);
    }

    /// Routes a client's response to the request it answers. A response to
    /// an id the server never sent, or a second one to the same id, is
    /// refused (false) and changes nothing.
    fn deliver(&self, id: &RequestId, answer: ClientAnswer) -> bool {
        let waiting = lock(&self.inner.pending).remove(id);
        match waiting {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }
}

impl Server {
    /// A new, unopened legacy session for one connection. A transport hands
    /// every message of that connection to [`Server::handle_in`] with it.
    pub fn session(&self) -> Session {
        Session::new()
    }

    /// Handles one message that arrived on `session`'s connection: modern
    /// requests are served statelessly as by [`Server::handle`]; a legacy
    /// `initialize` opens the session; requests inside an open session are
    /// legacy; responses go to the server-initiated request they answer.
    pub async fn handle_in(&self, session: &Session, inbound: Inbound, sink: Sink) -> Reply {
        let limits = &self.inner.config.limits;
        let decoded =
            std::panic::catch_unwind(AssertUnwindSafe(|| decode_message(&inbound.body, limits)));
        let message = match decoded {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => return Reply::error_for(e.id, &e.error),
            Err(panic) => return Reply::error_for(None, &self.panicked(panic.as_ref())),
        };
        match message {
            Message::Request(req) => match era_of(&req, session.is_open()) {
                Era::Modern => self.handle_request(req, None, inbound, sink).await,
                Era::Legacy => {
                    self.handle_legacy(session, req, inbound.principal, sink)
                        .await
                }
            },
            Message::Notification(n) => {
                if n.method == legacy::NOTIFICATIONS_INITIALIZED && session.is_open() {
                    lock(&session.inner.state).initialized = true;
                }
                Reply::Accepted
            }
            // BASE-7: outside a legacy session nothing was ever asked.
            Message::Result(_) | Message::Error(_) if !session.is_open() => {
                let e = McpError::InvalidRequest("clients never send responses".into());
                Reply::error_for(None, &e)
            }
            Message::Result(r) => {
                self.delivered(session, &r.id, ClientAnswer::Result(r.result));
                Reply::Accepted
            }
            Message::Error(e) => {
                if let Some(id) = &e.id {
                    let error = serde_json::to_value(&e.error).unwrap_or(Value::Null);
                    self.delivered(session, id, ClientAnswer::Error(error));
                }
                Reply::Accepted
            }
        }
    }

    fn delivered(&self, session: &Session, id: &RequestId, answer: ClientAnswer) {
        if !session.deliver(id, answer) {
            // SECURITY.md §3.8: only responses to ids this server sent, once.
            tracing::info!(session = %session.inner.tag, %id, "response to no waiting request ignored");
            self.metrics().reject("unsolicited_response");
        }
    }

    /// Feeds a legacy session's own stream (the HTTP `GET` stream, or the
    /// stdio connection) until `sink` closes: `notifications/*/list_changed`
    /// when the registry changes, and `notifications/resources/updated` for
    /// the resources the client subscribed to. Nothing is sent before the
    /// client said `notifications/initialized` (2025-11-25 lifecycle).
    pub async fn session_stream(&self, session: &Session, sink: Sink) {
        let mut changes = self.inner.changes.subscribe();
        loop {
            let change = tokio::select! {
                c = changes.recv() => c,
                () = sink.closed() => return,
            };
            let (method, params) = match change {
                Ok(Change::Tools) => ("notifications/tools/list_changed", json!({})),
                Ok(Change::Prompts) => ("notifications/prompts/list_changed", json!({})),
                Ok(Change::Resources) => ("notifications/resources/list_changed", json!({})),
                Ok(Change::Updated(uri)) if session.is_subscribed(&uri) => {
                    ("notifications/resources/updated", json!({ "uri": &*uri }))
                }
                Ok(Change::Updated(_)) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if !session.is_initialized() {
                continue;
            }
            if !sink.send(encode_notification(method, &params)).await {
                return;
            }
        }
    }

    async fn handle_legacy(
        &self,
        session: &Session,
        req: Request,
        principal: Principal,
        sink: Sink,
    ) -> Reply {
        let id = req.id.clone();
        let span = crate::server::request_span(&req, None);
        let method = crate::metrics::method_label(&req.method);
        let run = self.serve_legacy(session, req, principal, sink);
        self.answer(id, method, span, run, legacy_shape).await
    }

    async fn serve_legacy(
        &self,
        session: &Session,
        req: Request,
        principal: Principal,
        sink: Sink,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        let reg = self.registry();
        let params = || Value::Object(req.params.clone().unwrap_or_default());
        match req.method.as_str() {
            legacy::INITIALIZE => return self.initialize(session, params(), &reg).map(Some),
            legacy::PING => return Ok(Some(Map::new())),
            legacy::LOGGING_SET_LEVEL => {
                let p: SetLevelRequestParams = serde_json::from_value(params())
                    .map_err(|e| McpError::invalid_params(format!("Invalid params: {e}")))?;
                let level = LOG_LEVELS.iter().position(|l| *l == p.level.as_str());
                lock(&session.inner.state).log_level = level;
                return Ok(Some(Map::new()));
            }
            legacy::RESOURCES_SUBSCRIBE | legacy::RESOURCES_UNSUBSCRIBE => {
                let p: SubscribeRequestParams = serde_json::from_value(params())
                    .map_err(|e| McpError::invalid_params(format!("Invalid params: {e}")))?;
                let mut s = lock(&session.inner.state);
                if req.method == legacy::RESOURCES_SUBSCRIBE {
                    s.subscriptions.insert(p.uri);
                } else {
                    s.subscriptions.remove(&p.uri);
                }
                return Ok(Some(Map::new()));
            }
            _ => {}
        }
        let supported = &self.inner.supported;
        let mut a = Envelope::in_session(req, session.meta()).resolve(
            None,
            // The modern-only methods have no meaning in a session.
            |m| reg.offers(m) && !matches!(m, Method::ServerDiscover | Method::SubscriptionsListen),
            supported,
        )?;
        // Answers come only from the client's responses to this server's
        // own requests (SECURITY.md §3.8).
        a.params.remove("inputResponses");
        a.params.remove("requestState");
        if let Some(authz) = &self.inner.authorize {
            authz(&principal, &a)?;
        }
        if let Some(page) = self.list(&a, &reg) {
            return page.map(Some);
        }
        let result = match a.method {
            Method::CompletionComplete => {
                let handler = reg
                    .completion
                    .clone()
                    .ok_or_else(|| McpError::invalid_params("completions are not offered"))?;
                self.run_simple(handler, a, principal, sink).await?
            }
            m => match m.flow() {
                Some(flow) => {
                    self.invoke_legacy(session, a, flow, principal, sink, &reg)
                        .await?
                }
                None => return Err(McpError::invalid_params(format!("{m} is not served here"))),
            },
        };
        Ok(Some(result))
    }

    fn initialize(
        &self,
        session: &Session,
        params: Value,
        reg: &Registry,
    ) -> Result<Map<String, Value>, McpError> {
        let p: InitializeRequestParams = serde_json::from_value(params)
            .map_err(|e| McpError::invalid_params(format!("Invalid initialize params: {e}")))?;
        let version = negotiate_version(&p.protocol_version);
        {
            let mut s = lock(&session.inner.state);
            if s.version.is_some() {
                return Err(McpError::InvalidRequest(
                    "this session is already initialized".into(),
                ));
            }
            s.version = Some(version.to_owned());
            s.caps = p.capabilities;
            s.client_info = Some(p.client_info);
        }
        let mut capabilities = match crate::lists::capabilities(reg) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Some(Value::Object(r)) = capabilities.get_mut("resources") {
            r.insert("subscribe".into(), json!(true));
        }
        let info: Implementation = serde_json::from_value(self.inner.info.clone())
            .map_err(|e| McpError::Internal(e.to_string()))?;
        let result = InitializeResult {
            protocol_version: version.to_owned(),
            capabilities,
            server_info: info,
            instructions: self.inner.instructions.clone(),
            meta: None,
        };
        match serde_json::to_value(result) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(McpError::Internal(
                "the initialize result did not encode".into(),
            )),
        }
    }

    /// The re-run model in-process: run the handler; for each round it asks,
    /// ask the client, validate the answers as `inputResponses`, run again.
    async fn invoke_legacy(
        &self,
        session: &Session,
        a: Accepted,
        flow: FlowMethod,
        principal: Principal,
        sink: Sink,
        reg: &Registry,
    ) -> Result<Map<String, Value>, McpError> {
        let route = self.route(&a, flow, None, reg)?;
        let cfg = self.config();
        let ceiling = route
            .limits
            .max_rounds
            .map_or(cfg.max_rounds, |r| r.min(cfg.max_rounds));
        let flow_id = random_bytes::<16>();
        let caps = a.meta.client_capabilities.clone();
        let mut ask = AskContext {
            caps: caps.clone(),
            ..AskContext::default()
        };
        let mut continuation: Option<Vec<u8>> = None;
        let mut round = 0u8;
        // URL-mode elicitations the client accepted: once the handler is
        // past them, the out-of-band interaction is complete.
        let mut opened_urls: Vec<String> = Vec::new();
        loop {
            let ask_now = Arc::new(ask);
            let cx = CallContext {
                server: self.clone(),
                id: a.id.clone(),
                method: a.method,
                params: a.params.clone(),
                meta: a.meta.clone(),
                principal: principal.clone(),
                ask: crate::ask::Ask {
                    cx: ask_now.clone(),
                },
                continuation: continuation.clone(),
                sink: sink.clone(),
                uri_params: route.uri_params.clone(),
                round,
                flow_id,
            };
            let p = match route.handler.call(cx).await {
                Outcome::Complete(r) => {
                    for id in opened_urls {
                        let done = json!({ "elicitationId": id });
                        sink.send(encode_notification(
                            "notifications/elicitation/complete",
                            &done,
                        ))
                        .await;
                    }
                    return Ok(r);
                }
                Outcome::ToolError(msg) if flow == FlowMethod::ToolsCall => {
                    return Ok(ToolResult::error(msg).into_map());
                }
                Outcome::ToolError(msg) => return Err(McpError::Internal(msg)),
                Outcome::Error(e) => return Err(e),
                Outcome::InputRequired(p) => p,
            };
            round = round.saturating_add(1);
            if round > ceiling {
                return Err(McpError::TooManyRounds);
            }
            continuation = p.continuation.clone().or(continuation);
            let responses = self
                .ask_client(session, &sink, &p.requests, &mut opened_urls)
                .await?;
            ask = AskContext {
                caps: caps.clone(),
                verified: true,
                expect: p.requests.iter().map(Asked::expect).collect(),
                done: ask_now.carried_except(&p.requests),
                responses,
                accepted: Mutex::default(),
            };
        }
    }

    /// Sends every request of the round to the client at once and waits for
    /// each answer (or the timeout), keyed as the handler asked. A URL-mode
    /// elicitation gets the `elicitationId` 2025-11-25 requires; the ids the
    /// client accepted are added to `opened_urls`.
    async fn ask_client(
        &self,
        session: &Session,
        sink: &Sink,
        asked: &[Asked],
        opened_urls: &mut Vec<String>,
    ) -> Result<Map<String, Value>, McpError> {
        if asked.is_empty() {
            // A state-only round: nothing to ask; run again at once.
            return Ok(Map::new());
        }
        let url_ids: Vec<Option<String>> = asked
            .iter()
            .map(|a| {
                (a.request["params"]["mode"] == "url").then(|| {
                    random_bytes::<16>()
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect()
                })
            })
            .collect();
        let url_capable = lock(&session.inner.state).caps.elicitation_url();
        if !sink.is_open() && url_capable && url_ids.iter().all(Option::is_some) {
            // No stream to ask on (a JSON-only POST): URL-mode asks still
            // reach the client as -32042; it finishes them and retries
            // (2025-11-25 URLElicitationRequiredError).
            let elicitations = asked
                .iter()
                .zip(&url_ids)
                .map(|(a, id)| {
                    let p = &a.request["params"];
                    json!({"mode": "url", "elicitationId": id, "url": p["url"],
                           "message": p["message"]})
                })
                .collect();
            return Err(McpError::UrlElicitationRequired { elicitations });
        }
        let mut waits = Vec::with_capacity(asked.len());
        for (a, url_id) in asked.iter().zip(&url_ids) {
            let method = a.request["method"].as_str().unwrap_or_default().to_owned();
            let mut params = a
                .request
                .get("params")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if let (Some(id), Value::Object(p)) = (url_id, &mut params) {
                p.insert("elicitationId".into(), json!(id));
            }
            let (id, rx) = session.expect();
            if !sink.send(encode_request(&id, &method, &params)).await {
                session.forget(&id);
                for (_, _, earlier, _, _) in &waits {
                    session.forget(earlier);
                }
                return Err(McpError::InvalidRequest(
                    "the client's stream closed before it could be asked".into(),
                ));
            }
            waits.push((a.key.clone(), method, id, rx, url_id.clone()));
        }
        let patience = self.config().client_answer_timeout;
        let ids: Vec<RequestId> = waits.iter().map(|(_, _, id, _, _)| id.clone()).collect();
        let answers = async {
            let mut out = Map::new();
            for (key, method, _id, rx, url_id) in waits {
                let Ok(Ok(answer)) = tokio::time::timeout(patience, rx).await else {
                    return Err(McpError::InvalidRequest(format!(
                        "the client did not answer {method} in time"
                    )));
                };
                match answer {
                    ClientAnswer::Result(r) => {
                        if let Some(url) =
                            url_id.filter(|_| r.get("action") == Some(&json!("accept")))
                        {
                            opened_urls.push(url);
                        }
                        out.insert(key, Value::Object(r));
                    }
                    ClientAnswer::Error(e) => {
                        return Err(McpError::InvalidParams {
                            message: format!(
                                "the client refused {method}: {}",
                                e["message"].as_str().unwrap_or("no reason given")
                            ),
                            data: Some(json!({"key": key})),
                        });
                    }
                }
            }
            Ok(out)
        };
        let out = answers.await;
        // However the round ended, nothing of it waits any more: a late
        // answer is unsolicited.
        for id in &ids {
            session.forget(id);
        }
        out
    }
}

impl Reply {
    pub(crate) fn error_for(id: Option<RequestId>, e: &McpError) -> Self {
        Reply::Message {
            status: e.http_status(),
            body: encode_error(id, e),
        }
    }
}

/// A result as the legacy era writes it: no `resultType`, no cache hints,
/// no identity in `_meta` (the session's `initialize` gave it).
fn legacy_shape(result: &mut Map<String, Value>) {
    result.remove("resultType");
    result.remove("ttlMs");
    result.remove("cacheScope");
    let empty = match result.get_mut("_meta") {
        Some(Value::Object(m)) => {
            m.remove(meta_keys::SERVER_INFO);
            m.is_empty()
        }
        _ => false,
    };
    if empty {
        result.remove("_meta");
    }
}
