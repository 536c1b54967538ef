//! The client's session `GET` stream against a 2025-11-25 server that ends
//! every stream after one event with `retry: 0` (SECURITY.md, "`tern call`
//! and tern-client"): the events do not refill the resumes, and `retry: 0`
//! does not make the client reconnect at once.
#![cfg(all(feature = "client", feature = "server"))]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tern_client::{Client, Era, EraPolicy};
use tern_http::HttpTransport;
use tokio::sync::Notify;
use tokio::time::Instant;

/// One `GET` the server saw: when, and the `Last-Event-ID` it named.
#[derive(Clone, Debug)]
struct Get {
    at: Instant,
    last_id: Option<String>,
}

#[derive(Clone, Default)]
struct Gets {
    seen: Arc<Mutex<Vec<Get>>>,
    arrived: Arc<Notify>,
}

async fn post(body: axum::body::Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    if message["method"] != "initialize" {
        // `notifications/initialized`.
        return StatusCode::ACCEPTED.into_response();
    }
    let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "serverInfo": {"name": "closing", "version": "1"}}});
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::HeaderName::from_static("mcp-session-id"), "s1"),
        ],
        answer.to_string(),
    )
        .into_response()
}

async fn listen(State(gets): State<Gets>, headers: HeaderMap) -> Response {
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    gets.seen.lock().unwrap().push(Get {
        at: tern_testkit::runtime_now(),
        last_id,
    });
    gets.arrived.notify_one();
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        "id: 1\nretry: 0\ndata: x\n\n",
    )
        .into_response()
}

async fn start(gets: Gets) -> String {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = Router::new()
        .route("/mcp", get(listen).post(post))
        .with_state(gets);
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

#[tokio::test]
async fn a_get_stream_that_closes_after_each_event_is_resumed_five_times_at_most() {
    let gets = Gets::default();
    let url = start(gets.clone()).await;
    let client = Client::builder(HttpTransport::new(&url).unwrap())
        .era(EraPolicy::Legacy)
        .build();
    assert_eq!(client.connect().await.unwrap(), Era::Legacy);
    // The first GET and its five resumes.
    while gets.seen.lock().unwrap().len() < 6 {
        gets.arrived.notified().await;
    }
    // Not a measurement: a window in which a seventh GET would arrive,
    // ten times the 100 ms the client waits before each resume.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let seen = gets.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6, "the first GET and five resumes, no more");
    assert_eq!(seen[0].last_id, None);
    for get in &seen[1..] {
        assert_eq!(get.last_id.as_deref(), Some("1"));
    }
    for pair in seen.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= Duration::from_millis(100), "{gap:?}");
    }
    drop(client);
}
