//! How the server answers a call: one line of JSON, Server-Sent Events
//! when the call reports progress and the client takes them, and a
//! JSON-RPC error, never an empty answer, when a handler panics or an
//! answer breaks a rule (HTTP-S7, HTTP-S18, HTTP-A3, ROOT-1).

use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::{HttpOptions, spawn};
use tern_server::{Server, ToolResult};

use super::{body, exchange, hello, json_of, post, post_on, start};

#[tokio::test]
async fn a_call_is_answered_with_one_line_of_json() {
    let addr = start().await;
    let r = post(addr, "tools/call", Some("hello"))
        .body(body("tools/call", json!({"name": "hello"})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    let (status, v) = json_of(r).await;
    assert_eq!(status, 200);
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["content"][0]["text"], "hello");
    assert_eq!(v["result"]["resultType"], "complete");
}

#[tokio::test]
async fn many_keep_alive_connections_on_one_thread_each_get_every_answer() {
    // The listener defers each response write behind the other ready
    // connections (one runtime thread here, as with `--threads 1`): every
    // deferred write must still go out, to its own connection, in order.
    let addr = start().await;
    let clients = (0..16).map(|c| {
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..10 {
                let mut b = body("tools/call", json!({"name": "hello"}));
                b["id"] = json!(c * 100 + i);
                let r = post_on(&http, addr, "tools/call", Some("hello"))
                    .body(b.to_string())
                    .send()
                    .await
                    .unwrap();
                let (status, v) = json_of(r).await;
                assert_eq!(status, 200);
                assert_eq!(v["id"], c * 100 + i);
                assert_eq!(v["result"]["content"][0]["text"], "hello");
            }
        })
    });
    for c in clients.collect::<Vec<_>>() {
        c.await.unwrap();
    }
}

#[tokio::test]
async fn progress_turns_the_answer_into_sse() {
    // HTTP-S18, HTTP-A3: notifications first, then the response ends it.
    let addr = start().await;
    let mut b = body("tools/call", json!({"name": "slow"}));
    b["params"]["_meta"]["progressToken"] = json!("p1");
    let r = post(addr, "tools/call", Some("slow"))
        .body(b.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(r.headers()["x-accel-buffering"], "no");
    let text = r.text().await.unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{text}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "p1");
    assert_eq!(events[1]["params"]["progress"], 2.0);
    assert_eq!(events[2]["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn json_only_clients_get_json_without_notifications() {
    let addr = start().await;
    let mut b = body("tools/call", json!({"name": "slow"}));
    b["params"]["_meta"]["progressToken"] = json!("p1");
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "slow")
        .body(b.to_string())
        .send()
        .await
        .unwrap();
    let (status, v) = json_of(r).await;
    assert_eq!(
        (status, v["result"]["content"][0]["text"].clone()),
        (StatusCode::OK, json!("done"))
    );
}

async fn roots(ask: tern_server::Ask) -> Result<ToolResult, tern_server::Error> {
    let r = ask.all(tern_server::Need::roots("roots"))?;
    Ok(ToolResult::text(format!("{} root(s)", r.len())))
}

async fn boom() -> ToolResult {
    panic!("boom")
}

fn with_roots(method: &str, params: Value) -> Value {
    let mut b = body(method, params);
    b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": {}});
    b
}

#[tokio::test]
async fn a_non_ascii_root_and_a_panicking_handler_get_json_rpc_errors() {
    // Regression: the roots answer `file:/é/abcdef` panicked the request
    // and the client saw 204 with an empty body. ROOT-1, SECURITY.md §3.8.
    let server = Server::builder("t", "1")
        .tool("roots", "asks for roots", roots)
        .tool("boom", "panics", boom)
        .tool("hello", "says hello", hello)
        .build()
        .unwrap();
    let (addr, _task) = spawn(
        "127.0.0.1:0".parse().unwrap(),
        server,
        HttpOptions::default(),
    )
    .await
    .unwrap();
    let first = with_roots("tools/call", json!({"name": "roots"}));
    let (status, r) = exchange(addr, "tools/call", Some("roots"), first.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let mut retry = first.clone();
    retry["params"]["requestState"] = r["result"]["requestState"].clone();
    retry["params"]["inputResponses"] = json!({"roots": {"roots": [{"uri": "file:/é/abcdef"}]}});
    let (status, e) = exchange(addr, "tools/call", Some("roots"), retry.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(e["id"], 7, "{e}");
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert_eq!(e["error"]["data"]["key"], "roots", "{e}");
    let (status, e) = exchange(
        addr,
        "tools/call",
        Some("boom"),
        body("tools/call", json!({"name": "boom"})).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (e["error"]["code"].as_i64(), e["error"]["message"].as_str()),
        (Some(-32603), Some("Internal error")),
        "{e}"
    );
    assert!(e["error"]["data"]["correlationId"].is_string(), "{e}");
    let (status, ok) = exchange(
        addr,
        "tools/call",
        Some("hello"),
        body("tools/call", json!({"name": "hello"})).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ok["result"]["content"][0]["text"], "hello", "{ok}");
}
