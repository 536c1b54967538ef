//! Busy refusals over stdio (issue 52): the same JSON-RPC error as over
//! HTTP, -31003 with `data.limit` (and `data.retryAfterMs` where the server
//! says when), since stdio has no status line to carry "retry later".

use std::time::Duration;

use serde_json::{Value, json};
use tern_server::{Config, RequestLimits, Server, ToolResult};
use tern_stdio::{StdioOptions, serve_io};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

async fn forever() -> ToolResult {
    std::future::pending().await
}

/// A server on in-memory pipes: what to write to it, what it answers.
fn start(config: Config, options: StdioOptions) -> (DuplexStream, Lines<BufReader<DuplexStream>>) {
    let server = Server::builder("io", "1.0.0")
        .tool("forever", "Never answers", forever)
        .config(config)
        .build()
        .unwrap();
    let (input, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, output) = tokio::io::duplex(64 * 1024);
    tokio::spawn(serve_io(server, server_in, server_out, options));
    (input, BufReader::new(output).lines())
}

async fn send(input: &mut DuplexStream, v: &Value) {
    let mut line = serde_json::to_vec(v).unwrap();
    line.push(b'\n');
    input.write_all(&line).await.unwrap();
}

async fn next(output: &mut Lines<BufReader<DuplexStream>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(5), output.next_line())
        .await
        .expect("an answer")
        .unwrap()
        .expect("a line");
    serde_json::from_str(&line).unwrap()
}

fn call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "forever", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
}

#[tokio::test]
async fn a_request_past_the_in_flight_budget_is_busy_naming_it() {
    let options = StdioOptions {
        max_in_flight: 1,
        ..StdioOptions::default()
    };
    let (mut input, mut output) = start(Config::default(), options);
    send(&mut input, &call(1)).await;
    send(&mut input, &call(2)).await;
    let refused = next(&mut output).await;
    assert_eq!(
        refused,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -31003,
            "message": "1 requests are already running; wait for one to end",
            "data": {"limit": "stdio_in_flight"}}})
    );
}

#[tokio::test]
async fn the_server_s_own_budget_reaches_a_stdio_client_unchanged() {
    let config = Config {
        requests: RequestLimits {
            max_running_per_principal: 8,
            max_running: 1,
        },
        ..Config::default()
    };
    let (mut input, mut output) = start(config, StdioOptions::default());
    // The first call holds the server's only place.
    send(&mut input, &call(1)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    send(&mut input, &call(3)).await;
    let refused = next(&mut output).await;
    assert_eq!(refused["id"], 3, "{refused}");
    assert_eq!(refused["error"]["code"], -31003, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"limit": "requests", "retryAfterMs": 1000})
    );
}
