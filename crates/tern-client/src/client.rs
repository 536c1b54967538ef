//! The client: identity, capabilities, request ids, `_meta`, mirrored
//! headers, version negotiation, and the typed calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tern_proto::McpHeaders;
use tern_proto::decode::Message;
use tern_proto::headers::encode_header_value;
use tern_types::legacy::Era;
use tern_types::{
    ClientCapabilities, DiscoverResult, ErrorCode, Implementation, JsonRpcVersion,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    Notification, PROTOCOL_VERSION, RequestId, ResultType, meta_keys, methods,
};

use crate::Error;
use crate::budget::Budget;
use crate::encode::encode_request;
use crate::era::{Connection, EraPolicy};
use crate::options::CallOptions;
use crate::provider::{InputProvider, NoInput};
use crate::race::cancellable;
use crate::transport::{OutboundNotification, OutboundRequest, ServerTime, Transport};
use crate::xmh::{self, HeaderParam};

/// Builds a [`Client`].
pub struct ClientBuilder {
    transport: Arc<dyn Transport>,
    provider: Arc<dyn InputProvider>,
    info: Option<Implementation>,
    versions: Vec<String>,
    max_rounds: u32,
    flow_timeout: Duration,
    request_timeout: Duration,
    era_policy: EraPolicy,
    era_hint: Option<Era>,
    probe_timeout: Duration,
    tasks: bool,
    task_timeout: Duration,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("versions", &self.versions)
            .field("max_rounds", &self.max_rounds)
            .field("era_policy", &self.era_policy)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// How the server's era is found (default [`EraPolicy::Modern`];
    /// [`EraPolicy::Auto`] probes with `server/discover` and falls back to a
    /// 2025-11-25 session).
    #[must_use]
    pub fn era(mut self, policy: EraPolicy) -> Self {
        self.era_policy = policy;
        self
    }

    /// The era this server had last time (a cache across runs,
    /// COMPAT-C10). Under [`EraPolicy::Auto`] a legacy hint skips the probe
    /// and opens the session at once; if that fails, the client probes.
    #[must_use]
    pub fn era_hint(mut self, era: Option<Era>) -> Self {
        self.era_hint = era;
        self
    }

    /// How long the `server/discover` probe waits before taking silence
    /// for a legacy server (default 10 s, COMPAT-C-A1).
    #[must_use]
    pub fn probe_timeout(mut self, deadline: Duration) -> Self {
        self.probe_timeout = deadline;
        self
    }

    /// Who the client is, sent as `io.modelcontextprotocol/clientInfo` on
    /// every request (META-C8). The default names this crate.
    #[must_use]
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = Some(info);
        self
    }

    /// Sends no `clientInfo` (META-C8 allows configuring it off).
    #[must_use]
    pub fn without_info(mut self) -> Self {
        self.info = None;
        self
    }

    /// Answers the server's input requests; its [`kinds`](InputProvider::kinds)
    /// become the declared capabilities (META-A1). The default declares
    /// nothing.
    #[must_use]
    pub fn provider(mut self, provider: impl InputProvider) -> Self {
        self.provider = Arc::new(provider);
        self
    }

    /// The protocol versions the client speaks, preferred first (default
    /// `2026-07-28` only). Compared as opaque strings (VER-A1).
    #[must_use]
    pub fn versions(mut self, versions: Vec<String>) -> Self {
        if !versions.is_empty() {
            self.versions = versions;
        }
        self
    }

    /// The most requests one multi round-trip flow may take (default 10,
    /// MRTR-C-A3).
    #[must_use]
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// The deadline of a whole call, every round included (default 300 s).
    #[must_use]
    pub fn flow_timeout(mut self, deadline: Duration) -> Self {
        self.flow_timeout = deadline;
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`) on
    /// every request, so a server may run a long tool call as a task; the
    /// typed calls then poll it to its end, answering in-task questions
    /// through the same provider (default off, EXT-A1).
    #[must_use]
    pub fn tasks(mut self, on: bool) -> Self {
        self.tasks = on;
        self
    }

    /// The deadline of a task, from its creation to its result (default
    /// 1 h); past it the task is cancelled.
    #[must_use]
    pub fn task_timeout(mut self, deadline: Duration) -> Self {
        self.task_timeout = deadline;
        self
    }

    /// The deadline of one request/response exchange (default 60 s; CANC-7).
    #[must_use]
    pub fn request_timeout(mut self, deadline: Duration) -> Self {
        self.request_timeout = deadline;
        self
    }

    /// The client.
    pub fn build(self) -> Client {
        // An empty list falls back to this revision rather than panicking.
        let version = self
            .versions
            .first()
            .cloned()
            .unwrap_or_else(|| PROTOCOL_VERSION.to_owned());
        Client {
            inner: Arc::new(Inner {
                transport: self.transport,
                provider: self.provider,
                info: self.info,
                versions: self.versions,
                version: Mutex::new(version),
                next_id: AtomicI64::new(1),
                max_rounds: self.max_rounds,
                flow_timeout: self.flow_timeout,
                request_timeout: self.request_timeout,
                tools: RwLock::new(HashMap::new()),
                era_policy: self.era_policy,
                era_hint: self.era_hint,
                probe_timeout: self.probe_timeout,
                connection: RwLock::new(None),
                connecting: tokio::sync::Mutex::new(()),
                tasks: self.tasks,
                task_timeout: self.task_timeout,
            }),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) provider: Arc<dyn InputProvider>,
    pub(crate) info: Option<Implementation>,
    versions: Vec<String>,
    version: Mutex<String>,
    next_id: AtomicI64,
    pub(crate) max_rounds: u32,
    pub(crate) flow_timeout: Duration,
    pub(crate) request_timeout: Duration,
    /// `x-mcp-header` annotations of the tools seen in `tools/list`.
    tools: RwLock<HashMap<String, Vec<HeaderParam>>>,
    pub(crate) era_policy: EraPolicy,
    pub(crate) era_hint: Option<Era>,
    pub(crate) probe_timeout: Duration,
    /// The server's era and legacy session, once reached (COMPAT-C10).
    pub(crate) connection: RwLock<Option<Arc<Connection>>>,
    /// Held while the first call reaches the server.
    pub(crate) connecting: tokio::sync::Mutex<()>,
    /// Whether the tasks extension is declared.
    pub(crate) tasks: bool,
    pub(crate) task_timeout: Duration,
}

/// An MCP client over one [`Transport`]. Cheap to clone; calls may run
/// concurrently, and each carries its own `_meta` (STATE-S1): nothing of
/// one call (state, answers) is attached to another (MRTR-C9).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("info", &self.inner.info)
            .field("versions", &self.inner.versions)
            .finish_non_exhaustive()
    }
}

/// What the server's own requests on a call's stream get.
pub(crate) enum ServerRequests<'b> {
    /// Refused: a 2026-07-28 server never sends one.
    Refuse,
    /// Served, within the call's budget, with the session's headers on
    /// each response (2025-11-25).
    Serve {
        budget: &'b mut Budget,
        headers: &'b McpHeaders,
    },
}

/// One request as the client is about to send it.
pub(crate) struct Call<'a> {
    pub(crate) method: &'a str,
    pub(crate) params: Map<String, Value>,
    pub(crate) opts: &'a CallOptions,
    /// When the whole call must be over; a busy refusal is sent again only
    /// if the wait ends before it. `None`: no deadline but the request's
    /// own.
    pub(crate) deadline: Option<tokio::time::Instant>,
}

impl Client {
    /// A builder over `transport`.
    pub fn builder(transport: impl Transport) -> ClientBuilder {
        ClientBuilder {
            transport: Arc::new(transport),
            provider: Arc::new(NoInput),
            info: Some(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            )),
            versions: vec![PROTOCOL_VERSION.to_owned()],
            max_rounds: 10,
            flow_timeout: Duration::from_secs(300),
            request_timeout: Duration::from_secs(60),
            era_policy: EraPolicy::Modern,
            era_hint: None,
            probe_timeout: Duration::from_secs(10),
            tasks: false,
            task_timeout: Duration::from_secs(3600),
        }
    }

    /// A client over `transport` with the defaults: no input provider
    /// (`clientCapabilities: {}`), 10 rounds, 300 s per call.
    pub fn new(transport: impl Transport) -> Self {
        Client::builder(transport).build()
    }

    /// The capabilities declared on every request: what the provider can
    /// do (META-A1).
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = self.inner.provider.kinds().capabilities();
        if self.inner.tasks {
            let mut ext = Map::new();
            ext.insert(methods::TASKS_EXTENSION.into(), Value::Object(Map::new()));
            caps.extensions = Some(ext);
        }
        caps
    }

    /// The protocol version the next request will name.
    pub fn protocol_version(&self) -> String {
        self.inner
            .version
            .lock()
            .map(|v| v.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// `server/discover`: versions, capabilities, identity (VER-S4). A
    /// `-32022` is retried once with a common version (VER-C3). In a legacy
    /// session, the same shape made from the `initialize` answer.
    pub async fn discover(&self) -> Result<DiscoverResult, Error> {
        match &*self.connection().await? {
            Connection::Legacy(session) => return Client::discover_from(session),
            Connection::Modern(probed) => {
                let first = probed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                if let Some(d) = first {
                    return Ok(d);
                }
            }
        }
        self.simple(
            methods::SERVER_DISCOVER,
            Map::new(),
            &CallOptions::default(),
        )
        .await
    }

    /// One page of `tools/list`. Over a transport that mirrors headers,
    /// tools with invalid `x-mcp-header` annotations are left out and
    /// logged (HTTP-XMH-C3); the annotations of the rest are remembered for
    /// `Mcp-Param-*` headers (HTTP-XMH-C4).
    pub async fn list_tools(&self, cursor: Option<&str>) -> Result<ListToolsResult, Error> {
        let mut result: ListToolsResult = self
            .simple(
                methods::TOOLS_LIST,
                cursor_params(cursor),
                &CallOptions::default(),
            )
            .await?;
        if self.inner.transport.mirrors_headers() && self.era() == Some(Era::Modern) {
            let mut known = self
                .inner
                .tools
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            result.tools.retain(|tool| match xmh::annotations(&tool.input_schema) {
                Ok(params) => {
                    known.insert(tool.name.clone(), params);
                    true
                }
                Err(reason) => {
                    tracing::warn!(tool = %tool.name, %reason, "dropping a tool with an invalid x-mcp-header annotation (HTTP-XMH-C3)");
                    known.remove(&tool.name);
                    false
                }
            });
        }
        Ok(result)
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(&self, cursor: Option<&str>) -> Result<ListPromptsResult, Error> {
        self.simple(
            methods::PROMPTS_LIST,
            cursor_params(cursor),
            &CallOptions::default(),
        )
        .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources(&self, cursor: Option<&str>) -> Result<ListResourcesResult, Error> {
        self.simple(
            methods::RESOURCES_LIST,
            cursor_params(cursor),
            &CallOptions::default(),
        )
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.simple(
            methods::RESOURCES_TEMPLATES_LIST,
            cursor_params(cursor),
            &CallOptions::default(),
        )
        .await
    }

    /// Any request that is never answered with an interim result, parsed
    /// as `R`. `params` are the method's own; the client adds `_meta`.
    /// `input_required` here is a protocol violation (MRTR-C-A1).
    pub async fn request<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<R, Error> {
        if methods::FlowMethod::parse(method).is_some() {
            return Err(Error::usage(format!(
                "{method} may need several rounds: use its typed call"
            )));
        }
        self.simple(method, params, opts).await
    }

    /// Sends a notification with `params` (e.g. `notifications/cancelled` on
    /// stdio), in the session's version when the server is legacy.
    pub async fn notify(&self, method: &str, params: Map<String, Value>) -> Result<(), Error> {
        let version = match self.known().as_deref() {
            Some(Connection::Legacy(s)) => Some(s.version.clone()),
            _ => None,
        };
        self.notify_with(method, params, version.as_deref()).await
    }

    pub(crate) async fn notify_with(
        &self,
        method: &str,
        params: Map<String, Value>,
        version: Option<&str>,
    ) -> Result<(), Error> {
        let n = Notification {
            jsonrpc: JsonRpcVersion,
            method: method.to_owned(),
            params: Some(params),
        };
        let body = serde_json::to_vec(&n).map_err(|e| Error::usage(e.to_string()))?;
        self.inner
            .transport
            .notify(OutboundNotification {
                method: method.to_owned(),
                body: Bytes::from(body),
                headers: McpHeaders {
                    protocol_version: version.map(str::to_owned),
                    method: Some(method.to_owned()),
                    ..McpHeaders::default()
                },
            })
            .await
    }

    pub(crate) async fn simple<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<R, Error> {
        let deadline = self.flow_timeout(opts);
        let call = Call {
            method,
            params,
            opts,
            deadline: crate::transport::instant().checked_add(deadline),
        };
        let mut budget = Budget::new(self.max_rounds(opts)).until(deadline);
        let result = cancellable(opts.cancel.as_ref(), async {
            tokio::time::timeout(deadline, self.send(&call, &mut budget))
                .await
                .map_err(|_| Error::timeout(format!("{method} took longer than {deadline:?}")))?
        })
        .await?;
        match result_type(&result)? {
            ResultType::Complete => parse_result(method, result),
            // MRTR-C-A1, MRTR-S2.
            _ => Err(Error::protocol(format!(
                "the server answered {method} with input_required, which only tools/call, prompts/get and resources/read may use"
            ))),
        }
    }

    /// The deadline of a whole call made with `opts`.
    pub(crate) fn flow_timeout(&self, opts: &CallOptions) -> Duration {
        opts.flow_timeout.unwrap_or(self.inner.flow_timeout)
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends one request (one round) in the server's era and returns the
    /// raw result object. A legacy session the server forgot is opened
    /// again once. A legacy server's requests during it, and a
    /// `logging/setLevel` sent for it, draw on the call's `budget`, so that
    /// the rounds it starts count where the call's retries do (MRTR-C-A3).
    pub(crate) async fn send(
        &self,
        call: &Call<'_>,
        budget: &mut Budget,
    ) -> Result<Map<String, Value>, Error> {
        let mut reopened = false;
        loop {
            // Boxed: the first-contact probe and the legacy exchange are
            // large and rare; the modern path stays small.
            let connection = Box::pin(self.connection()).await?;
            let Connection::Legacy(session) = &*connection else {
                return self.send_modern(call).await;
            };
            if let Some(level) = &call.opts.log_level {
                Box::pin(self.set_session_log_level(session, level, budget)).await;
            }
            match Box::pin(self.send_legacy(call, Some(&session.version), budget)).await {
                Err(e) if e.is_session_expired() && !reopened => {
                    tracing::debug!("the server forgot the session; opening a new one");
                    reopened = true;
                    self.forget(&connection);
                }
                other => return other,
            }
        }
    }

    /// Sends one modern request. Fresh id, `_meta` and headers every time
    /// (MRTR-C6, MRTR-C8); on `-32022` retries once with a version both
    /// sides speak (VER-C3).
    pub(crate) async fn send_modern(&self, call: &Call<'_>) -> Result<Map<String, Value>, Error> {
        let mut retried = false;
        loop {
            let version = self.protocol_version();
            match self.send_once(call, &version).await {
                Err(e) if !retried && is_unsupported_version(&e) => {
                    retried = true;
                    let data = e
                        .remote_error()
                        .and_then(tern_types::ErrorObject::unsupported_protocol_version_data);
                    let supported = data.map(|d| d.supported).unwrap_or_default();
                    // Our preference order; the suite's mock rejects the
                    // first request even when it named a supported version,
                    // so the same version is a valid choice (VER-C3).
                    let Some(pick) = self
                        .inner
                        .versions
                        .iter()
                        .find(|v| supported.contains(v))
                        .cloned()
                    else {
                        return Err(e);
                    };
                    tracing::debug!(from = %version, to = %pick, "retrying with a supported protocol version (VER-C3)");
                    if let Ok(mut v) = self.inner.version.lock() {
                        *v = pick;
                    }
                }
                other => return other,
            }
        }
    }

    async fn send_once(&self, call: &Call<'_>, version: &str) -> Result<Map<String, Value>, Error> {
        let id = self.next_id();
        let progress_token = call.opts.progress.then(|| json!(format!("progress-{id}")));
        let mut meta = Map::new();
        meta.insert(meta_keys::PROTOCOL_VERSION.into(), json!(version));
        meta.insert(
            meta_keys::CLIENT_CAPABILITIES.into(),
            serde_json::to_value(
                call.opts
                    .capabilities
                    .clone()
                    .unwrap_or_else(|| self.capabilities()),
            )
            .unwrap_or_else(|_| json!({})),
        );
        if let Some(info) = &self.inner.info {
            meta.insert(
                meta_keys::CLIENT_INFO.into(),
                serde_json::to_value(info).unwrap_or(Value::Null),
            );
        }
        if let Some(level) = &call.opts.log_level {
            meta.insert(meta_keys::LOG_LEVEL.into(), json!(level));
        }
        if let Some(tp) = &call.opts.traceparent {
            meta.insert(meta_keys::TRACEPARENT.into(), json!(tp));
        }
        if let Some(token) = &progress_token {
            meta.insert(meta_keys::PROGRESS_TOKEN.into(), token.clone());
        }
        let headers = self.headers(call, version)?;
        let body = encode_request(&id, call, Some(&meta))?;
        let out = OutboundRequest {
            id: id.clone(),
            method: call.method.to_owned(),
            body: Bytes::from(body),
            headers,
            progress_token,
        };
        self.exchange(call, out, ServerRequests::Refuse).await
    }

    /// Sends `out` and reads its stream until the response to it, the one
    /// frame loop of both eras, and the one place a busy refusal is sent
    /// again (issue 52): a request the server refused as busy before
    /// anything of its answer arrived was not run, so the same request
    /// (its id free again, BASE-3) goes out again after a backoff with
    /// jitter, at most [`MAX_BUSY_RETRIES`](crate::MAX_BUSY_RETRIES) times
    /// and never past the call's deadline; then the refusal is the
    /// caller's.
    pub(crate) async fn exchange(
        &self,
        call: &Call<'_>,
        out: OutboundRequest,
        mut requests: ServerRequests<'_>,
    ) -> Result<Map<String, Value>, Error> {
        let mut retry = 0;
        loop {
            let mut heard = false;
            let e = match self
                .exchange_once(call, out.clone(), &mut requests, &mut heard)
                .await
            {
                Err(e) if !heard && e.is_busy() => e,
                done => return done,
            };
            let wait = crate::busy::backoff(retry, e.retry_after(), crate::busy::draw());
            let late = call
                .deadline
                .is_some_and(|d| crate::transport::instant() + wait >= d);
            if retry >= crate::busy::MAX_BUSY_RETRIES || wait > crate::busy::MAX_BUSY_WAIT || late {
                return Err(e);
            }
            retry += 1;
            tracing::debug!(method = call.method, retry, ?wait, error = %e, "the server is busy; sending the request again");
            tokio::time::sleep(wait).await;
        }
    }

    /// One sending of `out` and the reading of its stream. The request
    /// timeout bounds the time the server takes, summed over the exchange;
    /// the time spent answering the server's own requests (a person at a
    /// form) does not count, so a server that trickles notifications
    /// cannot hold a call open past it and a person is never hurried
    /// (CANC-7). `heard` is set once anything but the final answer
    /// arrived: the request was under way.
    async fn exchange_once(
        &self,
        call: &Call<'_>,
        out: OutboundRequest,
        requests: &mut ServerRequests<'_>,
        heard: &mut bool,
    ) -> Result<Map<String, Value>, Error> {
        let id = out.id.clone();
        let wait = self.inner.request_timeout;
        let mut clock = ServerTime::new(&*self.inner.transport, wait);
        let silent = || Error::timeout(format!("no response to {} within {wait:?}", call.method));
        let mut frames = clock
            .within(self.inner.transport.request(out))
            .await
            .ok_or_else(silent)??;
        loop {
            let frame = clock.within(frames.next()).await.ok_or_else(silent)?;
            let Some(frame) = frame else {
                return Err(Error::transport(format!(
                    "the response stream of {} ended without a response",
                    call.method
                )));
            };
            let frame = frame?;
            if matches!(frame, Message::Notification(_) | Message::Request(_)) {
                *heard = true;
            }
            match frame {
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
                Message::Request(r) => match requests {
                    // BASE-7, MRTR-S13: 2026-07-28 servers never send
                    // requests.
                    ServerRequests::Refuse => {
                        return Err(Error::protocol(format!(
                            "the server sent a JSON-RPC request ({}); servers never do",
                            r.method
                        )));
                    }
                    ServerRequests::Serve { budget, headers } => {
                        let began = crate::transport::instant();
                        // Boxed: answering holds a provider's future,
                        // which the modern path never needs to carry.
                        Box::pin(self.serve_request(call, r, budget, headers)).await?;
                        clock.deadline += crate::transport::instant() - began;
                    }
                },
            }
        }
    }

    /// The mirrored headers (HTTP-C8, HTTP-C10, HTTP-XMH-C4), recomputed for
    /// every request (MRTR-C8).
    fn headers(&self, call: &Call<'_>, version: &str) -> Result<McpHeaders, Error> {
        // HTTP-S11, and the tasks extension's `Mcp-Name: <taskId>`: one
        // list of which field each method names, in tern-types.
        let name = methods::Method::parse(call.method)
            .and_then(methods::Method::target_field)
            .and_then(|field| call.params.get(field))
            .and_then(Value::as_str)
            .map(encode_header_value);
        let mut params = Vec::new();
        if call.method == methods::TOOLS_CALL && self.inner.transport.mirrors_headers() {
            let tool = call
                .params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let known = self
                .inner
                .tools
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(ann) = known.get(tool) {
                let args = call.params.get("arguments").and_then(Value::as_object);
                params = xmh::param_headers(ann, args)?;
            }
        }
        Ok(McpHeaders {
            protocol_version: Some(version.to_owned()),
            method: Some(call.method.to_owned()),
            name,
            params,
        })
    }
}

fn is_unsupported_version(e: &Error) -> bool {
    e.remote_error()
        .is_some_and(|o| o.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
}

fn cursor_params(cursor: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(c) = cursor {
        m.insert("cursor".into(), json!(c));
    }
    m
}

/// Reads `resultType` first (BASE-A3): absent is complete (BASE-C13), an
/// unknown value is invalid (BASE-C12).
pub(crate) fn result_type(result: &Map<String, Value>) -> Result<ResultType, Error> {
    match result.get("resultType") {
        None => Ok(ResultType::Complete),
        Some(Value::String(s)) => match ResultType::parse(s) {
            ResultType::Other(s) => Err(Error::protocol(format!(
                "unknown resultType {s:?} (BASE-C12)"
            ))),
            known => Ok(known),
        },
        Some(other) => Err(Error::protocol(format!(
            "resultType must be a string, found {other}"
        ))),
    }
}

pub(crate) fn parse_result<R: DeserializeOwned>(
    method: &str,
    result: Map<String, Value>,
) -> Result<R, Error> {
    serde_json::from_value(Value::Object(result))
        .map_err(|e| Error::protocol(format!("malformed {method} result: {e}")))
}

/// `name` and optional `arguments` of `prompts/get`.
pub(crate) fn prompt_params(
    name: &str,
    arguments: Option<BTreeMap<String, String>>,
) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("name".into(), json!(name));
    if let Some(a) = arguments {
        p.insert("arguments".into(), json!(a));
    }
    p
}
