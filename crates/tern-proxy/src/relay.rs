//! One forwarded call, round by round.
//!
//! A 2026-07-28 upstream is stateless: its pending call (state, requests,
//! params) rides in the proxy's own sealed state, and each retry resumes it.
//! A 2025-11-25 upstream asks in the middle of a call: the call runs in a
//! task of its own, held in [`Parked`](crate::parked::Parked) while the
//! client answers; only its random id rides in the sealed state.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tern_client::{CallOptions, CancelToken, Era, FlowResult, PendingCall, Step};
use tern_proto::McpError;
use tern_seal::random_bytes;
use tern_server::{Ask, Error, IntoOutcome, Json, Log, Need, Outcome, Pending, Progress};
use tern_types::{ClientCapabilities, InputRequests, InputResponses, Notification};
use tokio::sync::mpsc;

use crate::Shared;
use crate::error::{UPSTREAM_ERROR, foreign, from_upstream, is_lost, not_held, unavailable};
use crate::parked::{Call, EVENTS, Event, now};
use crate::upstream::{Live, Upstream};

/// What the proxy seals with its `input_required` result. The upstream it
/// belongs to is checked against the route the retry arrives on, besides
/// the bindings of the state itself.
#[derive(Serialize, Deserialize)]
#[serde(tag = "via", rename_all = "lowercase")]
pub(crate) enum Cont {
    /// A 2026-07-28 upstream's round: its pending call, byte for byte.
    State { up: String, call: Value },
    /// A call held in this proxy: its id and how many requests it made.
    Held { up: String, id: String, asked: u32 },
}

/// The largest continuation the proxy seals (the server's cap is 4 KiB,
/// SECURITY.md §3.4; a little is left for the framework's own).
const MAX_CONT: usize = 3800;

/// One call on its way upstream.
pub(crate) struct Forward {
    pub(crate) up: Arc<Upstream>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) ask: Ask,
    pub(crate) caps: ClientCapabilities,
    pub(crate) traceparent: Option<String>,
    pub(crate) progress: Progress,
    pub(crate) log: Log,
}

impl Forward {
    fn options(&self) -> CallOptions {
        let mut o = CallOptions::new()
            .capabilities(self.caps.clone())
            .timeout(self.shared.options.upstream_timeout);
        if let Some(tp) = &self.traceparent {
            o = o.traceparent(tp.clone());
        }
        if let Some(level) = self.log.level() {
            o = o.log_level(level);
        }
        if self.progress.wanted() || self.log.level().is_some() {
            o = o.on_notification(self.relay_notifications());
        }
        o
    }

    /// Passes the upstream's progress and log notifications on to the
    /// client, in order, for as long as the call's options live.
    fn relay_notifications(&self) -> impl Fn(&Notification) + Send + Sync + 'static {
        let (tx, mut rx) = mpsc::unbounded_channel::<Notification>();
        let (progress, log) = (self.progress.clone(), self.log.clone());
        tokio::spawn(async move {
            while let Some(n) = rx.recv().await {
                let p = n.params.unwrap_or_default();
                match n.method.as_str() {
                    "notifications/progress" => {
                        let Some(done) = p.get("progress").and_then(Value::as_f64) else {
                            continue;
                        };
                        let total = p.get("total").and_then(Value::as_f64);
                        let message = p.get("message").and_then(Value::as_str);
                        progress.notify(done, total, message).await;
                    }
                    "notifications/message" => {
                        let level = p.get("level").and_then(Value::as_str).unwrap_or("info");
                        let data = p.get("data").cloned().unwrap_or(Value::Null);
                        log.log(level, data).await;
                    }
                    _ => {}
                }
            }
        });
        move |n: &Notification| {
            let _ = tx.send(n.clone());
        }
    }

    /// Runs one downstream round of a call whose upstream params are
    /// `params`, resuming `resumed` when the client retries.
    pub(crate) async fn run<T: FlowResult + Serialize>(
        self,
        params: Map<String, Value>,
        resumed: Option<Cont>,
    ) -> Result<Outcome, Error> {
        match resumed {
            None => {
                let live = self.up.client().await?;
                if live.client.era() == Some(Era::Legacy) {
                    return self.start_held::<T>(live, params).await;
                }
                let step = live.client.once_with::<T>(params, &self.options()).await;
                self.stepped(&live, step).await
            }
            Some(Cont::State { up, call }) => {
                if up != self.up.name {
                    return Err(foreign().into());
                }
                let pending: PendingCall<T> =
                    serde_json::from_value(call).map_err(|_| Error::from(foreign()))?;
                let answers = self.ask.all(needs(pending.input_requests())?)?;
                let mut responses = InputResponses::new();
                for ((key, _), answer) in pending.input_requests().iter().zip(answers) {
                    responses.insert_raw(key, answer);
                }
                let live = self.up.client().await?;
                let step = live
                    .client
                    .resume_with(pending, responses, &self.options())
                    .await;
                self.stepped(&live, step).await
            }
            Some(Cont::Held { up, id, asked }) => {
                if up != self.up.name {
                    return Err(foreign().into());
                }
                // Taken out: a second retry with the same state finds
                // nothing (single use of the held call).
                let Some(mut call) = self.shared.parked.take(&id) else {
                    return Err(not_held().into());
                };
                if call.asked != asked {
                    return Err(not_held().into());
                }
                let need = Need::input(&call.key, call.request.clone())?;
                let answer = match self.ask.all(vec![need]) {
                    Ok(mut a) => a.pop().unwrap_or(Value::Null),
                    Err(Error::Input(p)) => {
                        // Retried without the answer: asked again, still held.
                        let cont = Cont::Held { up, id, asked };
                        return self.hold(call, p, &cont);
                    }
                    Err(e) => return Err(e),
                };
                if let Some(reply) = call.reply.take() {
                    let _ = reply.send(answer);
                }
                self.next_event(call).await
            }
        }
    }

    /// What a 2026-07-28 upstream's answer becomes downstream.
    async fn stepped<T: Serialize>(
        &self,
        live: &Live,
        step: Result<Step<T>, tern_client::Error>,
    ) -> Result<Outcome, Error> {
        match step {
            Ok(Step::Complete(result)) => Ok(Json(result).into_outcome()),
            Ok(Step::Pending(pending)) => {
                let needs = needs(pending.input_requests())?;
                let call = serde_json::to_value(&pending)
                    .map_err(|e| McpError::Internal(format!("pending call: {e}")))?;
                let cont = Cont::State {
                    up: self.up.name.clone(),
                    call,
                };
                let round = if needs.is_empty() {
                    Pending::state_only()
                } else {
                    match self.ask.again_all(needs) {
                        Error::Input(p) => p,
                        other => return Err(other),
                    }
                };
                Err(Error::Input(sealable(round, &cont, &self.up.name)?))
            }
            Err(e) => {
                if is_lost(&e) {
                    self.up.lost(live).await;
                }
                Err(from_upstream(&self.up.name, &e).into())
            }
        }
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
            let out = match client.once_with::<T>(params, &opts).await {
                Ok(Step::Complete(r)) => {
                    serde_json::to_value(r).map_err(|e| tern_client::Error::protocol(e.to_string()))
                }
                Ok(Step::Pending(_)) => Err(tern_client::Error::protocol(
                    "a 2025-11-25 session answered input_required",
                )),
                Err(e) => Err(e),
            };
            let _ = done.send(Event::Done(out)).await;
        }));
        let id: String = random_bytes::<16>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let call = Call {
            id,
            upstream: self.up.name.clone(),
            live,
            asked: 0,
            key: String::new(),
            request: Value::Null,
            reply: None,
            events: rx,
            cancel,
            expires: now() + self.shared.options.pending_ttl,
        };
        self.next_event(call).await
    }

    /// Waits for what the held call does next: finish, or ask.
    async fn next_event(&self, mut call: Call) -> Result<Outcome, Error> {
        let wait = self.shared.options.upstream_timeout;
        let event = match tokio::time::timeout(wait, call.events.recv()).await {
            Err(_) => {
                return Err(unavailable(
                    &self.up.name,
                    &format!("no answer within {} s", wait.as_secs()),
                )
                .into());
            }
            Ok(None) => {
                return Err(McpError::application(
                    UPSTREAM_ERROR,
                    format!("the call to {:?} ended without a result", self.up.name),
                    None,
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
                Err(from_upstream(&self.up.name, &e).into())
            }
            Event::Asked { request, reply } => {
                call.asked += 1;
                call.key = key_for(&request, call.asked);
                call.request = request;
                call.reply = Some(reply);
                call.expires = now() + self.shared.options.pending_ttl;
                let need = Need::input(&call.key, call.request.clone())?;
                let round = match self.ask.again_all(vec![need]) {
                    Error::Input(p) => p,
                    // An undeclared kind (-32021): the call is dropped,
                    // which refuses the upstream's request.
                    other => return Err(other),
                };
                let cont = Cont::Held {
                    up: self.up.name.clone(),
                    id: call.id.clone(),
                    asked: call.asked,
                };
                self.hold(call, round, &cont)
            }
        }
    }

    fn hold(&self, call: Call, round: Pending, cont: &Cont) -> Result<Outcome, Error> {
        let round = sealable(round, cont, &self.up.name)?;
        if !self.shared.parked.hold(call) {
            return Err(McpError::application(
                UPSTREAM_ERROR,
                "the proxy holds as many pending calls as it may; try again later",
                None,
            )
            .into());
        }
        Err(Error::Input(round))
    }
}

/// The needs of an upstream round, under the upstream's own keys.
fn needs(requests: &InputRequests) -> Result<Vec<Need<Value>>, McpError> {
    requests
        .iter()
        .map(|(key, request)| {
            let request = serde_json::to_value(request)
                .map_err(|e| McpError::Internal(format!("input request {key}: {e}")))?;
            Need::input(key, request)
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

/// `round` with `cont` to seal, unless `cont` is too large for the state.
fn sealable(round: Pending, cont: &Cont, up: &str) -> Result<Pending, Error> {
    let len = serde_json::to_vec(cont).map_or(usize::MAX, |v| v.len());
    if len > MAX_CONT {
        return Err(McpError::application(
            UPSTREAM_ERROR,
            format!(
                "the round of {up:?} is too large for the proxy's state ({len} bytes; at most {MAX_CONT})"
            ),
            None,
        )
        .into());
    }
    Ok(round.with_continuation(cont))
}
