//! Who may reach a task and how: another principal's task is as unknown
//! as a guessed id, the tasks methods need the extension, discovery names
//! it, authorization runs again on every tasks method, and a 2025-11-25
//! session never gets a task.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tern_server::{Error, Server, TaskLimits};

use super::super::support::{Harness, accept, error, meta, result};
use super::{
    EXT, alice, answer, approval_tool, asked_keys, bob, call, caps, create, get, harness, task_req,
    wait_for,
};

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

/// A 2025-11-25 session's call is never answered with a task, whatever
/// capabilities it declared: the task-optional tool runs inline, its
/// question a server-initiated request of the session.
#[tokio::test]
async fn a_2025_11_25_session_never_gets_a_task_whatever_it_declares() {
    use super::super::legacy::{Legacy, requests};
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
