//! Upstream tasks, for a client that takes tasks.
//!
//! A client that declared the tasks extension and calls an upstream tool
//! that runs as a task gets a task of the proxy's own: its id is the
//! proxy's (128 random bits, bound to the client's principal by the
//! server's task table), and the upstream's id never leaves the proxy, so
//! `tasks/*` from a client can only reach the upstream task its own call
//! created. The task's body calls the upstream with the extension
//! declared, follows the upstream task, and asks the client each of its
//! questions through [`TaskScope::ask`] (so the proxy's task is
//! `input_required` with them, and the answers are checked against them
//! before they go upstream). Cancelling the proxy's task cancels the
//! upstream's. A client without the extension (a 2025-11-25 client among
//! them) gets the call relayed round by round instead, without the
//! extension upstream: a task-optional tool runs inline.

use std::collections::HashSet;

use serde_json::{Map, Value};
use tern_client::{CallOptions, Client, PendingTask, Step};
use tern_proto::McpError;
use tern_server::{Error, IntoOutcome, Json, Outcome, TaskScope};
use tern_types::CallToolResult;

use crate::relay::{Forward, needs};
use crate::upstream::Live;

/// Sends `tasks/cancel` upstream when dropped armed: the proxy's task was
/// cancelled (its body dropped) or failed while the upstream's runs.
struct CancelUpstream {
    client: Client,
    id: String,
    opts: CallOptions,
    armed: bool,
}

impl Drop for CancelUpstream {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (client, id, opts) = (self.client.clone(), self.id.clone(), self.opts.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let stop = client.cancel_task(&id, &opts);
                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), stop).await;
            });
        }
    }
}

impl Forward {
    /// Runs the call as the body of the proxy's task (see the module).
    pub(crate) async fn run_task(
        self,
        params: Map<String, Value>,
        scope: TaskScope,
    ) -> Result<Outcome, Error> {
        let live = self.up.client().await?;
        let opts = self.options_with(self.caps.clone());
        let mut step =
            tern_client::relay::once::<CallToolResult>(&live.client, params, &opts).await;
        loop {
            match step {
                Ok(Step::Complete(result)) => return Ok(Json(result).into_outcome()),
                // Rounds before the upstream creates its task.
                Ok(Step::Pending(pending)) => {
                    let requests = pending.input_requests().clone();
                    let answers = scope.ask(needs(&requests)?).await?;
                    let answered = tern_client::relay::answers(&requests, answers);
                    step = live.client.resume_with(pending, answered, &opts).await;
                }
                Ok(Step::Task(task)) => return self.follow(&live, task, &scope, opts).await,
                Err(e) => return Err(self.lost(&live, &e).await.into()),
            }
        }
    }

    /// Polls the upstream task to its end, asking the client each question
    /// it lists once.
    async fn follow(
        &self,
        live: &Live,
        task: PendingTask<CallToolResult>,
        scope: &TaskScope,
        opts: CallOptions,
    ) -> Result<Outcome, Error> {
        let mut guard = CancelUpstream {
            client: live.client.clone(),
            id: task.task_id().to_owned(),
            opts: opts.clone(),
            armed: true,
        };
        let mut answered: HashSet<String> = HashSet::new();
        let mut said: Option<String> = None;
        loop {
            let t = match live.client.get_task(&guard.id, &opts).await {
                Ok(t) => t,
                Err(e) => return Err(self.lost(live, &e).await.into()),
            };
            if t.status_message.is_some() && t.status_message != said {
                said.clone_from(&t.status_message);
                scope.status(said.clone().unwrap_or_default());
            }
            match t.status.as_str() {
                "completed" => {
                    guard.armed = false;
                    return Ok(Outcome::Complete(t.result.unwrap_or_default()));
                }
                "failed" => {
                    guard.armed = false;
                    let e = match t.error {
                        Some(e) => tern_client::Error::remote(e),
                        None => tern_client::Error::protocol("a failed task without an error"),
                    };
                    return Err(self.failure(&e).into());
                }
                "cancelled" => {
                    guard.armed = false;
                    return Err(McpError::Internal(format!(
                        "upstream {} cancelled the task",
                        self.up.name
                    ))
                    .into());
                }
                "input_required" => {
                    let open = t.unanswered(&answered);
                    if !open.is_empty() {
                        let answers = scope.ask(needs(&open)?).await?;
                        answered.extend(open.iter().map(|(k, _)| k.to_owned()));
                        let sent = tern_client::relay::answers(&open, answers);
                        if let Err(e) = live.client.update_task(&guard.id, &sent, &opts).await {
                            return Err(self.lost(live, &e).await.into());
                        }
                        continue;
                    }
                }
                _ => {}
            }
            tokio::time::sleep(t.next_poll()).await;
        }
    }

    /// An upstream failure as the client sees it; a lost connection is
    /// dropped so the next call reconnects.
    pub(crate) async fn lost(&self, live: &Live, e: &tern_client::Error) -> McpError {
        if crate::error::is_lost(e) {
            self.up.lost(live).await;
        }
        self.failure(e)
    }
}
