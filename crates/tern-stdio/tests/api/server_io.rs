//! `serve_io` in process over `tokio::io::duplex` pipes: framing details,
//! cancellation that really stops the handler, and shutdown.

#![cfg(feature = "server")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tern_server::{RawArgs, Server, ToolResult};
use tern_stdio::{StdioOptions, serve_io};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

/// Set when the `hang` handler's future is dropped, i.e. its work stopped.
static HANG_DROPPED: AtomicBool = AtomicBool::new(false);

struct SetOnDrop;

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        HANG_DROPPED.store(true, Ordering::SeqCst);
    }
}

async fn echo(RawArgs(args): RawArgs) -> ToolResult {
    ToolResult::text(args.get("text").and_then(Value::as_str).unwrap_or(""))
}

async fn hang() -> ToolResult {
    let _flag = SetOnDrop;
    std::future::pending::<()>().await;
    ToolResult::text("unreachable")
}

async fn forever() -> ToolResult {
    std::future::pending().await
}

struct Peer {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    serving: JoinHandle<std::io::Result<()>>,
}

fn start(options: StdioOptions) -> Peer {
    let server = Server::builder("io", "1.0.0")
        .tool("echo", "Echoes", echo)
        .tool("hang", "Never answers", hang)
        .tool("forever", "Never answers", forever)
        .build()
        .unwrap();
    let (input, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, output) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(serve_io(server, server_in, server_out, options));
    Peer {
        input: Some(input),
        output: BufReader::new(output).lines(),
        serving,
    }
}

impl Peer {
    async fn write(&mut self, bytes: &[u8]) {
        self.input.as_mut().unwrap().write_all(bytes).await.unwrap();
    }

    async fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        self.write(&line).await;
    }

    async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        let line = tokio::time::timeout(wait, self.output.next_line())
            .await
            .ok()?
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }

    async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(5)).await.unwrap()
    }
}

fn call(id: Value, tool: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": text}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
}

fn cancel(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
}

fn text_of(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn end_of_input_returns_ok_and_closes_output() {
    let mut p = start(StdioOptions::default());
    drop(p.input.take());
    assert_eq!(p.next_within(Duration::from_secs(2)).await, None);
    p.serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn crlf_lines_and_blank_lines_and_notifications() {
    let mut p = start(StdioOptions::default());
    let mut line = serde_json::to_vec(&call(json!(1), "echo", "crlf")).unwrap();
    line.extend(b"\r\n\n   \n");
    p.write(&line).await;
    p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    p.send(&call(json!(2), "echo", "after")).await;
    assert_eq!(text_of(&p.next().await), "crlf");
    // Blank lines and the notification wrote nothing.
    let next = p.next().await;
    assert_eq!((next["id"].clone(), text_of(&next)), (json!(2), "after"));
}

#[tokio::test]
async fn cancellation_stops_the_handler_and_ids_keep_their_type() {
    let mut p = start(StdioOptions::default());
    p.send(&call(json!(1), "hang", "")).await;
    // "1" is another id than 1 (BASE-2): this cancels nothing.
    p.send(&cancel(json!("1"))).await;
    p.send(&call(json!(2), "echo", "sync")).await;
    assert_eq!(text_of(&p.next().await), "sync");
    assert!(!HANG_DROPPED.load(Ordering::SeqCst));
    p.send(&cancel(json!(1))).await;
    p.send(&call(json!(3), "echo", "sync")).await;
    assert_eq!(text_of(&p.next().await), "sync");
    // CANC-S4: the work stopped, not just its output.
    for _ in 0..100 {
        if HANG_DROPPED.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(HANG_DROPPED.load(Ordering::SeqCst));
    drop(p.input.take());
    assert_eq!(p.next_within(Duration::from_secs(2)).await, None);
    p.serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_grace_period_bounds_shutdown() {
    let mut p = start(StdioOptions {
        shutdown_grace: Duration::from_millis(100),
        ..StdioOptions::default()
    });
    p.send(&call(json!(1), "forever", "")).await;
    drop(p.input.take());
    let done = tokio::time::timeout(Duration::from_secs(2), &mut p.serving).await;
    done.expect("serve_io returns after the grace period")
        .unwrap()
        .unwrap();
    assert_eq!(p.next_within(Duration::from_millis(200)).await, None);
}

#[tokio::test]
async fn a_closed_output_ends_serving_with_an_error() {
    let mut p = start(StdioOptions::default());
    let (_, dead) = tokio::io::duplex(1);
    // Drop the read side of the output: the next write fails.
    p.output = BufReader::new(dead).lines();
    p.send(&call(json!(1), "echo", "nobody reads this")).await;
    let done = tokio::time::timeout(Duration::from_secs(2), &mut p.serving).await;
    let err = done.expect("serving stops").unwrap().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
}

#[tokio::test]
async fn requests_past_the_in_flight_budget_are_refused_until_one_ends() {
    // SECURITY.md "Budgets": a client flooding the connection holds at
    // most `max_in_flight` running requests.
    let mut p = start(StdioOptions {
        max_in_flight: 3,
        ..StdioOptions::default()
    });
    for id in 1..=3 {
        p.send(&call(json!(id), "forever", "")).await;
    }
    for id in 4..=1000 {
        p.send(&call(json!(id), "forever", "")).await;
        let refused = p.next().await;
        assert_eq!(refused["id"], id, "{refused}");
        assert_eq!(refused["error"]["code"], -31003, "{refused}");
        assert_eq!(
            refused["error"]["message"],
            "3 requests are already running; wait for one to end"
        );
    }
    // A cancelled request gives its place back.
    p.send(&cancel(json!(2))).await;
    p.send(&call(json!(1001), "echo", "in")).await;
    let answered = p.next().await;
    assert_eq!(answered["id"], 1001, "{answered}");
    assert_eq!(text_of(&answered), "in");
}
