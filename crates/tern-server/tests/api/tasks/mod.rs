//! The tasks extension on the server: creation, in-task input through
//! `tasks/update`, cancellation, and what a hostile client may try (another
//! principal's task, a guessed id, answers never asked, answers that break
//! the schema, answers after the end, too many tasks, a polling flood).
//!
//! Here: what the tests share (a task's requests, Alice and Bob, the
//! approval tool, polling a task to a status), which `task_fleet` and
//! `budgets` use too; the tests are in the modules below, one behaviour
//! each.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tern_proto::Principal;
use tern_server::{
    Elicited, Error, Need, Outcome, Server, Task, TaskLimits, TaskScope, TaskSupport, ToolDef,
    ToolResult,
};

use super::support::{Approval, Harness, Profile, error, meta, result};

mod access;
mod answer_keys;
mod input;
mod lifetime;
mod limits;

pub(super) const EXT: &str = "io.modelcontextprotocol/tasks";

pub(super) fn caps() -> Value {
    json!({"elicitation": {"form": {}}, "extensions": {EXT: {}}})
}

pub(super) fn call(name: &str, caps: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"_meta": meta(caps), "name": name, "arguments": {}}})
}

pub(super) fn task_req(method: &str, id: &str, extra: Value) -> Value {
    let mut params = json!({"_meta": meta(caps()), "taskId": id});
    if let Value::Object(m) = extra {
        params.as_object_mut().unwrap().extend(m);
    }
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

pub(super) fn alice() -> Principal {
    Principal::Static {
        secret_id: "alice".into(),
    }
}

pub(super) fn bob() -> Principal {
    Principal::Static {
        secret_id: "bob".into(),
    }
}

/// A task that asks for an approval, then for a profile, and counts how
/// often its body started (it must start once).
pub(super) fn approval_tool(starts: Arc<AtomicUsize>) -> ToolDef {
    let handler = move |task: Task| {
        let starts = starts.clone();
        async move {
            task.run(move |scope: TaskScope| async move {
                starts.fetch_add(1, Ordering::SeqCst);
                let approved = scope
                    .ask(Need::form::<Approval>("approve", "Go ahead?"))
                    .await?;
                let Elicited::Accepted(Approval { approved: true }) = approved else {
                    return Ok::<_, Error>(ToolResult::text("not approved"));
                };
                let profile = scope
                    .ask(Need::form::<Profile>("profile", "Who are you?"))
                    .await?;
                Ok(match profile {
                    Elicited::Accepted(p) => ToolResult::text(format!("approved by {}", p.name)),
                    Elicited::Declined => ToolResult::text("declined"),
                    Elicited::Cancelled => ToolResult::text("cancelled"),
                })
            })
        }
    };
    ToolDef::new("approve", "asks during the task", handler).task(TaskSupport::Optional)
}

pub(super) fn sleeper() -> ToolDef {
    async fn sleep(task: Task) -> Outcome {
        task.run(|_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ToolResult::text("woke")
        })
    }
    ToolDef::new("sleep", "sleeps an hour", sleep).task(TaskSupport::Required)
}

fn harness(limits: TaskLimits) -> (Harness, Arc<AtomicUsize>) {
    let starts = Arc::new(AtomicUsize::new(0));
    let builder = Server::builder("tasks", "1")
        .tool_def(approval_tool(starts.clone()))
        .tool_def(sleeper())
        .config(tern_server::Config {
            tasks: limits,
            ..tern_server::Config::default()
        });
    (Harness::new(builder), starts)
}

pub(super) async fn get(h: &Harness, who: Principal, id: &str) -> Value {
    result(&h.send_as(who, &task_req("tasks/get", id, json!({}))).await)
}

/// `tasks/get` of `id` as `who` answers the one -32602 of an unknown task:
/// a lapsed, evicted or another principal's task reads as a guessed id.
pub(super) async fn assert_gone(h: &Harness, who: Principal, id: &str) {
    let (code, e) = error(&h.send_as(who, &task_req("tasks/get", id, json!({}))).await);
    assert_eq!(
        (code, &e["message"]),
        (-32602, &json!("Unknown task")),
        "{id}: {e}"
    );
}

/// Polls until the task shows `status` (the body runs on the runtime).
pub(super) async fn wait_for(h: &Harness, who: Principal, id: &str, status: &str) -> Value {
    for _ in 0..500 {
        let t = get(h, who.clone(), id).await;
        if t["status"] == status {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!(
        "task {id} never reached {status}: {}",
        get(h, who, id).await
    );
}

/// `tasks/update` and `tasks/cancel` answer `{resultType: "complete"}`
/// (and the server's `_meta`), never a task envelope.
pub(super) fn assert_bare_ack(ack: &Value) {
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let keys: Vec<&String> = ack.as_object().unwrap().keys().collect();
    assert!(
        keys.iter().all(|k| *k == "resultType" || *k == "_meta"),
        "{ack}"
    );
}

pub(super) async fn create(h: &Harness, who: Principal, tool: &str) -> String {
    let r = result(&h.send_as(who, &call(tool, caps())).await);
    assert_eq!(r["resultType"], "task", "{r}");
    assert_eq!(r["status"], "working");
    for absent in [
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "task",
    ] {
        assert!(r.get(absent).is_none(), "{absent} in {r}");
    }
    let id = r["taskId"].as_str().unwrap().to_owned();
    // 128 bits, hex.
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    id
}

/// The keys a task (or an `input_required` result) lists under
/// `inputRequests`, in order.
pub(super) fn asked_keys(t: &Value) -> Vec<String> {
    t["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// `tasks/update` with `responses`, from Alice.
pub(super) async fn answer(h: &Harness, id: &str, responses: Value) -> (u16, Value) {
    h.send_as(
        alice(),
        &task_req("tasks/update", id, json!({"inputResponses": responses})),
    )
    .await
}
