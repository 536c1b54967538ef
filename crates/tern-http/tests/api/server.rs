//! The Streamable HTTP server over real loopback sockets, hostile input
//! included (DIGEST §7.3, HTTP-A5, HTTP status code summary).
#![cfg(all(feature = "server", feature = "client"))]

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::{HttpOptions, spawn};
use tern_server::{Progress, Server, ToolResult};

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

#[tokio::test]
async fn get_and_delete_are_405() {
    // COMPAT-S3.
    let addr = start().await;
    let c = reqwest::Client::new();
    assert_eq!(
        c.get(format!("http://{addr}/mcp"))
            .send()
            .await
            .unwrap()
            .status(),
        405
    );
    assert_eq!(
        c.delete(format!("http://{addr}/mcp"))
            .send()
            .await
            .unwrap()
            .status(),
        405
    );
}

#[tokio::test]
async fn a_foreign_origin_is_403_and_loopback_ones_pass() {
    // HTTP-S2, HTTP-A1: DNS rebinding protection.
    let addr = start().await;
    let b = body("tools/list", json!({}));
    let r = post(addr, "tools/list", None)
        .header("origin", "http://evil.example.com")
        .body(b.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = post(addr, "tools/list", None)
        .header("origin", format!("http://localhost:{}", addr.port()))
        .body(b.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn an_oversized_body_is_413_without_reading_it_whole() {
    let addr = start().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(100 * 1024)
    );
    let r = post(addr, "tools/list", None)
        .body(big)
        .send()
        .await
        .unwrap();
    let (status, v) = json_of(r).await;
    assert_eq!(status, 413);
    assert_eq!(v["error"]["code"], -32600);
    // A streamed body with no length is cut off at the cap too.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..200).map(|_| Ok(vec![b' '; 1024])).collect();
    let stream = reqwest::Body::wrap_stream(futures_util_stream(chunks));
    let r = post(addr, "tools/list", None)
        .body(stream)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
}

fn futures_util_stream(
    chunks: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    struct It(std::vec::IntoIter<Result<Vec<u8>, std::io::Error>>);
    impl futures_core::Stream for It {
        type Item = Result<Vec<u8>, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }
    It(chunks.into_iter())
}

#[tokio::test]
async fn header_checks_follow_the_validation_order() {
    // HTTP-A5 steps 6, 7, 10, 12 and their statuses.
    let addr = start().await;
    let b = body("tools/call", json!({"name": "hello"}));
    let c = reqwest::Client::new();
    let no_version = c
        .post(format!("http://{addr}/mcp"))
        .header("mcp-method", "tools/call")
        .header("mcp-name", "hello")
        .body(b.to_string());
    let (s, v) = json_of(no_version.send().await.unwrap()).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    let (s, v) = exchange(addr, "TOOLS/CALL", Some("hello"), b.to_string()).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    let (s, v) = exchange(addr, "tools/call", Some("other"), b.to_string()).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    // HTTP-9: surrounding whitespace is trimmed; names are case-insensitive.
    let padded = c
        .post(format!("http://{addr}/mcp"))
        .header("MCP-PROTOCOL-VERSION", "2026-07-28")
        .header("MCP-METHOD", "tools/call")
        .header("mcp-name", "  hello  ")
        .body(b.to_string());
    assert_eq!(json_of(padded.send().await.unwrap()).await.0, 200);
    let (s, v) = exchange(addr, "ping", None, body("ping", json!({})).to_string()).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!(-32601))
    );
}

#[tokio::test]
async fn an_initialize_that_is_neither_era_gets_the_400_of_a_missing_meta() {
    // COMPAT-S-A1: with the version header but no `_meta` (and no legacy
    // `protocolVersion`), step 6 fails: 400 + -32602, naming the versions
    // served (COMPAT-S2), as every other request missing `_meta` is.
    let addr = start().await;
    for params in [json!({}), json!({"capabilities": {}})] {
        let init = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": params});
        let (s, v) = exchange(addr, "initialize", None, init.to_string()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
        assert_eq!(v["id"], 3, "{v}");
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(
            v["error"]["message"],
            "Invalid params: params._meta is required. This server supports MCP 2026-07-28 only",
            "{v}"
        );
        assert_eq!(
            v["error"]["data"]["supported"],
            json!(["2026-07-28"]),
            "{v}"
        );
    }
    // Any other request missing `_meta` is the same 400, without the note.
    let bare = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
    let (s, v) = exchange(addr, "tools/list", None, bare.to_string()).await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32602))
    );
    assert_eq!(
        v["error"]["message"], "Invalid params: params._meta is required",
        "{v}"
    );
    assert!(v["error"].get("data").is_none(), "{v}");
}

#[tokio::test]
async fn malformed_bodies_are_parse_errors_and_notifications_202() {
    let addr = start().await;
    let (s, v) = exchange(addr, "tools/list", None, "{not json").await;
    assert_eq!(
        (s, v["error"]["code"].clone(), v.get("id").is_none()),
        (StatusCode::BAD_REQUEST, json!(-32700), true)
    );
    let (s, v) = exchange(addr, "tools/list", None, "[]").await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32600))
    );
    let r = post(addr, "notifications/cancelled", None)
        .body(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert!(r.text().await.unwrap().is_empty());
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

async fn start_sessions(max_sessions: usize) -> SocketAddr {
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .config(tern_server::Config {
            sessions: tern_server::SessionLimits {
                max_open: max_sessions,
                ..tern_server::SessionLimits::default()
            },
            ..tern_server::Config::default()
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tern_http::router(
        server,
        HttpOptions::default(),
        std::sync::Arc::new(ByHeader),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
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

#[tokio::test]
async fn a_legacy_session_is_bound_to_its_principal_capped_and_ends_on_delete() {
    let addr = start_sessions(2).await;
    let r = legacy_post(addr, "alice", None)
        .body(initialize())
        .send()
        .await
        .unwrap();
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "an unguessable id: {id}");
    let (status, init) = json_of(r).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let (status, tools) = json_of(
        legacy_post(addr, "alice", Some(&id))
            .body(list.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tools["result"]["tools"][0]["name"], "hello", "{tools}");
    // Another principal presenting the id, or an unknown id: 404.
    for (who, sid) in [("mallory", id.as_str()), ("alice", "0123456789abcdef")] {
        let r = legacy_post(addr, who, Some(sid))
            .body(list.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{who} {sid}");
    }
    // A flood of sessions: the cap answers 503 and nothing else changes.
    let second = legacy_post(addr, "bob", None)
        .body(initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    let third = legacy_post(addr, "carol", None)
        .body(initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(third.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(third.headers().get("mcp-session-id").is_none());
    // GET and DELETE without a session stay 405 (COMPAT-S3).
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/mcp");
    assert_eq!(
        http.get(&url).send().await.unwrap().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
    assert_eq!(
        http.delete(&url).send().await.unwrap().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
    // DELETE by its owner ends the session; then it is gone.
    let del = http
        .delete(&url)
        .header("mcp-session-id", &id)
        .header("x-who", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), StatusCode::OK);
    let after = legacy_post(addr, "alice", Some(&id))
        .body(list)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    // The freed place can be taken again.
    let again = legacy_post(addr, "carol", None)
        .body(initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}

pub(super) async fn confirm(ask: tern_server::Ask) -> Result<ToolResult, tern_server::Error> {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let (answer,) = ask.all((tern_server::Need::form_schema("ok", "Go on?", schema),))?;
    Ok(ToolResult::text(match answer {
        tern_server::Elicited::Accepted(_) => "went on",
        _ => "stopped",
    }))
}

/// A session server with an asking tool; the server is returned so a test
/// can change its lists and resources.
async fn start_asking() -> (SocketAddr, Server) {
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .tool("confirm", "asks first", confirm)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tern_http::router(
        server.clone(),
        HttpOptions::default(),
        std::sync::Arc::new(ByHeader),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, server)
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

/// Calls `confirm` as request `id` in session `sid`, and reads its stream
/// up to the server's question: the stream, the question's event id and
/// the question.
async fn confirm_asked(addr: SocketAddr, sid: &str, id: u64) -> (Events, String, Value) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "confirm", "arguments": {}}});
    let resp = legacy_post(addr, "alice", Some(sid))
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    let mut events = Events::new(resp);
    // A priming event, then the server's question, each with an id.
    let (prime, data) = events.next().await.unwrap();
    assert!(prime.ends_with("-0") && data.is_empty(), "{prime} {data}");
    let (asked_at, data) = events.next().await.unwrap();
    let asked: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    (events, asked_at, asked)
}

#[tokio::test]
async fn a_legacy_call_outlives_its_stream_and_resumes_after_the_last_event_id() {
    let (addr, _server) = start_asking().await;
    let sid = open_session(addr).await;
    let (events, asked_at, asked) = confirm_asked(addr, &sid, 7).await;
    // The client loses the stream; the call does not end with it.
    drop(events);
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
                        "result": {"action": "accept", "content": {"ok": true}}});
    let r = legacy_post(addr, "alice", Some(&sid))
        .body(answer.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let resp = get(addr, &sid, Some(&asked_at)).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut events = Events::new(resp);
    let (id, data) = events.next().await.unwrap();
    let result: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(result["id"], 7, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "went on");
    assert_ne!(id, asked_at);
    // Nothing after the response: the stream ends.
    assert_eq!(events.next().await, None);
    // An id of no stream kept, or not an event id at all: 400, not 404 (a
    // 404 would say the session is gone).
    for bad in ["99-0", "garbage"] {
        let r = get(addr, &sid, Some(bad)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn a_cancelled_legacy_call_stops_and_its_question_is_no_longer_answerable() {
    let (addr, _server) = start_asking().await;
    let sid = open_session(addr).await;
    let (mut events, asked_at, asked) = confirm_asked(addr, &sid, 8).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 8, "reason": "changed my mind"}});
    let r = legacy_post(addr, "alice", Some(&sid))
        .body(cancel.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // The call's stream ends without a response (2025-11-25: none is sent
    // for a cancelled request), and resuming it gives nothing more.
    assert_eq!(events.next().await, None);
    let resp = get(addr, &sid, Some(&asked_at)).send().await.unwrap();
    let mut resumed = Events::new(resp);
    assert_eq!(resumed.next().await, None);
    // A late answer is accepted on the wire and changes nothing.
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
                        "result": {"action": "accept", "content": {"ok": true}}});
    let r = legacy_post(addr, "alice", Some(&sid))
        .body(answer.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn the_get_stream_carries_list_changes_and_updates_of_subscribed_resources() {
    let (addr, server) = start_asking().await;
    let sid = open_session(addr).await;
    let resp = get(addr, &sid, None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut events = Events::new(resp);
    let (prime, _) = events.next().await.unwrap();
    assert_eq!(prime, "0-0");
    let sub = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                     "params": {"uri": "mem://watched"}});
    let (status, _) = json_of(
        legacy_post(addr, "alice", Some(&sid))
            .body(sub.to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Only the subscribed resource is told about.
    server.resource_updated("mem://other");
    server.resource_updated("mem://watched");
    let (id, data) = events.next().await.unwrap();
    assert_eq!(id, "0-1");
    let n: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "mem://watched");
    server.remove_tool("hello");
    let (id, data) = events.next().await.unwrap();
    assert_eq!(id, "0-2");
    let n: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    // A new GET resuming after the first event gets the second again, and
    // the old stream ends: each message goes out on one stream only.
    let resp = get(addr, &sid, Some("0-1")).send().await.unwrap();
    let mut again = Events::new(resp);
    let (id, _) = again.next().await.unwrap();
    assert_eq!(id, "0-2");
    server.resource_updated("mem://watched");
    assert_eq!(again.next().await.unwrap().0, "0-3");
    assert_eq!(events.next().await, None);
}

#[tokio::test]
async fn modern_flows_cross_instances_and_a_legacy_session_stays_on_its_own() {
    // Two instances sharing one key file behind a load balancer that sends
    // each request anywhere: a modern flow started on one finishes on the
    // other (ARCHITECTURE.md "Many instances"); a legacy session lives in
    // the instance that opened it, and the other says so with 404, the
    // answer that tells a 2025-11-25 client to open a new session
    // (COMPAT-S1: legacy sessions need stickiness at the load balancer).
    use tern_testkit::request::{accept, call, retry};
    let file = tern_seal::KeyFile::generate("fleet").unwrap();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let server = Server::builder("t", "1")
            .keys(file.key_ring().unwrap())
            .resource_id("fleet")
            .tool("confirm", "asks first", confirm)
            .build()
            .unwrap();
        let (addr, _task) = spawn(
            "127.0.0.1:0".parse().unwrap(),
            server,
            HttpOptions::default(),
        )
        .await
        .unwrap();
        urls.push(format!("http://{addr}/mcp"));
    }
    let send = |url: &str, body: &Value| {
        reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "confirm")
            .body(body.to_string())
            .send()
    };
    let first = call("confirm", json!({}), json!({"elicitation": {"form": {}}}));
    let (status, asked) = json_of(send(&urls[0], &first).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let again = retry(
        &first,
        Some(&state),
        json!({"ok": accept(json!({"ok": true}))}),
    );
    let (status, done) = json_of(send(&urls[1], &again).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(done["result"]["content"][0]["text"], "went on", "{done}");
    // The legacy session opened on the first instance is unknown to the
    // second.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let r = reqwest::Client::new()
        .post(&urls[0])
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let on = |url: &str| {
        reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .body(list.to_string())
            .send()
    };
    assert_eq!(on(&urls[0]).await.unwrap().status(), StatusCode::OK);
    let (status, e) = json_of(on(&urls[1]).await.unwrap()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        e["error"]["message"], "Invalid request: Session not found",
        "{e}"
    );
}

#[tokio::test]
async fn an_initialize_spelt_with_escapes_still_opens_a_session() {
    // The transport looks for the method's bytes before parsing a body a
    // second time; a `\u` escape must not slip past it (COMPAT-S1).
    let addr = start_sessions(2).await;
    let escaped = initialize().replace("\"initialize\"", "\"\\u0069nitiali\\u007ae\"");
    assert!(!escaped.contains("initialize"), "{escaped}");
    let r = legacy_post(addr, "alice", None)
        .body(escaped)
        .send()
        .await
        .unwrap();
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{id}");
    let (status, init) = json_of(r).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
}
