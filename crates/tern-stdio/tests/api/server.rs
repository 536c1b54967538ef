//! The stdio server as a real child process: the `stdio_fixture` example
//! run with piped stdin and stdout (DIGEST §7.2).
//!
//! `cargo test` builds examples before it runs tests; when running one test
//! target alone, build it first with
//! `cargo build --release -p tern-stdio --features server --example stdio_fixture`.

#![cfg(feature = "server")]

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

const PATIENCE: Duration = Duration::from_secs(10);

fn fixture_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/server-<hash> → target/<profile>/examples/
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target layout");
    let path = profile_dir
        .join("examples")
        .join(format!("stdio_fixture{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --release -p tern-stdio --features server --example stdio_fixture`",
        path.display()
    );
    path
}

struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<Result<Value, String>>,
}

impl Fixture {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(fixture_path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the fixture");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut r = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = r.next_line().await {
                // STDIO-S3: every stdout line is one JSON-RPC message.
                let parsed = serde_json::from_str::<Value>(&line)
                    .ok()
                    .filter(|v| v["jsonrpc"] == "2.0")
                    .ok_or(line);
                if tx.send(parsed).is_err() {
                    break;
                }
            }
        });
        Fixture {
            child,
            stdin,
            lines,
        }
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write to the child");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.send_bytes(&line).await;
    }

    /// The next line, or `None` at the end of stdout or after `wait`.
    async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.lines.recv()).await {
            Ok(Some(Ok(v))) => Some(v),
            Ok(Some(Err(line))) => panic!("stdout carried a non-JSON-RPC line: {line:?}"),
            Ok(None) | Err(_) => None,
        }
    }

    async fn next(&mut self) -> Value {
        self.next_within(PATIENCE)
            .await
            .expect("a line from the server")
    }

    /// Closes stdin and waits for the child to exit.
    async fn close(mut self, within: Duration) -> (ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(within, self.child.wait())
            .await
            .expect("the server exits promptly after end-of-file")
            .expect("wait for the child");
        let mut rest = Vec::new();
        while let Some(v) = self.next_within(PATIENCE).await {
            rest.push(v);
        }
        (status, rest)
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn call(id: Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta()}})
}

fn call_with_progress(id: Value, tool: &str, arguments: Value, token: &str) -> Value {
    let mut m = meta();
    m["progressToken"] = json!(token);
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": m}})
}

fn cancel(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "no longer needed"}})
}

fn server_info() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": "stdio-fixture", "version": "1.0.0"}})
}

fn text_result(id: Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "_meta": server_info(),
        "content": [{"type": "text", "text": text}],
        "resultType": "complete"
    }})
}

fn progress(token: &str, p: f64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": p, "total": 2.0, "message": message}})
}

#[tokio::test]
async fn a_good_request_is_answered_complete() {
    let mut f = Fixture::spawn(&[]);
    f.send(&call(json!(1), "echo", json!({"text": "hello"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(1), "hello"));
    let (status, rest) = f.close(PATIENCE).await;
    assert!(status.success());
    assert_eq!(rest, Vec::<Value>::new());
}

#[tokio::test]
async fn a_garbage_line_gets_a_parse_error_without_id_and_serving_goes_on() {
    let mut f = Fixture::spawn(&[]);
    f.send_bytes(b"this is not json\n").await;
    assert_eq!(
        f.next().await,
        json!({"jsonrpc": "2.0", "error": {"code": -32700,
            "message": "Parse error: expected ident at line 1 column 2"}})
    );
    // Truncated JSON is a parse error too, still without id.
    f.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\"\n")
        .await;
    let e = f.next().await;
    assert_eq!(e["error"]["code"], -32700);
    assert!(e.get("id").is_none(), "{e}");
    f.send(&call(json!("after"), "echo", json!({"text": "still here"})))
        .await;
    assert_eq!(f.next().await, text_result(json!("after"), "still here"));
}

#[tokio::test]
async fn an_overlong_line_is_refused_and_the_next_line_is_answered() {
    let mut f = Fixture::spawn(&["--max-line", "1024"]);
    let long = call(json!(1), "echo", json!({"text": "x".repeat(5000)}));
    f.send(&long).await;
    assert_eq!(
        f.next().await,
        json!({"jsonrpc": "2.0", "error": {"code": -32600,
            "message": "Invalid request: line too long"}})
    );
    f.send(&call(json!(2), "echo", json!({"text": "short"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(2), "short"));
}

#[tokio::test]
async fn the_default_limits_refuse_a_line_over_16_mib() {
    let mut f = Fixture::spawn(&[]);
    let mut line = vec![b' '; 16 * 1024 * 1024 + 1];
    line.push(b'\n');
    f.send_bytes(&line).await;
    assert_eq!(
        f.next().await,
        json!({"jsonrpc": "2.0", "error": {"code": -32600,
            "message": "Invalid request: line too long"}})
    );
    // Under the line limit but over the server's 4 MiB body limit.
    let big = call(
        json!(3),
        "echo",
        json!({"text": "y".repeat(5 * 1024 * 1024)}),
    );
    f.send(&big).await;
    assert_eq!(
        f.next().await,
        json!({"jsonrpc": "2.0", "error": {"code": -32600,
            "message": "Request body too large"}})
    );
    f.send(&call(json!(4), "echo", json!({"text": "ok"}))).await;
    assert_eq!(f.next().await, text_result(json!(4), "ok"));
}

#[tokio::test]
async fn a_request_without_meta_gets_invalid_params() {
    let mut f = Fixture::spawn(&[]);
    f.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}}}))
        .await;
    assert_eq!(
        f.next().await,
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602,
            "message": "Invalid params: params._meta is required"}})
    );
}

#[tokio::test]
async fn progress_lines_come_before_the_response() {
    let mut f = Fixture::spawn(&[]);
    f.send(&call_with_progress(
        json!(5),
        "slow",
        json!({"ms": 100}),
        "tok",
    ))
    .await;
    assert_eq!(f.next().await, progress("tok", 0.0, "started"));
    assert_eq!(f.next().await, progress("tok", 1.0, "halfway"));
    assert_eq!(f.next().await, text_result(json!(5), "slept 100 ms"));
}

#[tokio::test]
async fn a_cancelled_request_gets_nothing_more() {
    let mut f = Fixture::spawn(&[]);
    f.send(&call_with_progress(
        json!("s"),
        "slow",
        json!({"ms": 1200}),
        "p",
    ))
    .await;
    // Running: its first progress notification is out.
    assert_eq!(f.next().await, progress("p", 0.0, "started"));
    f.send(&cancel(json!("s"))).await;
    // A cancellation for an unknown id is ignored.
    f.send(&cancel(json!("unknown"))).await;
    f.send(&call(json!(2), "echo", json!({"text": "other"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(2), "other"));
    // Neither the second progress (at 600 ms) nor the response (1200 ms).
    assert_eq!(f.next_within(Duration::from_millis(2000)).await, None);
    let (status, rest) = f.close(PATIENCE).await;
    assert!(status.success());
    assert_eq!(rest, Vec::<Value>::new());
}

#[tokio::test]
async fn concurrent_requests_are_answered_by_id() {
    let mut f = Fixture::spawn(&[]);
    f.send(&call(json!(10), "slow", json!({"ms": 500}))).await;
    f.send(&call(json!(11), "echo", json!({"text": "fast"})))
        .await;
    // The fast one overtakes the slow one (STDIO-A1).
    assert_eq!(f.next().await, text_result(json!(11), "fast"));
    assert_eq!(f.next().await, text_result(json!(10), "slept 500 ms"));
}

#[tokio::test]
async fn closing_stdin_lets_in_flight_requests_finish_then_exits_zero() {
    let mut f = Fixture::spawn(&[]);
    f.send(&call(json!(1), "slow", json!({"ms": 300}))).await;
    let (status, rest) = f.close(Duration::from_secs(3)).await;
    assert!(status.success(), "{status}");
    assert_eq!(rest, vec![text_result(json!(1), "slept 300 ms")]);
}

#[tokio::test]
async fn requests_past_the_grace_period_are_abandoned() {
    let mut f = Fixture::spawn(&["--grace-ms", "200"]);
    f.send(&call(json!(1), "slow", json!({"ms": 20_000}))).await;
    let (status, rest) = f.close(Duration::from_secs(3)).await;
    assert!(status.success(), "{status}");
    assert_eq!(rest, Vec::<Value>::new());
}

fn listen(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"toolsListChanged": true,
            "promptsListChanged": true}}})
}

fn ack(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
            "notifications": {"toolsListChanged": true}}})
}

fn tools_changed(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}})
}

#[tokio::test]
async fn listen_streams_are_tagged_and_end_on_cancel() {
    let mut f = Fixture::spawn(&[]);
    f.send(&listen("l1")).await;
    // SUB-S2: the honoured subset (no prompts here).
    assert_eq!(f.next().await, ack("l1"));
    f.send(&call(json!(1), "add_tool", json!({}))).await;
    let mut got = vec![f.next().await, f.next().await];
    got.sort_by_key(|v| v.get("id").is_some());
    assert_eq!(
        got,
        vec![tools_changed("l1"), text_result(json!(1), "tool added")]
    );
    f.send(&cancel(json!("l1"))).await;
    // Once the cancellation is read, the stream sends nothing more.
    f.send(&call(json!(2), "echo", json!({"text": "sync"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(2), "sync"));
    f.send(&call(json!(3), "add_tool", json!({}))).await;
    assert_eq!(f.next().await, text_result(json!(3), "tool added"));
    assert_eq!(f.next_within(Duration::from_millis(300)).await, None);
}

#[tokio::test]
async fn end_of_file_ends_listen_streams_with_their_result_at_once() {
    let mut f = Fixture::spawn(&[]);
    f.send(&listen("l2")).await;
    assert_eq!(f.next().await, ack("l2"));
    // Well inside the 5 s grace period: a listen stream does not hold the
    // server open (SUB-S9).
    let (status, rest) = f.close(Duration::from_secs(2)).await;
    assert!(status.success(), "{status}");
    assert_eq!(
        rest,
        vec![json!({"jsonrpc": "2.0", "id": "l2", "result": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": "l2"},
            "resultType": "complete"}})]
    );
}

#[tokio::test]
async fn a_form_request_is_an_input_required_result() {
    let mut f = Fixture::spawn(&[]);
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    f.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "ask_name", "arguments": {}, "_meta": m}}))
        .await;
    let r = f.next().await;
    assert_eq!(r["id"], 9);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(
        r["result"]["inputRequests"]["user_name"]["method"], "elicitation/create",
        "{r}"
    );
    assert!(r["result"]["requestState"].is_string(), "{r}");
}

#[tokio::test]
async fn the_principal_is_the_stdio_one() {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|r| r.split_whitespace().nth(1).map(str::to_owned))
        })
        .unwrap_or_else(|| "0".into());
    let mut f = Fixture::spawn(&[]);
    f.send(&call(json!(1), "whoami", json!({}))).await;
    assert_eq!(
        f.next().await,
        text_result(
            json!(1),
            &format!("stdio uid={uid} account=fixture-account")
        )
    );
}

#[tokio::test]
async fn stdout_carries_only_json_rpc_lines() {
    let mut f = Fixture::spawn(&["--max-line", "400"]);
    let mut input = Vec::new();
    for msg in [
        call_with_progress(json!(1), "slow", json!({"ms": 50}), "a"),
        json!([1, 2, 3]),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(json!(3), "nope", json!({})),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": meta()}}),
        call(json!(5), "echo", json!({"text": "z".repeat(500)})),
    ] {
        input.extend(serde_json::to_vec(&msg).unwrap());
        input.push(b'\n');
    }
    input.extend(b"\n\r\n{oops\n");
    f.send_bytes(&input).await;
    // Every line is checked by the reader: a non-JSON line panics there.
    let (status, lines) = f.close(Duration::from_secs(3)).await;
    assert!(status.success());
    let ids: Vec<&Value> = lines.iter().map(|l| &l["id"]).collect();
    // progress ×2 and the result for 1; the batch, the stray response, the
    // overlong line and the garbage get errors without id; the unknown tool
    // and the removed ping get errors with theirs; the notification and the
    // blank lines get nothing.
    assert_eq!(lines.len(), 9, "{lines:#?}");
    for id in [json!(1), json!(3), json!(4)] {
        assert!(ids.contains(&&id), "{id} missing in {lines:#?}");
    }
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.get("error").is_some() && l.get("id").is_none())
            .count(),
        4,
        "{lines:#?}"
    );
}

fn call_with_caps(id: Value, tool: &str, caps: Value, extra: Value) -> Value {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = caps;
    let mut params = json!({"name": tool, "arguments": {}, "_meta": m});
    if let (Some(p), Some(x)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(x.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn a_non_ascii_root_is_invalid_params_and_serving_goes_on() {
    // Regression: `file:/é/abcdef` was sliced inside `é` and the request
    // was never answered. ROOT-1, SECURITY.md §3.8.
    let mut f = Fixture::spawn(&[]);
    let caps = json!({"roots": {}});
    f.send(&call_with_caps(json!(1), "roots", caps.clone(), json!({})))
        .await;
    let first = f.next().await;
    assert_eq!(first["result"]["resultType"], "input_required");
    let state = first["result"]["requestState"].clone();
    for (id, uri) in [(2, "file:/é/abcdef"), (3, "file:///é")] {
        let retry = call_with_caps(
            json!(id),
            "roots",
            caps.clone(),
            json!({"requestState": state, "inputResponses": {"roots": {"roots": [{"uri": uri}]}}}),
        );
        f.send(&retry).await;
        let reply = f.next().await;
        assert_eq!(reply["id"], json!(id), "{reply}");
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert_eq!(reply["error"]["data"]["key"], "roots", "{reply}");
    }
    f.send(&call(json!(4), "echo", json!({"text": "still here"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(4), "still here"));
    let (status, _) = f.close(PATIENCE).await;
    assert!(status.success());
}

#[tokio::test]
async fn a_panicking_handler_gets_internal_error_and_serving_goes_on() {
    let mut f = Fixture::spawn(&[]);
    f.send(&call(json!("p"), "boom", json!({}))).await;
    let reply = f.next().await;
    assert_eq!(reply["id"], "p", "{reply}");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["message"], "Internal error", "{reply}");
    let cid = reply["error"]["data"]["correlationId"].as_str().unwrap();
    assert_eq!(cid.len(), 16, "{reply}");
    f.send(&call(json!(2), "echo", json!({"text": "after"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(2), "after"));
    let (status, _) = f.close(PATIENCE).await;
    assert!(status.success());
}

#[tokio::test]
async fn a_legacy_client_initializes_and_answers_an_elicitation_over_the_connection() {
    // COMPAT-S1 on stdio: the connection is the session; the Ask round
    // goes out as an `elicitation/create` request on it.
    let mut f = Fixture::spawn(&[]);
    f.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "legacy", "version": "1"}}}),
    )
    .await;
    let init = f.next().await;
    assert_eq!(init["id"], 0, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "stdio-fixture");
    f.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    f.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(
        f.next().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    f.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "ask_name", "arguments": {}}}))
        .await;
    let asked = f.next().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "What is your name?");
    f.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
                   "result": {"action": "accept", "content": {"name": "Ada"}}}))
        .await;
    let done = f.next().await;
    assert_eq!(
        done,
        json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "Hello, Ada!"}]}}),
    );
    // A modern request on the same connection is still served modern.
    f.send(&call(json!(3), "echo", json!({"text": "modern"})))
        .await;
    assert_eq!(f.next().await, text_result(json!(3), "modern"));
    let (status, _) = f.close(PATIENCE).await;
    assert!(status.success());
}
