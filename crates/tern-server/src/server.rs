//! The server and its request pipeline (ARCHITECTURE.md, "A call on the
//! server"): decode, accept, resolve, authorize, dispatch, all inside a
//! panic boundary so one request's failure is that request's -32603 alone.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use tern_proto::accept::{Accepted, RequestMeta, accept, method_not_found};
use tern_proto::decode::{Decoded, Message, decode};
use tern_proto::finish::{encode_result, stamp_complete};
use tern_proto::{Inbound, McpError, McpHeaders, Principal};
use tern_seal::{Deployment, KeyRing, ReplayStore, check_deployment, random_bytes};
use tern_types::RequestId;
use tern_types::methods::{FlowMethod, Method};
use tokio::sync::broadcast;
use tracing::Instrument as _;

use crate::builder::BuildError;
use crate::clock::Clock;
use crate::config::Config;
use crate::handler::ErasedHandler;
use crate::metrics::{Metrics, RequestOutcome, method_label};
use crate::notify::Sink;
use crate::registry::{Registry, RouteLimits, state_missing};
use crate::round::Once;
use crate::round::sealed::Opened;

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

/// Decides whether a principal may make a request; runs on every round
/// (SECURITY.md §3.7). Return an error to refuse.
pub type Authorize = Arc<dyn Fn(&Principal, &Accepted) -> Result<(), crate::Error> + Send + Sync>;

/// Which list changed, for listen streams (SUB-S7), or which resource
/// changed, for legacy sessions subscribed to it.
#[derive(Clone, Debug)]
pub(crate) enum Change {
    Tools,
    Prompts,
    Resources,
    Updated(Arc<str>),
}

/// Application state by type ([`crate::State`]).
pub(crate) type AppState = HashMap<std::any::TypeId, Arc<dyn Any + Send + Sync>>;

pub(crate) struct Inner {
    pub(crate) info: Value,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: RwLock<Arc<Registry>>,
    pub(crate) changes: broadcast::Sender<Change>,
    pub(crate) config: Config,
    /// Swapped whole on a reload; a request holds the ring it started with.
    pub(crate) keys: RwLock<Arc<KeyRing>>,
    pub(crate) resource_id: String,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) authorize: Option<Authorize>,
    pub(crate) app_state: AppState,
    pub(crate) metrics: Metrics,
    /// Requests running now, against `config.requests`.
    pub(crate) running: crate::running::Running,
    pub(crate) supported: Vec<String>,
    pub(crate) replay: Arc<dyn ReplayStore>,
    /// The tasks this instance runs (the tasks extension).
    pub(crate) tasks: crate::tasks::Tasks,
    /// The deployment the builder checked, for routes added at run time.
    pub(crate) deployment: Deployment,
}

/// A Tern MCP server: cheap to clone, shared by every transport and task.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("resource_id", &self.inner.resource_id)
            .finish_non_exhaustive()
    }
}

/// The handler a flow request resolves to, its limits and any template
/// variables.
pub(crate) struct Route {
    pub(crate) handler: Arc<dyn ErasedHandler>,
    pub(crate) limits: RouteLimits,
    pub(crate) uri_params: HashMap<String, String>,
    /// Whether the route runs as a task (tools only).
    pub(crate) task: Option<crate::tasks::TaskSupport>,
}

impl Route {
    /// A handler with default limits and no template variables.
    pub(crate) fn plain(handler: Arc<dyn ErasedHandler>) -> Route {
        Route {
            handler,
            limits: RouteLimits::default(),
            uri_params: HashMap::new(),
            task: None,
        }
    }
}

impl Server {
    /// Refused-state and failure counters.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// A fresh random id for a new connection, for example the instance id
    /// of a stdio principal (SECURITY.md §3.6), so a transport needs no
    /// randomness of its own (STYLE.md: one home for randomness).
    pub fn new_connection_id(&self) -> [u8; 16] {
        random_bytes::<16>()
    }

    pub(crate) fn now(&self) -> u64 {
        self.inner.clock.now()
    }

    /// The server's clock: what lives beside the server and expires (a
    /// proxy's pending calls) reads the same time, so a test's manual
    /// clock moves it all.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.inner.clock.clone()
    }

    pub(crate) fn app_state<S: Any + Send + Sync>(&self) -> Option<Arc<S>> {
        let s = self.inner.app_state.get(&std::any::TypeId::of::<S>())?;
        s.clone().downcast::<S>().ok()
    }

    pub(crate) fn keys(&self) -> Arc<KeyRing> {
        match self.inner.keys.read() {
            Ok(k) => k.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces the key ring, e.g. when the key file was rotated: states
    /// sealed from now on use its active key, and only its keys open
    /// states. The resource id bound into states does not change.
    pub fn replace_keys(&self, keys: KeyRing) {
        let mut k = match self.inner.keys.write() {
            Ok(k) => k,
            Err(p) => p.into_inner(),
        };
        *k = Arc::new(keys);
    }

    /// The resource id bound into every state.
    pub fn resource_id(&self) -> &str {
        &self.inner.resource_id
    }

    pub(crate) fn registry(&self) -> Arc<Registry> {
        match self.inner.registry.read() {
            Ok(r) => r.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Handles one inbound message. Notifications the handler sends go to
    /// `sink` before the reply (progress, logs, listen streams); dropping
    /// the sink's receiver cancels the request (CANC-S2).
    ///
    /// Nothing a peer sends can take the process down: a panic anywhere
    /// below this call (decoding, an extractor, a handler, the framework)
    /// answers this request alone with -32603 and a correlation id that is
    /// also in the log and counted in [`Metrics::failed`].
    pub async fn handle(&self, inbound: Inbound, sink: Sink) -> Reply {
        match self.decode(&inbound.body) {
            Ok(decoded) => self.handle_decoded(decoded, inbound, sink).await,
            Err(refused) => refused,
        }
    }

    /// Decodes one message with this server's limits, inside the panic
    /// boundary; a message that does not decode gets its refusal. A
    /// transport that must look at a message before handing it over (its
    /// method, its era) decodes it here and passes the result to
    /// [`Server::handle_decoded`] or [`Server::handle_in_decoded`], so the
    /// bytes are parsed once.
    pub fn decode(&self, body: &[u8]) -> Result<Decoded, Reply> {
        let limits = &self.inner.config.limits;
        match std::panic::catch_unwind(AssertUnwindSafe(|| decode(body, limits))) {
            Ok(Ok(decoded)) => Ok(decoded),
            Ok(Err(e)) => Err(Reply::refused(&e)),
            Err(panic) => Err(Reply::error_for(None, &self.panicked(panic.as_ref()))),
        }
    }

    /// [`Server::handle`] of a message already decoded (by
    /// [`Server::decode`]); `inbound` carries its headers and principal.
    pub async fn handle_decoded(&self, decoded: Decoded, inbound: Inbound, sink: Sink) -> Reply {
        match decoded {
            // Boxed: the request's future is several KiB, and every move of
            // an unboxed one (into a task, through wrappers) copies all of it.
            Decoded {
                message: Message::Request(r),
                meta,
            } => Box::pin(self.handle_request(r, meta, inbound, sink)).await,
            // BASE-6: notifications get no answer; on HTTP a 202.
            Decoded {
                message: Message::Notification(_),
                ..
            } => Reply::Accepted,
            // Without a session nothing was asked of the client.
            Decoded {
                message: Message::Result(_) | Message::Error(_),
                ..
            } => {
                let e = McpError::InvalidRequest("clients never send responses".into());
                Reply::error_for(None, &e)
            }
        }
    }

    /// One decoded modern request, inside the panic boundary; `meta` is
    /// its `_meta` when decoding already read it.
    pub(crate) async fn handle_request(
        &self,
        req: tern_types::Request,
        meta: Option<Box<RequestMeta>>,
        inbound: Inbound,
        sink: Sink,
    ) -> Reply {
        let id = req.id.clone();
        let _place = match self.running_place(&id, &inbound.principal) {
            Ok(place) => place,
            Err(refused) => return refused,
        };
        let span = request_span(&req, meta.as_ref().map(|m| &m.raw));
        let headers = inbound.headers.as_ref();
        let method = method_label(&req.method);
        let run = Box::pin(self.serve(req, meta, headers, inbound.principal, sink));
        self.answer(id, method, span, run, |_| {}).await
    }

    /// A place among the requests running (per principal and in all), held
    /// until the request ends, in either era; past the budget, the 429
    /// reply to send instead.
    pub(crate) fn running_place(
        &self,
        id: &RequestId,
        principal: &Principal,
    ) -> Result<crate::running::Place<'_>, Reply> {
        self.inner
            .running
            .enter(principal, &self.inner.config.requests)
            .map_err(|full| {
                self.metrics().limit_reached(full.limit());
                let e = full.refusal();
                Reply::Message {
                    status: e.http_status(),
                    body: tern_proto::finish::encode_error(Some(id.clone()), &e),
                }
            })
    }

    /// Runs one request inside the panic boundary and turns what it gave
    /// into the reply: the result (given its era's `shape`), nothing for a
    /// closed stream, or the error, internal detail logged not sent. Every
    /// request is logged at info and counted, with its outcome and time.
    pub(crate) async fn answer(
        &self,
        id: RequestId,
        method: &'static str,
        span: tracing::Span,
        run: impl Future<Output = Result<Option<Map<String, Value>>, McpError>>,
        shape: fn(&mut Map<String, Value>),
    ) -> Reply {
        let started = self.inner.clock.instant();
        let ran = AssertUnwindSafe(run)
            .catch_unwind()
            .instrument(span.clone())
            .await;
        let (reply, outcome, code) = match ran {
            Ok(Ok(Some(mut result))) => {
                let outcome =
                    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                        RequestOutcome::InputRequired
                    } else {
                        RequestOutcome::Complete
                    };
                shape(&mut result);
                let reply = Reply::Message {
                    status: 200,
                    body: encode_result(&id, &result),
                };
                (reply, outcome, None)
            }
            Ok(Ok(None)) => (Reply::Closed, RequestOutcome::Closed, None),
            Ok(Err(e)) => {
                let outcome = if matches!(e, McpError::InvalidState) {
                    RequestOutcome::Rejected
                } else {
                    RequestOutcome::Error
                };
                let e = self.reported(e);
                let code = e.code().0;
                (Reply::error_for(Some(id), &e), outcome, Some(code))
            }
            Err(panic) => {
                let e = self.panicked(panic.as_ref());
                let code = e.code().0;
                (
                    Reply::error_for(Some(id), &e),
                    RequestOutcome::Error,
                    Some(code),
                )
            }
        };
        let took = self.inner.clock.instant() - started;
        self.metrics().request(method, outcome, took);
        #[expect(
            clippy::cast_precision_loss,
            reason = "a duration in milliseconds for people"
        )]
        let ms = took.as_micros() as f64 / 1000.0;
        tracing::info!(parent: &span, outcome = outcome.as_str(), code, ms, "request");
        reply
    }

    /// HTTP-A5 in order: the envelope (steps 6–10), the method and
    /// `Mcp-Name` (11, 12), authorization, then the method itself.
    async fn serve(
        &self,
        req: tern_types::Request,
        meta: Option<Box<RequestMeta>>,
        headers: Option<&McpHeaders>,
        principal: Principal,
        sink: Sink,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        // Everything up to the method's own work is synchronous and kept
        // out of this future, which is copied whole into its box.
        match self.accept_and_route(req, meta, headers, &principal)? {
            Admitted::Done(result) => Ok(Some(result)),
            // Boxed, as is `completion/complete`: inline, their futures
            // would each add their size to every request's.
            Admitted::Listen(a, reg) => Box::pin(self.listen(a, &reg, sink)).await,
            Admitted::Complete(a, handler) => {
                Box::pin(self.run_rounds(a, Route::plain(handler), principal, sink, &mut Once))
                    .await
                    .map(Some)
            }
            Admitted::Flow(a, flow, route) => self.invoke(a, flow, route, principal, sink).await,
            Admitted::Task(a) => {
                let mut result = Box::pin(self.task_method(&a, &principal)).await?;
                stamp_complete(&mut result, Some(&self.inner.info));
                Ok(Some(result))
            }
        }
    }

    /// The synchronous part of [`Server::serve`]: the accept steps (HTTP-A5
    /// 6–12), then the gates every era shares ([`Server::dispatch`]).
    fn accept_and_route(
        &self,
        req: tern_types::Request,
        meta: Option<Box<RequestMeta>>,
        headers: Option<&McpHeaders>,
        principal: &Principal,
    ) -> Result<Admitted, McpError> {
        let supported = &self.inner.supported;
        let reg = self.registry();
        let envelope = accept(req, meta, headers, supported)?;
        let a = envelope.resolve(headers, |m| reg.offers(m), supported)?;
        self.dispatch(a, headers, principal, reg)
    }

    /// The one dispatch of an accepted request, whichever era it came in
    /// (2026-07-28, a 2025-11-25 session, the tasks extension, the proxy
    /// serving either): authorization on every round (SECURITY.md §3.7),
    /// the lists, then the method, a flow's route and its task gate. The
    /// eras differ only in how a flow's rounds are delivered, which the
    /// caller chooses once this has passed.
    pub(crate) fn dispatch(
        &self,
        a: Accepted,
        headers: Option<&McpHeaders>,
        principal: &Principal,
        reg: Arc<Registry>,
    ) -> Result<Admitted, McpError> {
        let supported = &self.inner.supported;
        if let Some(authz) = &self.inner.authorize {
            authz(principal, &a).map_err(McpError::from)?;
        }
        if let Some(page) = self.list(&a, &reg) {
            let mut result = page?;
            stamp_complete(&mut result, Some(&self.inner.info));
            return Ok(Admitted::Done(result));
        }
        match a.method {
            Method::ServerDiscover => {
                let mut result = self.discover(&reg);
                stamp_complete(&mut result, Some(&self.inner.info));
                Ok(Admitted::Done(result))
            }
            Method::SubscriptionsListen => Ok(Admitted::Listen(a, reg)),
            m if m.is_task() => Ok(Admitted::Task(a)),
            Method::CompletionComplete => {
                let handler = reg
                    .completion
                    .clone()
                    .ok_or_else(|| method_not_found(a.method.as_str(), supported))?;
                Ok(Admitted::Complete(a, handler))
            }
            m => match m.flow() {
                Some(flow) => {
                    let route = self.route(&a, flow, headers, &reg)?;
                    // The tasks extension: a tool that runs only as a task
                    // is refused before it runs when the request cannot take
                    // one (EXT-2), in every era: a 2025-11-25 session never
                    // can, whatever it declared, and under the bridge the
                    // tool would run inline, again from the top on every
                    // question.
                    if route.task == Some(crate::tasks::TaskSupport::Required)
                        && !crate::tasks::takes_tasks(a.method, &a.meta)
                    {
                        return Err(crate::tasks::task_required(&a.meta));
                    }
                    Ok(Admitted::Flow(a, flow, route))
                }
                None => Err(method_not_found(m.as_str(), supported)),
            },
        }
    }

    /// `tools/call`, `prompts/get` and `resources/read` once routed: open
    /// the flow (its state verified), then the rounds, delivered sealed.
    async fn invoke(
        &self,
        mut a: Accepted,
        flow: FlowMethod,
        route: Route,
        principal: Principal,
        sink: Sink,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        match self
            .open_flow(&mut a, flow, &principal, route.limits)
            .await?
        {
            Opened::Run(mut sealed) => self
                .run_rounds(a, route, principal, sink, &mut sealed)
                .await
                .map(Some),
            Opened::Replayed(kept) => Ok(Some(kept)),
        }
    }

    /// An internal error's detail goes to the log under a correlation id;
    /// the peer gets the generic -32603 with that id (SECURITY.md §3.5).
    pub(crate) fn reported(&self, e: McpError) -> McpError {
        match e {
            McpError::Internal(detail) => {
                let correlation_id = correlation_id();
                tracing::error!(%correlation_id, %detail, "request failed inside the server");
                self.metrics().fail("internal");
                McpError::InternalLogged { correlation_id }
            }
            other => other,
        }
    }

    pub(crate) fn panicked(&self, panic: &(dyn Any + Send)) -> McpError {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "a request panicked; answered -32603");
        self.metrics().fail("panic");
        McpError::InternalLogged { correlation_id }
    }

    /// Swaps in a changed copy of the routes, then tells listeners of the
    /// kinds `f` says changed.
    pub(crate) fn update(&self, f: impl FnOnce(&mut Registry) -> Vec<Change>) {
        let mut guard = match self.inner.registry.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut next = (**guard).clone();
        let changed = f(&mut next);
        *guard = Arc::new(next);
        drop(guard);
        for change in changed {
            // Nobody listening is fine.
            let _ = self.inner.changes.send(change);
        }
    }

    /// Tells the legacy sessions subscribed to `uri` that it changed
    /// (2025-11-25 `notifications/resources/updated`, on each session's own
    /// stream). A modern client re-reads instead; nothing is kept.
    pub fn resource_updated(&self, uri: &str) {
        let _ = self.inner.changes.send(Change::Updated(uri.into()));
    }

    /// A route added at run time passes the same startup guards as one
    /// given to the builder (SECURITY.md §3.9).
    pub(crate) fn admit(
        &self,
        (kind, name): (&str, &str),
        handler: &Arc<dyn ErasedHandler>,
        limits: &RouteLimits,
    ) -> Result<(), BuildError> {
        if let Some(missing) = state_missing(kind, name, handler, &self.inner.app_state) {
            return Err(BuildError::new(missing));
        }
        if limits.idempotent && !self.inner.replay.keeps_results() {
            return Err(BuildError::new(
                "idempotent routes need a replay store that keeps results",
            ));
        }
        check_deployment(&Deployment {
            single_use_routes: self.inner.deployment.single_use_routes || limits.single_use,
            ..self.inner.deployment
        })
        .map_err(|e| BuildError::new(e.to_string()))
    }
}

/// A short random id naming one failure's log line.
fn correlation_id() -> String {
    tern_seal::hex(&random_bytes::<8>())
}

/// How a request's span joins its caller's trace, when a tracing exporter
/// is configured ([`on_trace_parent`]).
static TRACE_PARENT: std::sync::OnceLock<fn(&tracing::Span, &str)> = std::sync::OnceLock::new();

/// Installs `join`, called with each request's span (one per round) and the
/// well-formed W3C `traceparent` of its `_meta` (META-3), so an exporter
/// layer (OpenTelemetry's `set_parent`) continues the caller's trace. Once
/// per process; false if one was installed already.
pub fn on_trace_parent(join: fn(&tracing::Span, &str)) -> bool {
    TRACE_PARENT.set(join).is_ok()
}

/// The span every log line of a request carries: its method, and the
/// tool, prompt or resource it names; the round is recorded once known.
/// `meta` is its `_meta` when that was already taken out of the params.
pub(crate) fn request_span(
    req: &tern_types::Request,
    meta: Option<&Map<String, Value>>,
) -> tracing::Span {
    let span = tracing::info_span!(
        "request",
        method = %req.method,
        tool = tracing::field::Empty,
        prompt = tracing::field::Empty,
        uri = tracing::field::Empty,
        round = tracing::field::Empty,
        trace_id = tracing::field::Empty,
        parent_id = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let Some(p) = req.params.as_ref() else {
        return span;
    };
    // The caller's W3C trace context (META-3), so a log line joins its
    // trace; recorded only when well formed.
    let traceparent = meta
        .or_else(|| p.get("_meta").and_then(Value::as_object))
        .and_then(|m| m.get(tern_types::meta_keys::TRACEPARENT))
        .and_then(Value::as_str);
    if let Some(tp) = traceparent
        && let Some((trace, parent)) = trace_context(tp)
    {
        span.record("trace_id", trace);
        span.record("parent_id", parent);
        if let Some(join) = TRACE_PARENT.get() {
            join(&span, tp);
        }
    }
    let (field, key) = match req.method.as_str() {
        "tools/call" => ("tool", "name"),
        "prompts/get" => ("prompt", "name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => ("uri", "uri"),
        _ => return span,
    };
    if let Some(v) = p.get(key).and_then(Value::as_str) {
        span.record(field, v);
    }
    span
}

/// The trace id and parent id of a `traceparent` value
/// (`00-<32 hex>-<16 hex>-<2 hex>`), or `None` if it is not one.
fn trace_context(v: &str) -> Option<(&str, &str)> {
    let parts: Vec<&str> = v.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    match parts[..] {
        [version, trace, parent, flags]
            if hex(version, 2)
                && version != "ff"
                && hex(trace, 32)
                && hex(parent, 16)
                && hex(flags, 2)
                && trace.bytes().any(|b| b != b'0')
                && parent.bytes().any(|b| b != b'0') =>
        {
            Some((trace, parent))
        }
        _ => None,
    }
}

/// What [`Server::accept_and_route`] leaves to do.
pub(crate) enum Admitted {
    /// Answered already.
    Done(Map<String, Value>),
    /// `subscriptions/listen`.
    Listen(Accepted, Arc<Registry>),
    /// `completion/complete`, with its handler.
    Complete(Accepted, Arc<dyn ErasedHandler>),
    /// A multi round-trip method, routed, its gates passed.
    Flow(Accepted, FlowMethod, Route),
    /// `tasks/get`, `tasks/update` or `tasks/cancel` (a fleet's store may
    /// be read).
    Task(Accepted),
}

#[cfg(test)]
mod trace_tests {
    #[test]
    fn only_well_formed_trace_contexts_are_taken() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            super::trace_context(ok),
            Some(("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"))
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473\u{e9}-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\nINFO forged",
        ] {
            assert_eq!(super::trace_context(bad), None, "{bad:?}");
        }
    }
}
