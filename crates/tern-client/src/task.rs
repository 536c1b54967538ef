//! Tasks (the `io.modelcontextprotocol/tasks` extension): a tool call the
//! server runs in the background. With [`ClientBuilder::tasks`] the typed
//! calls follow a created task to its end: they poll `tasks/get` at the
//! server's `pollIntervalMs` (bounded), answer in-task questions through
//! the same [`InputProvider`] and checks as MRTR rounds, send them with
//! `tasks/update`, and return the task's result. Cancelling the call sends
//! `tasks/cancel`. A [`PendingTask`] serialises, so another process can
//! go on polling it with [`Client::wait_task`].
//!
//! Against a hostile server (SECURITY.md, "tern call and tern-client"):
//! a task result is accepted only when the call declared the extension
//! (EXT-3); the poll interval is held between 100 ms and 10 s; each poll's
//! `inputRequests` is bounded and checked against the declared kinds; a
//! key is answered once; in-task rounds count against the call's round
//! limit; the whole task against the task deadline, after which it is
//! cancelled.
//!
//! [`ClientBuilder::tasks`]: crate::ClientBuilder::tasks
//! [`InputProvider`]: crate::InputProvider

use std::collections::HashSet;
use std::marker::PhantomData;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tern_types::{ErrorObject, InputRequest, InputRequests, InputResponses, methods};

use crate::Error;
use crate::client::{Client, parse_result};
use crate::mrtr::{FlowResult, MAX_INPUT_REQUESTS, check_declared};
use crate::options::{CallOptions, RoundEvent};
use crate::pending::PendingCall;
use crate::race::cancellable;

/// The shortest wait between two polls, whatever the server suggests.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two polls.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The wait between polls when the server suggests none.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The longest task id accepted.
const MAX_TASK_ID: usize = 256;

/// A call the server runs as a task: what polling it needs. Serialisable,
/// so a process can resume polling after a restart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "", rename_all = "camelCase")]
pub struct PendingTask<T> {
    method: String,
    params: Map<String, Value>,
    task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    poll_interval_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_info: Option<Value>,
    #[serde(skip)]
    _result: PhantomData<fn() -> T>,
}

impl<T> PendingTask<T> {
    /// The task's id, as the server named it.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The method that created it (`tools/call`).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The call's parameters, as first sent.
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The wait between polls: the server's suggestion, bounded.
    pub fn poll_interval(&self) -> Duration {
        poll_interval(self.poll_interval_ms)
    }

    /// A pending task of `method` (`tools/call`) from its id alone, to wait
    /// for a task created elsewhere (for example by `tern call --detach`).
    pub fn from_id(method: &str, task_id: &str) -> Self {
        PendingTask {
            method: method.to_owned(),
            params: Map::new(),
            task_id: task_id.to_owned(),
            poll_interval_ms: None,
            server_info: None,
            _result: PhantomData,
        }
    }
}

fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
        .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

/// A task as one `tasks/get` showed it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskStatus {
    /// The task's id.
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The server's status message, if any (server text: sanitise before
    /// showing it in a terminal).
    pub status_message: Option<String>,
    /// The open questions, when `input_required`.
    pub input_requests: InputRequests,
    /// The result, when `completed`.
    pub result: Option<Map<String, Value>>,
    /// The error, when `failed`.
    pub error: Option<ErrorObject>,
    /// The server's suggested wait between polls.
    pub poll_interval_ms: Option<u64>,
}

impl TaskStatus {
    /// The open questions whose keys are not in `answered`: a key is
    /// answered once in a task, and a server may list a question again until
    /// it has read the answer.
    pub fn unanswered(&self, answered: &HashSet<String>) -> InputRequests {
        let mut open = InputRequests::new();
        for (key, request) in self.input_requests.iter() {
            if !answered.contains(key) {
                open.insert(key.to_owned(), request.clone());
            }
        }
        open
    }

    /// Whether the task has ended.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }

    /// How long to wait before the next poll: the server's suggestion,
    /// held between 100 ms and 10 s (1 s when it gives none).
    pub fn next_poll(&self) -> Duration {
        poll_interval(self.poll_interval_ms)
    }
}

/// The task a `tools/call` created, checked (EXT-3: only when the call
/// declared the extension).
pub(crate) fn created<T>(
    method: &str,
    params: Map<String, Value>,
    result: &Map<String, Value>,
    declared: bool,
) -> Result<PendingTask<T>, Error> {
    if !declared {
        return Err(Error::protocol(
            "the server created a task for a request that did not declare the tasks extension (EXT-3)",
        ));
    }
    if method != methods::TOOLS_CALL {
        return Err(Error::protocol(format!("{method} cannot create a task")));
    }
    Ok(PendingTask {
        method: method.to_owned(),
        params,
        task_id: task_id(result)?,
        poll_interval_ms: result.get("pollIntervalMs").and_then(Value::as_u64),
        server_info: result
            .get("_meta")
            .and_then(|m| m.get(tern_types::meta_keys::SERVER_INFO))
            .cloned(),
        _result: PhantomData,
    })
}

fn task_id(result: &Map<String, Value>) -> Result<String, Error> {
    match result.get("taskId") {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_TASK_ID => Ok(id.clone()),
        Some(Value::String(_)) => Err(Error::protocol(format!(
            "a taskId must be 1 to {MAX_TASK_ID} characters"
        ))),
        _ => Err(Error::protocol("a task without a string taskId")),
    }
}

/// Reads a `tasks/get` answer, checked before anything acts on it.
fn read_status(
    client: &Client,
    asked_for: &str,
    r: &Map<String, Value>,
) -> Result<TaskStatus, Error> {
    let id = task_id(r)?;
    if id != asked_for {
        return Err(Error::protocol(format!(
            "tasks/get for {asked_for:?} answered about {id:?}"
        )));
    }
    let status = match r.get("status").and_then(Value::as_str) {
        Some(s @ ("working" | "input_required" | "completed" | "failed" | "cancelled")) => {
            s.to_owned()
        }
        other => return Err(Error::protocol(format!("unknown task status {other:?}"))),
    };
    let mut input_requests = InputRequests::new();
    if status == "input_required" {
        let Some(Value::Object(map)) = r.get("inputRequests") else {
            return Err(Error::protocol(
                "an input_required task without an inputRequests object",
            ));
        };
        if map.len() > MAX_INPUT_REQUESTS {
            return Err(Error::protocol(format!(
                "{} input requests exceed {MAX_INPUT_REQUESTS}",
                map.len()
            )));
        }
        for (key, raw) in map {
            let request = InputRequest::deserialize(raw)
                .map_err(|e| Error::protocol(format!("malformed input request {key:?}: {e}")))?;
            check_declared(client.inner.provider.kinds(), key, &request)?;
            input_requests.insert(key.clone(), request);
        }
    }
    let error = match (status.as_str(), r.get("error")) {
        ("failed", Some(e)) => Some(
            ErrorObject::deserialize(e)
                .map_err(|e| Error::protocol(format!("malformed task error: {e}")))?,
        ),
        ("failed", None) => return Err(Error::protocol("a failed task without an error")),
        _ => None,
    };
    let result = match (status.as_str(), r.get("result")) {
        ("completed", Some(Value::Object(m))) => Some(m.clone()),
        ("completed", _) => return Err(Error::protocol("a completed task without a result")),
        _ => None,
    };
    Ok(TaskStatus {
        task_id: id,
        status,
        status_message: r
            .get("statusMessage")
            .and_then(Value::as_str)
            .map(str::to_owned),
        input_requests,
        result,
        error,
        poll_interval_ms: r.get("pollIntervalMs").and_then(Value::as_u64),
    })
}

fn task_params(task_id: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("taskId".into(), json!(task_id));
    p
}

impl Client {
    /// `tasks/get`: the task as the server shows it now, checked.
    pub async fn get_task(&self, task_id: &str, opts: &CallOptions) -> Result<TaskStatus, Error> {
        let r: Map<String, Value> = self
            .simple(methods::TASKS_GET, task_params(task_id), opts)
            .await?;
        read_status(self, task_id, &r)
    }

    /// `tasks/update`: answers the task's open questions, under their keys.
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: &InputResponses,
        opts: &CallOptions,
    ) -> Result<(), Error> {
        let mut params = task_params(task_id);
        params.insert(
            "inputResponses".into(),
            serde_json::to_value(responses).map_err(|e| Error::usage(e.to_string()))?,
        );
        let _: Map<String, Value> = self.simple(methods::TASKS_UPDATE, params, opts).await?;
        Ok(())
    }

    /// `tasks/cancel`: asks the server to stop the task. Cancelling a task
    /// that has ended is acknowledged the same way.
    pub async fn cancel_task(&self, task_id: &str, opts: &CallOptions) -> Result<(), Error> {
        let _: Map<String, Value> = self
            .simple(methods::TASKS_CANCEL, task_params(task_id), opts)
            .await?;
        Ok(())
    }

    /// Polls `task` to its end, answering its questions through the
    /// provider; the task's result, or its error. Cancelling `opts`' token,
    /// or the task deadline passing, sends `tasks/cancel`.
    pub async fn wait_task<T: FlowResult>(
        &self,
        task: PendingTask<T>,
        opts: &CallOptions,
    ) -> Result<T, Error> {
        let deadline = self.inner.task_timeout;
        // The polls themselves are not cancelled by the token: the loop
        // watches it, so it can tell the server.
        let polls = CallOptions {
            cancel: None,
            ..opts.clone()
        };
        let waited = cancellable(opts.cancel.as_ref(), async {
            tokio::time::timeout(deadline, self.follow(&task, &polls, opts))
                .await
                .unwrap_or_else(|_| {
                    Err(Error::timeout(format!(
                        "the task took longer than {deadline:?}"
                    )))
                })
        })
        .await;
        if let Err(e) = &waited
            && (e.is_cancelled() || e.is_timeout() || e.is_round_limit())
        {
            // Best effort, bounded: the call is over either way.
            let stop = self.cancel_task(&task.task_id, &polls);
            let _ = tokio::time::timeout(Duration::from_secs(5), stop).await;
        }
        waited
    }

    async fn follow<T: FlowResult>(
        &self,
        task: &PendingTask<T>,
        polls: &CallOptions,
        opts: &CallOptions,
    ) -> Result<T, Error> {
        let mut answered: HashSet<String> = HashSet::new();
        let mut rounds = 0u32;
        let mut wait = task.poll_interval();
        let mut last: Option<(String, Option<String>)> = None;
        loop {
            let t = self.get_task(&task.task_id, polls).await?;
            let seen = (t.status.clone(), t.status_message.clone());
            if last.as_ref() != Some(&seen) {
                opts.emit(&RoundEvent::Task {
                    task_id: &t.task_id,
                    status: &t.status,
                    message: t.status_message.as_deref(),
                });
                last = Some(seen);
            }
            if let Some(ms) = t.poll_interval_ms {
                wait = poll_interval(Some(ms));
            }
            match t.status.as_str() {
                "completed" => {
                    let result = t.result.unwrap_or_default();
                    return parse_result(&task.method, result);
                }
                "failed" => {
                    return Err(match t.error {
                        Some(e) => Error::remote(e),
                        None => Error::protocol("a failed task without an error"),
                    });
                }
                "cancelled" => return Err(Error::refused("the server cancelled the task")),
                "input_required" => {
                    let open = t.unanswered(&answered);
                    if !open.is_empty() {
                        rounds += 1;
                        if rounds > self.max_rounds(opts) {
                            return Err(Error::round_limit(format!(
                                "the task asked more than {} rounds",
                                self.max_rounds(opts)
                            )));
                        }
                        let pending: PendingCall<T> = PendingCall::in_task(
                            &task.method,
                            task.params.clone(),
                            rounds,
                            open,
                            task.server_info.clone(),
                        );
                        let responses = self.answer(&pending).await?;
                        opts.emit(&RoundEvent::Answered {
                            round: rounds,
                            responses: &responses,
                        });
                        answered.extend(responses.keys().map(str::to_owned));
                        self.update_task(&task.task_id, &responses, polls).await?;
                        continue;
                    }
                }
                _ => {}
            }
            tokio::time::sleep(wait).await;
        }
    }
}
