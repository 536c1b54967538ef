//! `tern task get|wait|cancel TARGET ID`: a task started earlier (by
//! `tern call --detach`, or another client of the same principal): its
//! status, its end (answering its questions in this terminal), or its
//! cancellation. A task lives in the server that runs it, so the target is
//! a URL or a named HTTP server; a `--cmd` server is a new process that
//! knows no earlier task.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;
use tern::client::{CallOptions, InputKinds, PendingTask};
use tern::types::CallToolResult;

use crate::call::{Reporter, Sink, runtime};
use crate::exit::{self, usage};
use crate::provider::{self, Settings, TerminalProvider};
use crate::{TargetArgs, safe, target, ui};

/// `tern task`.
#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    #[command(subcommand)]
    pub(crate) action: TaskAction,
}

/// What to do with a task.
#[derive(Debug, Subcommand)]
pub(crate) enum TaskAction {
    /// Show the task's status, message, open questions or result.
    Get(TaskTarget),
    /// Follow the task to its end, answering its questions, and print its
    /// result as `tern call` does.
    Wait(TaskTarget),
    /// Ask the server to stop the task.
    Cancel(TaskTarget),
}

/// The server and the task.
#[derive(Debug, Args)]
pub(crate) struct TaskTarget {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// The task id (as `tern call --detach` printed it).
    #[arg(value_name = "ID")]
    pub(crate) id: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// `wait`: answers to the task's questions by input key, from a JSON
    /// file, as for `tern call --answers`.
    #[arg(long, value_name = "FILE")]
    pub(crate) answers: Option<std::path::PathBuf>,
}

/// `tern task`.
pub(crate) fn run(a: TaskArgs) -> Result<ExitCode, String> {
    let (mut t, action) = match a.action {
        TaskAction::Get(t) => (t, "get"),
        TaskAction::Wait(t) => (t, "wait"),
        TaskAction::Cancel(t) => (t, "cancel"),
    };
    // With --cmd the only word is the id.
    if t.target.cmd.is_some() && t.id.is_none() {
        t.id = t.target.url.take();
    }
    let Some(id) = t.id.clone() else {
        return Ok(usage("give the task id"));
    };
    if let Err(e) = crate::servers::resolve(&mut t.target) {
        return Ok(usage(&e));
    }
    let rt = runtime()?;
    let code = rt.block_on(async move {
        tokio::select! {
            r = act(&t, &id, action) => r,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("\ntern: stopped waiting (the task goes on; `tern task cancel` stops it)");
                Ok(exit::code(exit::INTERRUPTED))
            }
        }
    });
    rt.shutdown_background();
    code
}

async fn act(t: &TaskTarget, id: &str, action: &str) -> Result<ExitCode, String> {
    let interactive = provider::stdin_is_terminal();
    let answers = match t
        .answers
        .as_deref()
        .map(provider::Answers::load)
        .transpose()
    {
        Ok(a) => a,
        Err(e) => return Ok(usage(&e)),
    };
    let provider = TerminalProvider::new(Settings {
        kinds: InputKinds::NONE.with_form().with_url(),
        answers,
        yes: false,
        interactive,
        sampler: None,
        roots: Vec::new(),
        roots_chosen: false,
        max_tokens: provider::DEFAULT_MAX_TOKENS,
        server_label: t.target.url.clone().unwrap_or_default(),
    });
    let conn = match target::connect_with(&t.target, provider, |b| b.tasks(true)).await {
        Ok(c) => c,
        Err(e) => return Ok(usage(&e)),
    };
    let client = &conn.client;
    let code = match action {
        "get" => match client.get_task(id, &CallOptions::new()).await {
            Ok(s) => {
                print_status(&s, t.json);
                exit::code(exit::DONE)
            }
            Err(e) => failed(&e),
        },
        "cancel" => match client.cancel_task(id, &CallOptions::new()).await {
            Ok(()) => {
                eprintln!("tern: asked the server to cancel task {}", safe::line(id));
                exit::code(exit::DONE)
            }
            Err(e) => failed(&e),
        },
        _ => {
            let rep = Reporter::new(Sink::Quiet, &conn.label, &format!("task {id}"));
            let task: PendingTask<CallToolResult> = PendingTask::from_id("tools/call", id);
            let r = client.wait_task(task, &rep.options()).await;
            rep.stop();
            match r {
                Ok(r) if t.json => {
                    println!("{}", safe::json(&json!({"result": r})));
                    exit::code(if r.is_error() {
                        exit::FAILED
                    } else {
                        exit::DONE
                    })
                }
                Ok(r) => {
                    println!("{}", ui::tool_text(&r));
                    exit::code(if r.is_error() {
                        exit::FAILED
                    } else {
                        exit::DONE
                    })
                }
                Err(e) => failed(&e),
            }
        }
    };
    conn.close().await;
    Ok(code)
}

fn print_status(s: &tern::client::TaskStatus, json: bool) {
    if json {
        let v = json!({
            "taskId": s.task_id,
            "status": s.status,
            "statusMessage": s.status_message,
            "inputRequests": s.input_requests,
            "result": s.result,
            "error": s.error,
        });
        println!("{}", safe::json(&v));
        return;
    }
    println!("{} · {}", safe::line(&s.task_id), safe::line(&s.status));
    if let Some(m) = &s.status_message {
        println!("  {}", safe::line(m));
    }
    for (key, _) in s.input_requests.iter() {
        println!("  asks {}", safe::line(key));
    }
    if let Some(e) = &s.error {
        println!("  error {}: {}", e.code.0, safe::line(&e.message));
    }
}

fn failed(e: &tern::client::Error) -> ExitCode {
    eprintln!("tern: {}", exit::explain(e, None));
    exit::code(if e.is_remote() {
        exit::FAILED
    } else {
        exit::PROTOCOL
    })
}
