//! The task phase's delivery: a round a task's body asks is listed on the
//! task (`input_required`, its questions under `inputRequests`), and its
//! answers come back with `tasks/update`. Nothing is sealed and the body
//! is not re-run: [`TaskRound::ask`] evaluates the same needs again once
//! the answers are in, with the same parsers as any round.
//!
//! Each answer is checked when it arrives, against the exact question
//! (its kind's parser: a form's schema, the URL step, the sample, the
//! roots), before `tasks/update` is acknowledged: a bad answer is refused
//! with -32602 and its key stays open. Keys a round did not ask are
//! ignored; a key is never reused within a task (the table suffixes one
//! asked again). The capability gate is what the creating request
//! declared, and the round ceiling is the route's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;
use tern_proto::McpError;
use tern_types::ClientCapabilities;

use crate::ask::{Ask, AskContext, Asked, NeedSet, check_relayed};
use crate::outcome::{Error, Pending};
use crate::server::Server;
use crate::tasks::TaskId;
use crate::tasks::table::Check;

/// One running task's side of its rounds.
#[derive(Debug)]
pub(crate) struct TaskRound {
    pub(crate) server: Server,
    pub(crate) id: TaskId,
    /// What the creating request declared.
    pub(crate) caps: ClientCapabilities,
    pub(crate) ceiling: u8,
    /// The rounds this task has asked, across every `ask` of its body: the
    /// ceiling bounds the task, not each question (SECURITY.md "Tasks").
    pub(crate) rounds: AtomicU8,
}

impl TaskRound {
    /// Asks `needs` until every required answer is in (or the ceiling, the
    /// input wait, or a refusal ends it).
    pub(crate) async fn ask<N>(&self, needs: N) -> Result<N::Output, Error>
    where
        N: NeedSet + Clone + Send + Sync + 'static,
        N::Output: Send,
    {
        let mut cx = AskContext::unanswered(self.caps.clone());
        loop {
            let pending = match (Ask { cx: Arc::new(cx) }).all(needs.clone()) {
                Ok(answers) => return Ok(answers),
                Err(Error::Input(p)) => p,
                Err(e) => return Err(e),
            };
            // The ceiling bounds the task, counted as a flow's rounds are.
            // Past it, the count stays: every later ask is refused too.
            self.rounds
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |asked| {
                    super::next_round(asked, self.ceiling).ok()
                })
                .map_err(|_| McpError::TooManyRounds)?;
            cx = self.deliver(pending).await?;
        }
    }

    pub(crate) fn status(&self, message: String) {
        let tasks = &self.server.inner.tasks;
        tasks.set_message(&self.id, message);
        if tasks.shared().is_some() {
            // The body goes on; the record follows (the latest state wins).
            let (server, id) = (self.server.clone(), self.id.clone());
            tokio::spawn(async move {
                if let Err(e) = server.inner.tasks.publish(&id).await {
                    tracing::warn!(error = %e, "task record not written");
                }
            });
        }
    }

    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        &self.caps
    }

    /// Lists `round` on the task and waits for its answers, each checked
    /// as it arrives (`tasks/update`), within the input wait. Not a
    /// [`super::Delivery`]: the body is never re-run, it awaits this.
    async fn deliver(&self, round: Pending) -> Result<AskContext, McpError> {
        let server = &self.server;
        let expect = round.requests.iter().map(Asked::expect).collect();
        let asked: Arc<Vec<Asked>> = Arc::new(round.requests);
        let check: Check = {
            let asked = asked.clone();
            Arc::new(move |key: &str, wire: &str, answer: &Value| {
                match asked.iter().find(|q| q.key == key) {
                    Some(q) => check_relayed(wire, &q.request, answer),
                    None => Ok(()),
                }
            })
        };
        let questions = asked
            .iter()
            .map(|q| (q.key.clone(), q.request.clone()))
            .collect();
        let tasks = &server.inner.tasks;
        let rx = tasks.open_round(&self.id, questions, check)?;
        tasks.publish(&self.id).await?;
        let wait = tasks.limits().input_wait;
        let answers = match tokio::time::timeout(wait, rx).await {
            Ok(Ok(answers)) => answers,
            Ok(Err(_)) => return Err(McpError::Internal("the task's round was dropped".into())),
            Err(_) => {
                server.metrics().limit_reached("task_input_wait");
                return Err(McpError::timeout(
                    "task_input_wait",
                    format!(
                        "no answer to the task's questions within {} s",
                        wait.as_secs()
                    ),
                ));
            }
        };
        Ok(AskContext::answered(
            self.caps.clone(),
            expect,
            Vec::new(),
            answers,
        ))
    }
}
