//! The multi round-trip driver (DIGEST §4.5, SECURITY.md §3.10): typed
//! calls that fulfil every round through the [`InputProvider`], `*_once`
//! calls that hand back a serialisable [`PendingCall`], and `resume`.
//!
//! Every round is a new request built from the caller's parameters, never
//! from the previous request: a new id, the same method and parameters,
//! fresh `_meta` and headers, `inputResponses` for the latest round only and
//! `requestState` echoed as received, or absent when none was sent
//! (MRTR-C5..C8). Nothing of a flow is attached to another request
//! (MRTR-C9), and nothing is cached (MRTR-C10).
//!
//! [`InputProvider`]: crate::InputProvider

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tern_types::{
    CallToolResult, ElicitRequestParams, GetPromptResult, InputRequest, InputRequests,
    InputResponse, InputResponses, ReadResourceResult, ResultType, meta_keys, methods,
};

use crate::Error;
use crate::budget::Budget;
use crate::client::{Call, Client, parse_result, prompt_params, result_type};
use crate::options::{CallOptions, RoundEvent};
use crate::pending::PendingCall;
use crate::provider::{InputContext, InputKinds, InputProvider};
use crate::race::{cancellable, catch_panic, join_all};
use crate::task::{PendingTask, created};

/// The most input requests one interim result may carry (SECURITY.md
/// §3.10).
pub const MAX_INPUT_REQUESTS: usize = 16;
/// The largest `requestState` accepted, in bytes (SECURITY.md §3.10).
pub const MAX_REQUEST_STATE: usize = 64 * 1024;
/// The most consecutive state-only rounds before the flow is abandoned
/// (SECURITY.md §3.10).
pub const MAX_STATE_ONLY_ROUNDS: u32 = 3;

mod sealed {
    pub trait Sealed {}
    impl Sealed for tern_types::CallToolResult {}
    impl Sealed for tern_types::GetPromptResult {}
    impl Sealed for tern_types::ReadResourceResult {}
}

/// The complete result of a method that may take several rounds
/// (MRTR-S1): `CallToolResult`, `GetPromptResult`, `ReadResourceResult`.
pub trait FlowResult: DeserializeOwned + sealed::Sealed + Send + 'static {
    /// The method that produces it.
    const METHOD: &'static str;
}

impl FlowResult for CallToolResult {
    const METHOD: &'static str = methods::TOOLS_CALL;
}
impl FlowResult for GetPromptResult {
    const METHOD: &'static str = methods::PROMPTS_GET;
}
impl FlowResult for ReadResourceResult {
    const METHOD: &'static str = methods::RESOURCES_READ;
}

/// What one round of a `*_once` call or [`Client::resume`] produced.
#[derive(Debug)]
pub enum Step<T> {
    /// The final result.
    Complete(T),
    /// The server needs input (or another round): answer it and
    /// [`resume`](Client::resume).
    Pending(PendingCall<T>),
    /// The server runs the call as a task (the tasks extension): poll it
    /// with [`Client::wait_task`].
    Task(PendingTask<T>),
}

impl<T> Step<T> {
    /// The final result, if there is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Step::Complete(t) => Some(t),
            Step::Pending(_) | Step::Task(_) => None,
        }
    }

    /// The pending call, if there is one.
    pub fn pending(self) -> Option<PendingCall<T>> {
        match self {
            Step::Pending(p) => Some(p),
            Step::Complete(_) | Step::Task(_) => None,
        }
    }

    /// The created task, if there is one.
    pub fn task(self) -> Option<PendingTask<T>> {
        match self {
            Step::Task(t) => Some(t),
            Step::Complete(_) | Step::Pending(_) => None,
        }
    }
}

fn tool_params(name: &str, arguments: Map<String, Value>) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("name".into(), json!(name));
    p.insert("arguments".into(), Value::Object(arguments));
    p
}

fn resource_params(uri: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("uri".into(), json!(uri));
    p
}

impl Client {
    /// `tools/call`, driving every round to the end.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, &CallOptions::default())
            .await
    }

    /// `tools/call` with options (cancellation, progress, deadline).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<CallToolResult, Error> {
        self.drive(tool_params(name, arguments), opts).await
    }

    /// `prompts/get`, driving every round to the end.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, Error> {
        self.get_prompt_with(name, arguments, &CallOptions::default())
            .await
    }

    /// `prompts/get` with options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
        opts: &CallOptions,
    ) -> Result<GetPromptResult, Error> {
        self.drive(prompt_params(name, arguments), opts).await
    }

    /// `resources/read`, driving every round to the end.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.read_resource_with(uri, &CallOptions::default()).await
    }

    /// `resources/read` with options.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        opts: &CallOptions,
    ) -> Result<ReadResourceResult, Error> {
        self.drive(resource_params(uri), opts).await
    }

    /// `tools/call`, driving every round, but not waiting for a task the
    /// server creates: the result, or the task ([`Step::Task`]) to poll
    /// later with [`Client::wait_task`] (a detached call).
    pub async fn start_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<Step<CallToolResult>, Error> {
        let mut budget = Budget::new(self.max_rounds(opts)).until(self.flow_timeout(opts));
        self.bounded::<CallToolResult, _>(opts, async {
            let first = self
                .round(tool_params(name, arguments), &mut budget, None, None, opts)
                .await?;
            self.run(first, &mut budget, opts).await
        })
        .await
    }

    /// One round of `tools/call`: the result, or the pending call to answer
    /// and [`resume`](Self::resume) (MRTR-C-A3's one-shot API).
    pub async fn call_tool_once(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Step<CallToolResult>, Error> {
        self.call_tool_once_with(name, arguments, &CallOptions::default())
            .await
    }

    /// One round of `tools/call` with options (cancellation, deadline,
    /// observer).
    pub async fn call_tool_once_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<Step<CallToolResult>, Error> {
        self.first(tool_params(name, arguments), opts).await
    }

    /// One round of `prompts/get`.
    pub async fn get_prompt_once(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<Step<GetPromptResult>, Error> {
        self.first(prompt_params(name, arguments), &CallOptions::default())
            .await
    }

    /// One round of `resources/read`.
    pub async fn read_resource_once(&self, uri: &str) -> Result<Step<ReadResourceResult>, Error> {
        self.first(resource_params(uri), &CallOptions::default())
            .await
    }

    /// Sends the next round of `pending` with `responses`: one answer under
    /// each key of its input requests, none more (MRTR-C3, MRTR-C7), and
    /// its state echoed (MRTR-C5). A state-only pending call takes empty
    /// responses.
    pub async fn resume<T: FlowResult>(
        &self,
        pending: PendingCall<T>,
        responses: InputResponses,
    ) -> Result<Step<T>, Error> {
        self.resume_with(pending, responses, &CallOptions::default())
            .await
    }

    /// [`resume`](Self::resume) with options: the cancellation token, the
    /// deadline, the round limit and the observer apply to this round.
    pub async fn resume_with<T: FlowResult>(
        &self,
        pending: PendingCall<T>,
        responses: InputResponses,
        opts: &CallOptions,
    ) -> Result<Step<T>, Error> {
        if pending.method != T::METHOD {
            return Err(Error::usage(format!(
                "a pending {} cannot be resumed as {}",
                pending.method,
                T::METHOD
            )));
        }
        let asked: Vec<&str> = pending.input_requests.iter().map(|(k, _)| k).collect();
        let answered: Vec<&str> = responses.keys().collect();
        if asked != answered {
            return Err(Error::usage(format!(
                "answers {answered:?} do not match the requests {asked:?} (MRTR-C3)"
            )));
        }
        let mut budget =
            Budget::resuming(self.max_rounds(opts), pending.round).until(self.flow_timeout(opts));
        budget.retry()?;
        let responses = (!pending.input_requests.is_empty()).then_some(responses);
        self.bounded::<T, _>(
            opts,
            self.round(
                pending.params,
                &mut budget,
                responses,
                pending.request_state,
                opts,
            ),
        )
        .await
    }

    /// Answers every open request of `pending` through the provider,
    /// concurrently. A provider refusal ends the flow (MRTR-C4); a request
    /// for an undeclared kind is refused before the provider sees it
    /// (MRTR-C-A2).
    pub async fn answer<T>(&self, pending: &PendingCall<T>) -> Result<InputResponses, Error> {
        let kinds = self.inner.provider.kinds();
        for (key, request) in pending.input_requests.iter() {
            check_declared(kinds, key, request)?;
        }
        let provider = &self.inner.provider;
        let futs: Vec<_> = pending
            .input_requests
            .iter()
            .map(|(key, request)| {
                let cx = InputContext {
                    method: pending.method.clone(),
                    target: target_of(&pending.params),
                    key: key.to_owned(),
                    round: pending.round,
                    server_info: pending.server_info.clone(),
                    answer_within: pending.answer_within_secs.map(Duration::from_secs),
                };
                let request = request.clone();
                async move {
                    let answer = answer_one(provider.as_ref(), cx, request).await;
                    (key.to_owned(), answer)
                }
            })
            .collect();
        let mut responses = InputResponses::new();
        for (key, answer) in join_all(futs).await {
            responses.insert(key, &answer?);
        }
        Ok(responses)
    }

    /// Drives `pending` to the end through the provider, like the typed
    /// calls do from their first round.
    pub async fn finish<T: FlowResult>(
        &self,
        pending: PendingCall<T>,
        opts: &CallOptions,
    ) -> Result<T, Error> {
        let mut budget =
            Budget::resuming(self.max_rounds(opts), pending.round).until(self.flow_timeout(opts));
        let step = self
            .bounded::<T, _>(opts, self.run(Step::Pending(pending), &mut budget, opts))
            .await?;
        self.settle(step, opts).await
    }

    /// The result of what [`Client::run`] ended with: the result, or the
    /// task's, polled to its end (outside the flow's deadline: a task has
    /// its own).
    async fn settle<T: FlowResult>(&self, step: Step<T>, opts: &CallOptions) -> Result<T, Error> {
        match step {
            Step::Complete(t) => Ok(t),
            // Boxed: following a task is rare and large, and every call
            // through `drive` would otherwise carry its size.
            Step::Task(task) => Box::pin(self.wait_task(task, opts)).await,
            Step::Pending(_) => Err(Error::protocol("a flow ended waiting for input")),
        }
    }

    /// One round of a flow from its params ([`crate::relay::once`]).
    pub(crate) async fn first<T: FlowResult>(
        &self,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<Step<T>, Error> {
        let mut budget = Budget::new(self.max_rounds(opts)).until(self.flow_timeout(opts));
        self.bounded::<T, _>(opts, self.round(params, &mut budget, None, None, opts))
            .await
    }

    async fn drive<T: FlowResult>(
        &self,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<T, Error> {
        let mut budget = Budget::new(self.max_rounds(opts)).until(self.flow_timeout(opts));
        let step = self
            .bounded::<T, _>(opts, async {
                let first = self.round(params, &mut budget, None, None, opts).await?;
                self.run(first, &mut budget, opts).await
            })
            .await?;
        self.settle(step, opts).await
    }

    /// The call's cancellation token and deadline around `fut`, whatever
    /// part of the flow it is (MRTR-C-A3). Not an `async fn`, so that `fut`
    /// moves once, to the heap ([`cancellable`]), and the caller's future
    /// stays small.
    fn bounded<'a, T: FlowResult, R: 'a>(
        &'a self,
        opts: &'a CallOptions,
        fut: impl Future<Output = Result<R, Error>> + Send + 'a,
    ) -> impl Future<Output = Result<R, Error>> + Send + 'a {
        let deadline = self.flow_timeout(opts);
        cancellable(opts.cancel.as_ref(), async move {
            tokio::time::timeout(deadline, fut).await.map_err(|_| {
                Error::timeout(format!("{} took longer than {deadline:?}", T::METHOD))
            })?
        })
    }

    /// The loop: answer, retry, until complete, a task, or a limit
    /// (MRTR-C-A3). Never returns [`Step::Pending`]. `budget` is the
    /// call's, in the round of `step`.
    async fn run<T: FlowResult>(
        &self,
        mut step: Step<T>,
        budget: &mut Budget,
        opts: &CallOptions,
    ) -> Result<Step<T>, Error> {
        let mut state_only = 0;
        loop {
            let pending = match step {
                Step::Pending(p) => p,
                done => return Ok(done),
            };
            // Before the provider is asked: a round that cannot be sent
            // is not worth a person's answer.
            budget.retry()?;
            let responses = if pending.input_requests.is_empty() {
                // MRTR-C2: a state-only round may be retried at once; back
                // off briefly, a bounded number of times (SECURITY.md §3.10).
                state_only += 1;
                if state_only > MAX_STATE_ONLY_ROUNDS {
                    return Err(Error::round_limit(format!(
                        "more than {MAX_STATE_ONLY_ROUNDS} consecutive state-only rounds"
                    )));
                }
                tokio::time::sleep(backoff(state_only, &pending)).await;
                None
            } else {
                state_only = 0;
                let answers = self.answer(&pending).await?;
                opts.emit(&RoundEvent::Answered {
                    round: pending.round,
                    responses: &answers,
                });
                Some(answers)
            };
            step = self
                .round(
                    pending.params,
                    budget,
                    responses,
                    pending.request_state,
                    opts,
                )
                .await?;
        }
    }

    /// The round ceiling of a call: the lower of its own and the client's.
    pub(crate) fn max_rounds(&self, opts: &CallOptions) -> u32 {
        opts.max_rounds
            .map_or(self.inner.max_rounds, |r| r.min(self.inner.max_rounds))
    }

    /// Sends the round the call's `budget` is in, built from the caller's
    /// `base` parameters. A 2025-11-25 server's requests during it start
    /// rounds of their own, so an interim result it ends with belongs to
    /// the round the budget reached by then.
    async fn round<T: FlowResult>(
        &self,
        base: Map<String, Value>,
        budget: &mut Budget,
        responses: Option<InputResponses>,
        request_state: Option<String>,
        opts: &CallOptions,
    ) -> Result<Step<T>, Error> {
        // The round's own fields go into the caller's params for the send
        // and come out again after it: `base` is what every round repeats
        // (MRTR-C7), and a copy of it per round would only be dropped.
        let mut params = base;
        let responses = match responses {
            Some(r) => Some(serde_json::to_value(r).map_err(|e| Error::usage(e.to_string()))?),
            None => None,
        };
        let displaced = [
            ("inputResponses", responses),
            // MRTR-C5: the exact string, or no key at all.
            ("requestState", request_state.map(Value::String)),
        ]
        .map(|(key, value)| value.map(|v| (key, params.insert(key.into(), v))));
        opts.emit(&RoundEvent::Sending {
            round: budget.round(),
            method: T::METHOD,
        });
        let call = Call {
            method: T::METHOD,
            params,
            opts,
            deadline: budget.deadline(),
        };
        let sent = self.send(&call, budget).await;
        let round = budget.round();
        let mut base = call.params;
        for (key, before) in displaced.into_iter().flatten() {
            match before {
                Some(v) => base.insert(key.into(), v),
                None => base.remove(key),
            };
        }
        let result = sent?;
        // The tasks extension's result, only for a call that declared it
        // (EXT-3).
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            let declared = opts
                .capabilities
                .as_ref()
                .map_or(self.inner.tasks, |c| c.extension(methods::TASKS_EXTENSION));
            let task = created(T::METHOD, base, &result, declared)?;
            opts.emit(&RoundEvent::Task {
                task_id: task.task_id(),
                status: "working",
                message: result.get("statusMessage").and_then(Value::as_str),
            });
            return Ok(Step::Task(task));
        }
        match result_type(&result)? {
            ResultType::InputRequired => {
                let (input_requests, request_state, server_info, answer_within_secs) =
                    interim(&result, self.inner.provider.kinds())?;
                opts.emit(&RoundEvent::InputRequired {
                    round,
                    input_requests: &input_requests,
                    request_state: request_state.as_deref(),
                });
                Ok(Step::Pending(PendingCall::new(
                    T::METHOD,
                    base,
                    round,
                    request_state,
                    input_requests,
                    server_info,
                    answer_within_secs,
                )))
            }
            _ => {
                let done = parse_result(T::METHOD, result)?;
                opts.emit(&RoundEvent::Complete { round });
                Ok(Step::Complete(done))
            }
        }
    }
}

pub(crate) type Interim = (InputRequests, Option<String>, Option<Value>, Option<u64>);

/// Checks an interim result before anything acts on it (MRTR-C-A2,
/// SECURITY.md §3.10).
pub(crate) fn interim(result: &Map<String, Value>, kinds: InputKinds) -> Result<Interim, Error> {
    let state = match result.get("requestState") {
        None => None,
        Some(Value::String(s)) if s.len() <= MAX_REQUEST_STATE => Some(s.clone()),
        Some(Value::String(s)) => {
            return Err(Error::protocol(format!(
                "requestState of {} bytes exceeds {MAX_REQUEST_STATE}",
                s.len()
            )));
        }
        Some(_) => return Err(Error::protocol("requestState is not a string")),
    };
    let requests = match result.get("inputRequests") {
        None => InputRequests::new(),
        Some(Value::Object(map)) => {
            if map.len() > MAX_INPUT_REQUESTS {
                return Err(Error::protocol(format!(
                    "{} input requests exceed {MAX_INPUT_REQUESTS}",
                    map.len()
                )));
            }
            let mut requests = InputRequests::new();
            for (key, raw) in map {
                let request = InputRequest::deserialize(raw).map_err(|e| {
                    Error::protocol(format!("malformed input request {key:?}: {e}"))
                })?;
                check_declared(kinds, key, &request)?;
                requests.insert(key.clone(), request);
            }
            requests
        }
        Some(_) => return Err(Error::protocol("inputRequests is not an object")),
    };
    // An empty inputRequests counts as absent (MRTR-S-A3).
    if requests.is_empty() && state.is_none() {
        return Err(Error::protocol(
            "an input_required result with neither inputRequests nor requestState",
        ));
    }
    let meta = result.get("_meta");
    let server_info = meta.and_then(|m| m.get(meta_keys::SERVER_INFO)).cloned();
    let ttl = meta
        .and_then(|m| m.get(meta_keys::STATE_TTL_SECS))
        .and_then(Value::as_u64);
    Ok((requests, state, server_info, ttl))
}

/// The call's target for display: the tool or prompt name, or the URI.
pub(crate) fn target_of(params: &Map<String, Value>) -> Option<String> {
    params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Asks the provider for one answer. A refusal (MRTR-C4: no refused form
/// on the wire) or a provider panic ends the call locally, never the caller.
pub(crate) async fn answer_one(
    provider: &dyn InputProvider,
    cx: InputContext,
    request: InputRequest,
) -> Result<InputResponse, Error> {
    let key = cx.key.clone();
    let answer = catch_panic(async move {
        match request {
            InputRequest::Elicitation(ElicitRequestParams::Form(p)) => {
                provider.elicit_form(cx, p).await.map(InputResponse::Elicit)
            }
            InputRequest::Elicitation(ElicitRequestParams::Url(p)) => {
                provider.elicit_url(cx, p).await.map(InputResponse::Elicit)
            }
            InputRequest::Sampling(p) => provider.sample(cx, p).await.map(InputResponse::Sampling),
            InputRequest::ListRoots(_) => {
                provider.list_roots(cx).await.map(InputResponse::ListRoots)
            }
        }
    })
    .await;
    match answer {
        Ok(Ok(a)) => Ok(a),
        Err(panic) => Err(Error::refused(format!(
            "the input provider failed while answering {key:?}: {panic}"
        ))),
        Ok(Err(r)) => Err(Error::refused(format!(
            "the input provider refused {key:?}: {}",
            r.reason
        ))),
    }
}

/// MRTR-S8 seen from the client: a request through a kind this client did
/// not declare is a violation, never answered with a made-up decline
/// (MRTR-C-A2, SAMP-S2).
pub(crate) fn check_declared(
    kinds: InputKinds,
    key: &str,
    request: &InputRequest,
) -> Result<(), Error> {
    let (ok, what) = match request {
        InputRequest::Elicitation(ElicitRequestParams::Form(_)) => (kinds.form, "form elicitation"),
        InputRequest::Elicitation(ElicitRequestParams::Url(_)) => (kinds.url, "URL elicitation"),
        InputRequest::Sampling(p) if p.tools.is_some() || p.tool_choice.is_some() => {
            (kinds.sampling_tools, "sampling with tools")
        }
        InputRequest::Sampling(_) => (kinds.sampling || kinds.sampling_tools, "sampling"),
        InputRequest::ListRoots(_) => (kinds.roots, "roots"),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::capability(format!(
            "the server asked for {what} under {key:?}, which the client did not declare"
        )))
    }
}

/// Exponential backoff from 100 ms for the `n`th consecutive state-only
/// round, with up to 50% jitter derived from the state and round (no
/// thread-local RNG, STYLE.md Habits).
fn backoff<T>(n: u32, pending: &PendingCall<T>) -> Duration {
    let base = 100u64 << (n.saturating_sub(1)).min(6);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let seed = pending.request_state.as_deref().unwrap_or("");
    for b in seed
        .bytes()
        .chain(pending.round.to_le_bytes())
        .chain(n.to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Duration::from_millis(base + h % (base / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_bounded() {
        let p: PendingCall<CallToolResult> = PendingCall::new(
            "tools/call",
            Map::new(),
            1,
            Some("s".into()),
            InputRequests::new(),
            None,
            None,
        );
        for n in 1..=3 {
            let d = backoff(n, &p).as_millis() as u64;
            let base = 100 << (n - 1);
            assert!(d >= base && d < base + base / 2, "{n}: {d}");
        }
    }

    #[test]
    fn interim_results_are_checked() {
        let kinds = InputKinds::NONE.with_form();
        let ok = |v: Value| interim(v.as_object().unwrap(), kinds);
        assert!(
            ok(json!({"resultType": "input_required"}))
                .unwrap_err()
                .is_protocol()
        );
        assert!(
            ok(json!({"resultType": "input_required", "inputRequests": {}}))
                .unwrap_err()
                .is_protocol()
        );
        assert!(ok(json!({"requestState": 5})).unwrap_err().is_protocol());
        let big = "x".repeat(MAX_REQUEST_STATE + 1);
        assert!(ok(json!({"requestState": big})).unwrap_err().is_protocol());
        let many: Map<String, Value> = (0..17)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect();
        assert!(
            ok(json!({"inputRequests": many}))
                .unwrap_err()
                .is_protocol()
        );
        let roots = ok(json!({"inputRequests": {"r": {"method": "roots/list"}}})).unwrap_err();
        assert!(roots.is_capability() && roots.is_protocol());
        let bad = ok(json!({"inputRequests": {"x": {"method": "ping"}}})).unwrap_err();
        assert!(bad.is_protocol() && !bad.is_capability());
        let (r, s, _, _) = ok(json!({"requestState": "abc"})).unwrap();
        assert!(r.is_empty());
        assert_eq!(s.as_deref(), Some("abc"));
    }
}
