//! The tasks extension on the server: creation, in-task input through
//! `tasks/update`, cancellation, and what a hostile client may try (another
//! principal's task, a guessed id, answers never asked, answers that break
//! the schema, answers after the end, too many tasks, a polling flood).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tern_proto::{McpError, Principal};
use tern_server::{
    Ask, Elicited, Error, Need, Outcome, Server, Task, TaskLimits, TaskScope, TaskSupport, ToolDef,
    ToolResult,
};

use super::support::{Approval, Harness, NOW, Profile, accept, error, meta, result};

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

#[tokio::test]
async fn a_task_asks_during_its_run_and_its_body_runs_once() {
    let (h, starts) = harness(TaskLimits::default());
    let id = create(&h, alice(), "approve").await;
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(t["resultType"], "complete");
    let asked = t["inputRequests"].as_object().unwrap();
    assert_eq!(asked.keys().collect::<Vec<_>>(), ["approve"]);
    assert_eq!(asked["approve"]["method"], "elicitation/create");
    assert!(t.get("requestState").is_none());

    let ack = result(
        &h.send_as(
            alice(),
            &task_req(
                "tasks/update",
                &id,
                json!({"inputResponses": {"approve": accept(json!({"approved": true}))}}),
            ),
        )
        .await,
    );
    assert_bare_ack(&ack);
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(
        t["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["profile"]
    );
    h.send_as(
        alice(),
        &task_req(
            "tasks/update",
            &id,
            json!({"inputResponses": {"profile": accept(json!({"name": "Ada"}))}}),
        ),
    )
    .await;
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "approved by Ada");
    assert!(t.get("pollIntervalMs").is_none());
    assert_eq!(starts.load(Ordering::SeqCst), 1, "the body is not re-run");
    assert_eq!(h.server.metrics().tasks_ended("completed"), 1);
}

#[tokio::test]
async fn in_task_answers_are_checked_before_the_update_is_acknowledged() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    // The schema says boolean: refused, and the key stays open.
    let bad = h
        .send_as(
            alice(),
            &task_req(
                "tasks/update",
                &id,
                json!({"inputResponses": {"approve": accept(json!({"approved": "yes"}))}}),
            ),
        )
        .await;
    let (code, e) = error(&bad);
    assert_eq!(code, -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("approve"), "{e}");
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required");
    assert!(t["inputRequests"]["approve"].is_object());
    // A key never asked is ignored; nothing moves.
    let ack = h
        .send_as(
            alice(),
            &task_req(
                "tasks/update",
                &id,
                json!({"inputResponses": {"profile": accept(json!({"name": "Eve"}))}}),
            ),
        )
        .await;
    assert_eq!(result(&ack)["resultType"], "complete");
    assert_eq!(get(&h, alice(), &id).await["status"], "input_required");
    // Not an object: refused.
    let (code, _) = error(
        &h.send_as(
            alice(),
            &task_req("tasks/update", &id, json!({"inputResponses": [1]})),
        )
        .await,
    );
    assert_eq!(code, -32602);
    // Declining is an answer: the body sees it.
    h.send_as(
        alice(),
        &task_req(
            "tasks/update",
            &id,
            json!({"inputResponses": {"approve": {"action": "decline"}}}),
        ),
    )
    .await;
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "not approved");
    // After the end, answers are acknowledged and ignored.
    let late = h
        .send_as(
            alice(),
            &task_req(
                "tasks/update",
                &id,
                json!({"inputResponses": {"approve": accept(json!({"approved": true}))}}),
            ),
        )
        .await;
    assert_eq!(result(&late)["resultType"], "complete");
    assert_eq!(
        get(&h, alice(), &id).await["result"]["content"][0]["text"],
        "not approved"
    );
}

#[tokio::test]
async fn another_principals_task_is_as_unknown_as_a_guessed_id() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    for method in ["tasks/get", "tasks/cancel"] {
        let theirs = h.send_as(bob(), &task_req(method, &id, json!({}))).await;
        let guessed = h
            .send_as(alice(), &task_req(method, &"0".repeat(32), json!({})))
            .await;
        assert_eq!(error(&theirs).0, -32602, "{method}");
        assert_eq!(error(&theirs).1["message"], error(&guessed).1["message"]);
    }
    let answer = json!({"inputResponses": {"approve": accept(json!({"approved": false}))}});
    let theirs = h
        .send_as(bob(), &task_req("tasks/update", &id, answer))
        .await;
    assert_eq!(error(&theirs).0, -32602);
    // Bob's attempts changed nothing for Alice.
    assert_eq!(get(&h, alice(), &id).await["status"], "input_required");
}

#[tokio::test]
async fn the_tasks_methods_need_the_extension_before_anything_else() {
    let (h, _) = harness(TaskLimits::default());
    let plain = json!({"elicitation": {}});
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let extra = if method == "tasks/update" {
            json!({"inputResponses": {}})
        } else {
            json!({})
        };
        let mut req = task_req(method, "nope", extra);
        req["params"]["_meta"] = meta(plain.clone());
        let reply = h.send(&req).await;
        let (code, e) = error(&reply);
        assert_eq!(code, -32021, "{method}");
        assert_eq!(reply.0, 400);
        assert_eq!(
            e["data"]["requiredCapabilities"]["extensions"][EXT],
            json!({})
        );
    }
    // A task-required tool from such a client: -32021 before it runs.
    let (code, e) = error(&h.send(&call("sleep", plain.clone())).await);
    assert_eq!(code, -32021);
    assert_eq!(
        e["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    // A task-optional one runs inline, as an MRTR flow.
    let r = result(&h.send(&call("approve", plain)).await);
    assert_eq!(r["resultType"], "input_required");
    assert!(r.get("taskId").is_none());
    // tasks/result and tasks/list are not methods.
    for removed in ["tasks/result", "tasks/list"] {
        let (code, _) = error(&h.send(&task_req(removed, "x", json!({}))).await);
        assert_eq!(code, -32601, "{removed}");
    }
}

#[tokio::test]
async fn cancelling_stops_the_body_and_is_idempotent() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "sleep").await;
    let ack = result(
        &h.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_bare_ack(&ack);
    assert_eq!(get(&h, alice(), &id).await["status"], "cancelled");
    let again = result(
        &h.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_eq!(again, ack);
    assert_eq!(h.server.metrics().tasks_ended("cancelled"), 1);
}

#[tokio::test]
async fn one_principal_holds_at_most_its_share_of_live_tasks() {
    let limits = TaskLimits {
        max_live_per_principal: 3,
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    for _ in 0..3 {
        create(&h, alice(), "sleep").await;
    }
    let (code, e) = error(&h.send_as(alice(), &call("sleep", caps())).await);
    assert_eq!(code, -31003, "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("unfinished tasks"),
        "{e}"
    );
    assert_eq!(h.server.metrics().limits_reached("tasks_per_principal"), 1);
    // Another principal is not held by Alice's.
    create(&h, bob(), "sleep").await;
}

#[tokio::test]
async fn a_task_is_gone_after_its_time_to_live() {
    let limits = TaskLimits {
        ttl: Duration::from_secs(60),
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    let id = create(&h, alice(), "sleep").await;
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["ttlMs"], 60_000);
    h.clock.advance(59);
    assert_eq!(get(&h, alice(), &id).await["status"], "working");
    h.clock.advance(1);
    assert_gone(&h, alice(), &id).await;
    assert_eq!(h.server.metrics().tasks_ended("expired"), 1);
}

#[tokio::test]
async fn a_task_lapses_in_its_second_however_often_the_table_was_read_before() {
    // The table is swept once per second of the clock: what that must not
    // change is which tasks a request finds. One second is the shortest life.
    let limits = TaskLimits {
        ttl: Duration::from_secs(1),
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    let a = create(&h, alice(), "sleep").await;
    for _ in 0..3 {
        assert_eq!(get(&h, alice(), &a).await["status"], "working");
    }
    h.clock.advance(1);
    // The second `a` lapses in: the first request sees it gone, and so does
    // every later one, while a task made in that second lives.
    let b = create(&h, alice(), "sleep").await;
    for _ in 0..2 {
        assert_gone(&h, alice(), &a).await;
    }
    assert_eq!(get(&h, alice(), &b).await["status"], "working");
    assert_eq!(h.server.metrics().tasks_ended("expired"), 1);
    // A wall clock stepped back is a second of its own: `b` lives on, and
    // lapses once the clock passes its second again.
    h.clock.set(NOW + 1 - 5);
    assert_eq!(get(&h, alice(), &b).await["status"], "working");
    h.clock.advance(6);
    assert_gone(&h, alice(), &b).await;
    assert_eq!(h.server.metrics().tasks_ended("expired"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_task_waiting_past_its_input_wait_fails() {
    let limits = TaskLimits {
        input_wait: Duration::from_secs(30),
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    tokio::time::sleep(Duration::from_secs(31)).await;
    let t = wait_for(&h, alice(), &id, "failed").await;
    assert_eq!(t["error"]["code"], -31004, "{t}");
    assert!(t.get("result").is_none());
    assert_eq!(h.server.metrics().limits_reached("task_input_wait"), 1);
}

#[tokio::test]
async fn a_polling_flood_holds_nothing_new() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "sleep").await;
    let first = get(&h, alice(), &id).await;
    for _ in 0..2000 {
        let t = get(&h, alice(), &id).await;
        assert_eq!(t["taskId"], first["taskId"]);
    }
    // Polls create nothing: the principal's budget is as it was.
    let limits = TaskLimits::default().max_live_per_principal;
    for _ in 1..limits {
        create(&h, alice(), "sleep").await;
    }
    assert_eq!(
        error(&h.send_as(alice(), &call("sleep", caps())).await).0,
        -31003
    );
}

#[tokio::test]
async fn discovery_and_listing_name_the_extension() {
    let (h, _) = harness(TaskLimits::default());
    let d = result(
        &h.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                        "params": {"_meta": meta(caps())}}),
        )
        .await,
    );
    assert_eq!(d["capabilities"]["extensions"][EXT], json!({}));
    assert!(d["capabilities"].get("tasks").is_none());
    let l = result(
        &h.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                        "params": {"_meta": meta(caps())}}))
            .await,
    );
    let support: Vec<&Value> = l["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["execution"]["taskSupport"])
        .collect();
    assert_eq!(support, [&json!("optional"), &json!("required")]);
}

/// A server with one task tool that answers at once with `bytes` of text.
fn quick(limits: TaskLimits, bytes: usize) -> Harness {
    let handler = move |task: Task| async move {
        task.run(move |_| async move { ToolResult::text("x".repeat(bytes)) })
    };
    let tool = ToolDef::new("quick", "answers at once", handler).task(TaskSupport::Optional);
    Harness::new(
        Server::builder("tasks", "1")
            .tool_def(tool)
            .tool_def(sleeper())
            .config(tern_server::Config {
                tasks: limits,
                ..tern_server::Config::default()
            }),
    )
}

#[tokio::test]
async fn a_result_past_its_size_limit_fails_the_task() {
    let limits = TaskLimits {
        max_result_bytes: 1024,
        ..TaskLimits::default()
    };
    let h = quick(limits, 2000);
    let id = create(&h, alice(), "quick").await;
    let t = wait_for(&h, alice(), &id, "failed").await;
    // The detail is logged; the peer sees -32603 with a correlation id.
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert!(t.get("result").is_none());
    assert_eq!(h.server.metrics().limits_reached("task_result_bytes"), 1);
    // Just under the limit is kept.
    let h = quick(
        TaskLimits {
            max_result_bytes: 1024,
            ..TaskLimits::default()
        },
        900,
    );
    let id = create(&h, alice(), "quick").await;
    assert_eq!(
        wait_for(&h, alice(), &id, "completed").await["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        900
    );
}

#[tokio::test]
async fn the_table_drops_the_oldest_finished_task_and_refuses_when_none_is() {
    let limits = TaskLimits {
        max_kept: 2,
        ..TaskLimits::default()
    };
    let h = quick(limits, 1);
    let first = create(&h, alice(), "quick").await;
    wait_for(&h, alice(), &first, "completed").await;
    h.clock.advance(1);
    let second = create(&h, bob(), "quick").await;
    wait_for(&h, bob(), &second, "completed").await;
    h.clock.advance(1);
    // Full: the oldest finished task (Alice's first) makes room.
    let third = create(&h, alice(), "sleep").await;
    assert_gone(&h, alice(), &first).await;
    assert_eq!(get(&h, bob(), &second).await["status"], "completed");
    // Full of one finished and one running: the finished one goes; then
    // two running and nothing finished: refused.
    create(&h, bob(), "sleep").await;
    let (code, e) = error(&h.send_as(alice(), &call("sleep", caps())).await);
    assert_eq!(code, -31003, "{e}");
    assert_eq!(h.server.metrics().limits_reached("tasks_total"), 1);
    assert_eq!(get(&h, alice(), &third).await["status"], "working");
}

#[tokio::test]
async fn an_update_with_too_many_answers_is_refused() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    let max = tern_server::Config::default().max_input_responses;
    let many: serde_json::Map<String, Value> = (0..=max)
        .map(|i| (format!("k{i}"), json!({"action": "decline"})))
        .collect();
    let reply = h
        .send_as(
            alice(),
            &task_req("tasks/update", &id, json!({"inputResponses": many})),
        )
        .await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["message"], "inputResponses has more than 64 entries");
    assert_eq!(get(&h, alice(), &id).await["status"], "input_required");
}

/// A 2025-11-25 session's call is never answered with a task, whatever
/// capabilities it declared: the task-optional tool runs inline, its
/// question a server-initiated request of the session.
#[tokio::test]
async fn a_2025_11_25_session_never_gets_a_task_whatever_it_declares() {
    use super::legacy::{Legacy, requests};
    let starts = Arc::new(AtomicUsize::new(0));
    let l = Legacy::with(Server::builder("tasks", "1").tool_def(approval_tool(starts.clone())));
    l.initialize(json!({"elicitation": {}, "extensions": {EXT: {}}}))
        .await;
    let (mut rx, reply) = l.call("approve");
    let asked = requests(&mut rx, 1).await;
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(asked[0]["params"]["message"], "Go ahead?");
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"],
                     "result": {"action": "decline"}}))
        .await;
    let reply = reply.await.unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"], "not approved",
        "{reply}"
    );
    assert!(reply["result"].get("taskId").is_none(), "{reply}");
    assert_eq!(l.server.metrics().tasks_ended("completed"), 0);
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

/// Creates a task of `tool` for Alice from a call declaring `caps`.
async fn create_declaring(h: &Harness, tool: &str, caps: Value) -> String {
    let r = result(&h.send_as(alice(), &call(tool, caps)).await);
    assert_eq!(r["resultType"], "task", "{r}");
    assert_eq!(r["status"], "working", "{r}");
    r["taskId"].as_str().unwrap().to_owned()
}

/// What a body or a handler made of a profile question.
fn said(p: Elicited<Profile>) -> String {
    match p {
        Elicited::Accepted(p) => p.name,
        Elicited::Declined => "declined".into(),
        Elicited::Cancelled => "cancelled".into(),
    }
}

/// A task tool whose handler asks an MRTR round under "k" before it hands
/// over its body, and whose body asks the very same question under the
/// very same key. Counts the handler's runs and the body's starts.
fn mrtr_then_task(runs: Arc<AtomicUsize>, starts: Arc<AtomicUsize>) -> ToolDef {
    let handler = move |ask: Ask, task: Task| {
        let (runs, starts) = (runs.clone(), starts.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let before = said(ask.form::<Profile>("k", "Who are you?")?);
            Ok::<_, Error>(task.run(move |scope: TaskScope| async move {
                starts.fetch_add(1, Ordering::SeqCst);
                let during = scope
                    .ask(Need::form::<Profile>("k", "Who are you?"))
                    .await?;
                Ok::<_, Error>(ToolResult::text(format!(
                    "before the task: {before}; in the task: {}",
                    said(during)
                )))
            }))
        }
    };
    ToolDef::new("mrtr_then_task", "asks, then asks in a task", handler).task(TaskSupport::Optional)
}

#[tokio::test]
async fn an_mrtr_answer_is_not_an_answer_to_the_tasks_question_under_the_same_key() {
    let (runs, starts) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let h = Harness::new(
        Server::builder("tasks", "1").tool_def(mrtr_then_task(runs.clone(), starts.clone())),
    );
    // The MRTR phase: an ordinary round, sealed, no task yet.
    let first = call("mrtr_then_task", caps());
    let r = result(&h.send_as(alice(), &first).await);
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(asked_keys(&r), ["k"]);
    assert!(r["requestState"].is_string(), "{r}");
    assert!(r.get("taskId").is_none(), "{r}");
    assert_eq!(starts.load(Ordering::SeqCst), 0);
    // The retry answers "k"; the handler hands over its body: a task.
    let retried = super::support::retry(
        &first,
        Some(&r["requestState"]),
        json!({"k": accept(json!({"name": "Ada"}))}),
    );
    let created = result(&h.send_as(alice(), &retried).await);
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one run per MRTR round");
    // The body's "k" is a new question: the MRTR answer does not answer it.
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["k"], "{t}");
    assert_eq!(t["inputRequests"]["k"]["method"], "elicitation/create");
    assert_eq!(t["inputRequests"]["k"]["params"]["message"], "Who are you?");
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    // Checked as the MRTR answer was: the schema's maxLength holds.
    let (code, e) = error(
        &answer(
            &h,
            &id,
            json!({"k": accept(json!({"name": "Bartholomew"}))}),
        )
        .await,
    );
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["data"]["key"], "k", "{e}");
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["k"]);
    // Answered in the task: it completes with both answers, apart.
    let ack = result(&answer(&h, &id, json!({"k": accept(json!({"name": "Bob"}))})).await);
    assert_bare_ack(&ack);
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(
        t["result"]["content"][0]["text"], "before the task: Ada; in the task: Bob",
        "{t}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the handler is not re-run");
    assert_eq!(starts.load(Ordering::SeqCst), 1, "the body is not re-run");
}

/// A task whose body asks the same question under "q" twice, one after
/// the other, and records each answer it got.
fn asks_twice(seen: Arc<Mutex<Vec<String>>>) -> ToolDef {
    let handler = move |task: Task| {
        let seen = seen.clone();
        async move {
            task.run(move |scope: TaskScope| async move {
                let first = said(
                    scope
                        .ask(Need::form::<Profile>("q", "Who are you?"))
                        .await?,
                );
                seen.lock().unwrap().push(first.clone());
                let second = said(
                    scope
                        .ask(Need::form::<Profile>("q", "Who are you?"))
                        .await?,
                );
                seen.lock().unwrap().push(second.clone());
                Ok::<_, Error>(ToolResult::text(format!(
                    "first: {first}; second: {second}"
                )))
            })
        }
    };
    ToolDef::new("twice", "asks q twice", handler).task(TaskSupport::Required)
}

#[tokio::test]
async fn a_key_asked_again_in_a_task_goes_out_under_a_new_wire_key() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(asks_twice(seen.clone())));
    let id = create(&h, alice(), "twice").await;
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["q"], "{t}");
    assert_bare_ack(&result(
        &answer(&h, &id, json!({"q": accept(json!({"name": "Ada"}))})).await,
    ));
    // The second question: the same handler key, never the same wire key.
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["q#2"], "{t}");
    assert_eq!(t["inputRequests"]["q#2"]["method"], "elicitation/create");
    assert_eq!(
        t["inputRequests"]["q#2"]["params"]["message"],
        "Who are you?"
    );
    assert_eq!(*seen.lock().unwrap(), ["Ada"]);
    // An answer to the spent "q" is acknowledged and ignored.
    assert_bare_ack(&result(
        &answer(&h, &id, json!({"q": accept(json!({"name": "Eve"}))})).await,
    ));
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["q#2"]);
    assert_eq!(*seen.lock().unwrap(), ["Ada"], "the body saw nothing new");
    // The new key's answer is checked against its question.
    let (code, _) = error(&answer(&h, &id, json!({"q#2": accept(json!({"age": 3}))})).await);
    assert_eq!(code, -32602);
    assert_eq!(asked_keys(&get(&h, alice(), &id).await), ["q#2"]);
    // Answered under the new key: the task completes.
    assert_bare_ack(&result(
        &answer(&h, &id, json!({"q#2": accept(json!({"name": "Bob"}))})).await,
    ));
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "first: Ada; second: Bob");
    assert_eq!(*seen.lock().unwrap(), ["Ada", "Bob"]);
}

/// An invalid answer to a suffixed key is refused naming the key the
/// client sent ("q#2"), as an MRTR refusal names the key of its
/// `inputResponses` entry and as another instance of a fleet names it
/// (its store checks open questions by wire key).
#[tokio::test]
async fn a_refused_answer_to_a_suffixed_key_names_the_key_sent() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(asks_twice(seen)));
    let id = create(&h, alice(), "twice").await;
    wait_for(&h, alice(), &id, "input_required").await;
    result(&answer(&h, &id, json!({"q": accept(json!({"name": "Ada"}))})).await);
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["q#2"], "{t}");
    let (code, e) = error(&answer(&h, &id, json!({"q#2": accept(json!({"age": 3}))})).await);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["data"]["key"], "q#2", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("inputResponses.q#2"),
        "{e}"
    );
}

/// A task asking one approval; the body records what it got.
fn verdict(seen: Arc<Mutex<Vec<String>>>) -> ToolDef {
    let handler = move |task: Task| {
        let seen = seen.clone();
        async move {
            task.run(move |scope: TaskScope| async move {
                let got = match scope.ask(Need::form::<Approval>("go", "Go ahead?")).await? {
                    Elicited::Accepted(a) => format!("accepted {}", a.approved),
                    Elicited::Declined => "declined".to_owned(),
                    Elicited::Cancelled => "cancelled".to_owned(),
                };
                seen.lock().unwrap().push(got.clone());
                Ok::<_, Error>(ToolResult::text(got))
            })
        }
    };
    ToolDef::new("verdict", "asks one approval", handler).task(TaskSupport::Required)
}

#[tokio::test]
async fn an_elicitation_cancelled_in_a_task_reaches_the_body_apart_from_a_decline() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(verdict(seen.clone())));
    let mut texts = Vec::new();
    for action in ["decline", "cancel"] {
        let id = create(&h, alice(), "verdict").await;
        let t = wait_for(&h, alice(), &id, "input_required").await;
        assert_eq!(asked_keys(&t), ["go"]);
        assert_bare_ack(&result(
            &answer(&h, &id, json!({"go": {"action": action}})).await,
        ));
        // The person's cancel is an answer, not a tasks/cancel: the body
        // goes on and the task completes.
        let t = wait_for(&h, alice(), &id, "completed").await;
        texts.push(t["result"]["content"][0]["text"].clone());
    }
    assert_eq!(texts, [json!("declined"), json!("cancelled")]);
    assert_eq!(*seen.lock().unwrap(), ["declined", "cancelled"]);
    assert_eq!(h.server.metrics().tasks_ended("completed"), 2);
    assert_eq!(h.server.metrics().tasks_ended("cancelled"), 0);
}

/// A task that asks the client's model; the body records whether its ask
/// was refused for a missing capability.
fn sampler(seen: Arc<Mutex<Vec<String>>>) -> ToolDef {
    let handler = move |task: Task| {
        let seen = seen.clone();
        async move {
            task.run(move |scope: TaskScope| async move {
                match scope.ask(Need::sample_text("s", "2+2?", 5)).await {
                    Ok(s) => {
                        seen.lock().unwrap().push(format!("sampled {}", s.text()));
                        Ok(ToolResult::text(format!("the model says {}", s.text())))
                    }
                    Err(e) => {
                        let what = match &e {
                            Error::Protocol(McpError::MissingCapability { .. }) => {
                                "missing capability".to_owned()
                            }
                            other => format!("{other:?}"),
                        };
                        seen.lock().unwrap().push(what);
                        Err(e)
                    }
                }
            })
        }
    };
    ToolDef::new("sampler", "asks the model", handler).task(TaskSupport::Required)
}

#[tokio::test]
async fn a_task_asks_only_what_its_creating_request_declared() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(sampler(seen.clone())));
    // Created without sampling: the body's ask is refused with -32021
    // naming sampling, nothing is asked, and the task fails with it.
    let id = create_declaring(&h, "sampler", caps()).await;
    let t = wait_for(&h, alice(), &id, "failed").await;
    assert_eq!(t["error"]["code"], -32021, "{t}");
    assert_eq!(
        t["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {}}}),
        "{t}"
    );
    assert!(t.get("result").is_none(), "{t}");
    assert!(t.get("inputRequests").is_none(), "{t}");
    assert_eq!(*seen.lock().unwrap(), ["missing capability"]);
    assert_eq!(h.server.metrics().tasks_ended("failed"), 1);

    // Created declaring sampling: asked, and answered from requests that
    // do not declare it (the gate is the creating request's).
    let mut with_sampling = caps();
    with_sampling["sampling"] = json!({});
    let id = create_declaring(&h, "sampler", with_sampling).await;
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["s"], "{t}");
    assert_eq!(t["inputRequests"]["s"]["method"], "sampling/createMessage");
    // Checked as an MRTR sampling answer is: a model is required.
    let (code, _) = error(
        &answer(
            &h,
            &id,
            json!({"s": {"role": "assistant", "content": {"type": "text", "text": "4"}}}),
        )
        .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(asked_keys(&get(&h, alice(), &id).await), ["s"]);
    assert_bare_ack(&result(
        &answer(
            &h,
            &id,
            json!({"s": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m1"}}),
        )
        .await,
    ));
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "the model says 4");
    assert_eq!(*seen.lock().unwrap(), ["missing capability", "sampled 4"]);
}

#[tokio::test]
async fn authorization_runs_again_on_every_tasks_method() {
    let revoked = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(Mutex::new(Vec::<String>::new()));
    let starts = Arc::new(AtomicUsize::new(0));
    let (flag, log) = (revoked.clone(), refused.clone());
    let h = Harness::new(
        Server::builder("tasks", "1")
            .tool_def(approval_tool(starts.clone()))
            .authorize(move |_p, a| {
                if flag.load(Ordering::SeqCst) {
                    log.lock().unwrap().push(a.method.as_str().to_owned());
                    return Err(Error::application(-31003, "access revoked"));
                }
                Ok(())
            }),
    );
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    revoked.store(true, Ordering::SeqCst);
    for (method, extra) in [
        ("tasks/get", json!({})),
        (
            "tasks/update",
            json!({"inputResponses": {"approve": accept(json!({"approved": true}))}}),
        ),
        ("tasks/cancel", json!({})),
    ] {
        let reply = h.send_as(alice(), &task_req(method, &id, extra)).await;
        let (code, e) = error(&reply);
        assert_eq!(
            (code, e["message"].as_str().unwrap()),
            (-31003, "access revoked"),
            "{method}: {e}"
        );
    }
    assert_eq!(
        *refused.lock().unwrap(),
        ["tasks/get", "tasks/update", "tasks/cancel"]
    );
    // The refused update and cancel changed nothing.
    revoked.store(false, Ordering::SeqCst);
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["approve"]);
    assert_eq!(h.server.metrics().tasks_ended("cancelled"), 0);
    result(&answer(&h, &id, json!({"approve": {"action": "decline"}})).await);
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "not approved");
    assert_eq!(starts.load(Ordering::SeqCst), 1);
}
