//! `tern call` through the workload's `migrate` task, which asks during
//! its run (the tasks extension is declared by default); `--detach` and
//! `tern task get|wait|cancel`; the same tool with `--no-tasks`, as an
//! MRTR flow; a tool that runs only as a task (issue 52).

use std::process::Command;

use tern::server::{
    Outcome, Server as TernServer, Task, TaskScope, TaskSupport, ToolDef, ToolResult,
};

use super::common::{Server, Target, in_process, run, tern_bin};

const APPLY: &str = r#"{"apply_migration": {"action": "accept", "content": {"apply": true}}}"#;

fn task(sub: &str, s: &Server, id: &str, extra: &[&str]) -> super::common::Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(["task", sub, &s.url, id]).args(extra);
    run(cmd)
}

#[test]
fn a_call_follows_its_task_and_answers_its_question() {
    let t = Target::http();
    let r = t.call_with(
        APPLY,
        &[
            "tool",
            "migrate",
            "database=orders",
            "seconds=0.3",
            "--json",
        ],
    );
    // No flag: the extension is declared by default.
    r.ok().says("migrated orders");
    // The status lines: created working, then the question, then done.
    assert!(r.stderr.contains("· working"), "{r:#?}");
    assert!(r.stderr.contains("· input_required"), "{r:#?}");
    assert!(r.stderr.contains("· completed"), "{r:#?}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "migrated orders");
    let rounds = v["rounds"].as_array().unwrap();
    assert!(rounds.iter().any(|r| r["status"] == "completed"), "{v}");
}

#[test]
fn without_tasks_the_same_tool_is_a_flow_of_rounds() {
    let t = Target::stdio();
    let r = t.call_with(
        APPLY,
        &[
            "tool",
            "migrate",
            "database=orders",
            "--verbose",
            "--no-tasks",
        ],
    );
    r.ok().says("migrated orders").says("input_required");
    assert!(!r.stderr.contains("task "), "{r:#?}");
    assert!(!r.stderr.contains("extensions"), "{r:#?}");
}

/// A server built with tern whose `build` tool runs only as a task
/// (`TaskSupport::Required`), on HTTP.
struct TaskOnly {
    url: String,
    _rt: tokio::runtime::Runtime,
}

fn task_only_server() -> TaskOnly {
    async fn build(task: Task) -> Outcome {
        task.run(|scope: TaskScope| async move {
            scope.status("compiling");
            ToolResult::text("built")
        })
    }
    let server = TernServer::builder("task-only", "1.0.0")
        .tool_def(
            ToolDef::new("build", "Builds, only as a task", build).task(TaskSupport::Required),
        )
        .build()
        .unwrap();
    let (url, rt) = in_process(server);
    TaskOnly { url, _rt: rt }
}

fn call_build(s: &TaskOnly, extra: &[&str]) -> super::common::Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(["call", &s.url, "tool", "build"]).args(extra);
    run(cmd)
}

/// Issue 52: a tool that runs only as a task just works with `tern call
/// URL tool build`, as the extension is declared like the kinds of input;
/// `--tasks`, from before, is still accepted and changes nothing.
#[test]
fn a_task_only_tool_runs_with_no_flag() {
    let s = task_only_server();
    let r = call_build(&s, &["--json"]);
    r.ok();
    assert!(r.stderr.contains("· completed"), "{r:#?}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "built", "{v}");
    call_build(&s, &["--tasks"]).ok().says("built");
}

/// With `--no-tasks` the server's -32021 (META-S10) names the tasks
/// extension in its data, and tern says exactly that and which flag to
/// drop, with no advice about kinds of input the server did not ask for.
#[test]
fn with_no_tasks_the_refusal_names_the_extension_and_the_flag() {
    let s = task_only_server();
    let r = call_build(&s, &["--no-tasks"]);
    r.failed(3)
        .says(r#"tern: error data: {"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#)
        .says("tern: the server requires the tasks extension (io.modelcontextprotocol/tasks); drop --no-tasks\n");
    for other in ["sampling", "--root", "elicitation"] {
        assert!(!r.stderr.contains(other), "{other}: {r:#?}");
    }
    // --no-tasks cannot be given with what needs tasks.
    call_build(&s, &["--no-tasks", "--detach"]).failed(2);
    call_build(&s, &["--no-tasks", "--tasks"]).failed(2);
}

#[test]
fn a_declined_go_ahead_ends_the_task_with_the_tool_error() {
    let t = Target::http();
    t.call_with(
        r#"{"apply_migration": {"action": "decline"}}"#,
        &["tool", "migrate", "database=orders", "--tasks"],
    )
    .failed(4)
    .says("the migration of orders was not applied");
}

#[test]
fn a_detached_task_is_inspected_then_waited_for_or_cancelled() {
    let s = Server::start();
    let t = Target::Http(s);
    let r = t.call(&[
        "tool",
        "migrate",
        "database=billing",
        "seconds=30",
        "--detach",
    ]);
    r.ok();
    let id = r.stdout.trim().to_owned();
    assert_eq!(id.len(), 32, "{r:#?}");
    let Target::Http(s) = &t else { unreachable!() };
    task("get", s, &id, &[])
        .ok()
        .says("working")
        .says("checking billing");
    let json = task("get", s, &id, &["--json"]);
    let v: serde_json::Value = serde_json::from_str(json.stdout.trim()).unwrap();
    assert_eq!(v["taskId"], id.as_str());
    assert_eq!(v["status"], "working");
    task("cancel", s, &id, &[]).ok().says("cancel");
    task("get", s, &id, &[]).ok().says("cancelled");
    // Waiting for a cancelled task ends at once with the refusal.
    task("wait", s, &id, &[]).failed(3).says("cancelled");
    // An id that is not a task of this client.
    task("get", s, &"0".repeat(32), &[])
        .failed(1)
        .says("Unknown task");
}

#[test]
fn a_detached_task_is_finished_by_tern_task_wait() {
    let s = Server::start();
    let t = Target::Http(s);
    let r = t.call(&["tool", "migrate", "database=users", "--detach"]);
    r.ok();
    let id = r.stdout.trim().to_owned();
    let Target::Http(s) = &t else { unreachable!() };
    // No terminal and no answers: `wait` cannot answer the question, so
    // the task is still open after it gives up.
    let w = task("wait", s, &id, &[]);
    assert_ne!(w.code, 0, "{w:#?}");
    task("get", s, &id, &[])
        .ok()
        .says("input_required")
        .says("asks apply_migration");
    // With the answers, `wait` answers the question and prints the result.
    let answers = s.dir.path().join("answers.json");
    std::fs::write(&answers, APPLY).unwrap();
    task("wait", s, &id, &["--answers", answers.to_str().unwrap()])
        .ok()
        .says("migrated users");
}

/// `--timeout` ends a call that follows a task as Ctrl-C does: the task is
/// cancelled at the server (SECURITY.md, "`tern call`"), not left running
/// with no one following it.
#[test]
fn a_call_out_of_time_cancels_the_task_it_follows() {
    let s = Server::start();
    let mut cmd = Command::new(tern_bin());
    cmd.args([
        "call",
        &s.url,
        "tool",
        "migrate",
        "database=ledger",
        "seconds=60",
        "--tasks",
        "--timeout",
        "2",
    ]);
    let r = run(cmd);
    r.failed(3)
        .says("the call did not finish within 2 s (--timeout SECS; 0 for no limit)");
    let id = r
        .stderr
        .split_whitespace()
        .find(|w| w.len() == 32 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| panic!("no task id in {r:#?}"))
        .to_owned();
    task("get", &s, &id, &[]).ok().says("cancelled");
}
