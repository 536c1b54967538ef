//! In-task input through `tasks/update`: a task asks during its run and
//! its body runs once; answers are checked before the update is
//! acknowledged; a person's cancel reaches the body apart from a decline;
//! and a task asks only what its creating request declared.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tern_proto::McpError;
use tern_server::{
    Elicited, Error, Need, Server, Task, TaskLimits, TaskScope, TaskSupport, ToolDef, ToolResult,
};

use super::super::support::{Approval, Harness, accept, error, result};
use super::{
    alice, answer, asked_keys, assert_bare_ack, call, caps, create, get, harness, task_req,
    wait_for,
};

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

/// Creates a task of `tool` for Alice from a call declaring `caps`.
async fn create_declaring(h: &Harness, tool: &str, caps: Value) -> String {
    let r = result(&h.send_as(alice(), &call(tool, caps)).await);
    assert_eq!(r["resultType"], "task", "{r}");
    assert_eq!(r["status"], "working", "{r}");
    r["taskId"].as_str().unwrap().to_owned()
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
