//! The Streamable HTTP server over real loopback sockets, hostile input
//! included (DIGEST §7.3, HTTP-A5, HTTP status code summary). Here: what
//! the tests share (a server on a free port, requests with the 2026-07-28
//! headers, the 2025-11-25 session's requests and its event reader, which
//! `sessions`, `running` and `connections` use too); the tests are in the
//! modules below, one behaviour each.
#![cfg(all(feature = "server", feature = "client"))]

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::{HttpOptions, spawn};
use tern_server::{Progress, Server, ToolResult};

mod answers;
mod legacy_sessions;
mod refusals;

async fn slow(progress: Progress) -> ToolResult {
    for p in [1.0, 2.0] {
        progress.notify(p, Some(2.0), None).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ToolResult::text("done")
}

pub(super) async fn hello() -> ToolResult {
    ToolResult::text("hello")
}

async fn start() -> SocketAddr {
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .tool("slow", "reports progress", slow)
        .build()
        .unwrap();
    let options = HttpOptions {
        max_body: 64 * 1024,
        ..HttpOptions::default()
    };
    let (addr, _task) = spawn("127.0.0.1:0".parse().unwrap(), server, options)
        .await
        .unwrap();
    addr
}

pub(super) fn body(method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn post(addr: SocketAddr, method: &str, name: Option<&str>) -> reqwest::RequestBuilder {
    post_on(&reqwest::Client::new(), addr, method, name)
}

/// [`post`] on a given client, whose connection is kept alive between
/// requests.
pub(super) fn post_on(
    http: &reqwest::Client,
    addr: SocketAddr,
    method: &str,
    name: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut r = http
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        r = r.header("mcp-name", n);
    }
    r
}

/// `body` POSTed as [`post`] makes it, and the answer.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    name: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> (StatusCode, Value) {
    json_of(post(addr, method, name).body(body).send().await.unwrap()).await
}

pub(super) async fn json_of(r: reqwest::Response) -> (StatusCode, Value) {
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(
        !text.trim_end().contains('\n'),
        "one line per body (HTTP-S7): {text:?}"
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Principals by the `x-who` header, for the session-binding tests.
pub(super) struct ByHeader;

impl tern_http::Authenticate for ByHeader {
    fn authenticate(
        &self,
        headers: &reqwest::header::HeaderMap,
    ) -> Result<tern_proto::Principal, tern_http::Refusal> {
        let who = headers
            .get("x-who")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("nobody");
        // `x-who: anonymous` stands for a server without authentication.
        if who == "anonymous" {
            return Ok(tern_proto::Principal::Anonymous);
        }
        Ok(tern_proto::Principal::Static {
            secret_id: who.to_owned(),
        })
    }
}

pub(super) fn legacy_post(
    addr: SocketAddr,
    who: &str,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("x-who", who);
    if let Some(s) = session {
        r = r
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    r
}

pub(super) fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}})
    .to_string()
}

pub(super) async fn confirm(ask: tern_server::Ask) -> Result<ToolResult, tern_server::Error> {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let (answer,) = ask.all((tern_server::Need::form_schema("ok", "Go on?", schema),))?;
    Ok(ToolResult::text(match answer {
        tern_server::Elicited::Accepted(_) => "went on",
        _ => "stopped",
    }))
}

/// Opens a session that declared form elicitation; returns its id.
pub(super) async fn open_session(addr: SocketAddr) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let r = legacy_post(addr, "alice", None)
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = legacy_post(addr, "alice", Some(&id))
        .body(done.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    id
}

/// Reads SSE events `(id, data)` off a response, comments skipped.
pub(super) struct Events {
    resp: reqwest::Response,
    buf: String,
}

impl Events {
    pub(super) fn new(resp: reqwest::Response) -> Self {
        Events {
            resp,
            buf: String::new(),
        }
    }

    pub(super) async fn next(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let event: String = self.buf.drain(..end + 2).collect();
                if event.starts_with(':') {
                    continue;
                }
                let field = |name: &str| {
                    event
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .unwrap_or_default()
                        .to_owned()
                };
                return Some((field("id: "), field("data: ")));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.resp.chunk())
                .await
                .expect("an event in time")
                .unwrap()?;
            self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

pub(super) fn get(
    addr: SocketAddr,
    session: &str,
    last_event_id: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .get(format!("http://{addr}/mcp"))
        .header("accept", "text/event-stream")
        .header("x-who", "alice")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(id) = last_event_id {
        r = r.header("last-event-id", id);
    }
    r
}
