//! The tasks extension's fixtures (FIXTURES.md, the `tasks-*` scenarios):
//! a sync tool, task tools that sleep, fail, panic or ask during the task,
//! and one that asks an MRTR round before it becomes a task.

use std::time::Duration;

use serde::Deserialize;
use tern::server::{
    Args, Ask, ElicitForm, Elicited, Error, Need, Outcome, ServerBuilder, Task, TaskScope,
    TaskSupport, ToolDef, ToolResult,
};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Greet {
    name: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SlowCompute {
    /// Seconds to work before answering.
    #[serde(default)]
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Filename {
    filename: String,
}

/// What `confirm_delete` asks.
#[derive(Debug, Deserialize, ElicitForm)]
struct Confirm {
    /// Delete it?
    confirm: bool,
}

/// What each of `multi_input`'s two questions asks.
#[derive(Debug, Deserialize, ElicitForm)]
struct NameConfirm {
    /// A name
    name: String,
    /// Go ahead?
    #[serde(default)]
    confirm: Option<bool>,
}

/// What `test_tool_with_task` asks before its task.
#[derive(Debug, Deserialize, ElicitForm)]
struct UserName {
    /// Your name
    name: String,
}

async fn greet(Args(g): Args<Greet>) -> ToolResult {
    ToolResult::text(format!("Hello, {}!", g.name))
}

/// Sleeps `seconds` (at most a minute and a half), then answers.
async fn slow_compute(Args(a): Args<SlowCompute>, task: Task) -> Outcome {
    let secs = if a.seconds.is_finite() {
        a.seconds.clamp(0.0, 90.0)
    } else {
        0.0
    };
    task.run(move |scope: TaskScope| async move {
        scope.status(format!("computing {}", a.label));
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        ToolResult::text(format!("Computed {} in {secs} s", a.label))
    })
}

async fn failing_job(task: Task) -> Outcome {
    task.run(|_| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Err::<ToolResult, _>(Error::tool("The job failed"))
    })
}

async fn protocol_error_job(task: Task) -> Outcome {
    task.run(|_| async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        fails()
    })
}

/// A failure inside the server: the task ends `failed` with -32603.
fn fails() -> ToolResult {
    panic!("protocol_error_job fails on purpose")
}

async fn confirm_delete(Args(f): Args<Filename>, task: Task) -> Outcome {
    task.run(move |scope: TaskScope| async move {
        let message = format!("Delete {}?", f.filename);
        let answer = scope
            .ask(Need::form::<Confirm>("confirm", &message))
            .await?;
        Ok::<_, Error>(match answer {
            Elicited::Accepted(Confirm { confirm: true }) => {
                ToolResult::text(format!("Deleted {}", f.filename))
            }
            Elicited::Accepted(_) | Elicited::Declined | Elicited::Cancelled => {
                ToolResult::text(format!("Kept {}", f.filename))
            }
        })
    })
}

async fn multi_input(task: Task) -> Outcome {
    task.run(|scope: TaskScope| async move {
        let (first, second) = scope
            .ask((
                Need::form::<NameConfirm>("first", "The first name?"),
                Need::form::<NameConfirm>("second", "The second name?"),
            ))
            .await?;
        let name = |e: Elicited<NameConfirm>| match e {
            Elicited::Accepted(f) if f.confirm == Some(true) => format!("{} (confirmed)", f.name),
            Elicited::Accepted(f) => f.name,
            Elicited::Declined => "(declined)".to_owned(),
            Elicited::Cancelled => "(cancelled)".to_owned(),
        };
        Ok::<_, Error>(ToolResult::text(format!(
            "Got {} and {}",
            name(first),
            name(second)
        )))
    })
}

/// An MRTR round first (the name), then the task, whose result names it.
async fn tool_with_task(ask: Ask, task: Task) -> Result<Outcome, Error> {
    let name = match ask.form::<UserName>("user_name", "What is your name?")? {
        Elicited::Accepted(u) => u.name,
        Elicited::Declined | Elicited::Cancelled => return Err(Error::tool("No name was given")),
    };
    Ok(task.run(move |_| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ToolResult::text(format!("Hello, {name}, from a task"))
    }))
}

/// Adds the tasks fixtures to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool("greet", "Greets by name (never a task)", greet)
        .tool_def(
            ToolDef::new(
                "slow_compute",
                "Works for `seconds`, as a task when the client takes tasks",
                slow_compute,
            )
            .task(TaskSupport::Optional),
        )
        .tool_def(
            ToolDef::new(
                "failing_job",
                "A task that ends in a tool error",
                failing_job,
            )
            .task(TaskSupport::Required),
        )
        .tool_def(
            ToolDef::new(
                "protocol_error_job",
                "A task that fails inside the server",
                protocol_error_job,
            )
            .task(TaskSupport::Optional),
        )
        .tool_def(
            ToolDef::new(
                "confirm_delete",
                "Asks for a confirmation during the task",
                confirm_delete,
            )
            .task(TaskSupport::Optional),
        )
        .tool_def(
            ToolDef::new(
                "multi_input",
                "Asks two questions at once during the task",
                multi_input,
            )
            .task(TaskSupport::Optional),
        )
        .tool_def(
            ToolDef::new(
                "test_tool_with_task",
                "Asks a name through MRTR, then runs a task",
                tool_with_task,
            )
            .task(TaskSupport::Required),
        )
}
