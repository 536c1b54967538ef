//! The stdio client transport against real child processes: the
//! `stdio_fixture` example server (needs the `server` feature too; `cargo
//! test` builds examples first) and small shell scripts that misbehave on
//! purpose (exit, garbage, ignoring end of file).

#![cfg(feature = "client")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tern_client::{CallOptions, CancelToken, Client};
use tern_stdio::{StdioClientOptions, StdioTransport};
use tokio::process::Command;

const PATIENCE: Duration = Duration::from_secs(10);

fn script(body: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(body);
    c
}

fn quiet() -> StdioClientOptions {
    StdioClientOptions {
        inherit_stderr: false,
        shutdown_grace: Duration::from_millis(300),
        ..StdioClientOptions::default()
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[tokio::test]
async fn a_child_that_exits_fails_the_pending_call_and_later_ones() {
    let t = StdioTransport::spawn_with(script("read line; exit 3"), quiet()).unwrap();
    let client = Client::new(t);
    let e = tokio::time::timeout(PATIENCE, client.discover())
        .await
        .expect("no hang")
        .unwrap_err();
    assert!(e.is_transport(), "{e}");
    let again = client.discover().await.unwrap_err();
    assert!(again.is_transport(), "{again}");
}

#[tokio::test]
async fn a_child_that_writes_garbage_fails_every_pending_call() {
    let t = StdioTransport::spawn_with(
        script("read a; read b; echo 'this is not json'; sleep 5"),
        quiet(),
    )
    .unwrap();
    let client = Client::new(t);
    let (a, b) = tokio::time::timeout(PATIENCE, async {
        tokio::join!(client.discover(), client.list_tools(None))
    })
    .await
    .expect("no hang");
    assert!(a.unwrap_err().is_protocol());
    assert!(b.unwrap_err().is_protocol());
}

#[tokio::test]
async fn responses_are_matched_by_id_and_notifications_by_subscription() {
    // The server answers the second request first (STDIO-A1), and sends a
    // listen-stream notification tagged with the first request's id
    // (SUB-C5) plus one for an id nobody waits on.
    let t = StdioTransport::spawn_with(
        script(concat!(
            "read a; read b; ",
            r#"echo '{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}}'; "#,
            r#"echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":99}}}'; "#,
            r#"echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}'; "#,
            r#"echo '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":1}}}'; "#,
            "sleep 5"
        )),
        quiet(),
    )
    .unwrap();
    let client = Client::new(t);
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let opts = CallOptions::new().on_notification(move |n| {
        sink.lock()
            .unwrap()
            .push(Value::Object(n.params.clone().unwrap_or_default()));
    });
    let listen = client.request::<Value>(
        "subscriptions/listen",
        obj(json!({"notifications": {"toolsListChanged": true}})),
        &opts,
    );
    let c2 = client.clone();
    let list = async move {
        // Let the listen request go out first so it gets id 1.
        tokio::time::sleep(Duration::from_millis(50)).await;
        c2.list_tools(None).await
    };
    let (listened, listed) = tokio::time::timeout(PATIENCE, async { tokio::join!(listen, list) })
        .await
        .expect("no hang");
    assert!(listed.unwrap().tools.is_empty());
    assert_eq!(listened.unwrap()["resultType"], "complete");
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
}

#[tokio::test]
async fn dropping_a_call_sends_notifications_cancelled() {
    // STDIO-C7: the script records the line that follows the request.
    let file = std::env::temp_dir().join(format!("tern-stdio-cancel-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let t = StdioTransport::spawn_with(
        script(&format!(
            "read req; read cancel; printf '%s\\n' \"$cancel\" > {}; sleep 5",
            file.display()
        )),
        quiet(),
    )
    .unwrap();
    let client = Client::new(t);
    let token = CancelToken::new();
    let opts = CallOptions::new().cancel(token.clone());
    let c = client.clone();
    let call = tokio::spawn(async move {
        c.request::<Value>("server/discover", Map::new(), &opts)
            .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    token.cancel();
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    let mut line = String::new();
    for _ in 0..100 {
        line = std::fs::read_to_string(&file).unwrap_or_default();
        if !line.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = std::fs::remove_file(&file);
    let n: Value = serde_json::from_str(line.trim()).expect("a JSON line");
    assert_eq!(n["method"], "notifications/cancelled");
    assert_eq!(n["params"]["requestId"], 1);
    assert!(n.get("id").is_none());
}

#[tokio::test]
async fn shutdown_kills_a_child_that_ignores_end_of_file() {
    // STDIO-C8: close stdin, wait, then kill.
    let t = StdioTransport::spawn_with(script("exec sleep 30"), quiet()).unwrap();
    let status = tokio::time::timeout(PATIENCE, t.shutdown())
        .await
        .expect("shutdown is bounded")
        .unwrap();
    assert!(!status.success());
    assert!(t.shutdown().await.unwrap_err().is_transport());
}

use tern_testkit::provider::Ada;

/// The real stdio server of this crate, as a child process.
#[cfg(feature = "server")]
mod real_server {
    use super::*;

    fn fixture() -> Command {
        let exe = std::env::current_exe().expect("test executable path");
        let dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("target layout");
        let path = dir
            .join("examples")
            .join(format!("stdio_fixture{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.exists(),
            "{} is missing: build it with `cargo build --release -p tern-stdio --features server --example stdio_fixture`",
            path.display()
        );
        Command::new(path)
    }

    fn text(r: &tern_types::CallToolResult) -> String {
        serde_json::to_value(&r.content).unwrap()[0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    #[tokio::test]
    async fn calls_flows_progress_and_shutdown_against_the_real_server() {
        let t = Arc::new(StdioTransport::spawn_with(fixture(), quiet()).unwrap());
        let client = Client::builder(t.clone()).provider(Ada).build();
        let d = client.discover().await.unwrap();
        assert!(d.supported_versions.iter().any(|v| v == "2026-07-28"));

        // Concurrent calls matched by id (STDIO-A1).
        let calls: Vec<_> = (0..5)
            .map(|i| {
                let c = client.clone();
                tokio::spawn(async move {
                    c.call_tool("echo", obj(json!({"text": format!("n{i}")})))
                        .await
                })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(text(&call.await.unwrap().unwrap()), format!("n{i}"));
        }

        // MRTR over stdio.
        let r = client.call_tool("ask_name", obj(json!({}))).await.unwrap();
        assert_eq!(text(&r), "Hello, Ada!");

        // Progress routed by token.
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let opts = CallOptions::new().on_notification(move |n| {
            sink.lock().unwrap().push(n.method.clone());
        });
        let r = client
            .call_tool_with("slow", obj(json!({"ms": 100})), &opts)
            .await
            .unwrap();
        assert_eq!(text(&r), "slept 100 ms");
        assert_eq!(got.lock().unwrap().len(), 2);

        // Cancel a slow call; the transport keeps working.
        let token = CancelToken::new();
        let c = client.clone();
        let copts = CallOptions::new().cancel(token.clone());
        let slow = tokio::spawn(async move {
            c.call_tool_with("slow", obj(json!({"ms": 3000})), &copts)
                .await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
        assert!(slow.await.unwrap().unwrap_err().is_cancelled());
        let r = client
            .call_tool("echo", obj(json!({"text": "still here"})))
            .await
            .unwrap();
        assert_eq!(text(&r), "still here");

        // STDIO-C8: the server exits on end of file.
        let status = tokio::time::timeout(PATIENCE, t.shutdown())
            .await
            .expect("bounded")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
}
