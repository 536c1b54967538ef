//! Long-running tool calls: the tasks extension
//! (`io.modelcontextprotocol/tasks`, ARCHITECTURE.md "Tasks").
//!
//! A tool opts in with [`ToolDef::task`](crate::ToolDef::task). Its handler
//! does what must happen before the call is answered (validating arguments,
//! asking MRTR rounds with [`Ask`](crate::Ask) as any handler does), then
//! hands the long part to [`Task::run`]. When the request declared the
//! extension, that part runs in the background as a task: the call is
//! answered at once with `resultType: "task"`, and the client polls
//! `tasks/get`. Otherwise a task-optional tool runs it inline and answers
//! as usual; a task-required tool was refused with -32021 before it ran.
//!
//! Inside a task the body is not re-run: [`TaskScope::ask`] waits for the
//! answers, which the client sends with `tasks/update`. They are checked
//! by the same parsers as MRTR answers, against the exact question, and
//! pinned to the keys asked (ARCHITECTURE.md "Rounds": the task phase is
//! one more delivery, [`crate::round::task`]).

mod shared;
pub(crate) mod table;
mod wire;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tern_proto::McpError;
use tern_types::ClientCapabilities;

pub(crate) use shared::watch;
pub(crate) use table::{TaskId, Tasks};

use crate::ask::{Ask, NeedSet};
use crate::extract::{CallContext, FromCall};
use crate::handler::BoxFuture;
use crate::outcome::{Error, IntoOutcome, Outcome};

/// Whether a tool runs as a task (the tasks extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// A task when the request declared the extension, inline otherwise.
    Optional,
    /// Only as a task: a request that did not declare the extension gets
    /// -32021 naming it, before the handler runs.
    Required,
}

impl TaskSupport {
    /// The wire name, for `execution.taskSupport` in the tool's listing.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// What tasks may hold (SECURITY.md, "Budgets"). The defaults are the
/// secure ones.
#[derive(Clone, Debug)]
pub struct TaskLimits {
    /// The most unfinished tasks one principal may have (default 16); one
    /// more is refused as busy (-31003) naming the limit.
    pub max_live_per_principal: usize,
    /// The most tasks kept in all, finished ones included (default 4096).
    /// At the limit the oldest finished task is dropped; when none is
    /// finished, a new one is refused like the above.
    pub max_kept: usize,
    /// How long a task is kept from its creation (`ttlMs`, default 1 h). A
    /// task still running then is cancelled; after it, its id is unknown.
    pub ttl: Duration,
    /// How long a task waits for the answers it asked (default 10 min);
    /// past it the body's [`TaskScope::ask`] fails and the task with it.
    pub input_wait: Duration,
    /// The largest result kept, encoded (default 1 MiB); a larger one ends
    /// the task `failed`.
    pub max_result_bytes: usize,
    /// The `pollIntervalMs` suggested to clients (default 500 ms).
    pub poll_interval: Duration,
    /// In a fleet (a shared task store), how long a task's record vouches
    /// for its instance (default 30 s, renewed every third of it). When
    /// the instance dies, the task reads as `failed` once this lapses.
    pub lease: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_live_per_principal: 16,
            max_kept: 4096,
            ttl: Duration::from_secs(3600),
            input_wait: Duration::from_secs(600),
            max_result_bytes: 1024 * 1024,
            poll_interval: Duration::from_millis(500),
            lease: Duration::from_secs(30),
        }
    }
}

/// The body of a task, as [`Task::run`] boxed it.
pub struct TaskBody(pub(crate) Box<dyn FnOnce(TaskScope) -> BoxFuture<Outcome> + Send>);

impl std::fmt::Debug for TaskBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskBody")
    }
}

/// The extractor a task tool's handler takes to hand over its long part.
#[derive(Debug)]
pub struct Task {
    background: bool,
}

impl FromCall for Task {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Task {
            background: cx.as_task,
        })
    }
}

impl Task {
    /// Whether [`run`](Self::run) runs the body in the background, as a
    /// task (a task route, and the request declared the extension), rather
    /// than inline.
    pub fn background(&self) -> bool {
        self.background
    }

    /// Runs `body` as this call's task: in the background when the request
    /// declared the tasks extension (the call is answered with the task),
    /// inline otherwise. Whatever `body` returns is the tool's result.
    pub fn run<F, Fut, R>(self, body: F) -> Outcome
    where
        F: FnOnce(TaskScope) -> Fut + Send + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoOutcome,
    {
        Outcome::Task(TaskBody(Box::new(move |scope| {
            Box::pin(async move { body(scope).await.into_outcome() })
        })))
    }
}

/// What a task's body asks through. Cheap to clone.
#[derive(Clone, Debug)]
pub struct TaskScope {
    pub(crate) mode: ScopeMode,
}

#[derive(Clone, Debug)]
pub(crate) enum ScopeMode {
    /// Run inline in the request: asking is the request's own MRTR round,
    /// and the body re-runs with the answers as any handler does.
    Inline(Ask),
    /// Run as a task: asking waits for `tasks/update`.
    Task(Arc<crate::round::task::TaskRound>),
}

impl TaskScope {
    /// Asks for everything in `needs` (as [`Ask::all`] does) and waits for
    /// the answers. In a task, the task is `input_required` until every
    /// required answer is in; each is checked as an MRTR answer is. Run
    /// inline, a missing answer ends this run with an `input_required`
    /// result and the body runs again from the top with the answers.
    pub async fn ask<N>(&self, needs: N) -> Result<N::Output, Error>
    where
        N: NeedSet + Clone + Send + Sync + 'static,
        N::Output: Send,
    {
        match &self.mode {
            ScopeMode::Inline(ask) => ask.all(needs),
            ScopeMode::Task(round) => round.ask(needs).await,
        }
    }

    /// Sets the status message `tasks/get` shows (in a task; nothing
    /// inline).
    pub fn status(&self, message: impl Into<String>) {
        if let ScopeMode::Task(round) = &self.mode {
            round.status(message.into());
        }
    }

    /// Whether the body runs as a task (not inline in the request).
    pub fn is_task(&self) -> bool {
        matches!(self.mode, ScopeMode::Task(_))
    }

    /// The capabilities the creating request declared: what may be asked.
    pub fn capabilities(&self) -> &ClientCapabilities {
        match &self.mode {
            ScopeMode::Inline(ask) => ask.capabilities(),
            ScopeMode::Task(round) => round.capabilities(),
        }
    }
}

/// Whether a request can be answered with a task: a `tools/call` that
/// declared the extension, in the era that has it (a 2025-11-25 session's
/// call never is, whatever its capabilities say).
pub(crate) fn takes_tasks(
    method: tern_types::methods::Method,
    meta: &tern_proto::accept::RequestMeta,
) -> bool {
    method == tern_types::methods::Method::ToolsCall
        && !tern_types::legacy::LEGACY_VERSIONS.contains(&meta.protocol_version.as_str())
        && meta
            .client_capabilities
            .extension(tern_types::methods::TASKS_EXTENSION)
}

/// -32021 for a task-required tool called by a request that cannot take a
/// task: naming the extension, and for a 2025-11-25 session, that its era
/// has none (it may have declared the extension all the same).
pub(crate) fn task_required(meta: &tern_proto::accept::RequestMeta) -> McpError {
    let mut e = extension_required("this tool");
    if tern_types::legacy::LEGACY_VERSIONS.contains(&meta.protocol_version.as_str())
        && let McpError::MissingCapability { message, .. } = &mut e
    {
        message.push_str(", which a 2025-11-25 session cannot take");
    }
    e
}

/// -32021 naming the tasks extension: a task method, or a task-required
/// tool, from a request that did not declare it.
pub(crate) fn extension_required(what: &str) -> McpError {
    let mut extensions = serde_json::Map::new();
    extensions.insert(
        tern_types::methods::TASKS_EXTENSION.into(),
        serde_json::Value::Object(serde_json::Map::new()),
    );
    let required = ClientCapabilities {
        extensions: Some(extensions),
        ..ClientCapabilities::default()
    };
    McpError::MissingCapability {
        required: Box::new(required),
        message: format!(
            "{what} needs the client extension {}",
            tern_types::methods::TASKS_EXTENSION
        ),
    }
}
