//! The one dispatch both eras share (ARCHITECTURE.md, "A call on the
//! server"): what a 2026-07-28 request is refused, a 2025-11-25 session's
//! is refused alike, before its handler runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tern_server::{Config, Error, Server, TaskScope, TaskSupport, ToolDef, ToolResult};

use super::legacy::{Legacy, all_legacy_caps};
use super::support::{Harness, error, result};
use super::tasks::{EXT, alice, call};

/// A tool that runs only as a task; counts how often its handler ran.
fn build_tool(runs: Arc<AtomicUsize>) -> ToolDef {
    let handler = move |task: tern_server::Task| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(
                task.run(|_: TaskScope| async { Ok::<_, Error>(ToolResult::text("built")) }),
            )
        }
    };
    ToolDef::new("build", "builds, as a task only", handler).task(TaskSupport::Required)
}

/// EXT-2: a task-required tool called from a 2025-11-25 session, which
/// can never take a task (whether it declared the extension or not), is
/// refused with -32021 naming the extension, and never runs inline (under
/// the bridge it would run again from the top on every question).
#[tokio::test]
async fn a_task_required_tool_is_refused_to_a_2025_11_25_session() {
    let declaring = json!({"elicitation": {}, "extensions": {EXT: {}}});
    for caps in [all_legacy_caps(), declaring] {
        let runs = Arc::new(AtomicUsize::new(0));
        let l = Legacy::with(Server::builder("tasks", "1").tool_def(build_tool(runs.clone())));
        l.initialize(caps.clone()).await;
        let (_rx, reply) = l.call("build");
        let reply = reply.await.unwrap();
        assert_eq!(reply["error"]["code"], -32021, "{caps}: {reply}");
        assert_eq!(
            reply["error"]["message"],
            format!(
                "this tool needs the client extension {EXT}, which a 2025-11-25 session cannot take"
            )
        );
        assert_eq!(
            reply["error"]["data"]["requiredCapabilities"]["extensions"],
            json!({EXT: {}}),
            "{reply}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0, "{caps}");
        assert!(reply.get("result").is_none(), "{reply}");
    }
}

/// The same refusal in the 2026-07-28 era from a request that did not
/// declare the extension, and a task for one that did: one gate.
#[tokio::test]
async fn the_same_gate_refuses_a_modern_call_without_the_extension() {
    let runs = Arc::new(AtomicUsize::new(0));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(build_tool(runs.clone())));
    let refused = h
        .send_as(alice(), &call("build", json!({"elicitation": {}})))
        .await;
    let (code, e) = error(&refused);
    assert_eq!(code, -32021, "{e}");
    assert_eq!(
        e["message"],
        format!("this tool needs the client extension {EXT}")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let created = result(
        &h.send_as(alice(), &call("build", json!({"extensions": {EXT: {}}})))
            .await,
    );
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A session's `ping` is answered whatever the session holds: with its one
/// place for calls taken, a call is refused but the ping gets `{}`.
#[tokio::test]
async fn a_ping_is_answered_while_the_session_holds_every_call_it_may() {
    let mut config = Config::default();
    config.sessions.max_calls = 1;
    let l = Legacy::with(Server::builder("t", "1").config(config).tool(
        "deploy",
        "asks",
        super::legacy::deploy,
    ));
    l.initialize(all_legacy_caps()).await;
    // The one call waits on its question, holding the session's place.
    let (mut rx, _held) = l.call("deploy");
    let asked = super::legacy::requests(&mut rx, 1).await;
    assert_eq!(asked[0]["method"], "elicitation/create");
    let refused = l
        .send(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                      "params": {"name": "deploy", "arguments": {}}}))
        .await;
    let why = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("already has 1 calls running"), "{refused}");
    let pong = l
        .send(&json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        .await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
}

/// `Task::background` says what `Task::run` will do: only a task route's
/// call that declared the extension runs in the background. A plain
/// tool's call that declared it runs inline, and its handler is told so
/// (a relay choosing between a task and its rounds relied on it).
#[tokio::test]
async fn only_a_task_route_runs_in_the_background() {
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = told.clone();
    let handler = move |task: tern_server::Task| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(task.background());
            Ok::<_, Error>(
                task.run(|_: TaskScope| async { Ok::<_, Error>(ToolResult::text("ran")) }),
            )
        }
    };
    let h = Harness::new(
        Server::builder("tasks", "1")
            .tool_def(ToolDef::new("plain", "no task support", handler.clone()))
            .tool_def(
                ToolDef::new("tasked", "may run as a task", handler).task(TaskSupport::Optional),
            ),
    );
    let declared = json!({"extensions": {EXT: {}}});
    let plain = result(&h.send_as(alice(), &call("plain", declared.clone())).await);
    assert_eq!(plain["content"][0]["text"], "ran", "{plain}");
    assert_eq!(plain["resultType"], "complete", "{plain}");
    let tasked = result(&h.send_as(alice(), &call("tasked", declared)).await);
    assert_eq!(tasked["resultType"], "task", "{tasked}");
    assert_eq!(*told.lock().unwrap(), [false, true]);
}
