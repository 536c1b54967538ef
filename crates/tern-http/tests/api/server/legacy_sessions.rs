//! The 2025-11-25 era over HTTP: a session bound to its principal and
//! capped, a call that outlives its stream and resumes after the last event
//! id, a cancelled call, the GET stream of list changes and subscribed
//! resources, and a fleet where modern flows cross instances while a
//! session stays on the instance that opened it (COMPAT-S1, COMPAT-S3).

use std::net::SocketAddr;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::{HttpOptions, spawn};
use tern_server::Server;

use super::{
    ByHeader, Events, confirm, get, hello, initialize, json_of, legacy_post, open_session,
};

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
