//! The server: configuration, the request pipeline (ARCHITECTURE.md, "A
//! call on the server") and the resume glue.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern_proto::accept::{
    Accepted, accept_request, check_mrtr_fields, check_name_header, method_not_found,
};
use tern_proto::decode::{Limits, Message, decode_message};
use tern_proto::finish::{
    encode_error, encode_notification, encode_result, input_required, stamp_complete,
};
use tern_proto::headers::{decode_header_value, header_matches};
use tern_proto::{Inbound, McpError, McpHeaders, Principal};
use tern_seal::{
    Claims, ConsumeKey, Consumed, Deployment, KeyRing, MemoryReplayStore, OpenPolicy, ReplayStore,
    check_deployment, random_bytes,
};
use tern_types::{CacheScope, Implementation, RequestId, meta_keys};
use tokio::sync::broadcast;

use crate::ask::{Ask, AskContext, Expect};
use crate::clock::{Clock, SystemClock};
use crate::extract::CallContext;
use crate::handler::{ErasedHandler, Handler, erase};
use crate::notify::Sink;
use crate::outcome::{Outcome, Pending};
use crate::registry::{PromptDef, Registry, ResourceDef, RouteLimits, TemplateDef, ToolDef};
use crate::state::{
    MAX_CONTINUATION, PAYLOAD_VERSION, StateBody, binding, method_code, params_digest,
    principal_fingerprint,
};

/// What the transport sends back for one inbound message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// One JSON-RPC response with its HTTP status.
    Message {
        /// The HTTP status (200 unless the error table says otherwise).
        status: u16,
        /// The response, on one line.
        body: Bytes,
    },
    /// A notification was accepted: HTTP 202, nothing on stdio.
    Accepted,
    /// The request ended without a response (its stream was closed).
    Closed,
}

impl Reply {
    fn error(id: Option<RequestId>, e: &McpError) -> Self {
        Reply::Message {
            status: e.http_status(),
            body: encode_error(id, e),
        }
    }
}

/// Decides whether a principal may make a request; runs on every round
/// (SECURITY.md §3.7). Return an error to refuse.
pub type Authorize = Arc<dyn Fn(&Principal, &Accepted) -> Result<(), McpError> + Send + Sync>;

/// Server limits and policies. The defaults are the secure ones of
/// SECURITY.md.
#[derive(Clone, Debug)]
pub struct Config {
    /// The most input rounds a flow may take (default 8).
    pub max_rounds: u8,
    /// The lifetime of one state (default 600 s, at most 3600 s).
    pub state_ttl: Duration,
    /// The whole flow's deadline, fixed in round 1 (default 3600 s).
    pub flow_ttl: Duration,
    /// Clock skew tolerated between instances (default 30 s).
    pub skew: Duration,
    /// Decoding limits for one message.
    pub limits: Limits,
    /// The most `inputResponses` entries read (default 64).
    pub max_input_responses: usize,
    /// The most bytes of `inputResponses` accepted (default 256 KiB plus
    /// 1 MiB for sampling answers).
    pub max_input_bytes: usize,
    /// Page size of the list methods (default 100).
    pub page_size: usize,
    /// `ttlMs` on cacheable results (default 0: stale at once).
    pub cache_ttl_ms: u64,
    /// `cacheScope` on cacheable results (default private, DIGEST §11 A19).
    pub cache_scope: CacheScope,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_rounds: 8,
            state_ttl: Duration::from_secs(600),
            flow_ttl: Duration::from_secs(3600),
            skew: Duration::from_secs(30),
            limits: Limits::default(),
            max_input_responses: 64,
            max_input_bytes: 256 * 1024 + 1024 * 1024,
            page_size: 100,
            cache_ttl_ms: 0,
            cache_scope: CacheScope::Private,
        }
    }
}

/// Counts of refused states by reason (SECURITY.md §3.5: the reason goes
/// to logs and metrics, never to the peer).
#[derive(Debug, Default)]
pub struct Metrics {
    rejected: Mutex<BTreeMap<&'static str, u64>>,
}

impl Metrics {
    pub(crate) fn reject(&self, reason: &'static str) {
        if let Ok(mut m) = self.rejected.lock() {
            *m.entry(reason).or_default() += 1;
        }
    }

    /// How many states were refused for `reason` (e.g. `"bad_tag"`).
    pub fn rejected(&self, reason: &str) -> u64 {
        self.rejected
            .lock()
            .map(|m| m.get(reason).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Tools,
    Prompts,
    Resources,
}

struct Inner {
    info: Value,
    instructions: Option<String>,
    registry: RwLock<Arc<Registry>>,
    changes: broadcast::Sender<Change>,
    config: Config,
    keys: KeyRing,
    resource_id: String,
    clock: Arc<dyn Clock>,
    authorize: Option<Authorize>,
    app_state: Option<Arc<dyn Any + Send + Sync>>,
    metrics: Metrics,
    supported: Vec<String>,
    replay: Arc<dyn ReplayStore>,
}

/// A Tern MCP server: cheap to clone, shared by every transport and task.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("resource_id", &self.inner.resource_id)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    config: Config,
    keys: Option<KeyRing>,
    resource_id: Option<String>,
    clock: Arc<dyn Clock>,
    authorize: Option<Authorize>,
    app_state: Option<Arc<dyn Any + Send + Sync>>,
    replay: Option<Arc<dyn ReplayStore>>,
    instances: u32,
    single_use: bool,
    idempotent: bool,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts building a server that names itself `name` `version` in every
    /// result's `_meta` (META-S12).
    pub fn builder(name: &str, version: &str) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            registry: Registry::default(),
            config: Config::default(),
            keys: None,
            resource_id: None,
            clock: Arc::new(SystemClock),
            authorize: None,
            app_state: None,
            replay: None,
            instances: 1,
            single_use: false,
            idempotent: false,
        }
    }

    pub(crate) fn replay_store(&self) -> Arc<dyn ReplayStore> {
        self.inner.replay.clone()
    }

    /// How long a flow's single-use marker lives: the longest state
    /// lifetime plus skew plus a margin, a constant counted on the store's
    /// clock (SECURITY.md §3.9).
    pub(crate) fn marker_ttl(&self) -> Duration {
        marker_ttl(&self.inner.config)
    }

    /// Refused-state counters.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub(crate) fn app_state(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.inner.app_state.clone()
    }

    fn registry(&self) -> Arc<Registry> {
        match self.inner.registry.read() {
            Ok(r) => r.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn update(&self, change: Change, f: impl FnOnce(&mut Registry)) {
        let mut guard = match self.inner.registry.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut next = (**guard).clone();
        f(&mut next);
        *guard = Arc::new(next);
        drop(guard);
        // Nobody listening is fine.
        let _ = self.inner.changes.send(change);
    }

    /// Adds (or replaces) a tool at run time and tells listeners
    /// (SUB-S7).
    pub fn add_tool(&self, tool: ToolDef) {
        self.update(Change::Tools, |r| {
            r.tools.retain(|t| t.name != tool.name);
            r.tools.push(tool);
        });
    }

    /// Removes a tool at run time and tells listeners.
    pub fn remove_tool(&self, name: &str) {
        self.update(Change::Tools, |r| r.tools.retain(|t| t.name != name));
    }

    /// Adds (or replaces) a prompt at run time and tells listeners.
    pub fn add_prompt(&self, prompt: PromptDef) {
        self.update(Change::Prompts, |r| {
            r.prompts.retain(|p| p.name != prompt.name);
            r.prompts.push(prompt);
        });
    }

    /// Adds (or replaces) a resource at run time and tells listeners.
    pub fn add_resource(&self, resource: ResourceDef) {
        self.update(Change::Resources, |r| {
            r.resources.retain(|x| x.uri != resource.uri);
            r.resources.push(resource);
        });
    }

    fn capabilities(&self, reg: &Registry) -> Value {
        let mut caps = Map::new();
        if !reg.tools.is_empty() {
            caps.insert("tools".into(), json!({"listChanged": true}));
        }
        if !reg.prompts.is_empty() {
            caps.insert("prompts".into(), json!({"listChanged": true}));
        }
        if !reg.resources.is_empty() || !reg.templates.is_empty() {
            caps.insert("resources".into(), json!({"listChanged": true}));
        }
        if reg.completion.is_some() {
            caps.insert("completions".into(), json!({}));
        }
        // Log notifications are sent only on opt-in (LOG-S1, LOG-S2).
        caps.insert("logging".into(), json!({}));
        Value::Object(caps)
    }

    /// Handles one inbound message. Notifications the handler sends go to
    /// `sink` before the reply (progress, logs, listen streams); dropping
    /// the sink's receiver cancels the request (CANC-S2).
    pub async fn handle(&self, inbound: Inbound, sink: Sink) -> Reply {
        let req = match decode_message(&inbound.body, &self.inner.config.limits) {
            Ok(Message::Request(r)) => r,
            // BASE-6: notifications get no answer; on HTTP a 202.
            Ok(Message::Notification(_)) => return Reply::Accepted,
            Ok(Message::Result(_) | Message::Error(_)) => {
                return Reply::error(
                    None,
                    &McpError::InvalidRequest("clients never send responses".into()),
                );
            }
            Err(e) => return Reply::error(e.id, &e.error),
        };
        let id = req.id.clone();
        let headers = inbound.headers.as_ref();
        let accepted = match accept_request(req, headers, &self.inner.supported) {
            Ok(a) => a,
            Err(e) => return Reply::error(Some(id), &e),
        };
        match self
            .dispatch(accepted, headers, inbound.principal, sink)
            .await
        {
            Ok(Some(result)) => Reply::Message {
                status: 200,
                body: encode_result(&id, &result),
            },
            Ok(None) => Reply::Closed,
            Err(e) => Reply::error(Some(id), &e),
        }
    }

    async fn dispatch(
        &self,
        a: Accepted,
        headers: Option<&McpHeaders>,
        principal: Principal,
        sink: Sink,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        let reg = self.registry();
        let known = match a.method.as_str() {
            "server/discover" | "subscriptions/listen" => true,
            "tools/list" | "tools/call" => !reg.tools.is_empty(),
            "prompts/list" | "prompts/get" => !reg.prompts.is_empty(),
            "resources/list" | "resources/templates/list" | "resources/read" => {
                !reg.resources.is_empty() || !reg.templates.is_empty()
            }
            "completion/complete" => reg.completion.is_some(),
            _ => false,
        };
        if !known {
            // Step 11.
            return Err(method_not_found(&a.method, &self.inner.supported));
        }
        // Step 12.
        check_name_header(&a, headers)?;
        check_mrtr_fields(&a)?;
        if let Some(authz) = &self.inner.authorize {
            authz(&principal, &a)?;
        }
        let info = self.inner.info.clone();
        let mut result = match a.method.as_str() {
            "server/discover" => {
                let mut r = Map::new();
                r.insert("supportedVersions".into(), json!(self.inner.supported));
                r.insert("capabilities".into(), self.capabilities(&reg));
                if let Some(i) = &self.inner.instructions {
                    r.insert("instructions".into(), json!(i));
                }
                self.cache_hints(&mut r);
                r
            }
            "tools/list" => self.page(&a, "tools", reg.tools.iter().map(|t| &t.entry))?,
            "prompts/list" => self.page(&a, "prompts", reg.prompts.iter().map(|p| &p.entry))?,
            "resources/list" => {
                self.page(&a, "resources", reg.resources.iter().map(|r| &r.entry))?
            }
            "resources/templates/list" => self.page(
                &a,
                "resourceTemplates",
                reg.templates.iter().map(|t| &t.entry),
            )?,
            "completion/complete" => {
                let handler = reg
                    .completion
                    .clone()
                    .ok_or_else(|| method_not_found(&a.method, &self.inner.supported))?;
                return self.run_simple(handler, a, principal, sink).await.map(Some);
            }
            "subscriptions/listen" => return self.listen(a, &reg, sink).await,
            _ => {
                return self
                    .invoke(a, headers, principal, sink, &reg)
                    .await
                    .map(Some);
            }
        };
        stamp_complete(&mut result, Some(&info));
        Ok(Some(result))
    }

    fn cache_hints(&self, r: &mut Map<String, Value>) {
        // CACHE-S1.
        r.insert("ttlMs".into(), json!(self.inner.config.cache_ttl_ms));
        r.insert(
            "cacheScope".into(),
            serde_json::to_value(self.inner.config.cache_scope).unwrap_or(json!("private")),
        );
    }

    fn page<'r>(
        &self,
        a: &Accepted,
        field: &str,
        items: impl Iterator<Item = &'r Map<String, Value>>,
    ) -> Result<Map<String, Value>, McpError> {
        let all: Vec<&Map<String, Value>> = items.collect();
        let start = match a.params.get("cursor") {
            None | Some(Value::Null) => 0,
            // PAGE-S3: an invalid cursor is -32602.
            Some(Value::String(c)) => decode_cursor(c)
                .filter(|n| *n <= all.len())
                .ok_or_else(|| McpError::invalid_params("Invalid cursor"))?,
            Some(_) => return Err(McpError::invalid_params("cursor must be a string")),
        };
        let size = self.inner.config.page_size.max(1);
        let end = (start + size).min(all.len());
        let mut r = Map::new();
        r.insert(
            field.into(),
            Value::Array(
                all[start..end]
                    .iter()
                    .map(|m| Value::Object((*m).clone()))
                    .collect(),
            ),
        );
        if end < all.len() {
            r.insert("nextCursor".into(), json!(encode_cursor(end)));
        }
        self.cache_hints(&mut r);
        Ok(r)
    }

    async fn listen(
        &self,
        a: Accepted,
        reg: &Registry,
        sink: Sink,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        let Some(Value::Object(filter)) = a.params.get("notifications") else {
            return Err(McpError::invalid_params(
                "params.notifications must be an object",
            ));
        };
        let wants = |k: &str| filter.get(k).and_then(Value::as_bool).unwrap_or(false);
        // SUB-S2, SUB-A2: acknowledge the honoured subset at once.
        let tools = wants("toolsListChanged") && !reg.tools.is_empty();
        let prompts = wants("promptsListChanged") && !reg.prompts.is_empty();
        let resources = wants("resourcesListChanged")
            && (!reg.resources.is_empty() || !reg.templates.is_empty());
        let mut honoured = Map::new();
        for (k, on) in [
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ] {
            if on {
                honoured.insert(k.into(), json!(true));
            }
        }
        let sub_id = serde_json::to_value(&a.id).unwrap_or(Value::Null);
        let meta = json!({ meta_keys::SUBSCRIPTION_ID: sub_id });
        let mut rx = self.inner.changes.subscribe();
        let ack = json!({"notifications": honoured, "_meta": meta});
        if !sink
            .send(encode_notification(
                "notifications/subscriptions/acknowledged",
                &ack,
            ))
            .await
        {
            return Ok(None);
        }
        loop {
            let change = tokio::select! {
                c = rx.recv() => c,
                () = sink.closed() => return Ok(None),
            };
            let method = match change {
                Ok(Change::Tools) if tools => "notifications/tools/list_changed",
                Ok(Change::Prompts) if prompts => "notifications/prompts/list_changed",
                Ok(Change::Resources) if resources => "notifications/resources/list_changed",
                Ok(_) => continue,
                // Missed changes: the client re-fetches anyway (SUB-A3).
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => {
                    // SUB-S9: end gracefully with the listen result.
                    let mut r = Map::new();
                    r.insert("_meta".into(), meta.clone());
                    stamp_complete(&mut r, None);
                    return Ok(Some(r));
                }
            };
            if !sink
                .send(encode_notification(method, &json!({"_meta": meta})))
                .await
            {
                return Ok(None);
            }
        }
    }

    async fn run_simple(
        &self,
        handler: Arc<dyn ErasedHandler>,
        a: Accepted,
        principal: Principal,
        sink: Sink,
    ) -> Result<Map<String, Value>, McpError> {
        let caps = a.meta.client_capabilities.clone();
        let cx = CallContext {
            server: self.clone(),
            id: a.id,
            method: a.method,
            params: a.params,
            meta: a.meta,
            principal,
            ask: Ask {
                cx: Arc::new(AskContext {
                    caps,
                    ..AskContext::default()
                }),
            },
            continuation: None,
            sink,
            uri_params: HashMap::new(),
            round: 0,
            flow_id: [0; 16],
        };
        match handler.call(cx).await {
            Outcome::Complete(mut m) => {
                stamp_complete(&mut m, Some(&self.inner.info));
                Ok(m)
            }
            Outcome::InputRequired(_) => Err(McpError::Internal(
                "this method cannot ask for input".into(),
            )),
            Outcome::ToolError(msg) => Err(McpError::Internal(msg)),
            Outcome::Error(e) => Err(e),
        }
    }

    /// `tools/call`, `prompts/get` and `resources/read`: the methods that may
    /// take several rounds.
    async fn invoke(
        &self,
        a: Accepted,
        headers: Option<&McpHeaders>,
        principal: Principal,
        sink: Sink,
        reg: &Registry,
    ) -> Result<Map<String, Value>, McpError> {
        let (handler, limits, uri_params) = self.route(&a, headers, reg)?;
        let cfg = &self.inner.config;
        let ceiling = limits
            .max_rounds
            .map_or(cfg.max_rounds, |r| r.min(cfg.max_rounds));
        let ttl = limits
            .state_ttl
            .map_or(cfg.state_ttl, |t| t.min(cfg.state_ttl))
            .min(Duration::from_secs(3600));
        let responses = check_input_responses(&a.params, cfg)?;
        let now = self.inner.clock.now();
        let m = method_code(&a.method);
        let pdig = params_digest(&a.method, &a.params)?;
        let pfp = principal_fingerprint(&principal);
        let bind = binding(&pfp, m, &pdig);
        let prev = match a.params.get("requestState") {
            None => None,
            Some(Value::String(token)) => Some(self.open_state(token, &bind, now, m, ceiling)?),
            Some(_) => {
                self.inner.metrics.reject("not_a_string");
                return Err(McpError::InvalidState);
            }
        };
        // Route-level single use: each state opens once, after
        // authorization and before the handler (SECURITY.md §3.9).
        if limits.single_use
            && let Some(body) = &prev
            && let Some(replayed) = self.consume_state(body, &pfp, limits.idempotent).await?
        {
            return Ok(replayed);
        }
        let caps = a.meta.client_capabilities.clone();
        let ask_cx = Arc::new(match &prev {
            Some(body) => AskContext {
                caps,
                verified: true,
                expect: body.expect.clone(),
                done: body.done.clone(),
                responses,
                accepted: Mutex::default(),
            },
            // Answers without a verified state from the round that asked
            // them are ignored (SECURITY.md §3.8).
            None => AskContext {
                caps,
                ..AskContext::default()
            },
        });
        let (round, fid, flow_exp) = match &prev {
            Some(b) => (b.round, b.fid, b.flow_exp),
            None => (0, random_bytes::<16>(), now + cfg.flow_ttl.as_secs()),
        };
        let continuation = prev
            .as_ref()
            .filter(|b| !b.app.is_empty())
            .map(|b| b.app.clone());
        let method = a.method.clone();
        let cx = CallContext {
            server: self.clone(),
            id: a.id,
            method: a.method,
            params: a.params,
            meta: a.meta,
            principal,
            ask: Ask { cx: ask_cx.clone() },
            continuation: continuation.clone(),
            sink,
            uri_params,
            round,
            flow_id: fid,
        };
        let info = &self.inner.info;
        match handler.call(cx).await {
            Outcome::Complete(mut r) => {
                if method == "resources/read" {
                    self.cache_hints(&mut r);
                }
                stamp_complete(&mut r, Some(info));
                if limits.idempotent && prev.is_some() {
                    self.keep_result(&fid, &pfp, &r).await;
                }
                Ok(r)
            }
            Outcome::ToolError(msg) if method == "tools/call" => {
                let mut r = crate::content::ToolResult::error(msg).into_map();
                stamp_complete(&mut r, Some(info));
                Ok(r)
            }
            Outcome::ToolError(msg) => Err(McpError::Internal(msg)),
            Outcome::Error(e) => Err(e),
            Outcome::InputRequired(p) => {
                let next_round = round.saturating_add(1);
                if next_round > ceiling {
                    return Err(McpError::TooManyRounds);
                }
                let app = p.continuation.clone().or(continuation).unwrap_or_default();
                let body = StateBody {
                    v: PAYLOAD_VERSION,
                    sid: random_bytes::<16>(),
                    fid,
                    flow_exp,
                    m,
                    round: next_round,
                    once: limits.single_use,
                    expect: p
                        .requests
                        .iter()
                        .map(|r| Expect {
                            key: r.key.clone(),
                            kind: r.kind.code(),
                            rdig: r.rdig,
                        })
                        .collect(),
                    // A key asked again this round drops its old answer.
                    done: ask_cx
                        .carried()
                        .into_iter()
                        .filter(|d| !p.requests.iter().any(|r| r.key == d.key))
                        .collect(),
                    app,
                };
                let carried: usize = body
                    .done
                    .iter()
                    .map(|d| d.answer.len() + d.key.len())
                    .sum::<usize>()
                    + body.app.len();
                if carried > MAX_CONTINUATION {
                    return Err(McpError::Internal(
                        "the state to carry exceeds its size cap".into(),
                    ));
                }
                let expires_at = (now + ttl.as_secs()).min(flow_exp.max(now));
                let claims = Claims {
                    issued_at: now,
                    expires_at,
                    binding: bind,
                    body,
                };
                let token = self
                    .inner
                    .keys
                    .seal_at(&self.inner.resource_id, &claims)
                    .map_err(|e| McpError::Internal(format!("cannot seal state: {e}")))?;
                let requests = requests_map(&p);
                input_required(&method, requests, Some(token), Some(info))
            }
        }
    }

    /// Consumes the state's id. A replay is refused, unless the route keeps
    /// results and this principal's result is there, which is returned.
    async fn consume_state(
        &self,
        body: &StateBody,
        pfp: &[u8; 32],
        idempotent: bool,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        let store = &self.inner.replay;
        match store
            .consume(
                ConsumeKey::for_flow(&body.sid, "state"),
                marker_ttl(&self.inner.config),
            )
            .await
        {
            Ok(Consumed::FirstUse) => Ok(None),
            Ok(Consumed::AlreadyUsed) => {
                if idempotent
                    && let Ok(Some(kept)) = store
                        .get_result(ConsumeKey::for_flow(&body.fid, "result"))
                        .await
                    && kept.owner == *pfp
                    && let Ok(r) = serde_json::from_slice::<Map<String, Value>>(&kept.result)
                {
                    tracing::info!("replayed state answered with its kept result");
                    return Ok(Some(r));
                }
                tracing::info!(reason = "already_consumed", "requestState refused");
                self.inner.metrics.reject("already_consumed");
                Err(McpError::InvalidState)
            }
            Err(e) => {
                tracing::warn!(error = %e, "replay store unavailable; failing closed");
                self.inner.metrics.reject("store_unavailable");
                Err(McpError::Unavailable)
            }
        }
    }

    async fn keep_result(&self, fid: &[u8; 16], pfp: &[u8; 32], result: &Map<String, Value>) {
        let bytes = serde_json::to_vec(result).unwrap_or_default();
        let key = ConsumeKey::for_flow(fid, "result");
        if let Err(e) = self
            .inner
            .replay
            .put_result(key, *pfp, bytes, marker_ttl(&self.inner.config))
            .await
        {
            // The effect happened; only the replay convenience is lost.
            tracing::warn!(error = %e, "could not keep the result for replays");
        }
    }

    fn open_state(
        &self,
        token: &str,
        bind: &tern_seal::Binding,
        now: u64,
        m: u8,
        ceiling: u8,
    ) -> Result<StateBody, McpError> {
        let policy = OpenPolicy {
            skew_secs: self.inner.config.skew.as_secs(),
            max_ttl_secs: 3600,
        };
        let opened = self
            .inner
            .keys
            .open_at::<StateBody>(&self.inner.resource_id, token, bind, now, &policy)
            .map_err(|e| {
                // SECURITY.md §3.5: the reason goes to logs and a counter only.
                tracing::info!(reason = e.reason(), "requestState refused");
                self.inner.metrics.reject(e.reason());
                McpError::InvalidState
            })?;
        let body = opened.into_claims().body;
        let skew = self.inner.config.skew.as_secs();
        let reason = if body.v != PAYLOAD_VERSION {
            Some("payload_version")
        } else if body.m != m {
            Some("method_mismatch")
        } else if now > body.flow_exp + skew {
            Some("flow_expired")
        } else if body.round > ceiling {
            Some("round_limit")
        } else {
            None
        };
        if let Some(r) = reason {
            tracing::info!(reason = r, "requestState refused");
            self.inner.metrics.reject(r);
            return Err(McpError::InvalidState);
        }
        Ok(body)
    }

    fn route(
        &self,
        a: &Accepted,
        headers: Option<&McpHeaders>,
        reg: &Registry,
    ) -> Result<Route, McpError> {
        match a.method.as_str() {
            "tools/call" => {
                let name = a
                    .params
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| McpError::invalid_params("params.name must be a string"))?;
                let tool = reg
                    .tools
                    .iter()
                    .find(|t| t.name == name)
                    .ok_or_else(|| McpError::invalid_params(format!("Unknown tool: {name}")))?;
                let args = match a.params.get("arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(m)) => Some(m),
                    Some(_) => return Err(McpError::invalid_params("arguments must be an object")),
                };
                // HTTP-A5 step 13.
                if let Some(h) = headers {
                    check_param_headers(tool, args, h)?;
                }
                Ok((tool.handler.clone(), tool.limits, HashMap::new()))
            }
            "prompts/get" => {
                let name = a
                    .params
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| McpError::invalid_params("params.name must be a string"))?;
                let prompt =
                    reg.prompts.iter().find(|p| p.name == name).ok_or_else(|| {
                        McpError::invalid_params(format!("Unknown prompt: {name}"))
                    })?;
                let args = a.params.get("arguments").and_then(Value::as_object);
                for req in &prompt.required_args {
                    if !args.is_some_and(|m| m.get(req).is_some_and(Value::is_string)) {
                        return Err(McpError::invalid_params(format!(
                            "Missing required argument: {req}"
                        )));
                    }
                }
                Ok((prompt.handler.clone(), prompt.limits, HashMap::new()))
            }
            _ => {
                let uri = a
                    .params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| McpError::invalid_params("params.uri must be a string"))?;
                if let Some(r) = reg.resources.iter().find(|r| r.uri == uri) {
                    return Ok((r.handler.clone(), r.limits, HashMap::new()));
                }
                for t in &reg.templates {
                    if let Some(vars) = t.matches(uri) {
                        return Ok((t.handler.clone(), RouteLimits::default(), vars));
                    }
                }
                // RES-S2.
                Err(McpError::InvalidParams {
                    message: format!("Resource not found: {uri}"),
                    data: Some(json!({"uri": uri})),
                })
            }
        }
    }
}

/// The handler a request resolves to, its limits and any template variables.
type Route = (Arc<dyn ErasedHandler>, RouteLimits, HashMap<String, String>);

fn requests_map(p: &Pending) -> Option<Map<String, Value>> {
    let m: Map<String, Value> = p
        .requests
        .iter()
        .map(|r| (r.key.clone(), r.request.clone()))
        .collect();
    (!m.is_empty()).then_some(m)
}

/// SECURITY.md §3.8: `inputResponses` must be an object, bounded in entries
/// and bytes; MRTR-E-A2: anything else is -32602.
fn check_input_responses(
    params: &Map<String, Value>,
    cfg: &Config,
) -> Result<Map<String, Value>, McpError> {
    match params.get("inputResponses") {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => {
            if m.len() > cfg.max_input_responses {
                return Err(McpError::invalid_params(format!(
                    "inputResponses has more than {} entries",
                    cfg.max_input_responses
                )));
            }
            let size: usize = m.iter().map(|(k, v)| k.len() + v.to_string().len()).sum();
            if size > cfg.max_input_bytes {
                return Err(McpError::invalid_params("inputResponses is too large"));
            }
            Ok(m.clone())
        }
        Some(_) => Err(McpError::invalid_params("inputResponses must be an object")),
    }
}

/// HTTP-XMH-S5: every annotated argument with a value needs its header,
/// equal after decoding; a header for a null or absent value is a mismatch
/// too (DIGEST §11 A14).
fn check_param_headers(
    tool: &ToolDef,
    args: Option<&Map<String, Value>>,
    h: &McpHeaders,
) -> Result<(), McpError> {
    let mismatch = |message: String| McpError::HeaderMismatch {
        message,
        supported: None,
    };
    for (header, path) in &tool.header_params {
        let mut v = args.map(|m| Value::Object(m.clone()));
        for seg in path {
            v = v.and_then(|x| x.get(seg).cloned());
        }
        let value = v.filter(|x| !x.is_null());
        match (h.param(header), value) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{header} sent for an absent argument"
                )));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!("Mcp-Param-{header} header is required")));
            }
            (Some(raw), Some(body)) => {
                let decoded = decode_header_value(raw)
                    .map_err(|e| mismatch(format!("Mcp-Param-{header}: {e}")))?;
                if !header_matches(&decoded, &body) {
                    return Err(mismatch(format!(
                        "Mcp-Param-{header} header does not match the argument"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn marker_ttl(cfg: &Config) -> Duration {
    cfg.flow_ttl.max(cfg.state_ttl) + cfg.skew + Duration::from_secs(60)
}

fn encode_cursor(offset: usize) -> String {
    format!("o{offset}")
}

fn decode_cursor(c: &str) -> Option<usize> {
    c.strip_prefix('o')?.parse().ok()
}

impl ServerBuilder {
    /// Registers a tool with a name, a description and a handler.
    #[must_use]
    pub fn tool<H: Handler<A>, A: 'static>(
        self,
        name: &str,
        description: &str,
        handler: H,
    ) -> Self {
        self.tool_def(ToolDef::new(name, description, handler))
    }

    /// Registers a fully described tool.
    #[must_use]
    pub fn tool_def(mut self, def: ToolDef) -> Self {
        self.single_use |= def.limits.single_use;
        self.idempotent |= def.limits.idempotent;
        self.registry.tools.retain(|t| t.name != def.name);
        self.registry.tools.push(def);
        self
    }

    /// Registers a prompt.
    #[must_use]
    pub fn prompt(mut self, def: PromptDef) -> Self {
        self.registry.prompts.push(def);
        self
    }

    /// Registers a resource.
    #[must_use]
    pub fn resource(mut self, def: ResourceDef) -> Self {
        self.registry.resources.push(def);
        self
    }

    /// Registers a resource template.
    #[must_use]
    pub fn resource_template(mut self, def: TemplateDef) -> Self {
        self.registry.templates.push(def);
        self
    }

    /// Registers the `completion/complete` handler.
    #[must_use]
    pub fn completion<H: Handler<A>, A: 'static>(mut self, handler: H) -> Self {
        self.registry.completion = Some(erase(handler));
        self
    }

    /// Sets the instructions `server/discover` returns.
    #[must_use]
    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.to_owned());
        self
    }

    /// Sets the configuration.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Seals states under `keys`. Without it the server makes an ephemeral
    /// key ring: states die with the process.
    #[must_use]
    pub fn keys(mut self, keys: KeyRing) -> Self {
        self.keys = Some(keys);
        self
    }

    /// The resource id bound into every state's AAD (SECURITY.md §3.1): the
    /// server's canonical URI, or a deployment id. Instances that share keys
    /// and this id can finish each other's flows.
    #[must_use]
    pub fn resource_id(mut self, id: &str) -> Self {
        self.resource_id = Some(id.to_owned());
        self
    }

    /// Uses `clock` instead of the system clock (tests).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Installs the authorization hook, run on every request and every
    /// round with the current principal (SECURITY.md §3.7).
    #[must_use]
    pub fn authorize(
        mut self,
        f: impl Fn(&Principal, &Accepted) -> Result<(), McpError> + Send + Sync + 'static,
    ) -> Self {
        self.authorize = Some(Arc::new(f));
        self
    }

    /// Application state handed to handlers through [`crate::State`].
    #[must_use]
    pub fn state<S: Any + Send + Sync>(mut self, state: S) -> Self {
        self.app_state = Some(Arc::new(state));
        self
    }

    /// The replay store single-use effects consume their keys in (default:
    /// a bounded in-memory store, fine for one process with an ephemeral
    /// key).
    #[must_use]
    pub fn replay_store(mut self, store: Arc<dyn ReplayStore>) -> Self {
        self.replay = Some(store);
        self
    }

    /// Declares how many instances serve this deployment. With more than
    /// one, the replay store must be shared (SECURITY.md §3.9).
    #[must_use]
    pub fn instances(mut self, n: u32) -> Self {
        self.instances = n;
        self
    }

    /// Builds the server, refusing the combinations of SECURITY.md §3.9
    /// that would let a replay through.
    pub fn build(self) -> Result<Server, BuildError> {
        let persistent_keys = self.keys.is_some();
        let store: Arc<dyn ReplayStore> = self
            .replay
            .unwrap_or_else(|| Arc::new(MemoryReplayStore::new()));
        let durability = store.durability();
        if self.idempotent && !store.keeps_results() {
            return Err(BuildError(
                "idempotent routes need a replay store that keeps results".into(),
            ));
        }
        // SECURITY.md §3.9: refuse combinations that would let a replay
        // through.
        check_deployment(&Deployment {
            persistent_keys,
            single_use_routes: self.single_use,
            instances: self.instances,
            store: durability,
            marker_ttl: marker_ttl(&self.config),
            max_state_ttl: self.config.state_ttl,
            skew: self.config.skew,
        })
        .map_err(|e| BuildError(e.to_string()))?;
        if self.config.max_rounds == 0 {
            return Err(BuildError("max_rounds must be at least 1".into()));
        }
        if self.config.state_ttl > Duration::from_secs(3600) || self.config.state_ttl.is_zero() {
            return Err(BuildError(
                "state_ttl must be between 1 s and 3600 s (SECURITY.md §3.4)".into(),
            ));
        }
        let keys = match self.keys {
            Some(k) => k,
            None => {
                KeyRing::ephemeral().map_err(|e| BuildError(format!("cannot make a key: {e}")))?
            }
        };
        let resource_id = self.resource_id.unwrap_or_else(|| {
            // A random deployment id: states from any other process never
            // open here.
            random_bytes::<16>()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        });
        let (changes, _) = broadcast::channel(64);
        let info = serde_json::to_value(&self.info).map_err(|e| BuildError(e.to_string()))?;
        Ok(Server {
            inner: Arc::new(Inner {
                info,
                instructions: self.instructions,
                registry: RwLock::new(Arc::new(self.registry)),
                changes,
                config: self.config,
                keys,
                resource_id,
                clock: self.clock,
                authorize: self.authorize,
                app_state: self.app_state,
                metrics: Metrics::default(),
                replay: store,
                supported: tern_proto::SUPPORTED_VERSIONS
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
            }),
        })
    }
}

/// A server configuration that cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid server configuration: {0}")]
pub struct BuildError(String);
