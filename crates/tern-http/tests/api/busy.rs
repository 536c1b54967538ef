//! Busy refusals over HTTP (issue 52): every load and budget refusal is
//! -31003 naming the limit in `data.limit`, with the status and
//! `Retry-After` derived from it in one place (429, or 503 for a full
//! session table; `Retry-After` in whole seconds where the server says
//! when); a body that does not arrive in time is -31004 with 408.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::{Authenticate, HttpOptions, Refusal};
use tern_proto::Principal;
use tern_server::{Config, RequestLimits, Server, SessionLimits, ShareLimits, ToolResult};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The principal named by the `x-who` header; anonymous without one.
struct Who;

impl Authenticate for Who {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        Ok(match headers.get("x-who").and_then(|v| v.to_str().ok()) {
            Some(who) => Principal::Static {
                secret_id: who.into(),
            },
            None => Principal::Anonymous,
        })
    }
}

async fn forever() -> ToolResult {
    std::future::pending().await
}

pub(super) async fn start(config: Config, options: HttpOptions) -> SocketAddr {
    let server = Server::builder("t", "1")
        .tool("forever", "never answers", forever)
        .config(config)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tern_http::router(server, options, Arc::new(Who));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

pub(super) fn running(per_principal: usize, total: usize) -> Config {
    Config {
        requests: RequestLimits {
            max_running_per_principal: per_principal,
            max_running: total,
        },
        ..Config::default()
    }
}

pub(super) fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {},
           "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}})
}

fn list() -> String {
    json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta()}})
        .to_string()
}

/// Starts a call as `holder` that runs until the test ends, then lists as
/// `asker` until the budget the call holds refuses it.
async fn refused_beside_a_running_call(
    addr: SocketAddr,
    holder: Option<&'static str>,
    asker: Option<&str>,
) -> (StatusCode, Option<String>, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"_meta": meta(), "name": "forever", "arguments": {}}});
    tokio::spawn(post(addr, holder, "tools/call", call.to_string()));
    for _ in 0..500 {
        let answer = post(addr, asker, "tools/list", list()).await;
        if answer.0 != StatusCode::OK {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never refused");
}

/// POSTs `body` as `who` (anonymous for `None`): the status, the
/// `Retry-After` header and the JSON body.
pub(super) async fn post(
    addr: SocketAddr,
    who: Option<&str>,
    method: &str,
    body: String,
) -> (StatusCode, Option<String>, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-method", method);
    if method == "tools/call" {
        // HTTP-S11: the tool's name mirrored; every call here is `forever`.
        req = req.header("mcp-name", "forever");
    }
    if method != "initialize" {
        req = req.header("mcp-protocol-version", "2026-07-28");
    }
    if let Some(who) = who {
        req = req.header("x-who", who);
    }
    let resp = req.body(body).send().await.unwrap();
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = resp.bytes().await.unwrap();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, retry_after, json)
}

#[tokio::test]
async fn a_full_server_answers_429_with_retry_after_from_the_busy_error() {
    let addr = start(running(8, 1), HttpOptions::default()).await;
    let (status, retry_after, body) = refused_beside_a_running_call(addr, None, None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // retryAfterMs 1000: one second.
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["id"], 5, "{body}");
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "requests", "retryAfterMs": 1000})
    );
}

#[tokio::test]
async fn a_principal_past_its_share_gets_429_without_a_time_to_come_back() {
    let addr = start(running(1, 8), HttpOptions::default()).await;
    let (status, retry_after, body) =
        refused_beside_a_running_call(addr, Some("mallory"), Some("mallory")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after, None);
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "requests_per_principal"})
    );
}

#[tokio::test]
async fn a_body_past_the_bytes_being_received_is_busy_with_retry_after() {
    let options = HttpOptions {
        receiving: ShareLimits {
            per_principal: 1024,
            total: 64,
        },
        ..HttpOptions::default()
    };
    let addr = start(Config::default(), options).await;
    let (status, retry_after, body) = post(addr, None, "tools/list", list()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "body_bytes", "retryAfterMs": 1000})
    );
}

#[tokio::test]
async fn a_full_session_table_is_busy_with_503_and_retry_after() {
    let config = Config {
        sessions: SessionLimits {
            max_open: 1,
            ..SessionLimits::default()
        },
        ..Config::default()
    };
    let addr = start(config, HttpOptions::default()).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    // Alice's session fills the table; Bob has none to give up.
    let (opened, _, _) = post(addr, Some("alice"), "initialize", init.to_string()).await;
    assert_eq!(opened, StatusCode::OK);
    let (status, retry_after, body) = post(addr, Some("bob"), "initialize", init.to_string()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["id"], 0, "{body}");
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "sessions", "retryAfterMs": 1000})
    );
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_a_timeout_with_408() {
    let options = HttpOptions {
        body_timeout: Duration::from_millis(200),
        ..HttpOptions::default()
    };
    let addr = start(Config::default(), options).await;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-method: tools/list\r\n\
         mcp-protocol-version: 2026-07-28\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{{\"jsonrpc\""
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut raw))
        .await
        .expect("answered")
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(!text.to_ascii_lowercase().contains("retry-after"), "{text}");
    let json: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["error"]["code"], -31004, "{json}");
    assert_eq!(json["error"]["data"], json!({"limit": "body_timeout"}));
}
