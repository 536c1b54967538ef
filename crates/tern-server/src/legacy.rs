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
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tern_proto::accept::{Envelope, LOG_LEVELS, RequestMeta};
use tern_proto::decode::{DecodeError, Decoded, Message};
use tern_proto::finish::{encode_error, encode_notification, encode_result};
use tern_proto::{Inbound, McpError, Principal};
use tern_types::legacy::{
    Era, InitializeRequestParams, InitializeResult, SetLevelRequestParams, SubscribeRequestParams,
    methods as legacy, negotiate_version,
};
use tern_types::methods::Method;
use tern_types::{ClientCapabilities, Implementation, Request, RequestId, meta_keys};
use tokio::sync::{broadcast, oneshot};

use crate::clock::Clock;
use crate::notify::Sink;
use crate::registry::Registry;
use crate::round::Once;
use crate::round::bridge::Bridge;
use crate::server::{Admitted, Change, Reply, Route, Server};

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
    calls: Mutex<Calls>,
    next_id: AtomicI64,
    /// Distinguishes this session's request ids from another's in logs.
    tag: String,
    clock: Arc<dyn Clock>,
    /// When the session last saw a message or a call ended (the server's
    /// clock, seconds): the idle timeout counts from here.
    last_active: AtomicU64,
    /// The order of the last activity among all sessions: breaks ties of
    /// `last_active`, which has the clock's one-second grain.
    last_seq: AtomicU64,
}

/// The calls running in a session, by request id (BASE-3: an id names one
/// outstanding request of its sender). Each holds the sender half of its
/// stop signal: a cancellation or the session's end drops or fires it.
#[derive(Default)]
struct Calls {
    running: HashMap<RequestId, (u64, oneshot::Sender<()>)>,
    next: u64,
    closed: bool,
}

/// Why a session would not take one more call.
#[derive(Debug)]
pub(crate) enum CallRefused {
    /// A call with this id is still running (BASE-3).
    Duplicate,
    /// The session's budget of running calls is spent.
    Full(usize),
    /// The session ended.
    Ended,
}

/// One call running in a session: its place in the session's budget,
/// given back when it is dropped, however the call ends.
pub(crate) struct Call {
    session: Session,
    id: RequestId,
    seq: u64,
    stop: oneshot::Receiver<()>,
}

impl Call {
    /// Resolves when the call is cancelled (`notifications/cancelled`) or
    /// its session ends (`DELETE`, eviction, idle timeout).
    pub(crate) async fn stopped(&mut self) {
        let _ = (&mut self.stop).await;
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let mut calls = lock(&self.session.inner.calls);
        if calls
            .running
            .get(&self.id)
            .is_some_and(|(seq, _)| *seq == self.seq)
        {
            calls.running.remove(&self.id);
        }
        drop(calls);
        self.session.touch();
    }
}

/// Resource subscriptions one session may hold (`resources/subscribe`).
const MAX_SUBSCRIPTIONS: usize = 128;

/// The longest resource URI a session may subscribe to.
const MAX_SUBSCRIBED_URI: usize = 2048;

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
pub(crate) enum ClientAnswer {
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

/// The next number of the sequence that orders session activity.
fn next_seq() -> u64 {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    SEQ.fetch_add(1, Ordering::Relaxed)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Session {
    fn new(clock: Arc<dyn Clock>) -> Self {
        let tag: String = tern_seal::hex(&tern_seal::random_bytes::<4>());
        let now = clock.now();
        Session {
            inner: Arc::new(SessionInner {
                state: Mutex::default(),
                pending: Mutex::default(),
                calls: Mutex::default(),
                next_id: AtomicI64::new(1),
                tag,
                clock,
                last_active: AtomicU64::new(now),
                last_seq: AtomicU64::new(next_seq()),
            }),
        }
    }

    fn touch(&self) {
        let now = self.inner.clock.now();
        self.inner.last_active.fetch_max(now, Ordering::Relaxed);
        self.inner.last_seq.store(next_seq(), Ordering::Relaxed);
    }

    /// How recently the session was active, comparable across sessions:
    /// the least is the longest idle.
    pub(crate) fn recency(&self) -> (u64, u64) {
        (
            self.last_active(),
            self.inner.last_seq.load(Ordering::Relaxed),
        )
    }

    /// When the session last saw a message or a call ended, in the
    /// server's clock (Unix seconds).
    pub fn last_active(&self) -> u64 {
        self.inner.last_active.load(Ordering::Relaxed)
    }

    /// How many calls are running in this session.
    pub fn calls_running(&self) -> usize {
        lock(&self.inner.calls).running.len()
    }

    /// Whether the session ended ([`Session::close`]).
    pub fn is_closed(&self) -> bool {
        lock(&self.inner.calls).closed
    }

    /// Ends the session: every call running in it stops at once (its
    /// stream ends without a response), its questions to the client are
    /// forgotten, and no call starts in it any more.
    pub fn close(&self) {
        let mut calls = lock(&self.inner.calls);
        calls.closed = true;
        let running = std::mem::take(&mut calls.running);
        drop(calls);
        // Dropping the stop senders stops every call.
        drop(running);
        lock(&self.inner.pending).clear();
    }

    /// Takes a place for the call `id` among this session's running calls.
    pub(crate) fn begin(&self, id: &RequestId, max: usize) -> Result<Call, CallRefused> {
        let mut calls = lock(&self.inner.calls);
        if calls.closed {
            return Err(CallRefused::Ended);
        }
        if calls.running.contains_key(id) {
            return Err(CallRefused::Duplicate);
        }
        if calls.running.len() >= max {
            return Err(CallRefused::Full(max));
        }
        let seq = calls.next;
        calls.next += 1;
        let (tx, stop) = oneshot::channel();
        calls.running.insert(id.clone(), (seq, tx));
        Ok(Call {
            session: self.clone(),
            id: id.clone(),
            seq,
            stop,
        })
    }

    /// Stops the call `id`, if one runs (CANC-S4: an unknown id is
    /// ignored).
    fn cancel(&self, id: &RequestId) -> bool {
        let taken = lock(&self.inner.calls).running.remove(id);
        taken.is_some_and(|(_, stop)| stop.send(()).is_ok())
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

    /// Whether the client declared URL-mode elicitation at `initialize`.
    pub(crate) fn url_capable(&self) -> bool {
        lock(&self.inner.state).caps.elicitation_url()
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
    pub(crate) fn expect(&self) -> (RequestId, oneshot::Receiver<ClientAnswer>) {
        let id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id.clone(), tx);
        (id, rx)
    }

    pub(crate) fn forget(&self, id: &RequestId) {
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
        Session::new(self.inner.clock.clone())
    }

    /// Handles one message that arrived on `session`'s connection: modern
    /// requests are served statelessly as by [`Server::handle`]; a legacy
    /// `initialize` opens the session; requests inside an open session are
    /// legacy; responses go to the server-initiated request they answer.
    ///
    /// A legacy call holds one of the session's places for running calls
    /// ([`crate::config::SessionLimits::max_calls`]) until it ends; its id
    /// must not name a call still running (BASE-3). `notifications/
    /// cancelled` for it, or the session's end, stops it at once: it then
    /// answers [`Reply::Closed`] and nothing more is sent for it.
    pub async fn handle_in(&self, session: &Session, inbound: Inbound, sink: Sink) -> Reply {
        match self.decode(&inbound.body) {
            Ok(decoded) => {
                self.handle_in_decoded(session, decoded, inbound, sink)
                    .await
            }
            Err(refused) => {
                session.touch();
                refused
            }
        }
    }

    /// [`Server::handle_in`] of a message already decoded (by
    /// [`Server::decode`]).
    pub async fn handle_in_decoded(
        &self,
        session: &Session,
        decoded: Decoded,
        inbound: Inbound,
        sink: Sink,
    ) -> Reply {
        session.touch();
        let era = decoded.era(session.is_open());
        match decoded {
            Decoded {
                message: Message::Request(req),
                meta,
            } => match era {
                Some(Era::Legacy) => self.run_legacy_call(session, req, inbound, sink).await,
                _ => self.handle_request(req, meta, inbound, sink).await,
            },
            Decoded { message, .. } => self.handle_other(session, message),
        }
    }

    /// A notification or a response inside `session`'s connection.
    fn handle_other(&self, session: &Session, message: Message) -> Reply {
        match message {
            Message::Request(_) => Reply::Closed,
            Message::Notification(n) => {
                if n.method == legacy::NOTIFICATIONS_INITIALIZED && session.is_open() {
                    lock(&session.inner.state).initialized = true;
                }
                if n.method == "notifications/cancelled" && session.is_open() {
                    let id = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                    if let Some(id) = id
                        && session.cancel(&id)
                    {
                        tracing::debug!(session = %session.inner.tag, %id, "legacy call cancelled");
                    }
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

    /// One legacy request, holding its place among the session's running
    /// calls, stopped by a cancellation or the session's end.
    async fn run_legacy_call(
        &self,
        session: &Session,
        req: Request,
        inbound: Inbound,
        sink: Sink,
    ) -> Reply {
        // A ping is always answered: it holds nothing and runs nothing, and
        // a client's liveness check must not read a server that is busy
        // with its calls as one that is down.
        if req.method == legacy::PING {
            return Reply::Message {
                status: 200,
                body: encode_result(&req.id, &Map::new()),
            };
        }
        // A session's call holds a place among the requests running, as a
        // modern request does (SECURITY.md, "Every request").
        let _place = match self.running_place(&req.id, &inbound.principal) {
            Ok(place) => place,
            Err(refused) => return refused,
        };
        let max = self.inner.config.sessions.max_calls;
        let mut call = match session.begin(&req.id, max) {
            Ok(call) => call,
            Err(refused) => return self.call_refused(session, req.id, &refused),
        };
        tokio::select! {
            biased;
            () = call.stopped() => Reply::Closed,
            reply = self.handle_legacy(session, req, inbound.principal, sink) => reply,
        }
    }

    fn call_refused(&self, session: &Session, id: RequestId, refused: &CallRefused) -> Reply {
        let (status, e, limit) = match refused {
            CallRefused::Duplicate => (
                400,
                McpError::InvalidRequest(format!(
                    "request id {id} names a call still running in this session"
                )),
                "session_duplicate_id",
            ),
            // Busy, not malformed: the call was not run (issue 52).
            CallRefused::Full(max) => {
                let e = McpError::busy(
                    "session_calls",
                    format!("this session already has {max} calls running; wait for one to end"),
                    None,
                );
                (e.http_status(), e, "session_calls")
            }
            CallRefused::Ended => (
                404,
                McpError::InvalidRequest("this session has ended".to_owned()),
                "session_ended",
            ),
        };
        tracing::info!(session = %session.inner.tag, %id, limit, "legacy call refused");
        self.metrics().limit_reached(limit);
        Reply::Message {
            status,
            body: encode_error(Some(id), &e),
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
        let run = async {
            self.serve_legacy(session, req, principal, sink)
                .await
                .map_err(legacy_error)
        };
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
                    // What a session holds is bounded (SECURITY.md, "2025-11-25
                    // sessions"): a subscription is held until the session ends.
                    if p.uri.len() > MAX_SUBSCRIBED_URI {
                        return Err(McpError::invalid_params(format!(
                            "uri is longer than {MAX_SUBSCRIBED_URI} bytes"
                        )));
                    }
                    if s.subscriptions.len() >= MAX_SUBSCRIPTIONS
                        && !s.subscriptions.contains(&p.uri)
                    {
                        return Err(McpError::invalid_params(format!(
                            "this session already holds {MAX_SUBSCRIPTIONS} subscriptions"
                        )));
                    }
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
            // The modern-only methods, and the tasks extension's, have no
            // meaning in a session.
            |m| {
                reg.offers(m)
                    && !m.is_task()
                    && !matches!(m, Method::ServerDiscover | Method::SubscriptionsListen)
            },
            supported,
        )?;
        // Answers come only from the client's responses to this server's
        // own requests (SECURITY.md §3.8).
        a.params.remove("inputResponses");
        a.params.remove("requestState");
        // The gates both eras share; only a flow's delivery is the
        // session's own: its rounds are bridged to server-initiated requests.
        match self.dispatch(a, None, &principal, reg)? {
            Admitted::Done(result) => Ok(Some(result)),
            Admitted::Complete(a, handler) => self
                .run_rounds(a, Route::plain(handler), principal, sink, &mut Once)
                .await
                .map(Some),
            Admitted::Flow(a, _, route) => {
                let mut bridge = Bridge::new(self, session, sink.clone());
                self.run_rounds(a, route, principal, sink, &mut bridge)
                    .await
                    .map(Some)
            }
            // Refused by the resolve above.
            Admitted::Listen(a, _) | Admitted::Task(a) => Err(
                tern_proto::accept::method_not_found(a.method.as_str(), supported),
            ),
        }
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
}

impl Reply {
    pub(crate) fn error_for(id: Option<RequestId>, e: &McpError) -> Self {
        Reply::Message {
            status: e.http_status(),
            body: encode_error(id, e),
        }
    }

    /// The refusal of a message that did not decode. A request's echoes
    /// its id (BASE-5); a refused notification or response gets an HTTP
    /// error status and an error without id (HTTP-S6).
    pub(crate) fn refused(e: &DecodeError) -> Self {
        let id = if e.request { e.id.clone() } else { None };
        Reply::Message {
            status: e.http_status(),
            body: encode_error(id, &e.error),
        }
    }
}

/// An error as the legacy era can act on it. Nothing is sealed in a
/// session, so the uniform state refusal (with its `restart` advice) can
/// only mean a single-use key this call consumed was used before: say that
/// instead (the reason is still counted as `already_consumed`).
fn legacy_error(e: McpError) -> McpError {
    match e {
        McpError::InvalidState => McpError::InvalidParams {
            message: "This was already done once and cannot be repeated".into(),
            data: None,
        },
        other => other,
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
