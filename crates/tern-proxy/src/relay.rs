//! One forwarded call, round by round.
//!
//! A 2026-07-28 upstream is stateless: its open round (its exact state and
//! its questions) rides in the proxy's own sealed state, and each retry
//! resumes it with the retry's own parameters, which the state binds to
//! the first round's. A round too large to seal is held in
//! [`Parked`](crate::parked::Parked) for the caller instead, and only its
//! id and digest are sealed. A 2025-11-25 upstream asks in the middle of a
//! call: the call runs in a task of its own, held in `Parked` while the
//! client answers; only its random id rides in the sealed state.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tern_client::{CallOptions, CancelToken, Era, FlowResult, PendingCall, Step};
use tern_proto::{McpError, Principal};
use tern_server::{Ask, Error, IntoOutcome, Json, Log, Need, Outcome, Pending, Progress, relay};
use tern_types::{ClientCapabilities, InputRequests};
use tokio::sync::mpsc;

use crate::Shared;
use crate::error::{
    Gone, UPSTREAM_ERROR, foreign, from_upstream, is_lost, limit, not_held, too_large, unavailable,
};
use crate::parked::{Call, EVENTS, Event, Full, Kept, KeptRound};
use crate::upstream::{Live, Upstream};

/// A 2026-07-28 upstream's open round: what resuming it needs besides the
/// call's parameters, which every retry carries itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct UpRound {
    /// The upstream's round number.
    n: u32,
    /// The upstream's `requestState`, byte for byte (MRTR-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    /// The upstream's questions under its keys; the answers to them are
    /// pinned by digest in the proxy's state (MRTR-S8).
    #[serde(default)]
    requests: InputRequests,
}

impl UpRound {
    fn of<T>(p: PendingCall<T>) -> Self {
        let (_, n, state, requests) = p.into_parts();
        UpRound { n, state, requests }
    }

    /// The pending call to resume, with the retry's `params`.
    fn pending<T: FlowResult>(self, params: Map<String, Value>) -> PendingCall<T> {
        PendingCall::from_parts(params, self.n, self.state, self.requests)
    }

    /// SHA-256 over the round's canonical form, in hex: what the sealed
    /// state says a held round must be.
    fn digest(&self) -> Result<String, McpError> {
        let value = serde_json::to_value(self)
            .map_err(|e| McpError::Internal(format!("pending round: {e}")))?;
        let d = tern_seal::canonical::digest(&value)
            .map_err(|e| McpError::Internal(format!("pending round: {e}")))?;
        Ok(tern_seal::hex(&d))
    }
}

/// A random id for something held: 128 bits, secret, travelling only
/// inside the proxy's sealed state.
fn new_id() -> String {
    tern_seal::random_id()
}

/// What the proxy seals with its `input_required` result. The upstream it
/// belongs to is checked against the route the retry arrives on, besides
/// the bindings of the state itself.
#[derive(Serialize)]
#[serde(tag = "via", rename_all = "lowercase")]
pub(crate) enum Cont {
    /// A 2026-07-28 upstream's round, whole.
    State(ViaState),
    /// A 2026-07-28 upstream's round held in this proxy.
    Kept(ViaKept),
    /// A call held in this proxy.
    Held(ViaHeld),
}

/// [`Cont::State`]: the upstream and its round.
#[derive(Serialize, Deserialize)]
pub(crate) struct ViaState {
    up: String,
    round: UpRound,
}

/// [`Cont::Kept`]: the upstream, the held round's id and the digest of
/// what is held.
#[derive(Serialize, Deserialize)]
pub(crate) struct ViaKept {
    up: String,
    id: String,
    digest: String,
}

/// [`Cont::Held`]: the upstream, the held call's id and how many requests
/// it made.
#[derive(Serialize, Deserialize)]
pub(crate) struct ViaHeld {
    up: String,
    id: String,
    asked: u32,
}

/// Reads a continuation with its tag first, as `Serialize` writes it (an
/// internally tagged enum's tag leads): the variant's fields are then read
/// in place. Serde's own reading of such an enum buffers every other field
/// first, here the upstream's state and questions, only to read them again.
/// The bytes come from this proxy's own sealed state, so another order
/// cannot occur; it is refused, not guessed at.
impl<'de> Deserialize<'de> for Cont {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ContVisitor)
    }
}

struct ContVisitor;

impl<'de> serde::de::Visitor<'de> for ContVisitor {
    type Value = Cont;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a proxy continuation, its `via` first")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Cont, A::Error> {
        use serde::de::Error as _;
        use serde::de::value::MapAccessDeserializer;

        if map.next_key::<String>()?.as_deref() != Some("via") {
            return Err(A::Error::custom("a continuation begins with `via`"));
        }
        let via: String = map.next_value()?;
        let fields = MapAccessDeserializer::new(map);
        match via.as_str() {
            "state" => ViaState::deserialize(fields).map(Cont::State),
            "kept" => ViaKept::deserialize(fields).map(Cont::Kept),
            "held" => ViaHeld::deserialize(fields).map(Cont::Held),
            other => Err(A::Error::unknown_variant(other, &["state", "kept", "held"])),
        }
    }
}

impl Cont {
    fn upstream(&self) -> &str {
        match self {
            Cont::State(ViaState { up, .. })
            | Cont::Kept(ViaKept { up, .. })
            | Cont::Held(ViaHeld { up, .. }) => up,
        }
    }
}

/// The largest continuation the proxy seals (the server's cap is 4 KiB,
/// SECURITY.md §3.4; a little is left for the framework's own).
pub(crate) const MAX_CONT: usize = 3800;

/// One call on its way upstream.
pub(crate) struct Forward {
    pub(crate) up: Arc<Upstream>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) ask: Ask,
    pub(crate) caps: ClientCapabilities,
    pub(crate) traceparent: Option<String>,
    pub(crate) progress: Progress,
    pub(crate) log: Log,
    /// Who asks: what the proxy holds for the call is theirs.
    pub(crate) caller: Principal,
    /// The downstream round this request answers (0 for a first call).
    pub(crate) round: u8,
}

impl Forward {
    /// The upstream call's options. The tasks extension is not declared
    /// upstream here: a call relayed round by round cannot follow a task
    /// (a task-optional upstream tool runs inline); a client that takes
    /// tasks gets the proxy's own ([`Forward::run_task`]).
    pub(crate) fn options(&self) -> CallOptions {
        let mut caps = self.caps.clone();
        if let Some(ext) = &mut caps.extensions {
            ext.remove(tern_types::methods::TASKS_EXTENSION);
        }
        self.options_with(caps)
    }

    /// The options of an upstream call declaring `caps`.
    pub(crate) fn options_with(&self, caps: ClientCapabilities) -> CallOptions {
        let mut o = tern_client::relay::with_capabilities(CallOptions::new(), caps)
            .timeout(self.shared.options.upstream_timeout);
        if let Some(tp) = &self.traceparent {
            o = o.traceparent(tp.clone());
        }
        if let Some(level) = self.log.level() {
            o = o.log_level(level);
        }
        if self.progress.wanted() || self.log.level().is_some() {
            o = o.on_notification(crate::relayed::relay(
                &self.up.name,
                self.progress.clone(),
                self.log.clone(),
                self.shared.notifications_dropped.clone(),
            ));
        }
        o
    }

    /// Runs one downstream round of a call whose upstream params are
    /// `params`, resuming `resumed` when the client retries.
    pub(crate) async fn run<T: FlowResult + Serialize>(
        self,
        params: Map<String, Value>,
        resumed: Option<Cont>,
    ) -> Result<Outcome, Error> {
        if resumed
            .as_ref()
            .is_some_and(|c| c.upstream() != self.up.name)
        {
            return Err(foreign().into());
        }
        match resumed {
            None => {
                let live = self.up.client().await?;
                if live.client.era() == Some(Era::Legacy) {
                    return self.start_held::<T>(live, params).await;
                }
                let step =
                    tern_client::relay::once::<T>(&live.client, params, &self.options()).await;
                self.stepped(&live, step).await
            }
            Some(Cont::State(ViaState { round, .. })) => {
                let answers = self.ask.all(needs(&round.requests)?)?;
                self.resume::<T>(params, round, answers).await
            }
            Some(Cont::Kept(ViaKept { id, digest, .. })) => {
                self.resume_kept::<T>(params, id, digest).await
            }
            Some(Cont::Held(ViaHeld { id, asked, .. })) => self.resume_held(id, asked).await,
        }
    }

    /// Sends the client's `answers` to the upstream's `round` (one under
    /// each of its keys, in order).
    async fn resume<T: FlowResult + Serialize>(
        &self,
        params: Map<String, Value>,
        round: UpRound,
        answers: Vec<Value>,
    ) -> Result<Outcome, Error> {
        let responses = tern_client::relay::answers(&round.requests, answers);
        let pending = round.pending::<T>(params);
        let live = self.up.client().await?;
        let step = live
            .client
            .resume_with(pending, responses, &self.options())
            .await;
        self.stepped(&live, step).await
    }

    /// Resumes a round held in this proxy: taken out (single use), checked
    /// against the digest the state names, and held again when the retry
    /// lacks answers.
    async fn resume_kept<T: FlowResult + Serialize>(
        &self,
        params: Map<String, Value>,
        id: String,
        digest: String,
    ) -> Result<Outcome, Error> {
        let Some(Kept::Round(kept)) = self.shared.parked.take(&id, &self.caller) else {
            return Err(not_held().into());
        };
        if kept.digest != digest || kept.upstream != self.up.name {
            return Err(not_held().into());
        }
        match self.ask.all(needs(&kept.round.requests)?) {
            Ok(answers) => self.resume::<T>(params, kept.round, answers).await,
            Err(Error::Input(p)) => {
                let cont = Cont::Kept(ViaKept {
                    up: self.up.name.clone(),
                    id: id.clone(),
                    digest,
                });
                self.park(id, Kept::Round(kept), p, &cont)
            }
            Err(e) => {
                // A malformed answer: the round stays for a corrected
                // retry, as a sealed one would.
                let _ = self.shared.parked.hold(id, &self.caller, Kept::Round(kept));
                Err(e)
            }
        }
    }

    /// Answers the open request of a call held in this proxy, and waits for
    /// what the call does next.
    async fn resume_held(&self, id: String, asked: u32) -> Result<Outcome, Error> {
        // Taken out: a second retry with the same state finds nothing
        // (single use of the held call).
        let Some(Kept::Call(mut call)) = self.shared.parked.take(&id, &self.caller) else {
            return Err(not_held().into());
        };
        if call.asked != asked {
            return Err(not_held().into());
        }
        let need = relay::need(&call.key, call.request.clone())?;
        let answer = match self.ask.all(vec![need]) {
            Ok(mut a) => a.pop().unwrap_or(Value::Null),
            Err(Error::Input(p)) => {
                // Retried without the answer: asked again, still held.
                let cont = Cont::Held(ViaHeld {
                    up: self.up.name.clone(),
                    id: id.clone(),
                    asked,
                });
                return self.park(id, Kept::Call(call), p, &cont);
            }
            Err(e) => return Err(e),
        };
        if let Some(reply) = call.reply.take() {
            let _ = reply.send(answer);
        }
        self.next_event(call).await
    }

    /// What a 2026-07-28 upstream's answer becomes downstream.
    async fn stepped<T: Serialize>(
        &self,
        live: &Live,
        step: Result<Step<T>, tern_client::Error>,
    ) -> Result<Outcome, Error> {
        match step {
            Ok(Step::Complete(result)) => Ok(Json(result).into_outcome()),
            // Not declared upstream (see `options`), so refused by the client.
            Ok(Step::Task(_)) => Err(self
                .failure(&tern_client::Error::protocol(
                    "the upstream server answered with a task",
                ))
                .into()),
            Ok(Step::Pending(pending)) => {
                let round = UpRound::of(pending);
                let needs = needs(&round.requests)?;
                let asked = if needs.is_empty() {
                    Pending::state_only()
                } else {
                    match relay::ask_again(&self.ask, needs) {
                        Error::Input(p) => p,
                        other => return Err(other),
                    }
                };
                self.seal_or_keep(round, asked)
            }
            Err(e) => Err(self.lost(live, &e).await.into()),
        }
    }

    pub(crate) fn failure(&self, e: &tern_client::Error) -> McpError {
        from_upstream(&self.up.name, e, self.shared.options.upstream_timeout)
    }

    /// Asks `asked` with the upstream's `round` sealed in the proxy's state,
    /// or, when it is too large for it, held in the proxy for the caller
    /// with only its id and digest sealed.
    fn seal_or_keep(&self, round: UpRound, asked: Pending) -> Result<Outcome, Error> {
        let up = self.up.name.clone();
        let cont = Cont::State(ViaState { up, round });
        // Encoded once: its length decides, and the same bytes are sealed.
        // Unserialisable counts as too large: it can be neither sealed nor
        // held.
        let encoded = serde_json::value::to_raw_value(&cont).ok();
        let len = encoded.as_ref().map_or(usize::MAX, |raw| raw.get().len());
        if let Some(raw) = encoded.filter(|_| len <= MAX_CONT) {
            return Err(Error::Input(asked.with_continuation(&raw)));
        }
        let Cont::State(ViaState { up, round }) = cont else {
            return Err(McpError::Internal("the round changed its kind".into()).into());
        };
        let max = self.shared.options.max_round_bytes;
        if len > max {
            return Err(too_large(&up, len, max).into());
        }
        let digest = round.digest()?;
        let id = new_id();
        let cont = Cont::Kept(ViaKept {
            up: up.clone(),
            id: id.clone(),
            digest: digest.clone(),
        });
        let kept = KeptRound {
            upstream: up,
            digest,
            round,
        };
        self.park(id, Kept::Round(kept), asked, &cont)
    }

    /// Holds `kept` for the caller under `id` and asks `asked`, with `cont`
    /// sealed. Nothing is held for a round the server will not issue (past
    /// its round ceiling: the client gets "too many input rounds"), nor past
    /// a budget (the client gets -31003 and `kept` is dropped: a call so
    /// cancelled upstream).
    fn park(&self, id: String, kept: Kept, asked: Pending, cont: &Cont) -> Result<Outcome, Error> {
        if self.round.saturating_add(1) > self.shared.max_rounds {
            drop(kept);
            return Err(Error::Input(asked));
        }
        if let Err(full) = self.shared.parked.hold(id, &self.caller, kept) {
            let o = &self.shared.options;
            let e = match full {
                Full::Principal => limit(
                    format!(
                        "this caller holds {} pending calls at the proxy, as many as one caller may; answer or abandon one first",
                        o.per_principal()
                    ),
                    "proxy_pending_per_principal",
                ),
                Full::Total => limit(
                    format!(
                        "the proxy holds {} pending calls, as many as it may; try again later",
                        o.max_pending
                    ),
                    "proxy_pending",
                ),
            };
            return Err(e.into());
        }
        Err(Error::Input(asked.with_continuation(cont)))
    }

    /// Starts a call to a 2025-11-25 upstream in a task of its own, and
    /// waits for its first event.
    async fn start_held<T: FlowResult + Serialize>(
        self,
        live: Live,
        params: Map<String, Value>,
    ) -> Result<Outcome, Error> {
        let (tx, rx) = mpsc::channel(4);
        let cancel = CancelToken::new();
        let opts = self.options().cancel(cancel.clone());
        let client = live.client.clone();
        let done = tx.clone();
        tokio::spawn(EVENTS.scope(tx, async move {
            let out = match tern_client::relay::once::<T>(&client, params, &opts).await {
                Ok(Step::Complete(r)) => {
                    serde_json::to_value(r).map_err(|e| tern_client::Error::protocol(e.to_string()))
                }
                Ok(Step::Pending(_) | Step::Task(_)) => Err(tern_client::Error::protocol(
                    "a 2025-11-25 session answered input_required",
                )),
                Err(e) => Err(e),
            };
            let _ = done.send(Event::Done(out)).await;
        }));
        let call = Call {
            id: new_id(),
            upstream: self.up.name.clone(),
            live,
            asked: 0,
            key: String::new(),
            request: Value::Null,
            reply: None,
            events: rx,
            cancel,
        };
        self.next_event(call).await
    }

    /// Waits for what the held call does next: finish, or ask.
    async fn next_event(&self, mut call: Call) -> Result<Outcome, Error> {
        let wait = self.shared.options.upstream_timeout;
        let event = match tokio::time::timeout(wait, call.events.recv()).await {
            Err(_) => {
                tracing::warn!(upstream = %self.up.name, "the upstream's call did not go on in time; it is cancelled");
                return Err(unavailable(&self.up.name, Gone::Silent(wait)).into());
            }
            Ok(None) => {
                return Err(McpError::application(
                    UPSTREAM_ERROR,
                    format!(
                        "the upstream server {:?} ended the call without a result",
                        self.up.name
                    ),
                    Some(json!({ "upstream": self.up.name })),
                )
                .into());
            }
            Ok(Some(e)) => e,
        };
        match event {
            Event::Done(Ok(result)) => Ok(Json(result).into_outcome()),
            Event::Done(Err(e)) => {
                if is_lost(&e) {
                    self.up.lost(&call.live).await;
                }
                Err(self.failure(&e).into())
            }
            Event::Asked { request, reply } => {
                call.asked += 1;
                call.key = key_for(&request, call.asked);
                call.request = request;
                call.reply = Some(reply);
                let need = relay::need(&call.key, call.request.clone())?;
                let round = match relay::ask_again(&self.ask, vec![need]) {
                    Error::Input(p) => p,
                    // An undeclared kind (-32021): the call is dropped,
                    // which refuses the upstream's request.
                    other => return Err(other),
                };
                let cont = Cont::Held(ViaHeld {
                    up: self.up.name.clone(),
                    id: call.id.clone(),
                    asked: call.asked,
                });
                self.park(call.id.clone(), Kept::Call(call), round, &cont)
            }
        }
    }
}

/// The needs of an upstream round, under the upstream's own keys.
pub(crate) fn needs(requests: &InputRequests) -> Result<Vec<Need<Value>>, McpError> {
    requests
        .iter()
        .map(|(key, request)| {
            let request = serde_json::to_value(request)
                .map_err(|e| McpError::Internal(format!("input request {key}: {e}")))?;
            relay::need(key, request)
        })
        .collect()
}

/// A key for the `asked`-th request a 2025-11-25 upstream made in one call
/// (its requests have none): the method, as a 2025-11-25 client keys them,
/// with the request's number from the second on, so an answer can never
/// count for a later question.
fn key_for(request: &Value, asked: u32) -> String {
    let method = request["method"].as_str().unwrap_or("input");
    if asked == 1 {
        method.to_owned()
    } else {
        format!("{method}#{asked}")
    }
}
