//! The budget of requests running at once (SECURITY.md, "Budgets"): one
//! principal holding long requests open (listen streams here) is refused
//! past its share, and nobody else is.

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::HttpOptions;
use tern_server::{Config, RequestLimits, Server};

use super::server::{ByHeader, body, hello, json_of, post_on};

async fn start(limits: RequestLimits) -> (SocketAddr, Server) {
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .config(Config {
            requests: limits,
            ..Config::default()
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A short keep-alive, so a stream the client dropped is noticed soon.
    let options = HttpOptions {
        keep_alive: std::time::Duration::from_millis(50),
        ..HttpOptions::default()
    };
    let app = tern_http::router(server.clone(), options, Arc::new(ByHeader));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, server)
}

/// Opens a listen stream as `who` and waits for its acknowledgement; the
/// response is kept open by the caller, or the refusal is returned.
async fn listen(addr: SocketAddr, who: &str) -> Result<reqwest::Response, (StatusCode, Value)> {
    let request = body(
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut resp = post_on(&reqwest::Client::new(), addr, "subscriptions/listen", None)
        .header("x-who", who)
        .body(request.to_string())
        .send()
        .await
        .unwrap();
    if resp.status() != StatusCode::OK {
        return Err(json_of(resp).await);
    }
    let first = resp.chunk().await.unwrap().unwrap();
    let text = std::str::from_utf8(&first).unwrap();
    assert!(
        text.contains("notifications/subscriptions/acknowledged"),
        "{text}"
    );
    Ok(resp)
}

#[tokio::test]
async fn long_requests_are_budgeted_per_principal_and_in_all() {
    let (addr, server) = start(RequestLimits {
        max_running_per_principal: 3,
        max_running: 5,
    })
    .await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(listen(addr, "mallory").await.unwrap());
    }
    for _ in 0..100 {
        let (status, refused) = listen(addr, "mallory").await.unwrap_err();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused["id"], 7, "{refused}");
        assert_eq!(refused["error"]["code"], -31003, "{refused}");
        assert_eq!(
            refused["error"]["message"],
            "too many requests running for this client; wait for one to end"
        );
    }
    // Another principal still gets in, up to the total.
    open.push(listen(addr, "alice").await.unwrap());
    open.push(listen(addr, "bob").await.unwrap());
    let (status, refused) = listen(addr, "carol").await.unwrap_err();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused["error"]["message"],
        "the server has as many requests running as it takes; try again shortly"
    );
    assert_eq!(
        server.metrics().limits_reached("requests_per_principal"),
        100
    );
    assert_eq!(server.metrics().limits_reached("requests"), 1);
    // A stream that ends gives its place back.
    drop(open.remove(0));
    let mut back = None;
    for _ in 0..50 {
        if let Ok(r) = listen(addr, "mallory").await {
            back = Some(r);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(back.is_some(), "the closed stream's place came back");
}
