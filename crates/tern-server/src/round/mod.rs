//! One round machinery for every way input reaches a handler
//! (ARCHITECTURE.md, "Rounds").
//!
//! A handler runs; if it asks, its round goes to a [`Delivery`], which
//! either ends this request with a result that carries the round (the
//! sealed 2026-07-28 retry, [`sealed`]) or brings the answers back
//! in-process so the handler runs again (the 2025-11-25 session's bridge,
//! [`bridge`]). What does not depend on the way lives here once: the call
//! context each run sees, the round ceiling (MRTR-S-A3), and the mapping of
//! a handler's outcome to a result or an error (TOOL-S11). The answers
//! themselves are checked where the handler reads them, by the same
//! [`crate::Need`] parsers whatever delivered them (SECURITY.md §3.8).

pub(crate) mod bridge;
pub(crate) mod sealed;
pub(crate) mod task;

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::{Map, Value};
use tern_proto::accept::Accepted;
use tern_proto::finish::stamp_complete;
use tern_proto::{McpError, Principal};
use tern_types::methods::Method;
use tracing::Instrument;

use crate::ask::{Ask, AskContext};
use crate::config::Config;
use crate::content::ToolResult;
use crate::extract::CallContext;
use crate::notify::Sink;
use crate::outcome::{Outcome, Pending};
use crate::registry::RouteLimits;
use crate::server::{Route, Server};
use crate::tasks::{ScopeMode, TaskBody, TaskScope};

/// The budget of one round's answers, however they arrive (a retry's
/// `inputResponses`, a session client's responses, `tasks/update`):
/// SECURITY.md "Every request", at most `max_input_responses` entries and
/// `max_input_bytes` plus `max_sample_bytes` of JSON in all; past either,
/// -32602 (MRTR-E-A2). Checked before anything is known of the questions,
/// so what is read is bounded; [`check_answer_kinds`] then holds each kind
/// to its share once they are.
pub(crate) fn check_input_responses(
    answers: &Map<String, Value>,
    cfg: &Config,
) -> Result<(), McpError> {
    let max = cfg.max_input_responses;
    if answers.len() > max {
        return Err(McpError::invalid_params(format!(
            "inputResponses has more than {max} entries"
        )));
    }
    let size: usize = answers.iter().map(|(k, v)| answer_len(k, v)).sum();
    if size > cfg.max_input_bytes.saturating_add(cfg.max_sample_bytes) {
        return Err(McpError::invalid_params("inputResponses is too large"));
    }
    Ok(())
}

/// The shares of that budget, once the round's questions are known:
/// samples (`is_sample` says which keys asked for one) within
/// `max_sample_bytes`, every other answer within `max_input_bytes`
/// (SECURITY.md "Every request": 256 KiB, and 1 MiB more for samples).
pub(crate) fn check_answer_kinds(
    answers: &Map<String, Value>,
    cfg: &Config,
    is_sample: impl Fn(&str) -> bool,
) -> Result<(), McpError> {
    let (mut samples, mut others) = (0usize, 0usize);
    for (k, v) in answers {
        let len = answer_len(k, v);
        if is_sample(k) {
            samples = samples.saturating_add(len);
        } else {
            others = others.saturating_add(len);
        }
    }
    if others > cfg.max_input_bytes || samples > cfg.max_sample_bytes {
        return Err(McpError::invalid_params("inputResponses is too large"));
    }
    Ok(())
}

/// An answer's share of the budget: its key and its JSON.
fn answer_len(key: &str, answer: &Value) -> usize {
    key.len() + tern_proto::finish::encoded_len(answer)
}

/// Whether `request`, an input request as sent, asks for a sample.
pub(crate) fn asks_sample(request: &Value) -> bool {
    request.get("method").and_then(Value::as_str)
        == Some(tern_types::methods::SAMPLING_CREATE_MESSAGE)
}

/// Where a request's first run starts.
pub(crate) struct Start {
    /// The round this request answers (0 for a first call).
    pub(crate) round: u8,
    /// Constant across the rounds of one flow.
    pub(crate) flow_id: [u8; 16],
    /// What the handler sealed in an earlier round.
    pub(crate) continuation: Option<Vec<u8>>,
    /// The answers the first run may read.
    pub(crate) answers: AskContext,
}

impl Start {
    /// A first run: round 0 of flow `flow_id`, nothing answered yet.
    pub(crate) fn first(caps: &tern_types::ClientCapabilities, flow_id: [u8; 16]) -> Start {
        Start {
            round: 0,
            flow_id,
            continuation: None,
            answers: AskContext::unanswered(caps.clone()),
        }
    }
}

/// What delivering a round gave.
pub(crate) enum Delivered {
    /// The client answered in-process: run the handler again with these.
    Answered(Box<AskContext>),
    /// This request ends with this result (it carries the round).
    Reply(Map<String, Value>),
}

/// One way a handler's round reaches the client and its answers come back.
pub(crate) trait Delivery: Send {
    /// Whether [`Delivery::deliver`] may answer [`Delivered::Answered`]
    /// (the handler then runs more than once, so its params are kept).
    const RERUNS: bool;

    /// Where the first run starts, for a client of `caps`.
    fn start(&mut self, caps: &tern_types::ClientCapabilities) -> Start;

    /// Delivers a round the handler asked, already within the ceiling.
    /// `answers` is what the run that asked could read. A delivery whose
    /// requests cannot ask ([`Once`]) refuses here.
    fn deliver(
        &mut self,
        server: &Server,
        round: Pending,
        answers: &AskContext,
    ) -> impl Future<Output = Result<Delivered, McpError>> + Send;

    /// A complete result, stamped, about to be returned.
    fn completed(
        &mut self,
        server: &Server,
        result: &Map<String, Value>,
    ) -> impl Future<Output = ()> + Send;
}

/// The round ceiling of a route: its own, never above the server's
/// (MRTR-S-A3).
pub(crate) fn ceiling(limits: &RouteLimits, cfg: &Config) -> u8 {
    limits
        .max_rounds
        .map_or(cfg.max_rounds, |r| r.min(cfg.max_rounds))
}

/// The number of the next round after `asked` rounds, within `ceiling`
/// (MRTR-S-A3): the one place the ceiling is counted, for a flow's rounds
/// and a task's alike.
pub(crate) fn next_round(asked: u8, ceiling: u8) -> Result<u8, McpError> {
    match asked.checked_add(1) {
        Some(next) if next <= ceiling => Ok(next),
        _ => Err(McpError::TooManyRounds),
    }
}

/// What a run's [`CallContext`] owns of the request.
#[derive(Clone)]
struct RunParts {
    id: tern_types::RequestId,
    params: Map<String, Value>,
    meta: Box<tern_proto::accept::RequestMeta>,
    principal: Principal,
    sink: Sink,
    uri_params: std::collections::HashMap<String, String>,
}

/// What a run gave once a task body is placed.
enum Ran {
    /// The outcome to map (a task body run inline gave it).
    Outcome(Outcome),
    /// The task created; the request is over.
    Created(Map<String, Value>),
}

/// Who owns the task a run may start, and what its request declared: a
/// task tool's call from a client that declared the extension runs its
/// body as a task; any other runs it inline (`None`).
fn task_owner(
    route: &Route,
    a: &Accepted,
    principal: &Principal,
) -> Option<(Principal, tern_types::ClientCapabilities)> {
    (route.task.is_some() && crate::tasks::takes_tasks(a.method, &a.meta))
        .then(|| (principal.clone(), a.meta.client_capabilities.clone()))
}

/// A request that cannot ask: `completion/complete`.
pub(crate) struct Once;

impl Delivery for Once {
    const RERUNS: bool = false;

    fn start(&mut self, caps: &tern_types::ClientCapabilities) -> Start {
        Start::first(caps, [0; 16])
    }

    async fn deliver(
        &mut self,
        _: &Server,
        _: Pending,
        _: &AskContext,
    ) -> Result<Delivered, McpError> {
        Err(McpError::Internal(
            "completion/complete cannot ask for input".into(),
        ))
    }

    async fn completed(&mut self, _: &Server, _: &Map<String, Value>) {}
}

/// The URI a `resources/read` asked for, which its result names.
fn read_uri(a: &Accepted) -> Option<String> {
    if a.method != Method::ResourcesRead {
        return None;
    }
    a.params
        .get("uri")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

impl Server {
    /// Runs `route`'s handler for the accepted request `a` until it
    /// completes or a round ends the request, delivering each round it asks
    /// through `delivery`. The one place a handler's outcome becomes a
    /// result or an error, in both eras.
    pub(crate) async fn run_rounds<D: Delivery>(
        &self,
        a: Accepted,
        route: Route,
        principal: Principal,
        sink: Sink,
        delivery: &mut D,
    ) -> Result<Map<String, Value>, McpError> {
        let ceiling = ceiling(&route.limits, self.config());
        let Start {
            mut round,
            flow_id,
            mut continuation,
            answers,
        } = delivery.start(&a.meta.client_capabilities);
        if tracing::level_enabled!(tracing::Level::INFO) {
            tracing::Span::current().record("round", round);
        }
        let as_task = task_owner(&route, &a, &principal);
        let read_uri = read_uri(&a);
        let Accepted {
            id,
            method,
            params,
            meta,
            ..
        } = a;
        // What each run's context owns: moved into the only run of a
        // delivery that does not re-run (the usual case, copying nothing),
        // cloned per run of one that does.
        let mut parts = Some(RunParts {
            id,
            params,
            meta,
            principal,
            sink,
            uri_params: route.uri_params,
        });
        let mut answers = Arc::new(answers);
        loop {
            let run = if D::RERUNS {
                parts.clone()
            } else {
                parts.take()
            };
            let Some(run) = run else {
                return Err(McpError::Internal(
                    "a delivery that does not re-run answered in-process".into(),
                ));
            };
            let cx = CallContext {
                server: self.clone(),
                id: run.id,
                method,
                params: run.params,
                meta: run.meta,
                principal: run.principal,
                ask: Ask {
                    cx: answers.clone(),
                },
                continuation: if D::RERUNS {
                    continuation.clone()
                } else {
                    continuation.take()
                },
                sink: run.sink,
                uri_params: run.uri_params,
                round,
                flow_id,
                as_task: as_task.is_some(),
            };
            let ran = route.handler.call(cx).await;
            let outcome = match self
                .place_task(ran, as_task.as_ref(), &answers, ceiling)
                .await?
            {
                Ran::Created(created) => {
                    delivery.completed(self, &created).await;
                    return Ok(created);
                }
                Ran::Outcome(outcome) => outcome,
            };
            let pending = match outcome {
                Outcome::InputRequired(p) => p,
                outcome => {
                    return self
                        .conclude(method, outcome, read_uri.as_deref(), delivery)
                        .await;
                }
            };
            let next = next_round(round, ceiling)?;
            if let Some(e) = &pending.unserialisable {
                return Err(McpError::Internal(format!(
                    "the handler's continuation does not serialise: {e}"
                )));
            }
            if pending.continuation.is_some() {
                continuation.clone_from(&pending.continuation);
            }
            match delivery.deliver(self, pending, &answers).await? {
                Delivered::Reply(result) => return Ok(result),
                Delivered::Answered(next_answers) => {
                    answers = Arc::new(*next_answers);
                    round = next;
                }
            }
        }
    }

    /// The request's answer from its handler's last outcome: the result,
    /// stamped (and naming the URI a `resources/read` asked for), or the
    /// error. A complete result is the delivery's to keep (for replays, to
    /// end a URL step); a tool error is a result too, but not a completion.
    async fn conclude<D: Delivery>(
        &self,
        method: Method,
        outcome: Outcome,
        read_uri: Option<&str>,
        delivery: &mut D,
    ) -> Result<Map<String, Value>, McpError> {
        let complete = matches!(outcome, Outcome::Complete(_));
        let mut result = self.finished(method, outcome)?;
        if let Some(uri) = read_uri {
            crate::content::fill_read_uri(&mut result, uri);
        }
        stamp_complete(&mut result, Some(&self.inner.info));
        if complete {
            delivery.completed(self, &result).await;
        }
        Ok(result)
    }

    /// A handler's final outcome as a result (not yet stamped) or an error
    /// (TOOL-S11: a tool error is a result on `tools/call`).
    fn finished(&self, method: Method, outcome: Outcome) -> Result<Map<String, Value>, McpError> {
        match outcome {
            Outcome::Complete(mut r) => {
                if method == Method::ResourcesRead {
                    self.cache_hints(&mut r);
                }
                Ok(r)
            }
            Outcome::ToolError(msg) if method == Method::ToolsCall => {
                Ok(ToolResult::error(msg).into_map())
            }
            Outcome::ToolError(msg) => Err(McpError::Internal(msg)),
            Outcome::Error(e) => Err(e),
            Outcome::InputRequired(_) => Err(McpError::Internal(
                "input required where none can be asked".into(),
            )),
            Outcome::Task(_) => Err(McpError::Internal(
                "a task where none can run (only a task tool's handler may start one)".into(),
            )),
        }
    }

    /// A run's outcome once a task body it returned is placed: created as
    /// a task for `as_task`'s principal, or run inline with the request's
    /// own answers (so its asking is an MRTR round).
    async fn place_task(
        &self,
        outcome: Outcome,
        as_task: Option<&(Principal, tern_types::ClientCapabilities)>,
        answers: &Arc<AskContext>,
        ceiling: u8,
    ) -> Result<Ran, McpError> {
        let Outcome::Task(body) = outcome else {
            return Ok(Ran::Outcome(outcome));
        };
        if let Some((principal, caps)) = as_task {
            return self
                .create_task(body, principal, caps.clone(), ceiling)
                .await
                .map(Ran::Created);
        }
        let scope = TaskScope {
            mode: ScopeMode::Inline(Ask {
                cx: answers.clone(),
            }),
        };
        Ok(Ran::Outcome((body.0)(scope).await))
    }

    /// Creates the task that runs `body` for `principal`, and answers the
    /// call with it. The task is in the table (and a fleet's store) before
    /// the answer leaves.
    async fn create_task(
        &self,
        body: TaskBody,
        principal: &Principal,
        caps: tern_types::ClientCapabilities,
        ceiling: u8,
    ) -> Result<Map<String, Value>, McpError> {
        let id = tern_seal::random_id();
        let tasks = &self.inner.tasks;
        let created = tasks.create(&id, principal, self.metrics())?;
        if let Err(e) = tasks.publish(&id).await {
            tasks.cancel_owned(&id, self.metrics());
            return Err(e);
        }
        let round = Arc::new(task::TaskRound {
            server: self.clone(),
            id: id.clone(),
            caps,
            ceiling,
            rounds: std::sync::atomic::AtomicU8::new(0),
        });
        let run = (body.0)(TaskScope {
            mode: ScopeMode::Task(round),
        });
        let server = self.clone();
        let span = tracing::info_span!("task", task = %id);
        let task_id = id.clone();
        let handle = tokio::spawn(
            async move {
                let ran = std::panic::AssertUnwindSafe(run).catch_unwind().await;
                server.end_task(&task_id, ran).await;
            }
            .instrument(span),
        );
        tasks.set_abort(&id, handle.abort_handle());
        if tasks.shared().is_some() {
            crate::tasks::watch(self.clone(), id);
        }
        Ok(created)
    }

    /// Records how a task's body ended: a result (a tool error is one,
    /// TOOL-S11) or a JSON-RPC error, internal detail logged, not kept.
    async fn end_task(&self, id: &str, ran: Result<Outcome, Box<dyn std::any::Any + Send>>) {
        let ended = match ran {
            Ok(outcome) => self.finished(Method::ToolsCall, outcome),
            Err(panic) => Err(self.panicked(panic.as_ref())),
        };
        let max = self.inner.tasks.limits().max_result_bytes;
        let ended = ended.and_then(|result| {
            let len = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
            if len > max {
                self.metrics().limit_reached("task_result_bytes");
                return Err(McpError::Internal(format!(
                    "the task's result is {len} bytes; at most {max} are kept"
                )));
            }
            Ok(result)
        });
        let metrics = self.metrics();
        match ended {
            Ok(result) => {
                tracing::info!(outcome = "completed", "task");
                self.inner
                    .tasks
                    .finish(id, "result", Value::Object(result), metrics);
            }
            Err(e) => {
                let e = self.reported(e);
                tracing::info!(outcome = "failed", code = e.code().0, "task");
                let error = serde_json::to_value(e.to_error_object()).unwrap_or_else(
                    |_| serde_json::json!({"code": -32603, "message": "Internal error"}),
                );
                self.inner.tasks.finish(id, "error", error, metrics);
            }
        }
        if let Err(e) = self.inner.tasks.publish(id).await {
            tracing::warn!(error = %e, "task record not written");
        }
    }
}
