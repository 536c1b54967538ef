//! Load and budgets refuse as busy (-31003, issue 52), naming the limit in
//! `data.limit`: the request was not run and may be sent again later. Not
//! -32600, which says the request was malformed. In memory, with the
//! status the HTTP transport sends.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tern_proto::{Inbound, Principal};
use tern_server::{
    Config, Outcome, Reply, RequestLimits, Server, SessionLimits, Sink, Task, TaskLimits,
    TaskSupport, ToolDef, ToolResult,
};

use super::legacy::{Legacy, all_legacy_caps, deploy, requests};
use super::support::{Harness, all_caps, call, error, meta};

fn who(id: &str) -> Principal {
    Principal::Static {
        secret_id: id.into(),
    }
}

fn list() -> Value {
    json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
           "params": {"_meta": meta(json!({}))}})
}

async fn forever() -> ToolResult {
    std::future::pending().await
}

fn running(per_principal: usize, total: usize) -> Arc<Harness> {
    Arc::new(Harness::new(
        Server::builder("t", "1")
            .tool("forever", "never answers", forever)
            .config(Config {
                requests: RequestLimits {
                    max_running_per_principal: per_principal,
                    max_running: total,
                },
                ..Config::default()
            }),
    ))
}

/// Starts a call as `holder` that runs until the test ends, then sends
/// `tools/list` as `asker` until the budget the call holds refuses it.
async fn refused_beside_a_running_call(
    h: &Arc<Harness>,
    holder: Principal,
    asker: Principal,
) -> (u16, Value) {
    let held = h.clone();
    tokio::spawn(async move {
        held.send_as(holder, &call("forever", json!({}), json!({})))
            .await
    });
    for _ in 0..500 {
        let (status, reply) = h.send_as(asker.clone(), &list()).await;
        if status != 200 {
            return (status, reply);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never refused");
}

#[tokio::test]
async fn a_request_past_a_principal_s_share_is_busy_naming_the_share() {
    let h = running(1, 8);
    let (status, reply) = refused_beside_a_running_call(&h, who("mallory"), who("mallory")).await;
    assert_eq!(status, 429);
    assert_eq!(reply["id"], 3, "{reply}");
    assert_eq!(
        reply["error"],
        json!({"code": -31003,
               "message": "too many requests running for this client; wait for one to end",
               "data": {"limit": "requests_per_principal"}})
    );
    // Another principal is still served.
    assert_eq!(h.send_as(who("alice"), &list()).await.0, 200);
}

#[tokio::test]
async fn a_request_past_the_server_s_budget_is_busy_and_says_when_to_come_back() {
    let h = running(8, 1);
    let (status, reply) = refused_beside_a_running_call(&h, who("mallory"), who("alice")).await;
    assert_eq!(status, 429);
    assert_eq!(
        reply["error"]["data"],
        json!({"limit": "requests", "retryAfterMs": 1000})
    );
    assert_eq!(reply["error"]["code"], -31003);
    assert_eq!(h.server.metrics().limits_reached("requests"), 1);
}

#[tokio::test]
async fn a_session_call_past_the_session_s_budget_is_busy() {
    let l = Legacy::with(
        Server::builder("t", "1")
            .tool("deploy", "asks", deploy)
            .config(Config {
                sessions: SessionLimits {
                    max_calls: 1,
                    ..SessionLimits::default()
                },
                ..Config::default()
            }),
    );
    l.initialize(all_legacy_caps()).await;
    // One call waits for the client's answer, holding the session's place.
    let (mut rx, _held) = l.call("deploy");
    requests(&mut rx, 1).await;
    let second = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                        "params": {"name": "deploy", "arguments": {}}});
    let inbound = Inbound {
        body: Bytes::from(second.to_string()),
        headers: None,
        principal: Principal::Anonymous,
    };
    let reply = l.server.handle_in(&l.session, inbound, Sink::none()).await;
    let Reply::Message { status, body } = reply else {
        panic!("no reply: {reply:?}");
    };
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 429);
    assert_eq!(body["id"], 8, "{body}");
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(body["error"]["data"], json!({"limit": "session_calls"}));
}

fn sleeper() -> ToolDef {
    async fn sleep(task: Task) -> Outcome {
        task.run(|_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ToolResult::text("woke")
        })
    }
    ToolDef::new("sleep", "sleeps an hour", sleep).task(TaskSupport::Required)
}

fn tasks(limits: TaskLimits) -> Harness {
    Harness::new(
        Server::builder("t", "1")
            .tool_def(sleeper())
            .config(Config {
                tasks: limits,
                ..Config::default()
            }),
    )
}

fn task_caps() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    caps
}

#[tokio::test]
async fn a_task_past_a_principal_s_share_is_busy_naming_it() {
    let h = tasks(TaskLimits {
        max_live_per_principal: 1,
        ..TaskLimits::default()
    });
    let sleep = call("sleep", json!({}), task_caps());
    let (_, first) = h.send_as(who("alice"), &sleep).await;
    assert_eq!(first["result"]["resultType"], "task", "{first}");
    let refused = h.send_as(who("alice"), &sleep).await;
    let (code, e) = error(&refused);
    assert_eq!(code, -31003, "{e}");
    assert_eq!(e["data"], json!({"limit": "tasks_per_principal"}));
    assert_eq!(refused.0, 429);
}

#[tokio::test]
async fn a_task_past_the_server_s_room_is_busy_naming_it() {
    let h = tasks(TaskLimits {
        max_kept: 1,
        ..TaskLimits::default()
    });
    let sleep = call("sleep", json!({}), task_caps());
    let (_, first) = h.send_as(who("alice"), &sleep).await;
    assert_eq!(first["result"]["resultType"], "task", "{first}");
    let (code, e) = error(&h.send_as(who("bob"), &sleep).await);
    assert_eq!(code, -31003, "{e}");
    assert_eq!(e["data"], json!({"limit": "tasks_total"}));
}
