//! Peers that connect and send slowly, driven past each budget over raw
//! TCP (SECURITY.md, "Every request"): connections per address and in all,
//! the deadline of a request's head and of its body, and the bytes of
//! bodies being received per principal and in all.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tern_http::{ConnectionLimits, HttpOptions, serve_router};
use tern_server::{Server, ShareLimits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::server::{ByHeader, body, hello};

async fn start(limits: ConnectionLimits, options: HttpOptions) -> (SocketAddr, Server) {
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tern_http::router(server.clone(), options, Arc::new(ByHeader));
    let serving = server.clone();
    tokio::spawn(async move {
        serve_router(listener, app, limits, Some(serving), std::future::pending()).await
    });
    (addr, server)
}

/// A `tools/call` of `hello` as `who`, its head and the first `sent` bytes
/// of its body written; the rest never comes.
async fn stalled(addr: SocketAddr, who: &str, sent: usize) -> TcpStream {
    let call = body("tools/call", json!({"name": "hello"})).to_string();
    // Padding inside the JSON keeps the body valid, were it all to come.
    let padded = format!("{}{}", " ".repeat(sent), call);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n\
         accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: hello\r\nx-who: {who}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n",
        padded.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&padded.as_bytes()[..sent]).await.unwrap();
    tcp
}

/// The status and JSON body of the response `tcp` receives, or `None` when
/// the server closes it without one.
async fn response(tcp: &mut TcpStream) -> Option<(u16, Value)> {
    let mut raw = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut raw));
    read.await
        .expect("the server answers or closes in time")
        .ok()?;
    let text = String::from_utf8(raw).unwrap();
    let status = text.get(9..12)?.parse().ok()?;
    let json = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    Some((status, serde_json::from_str(json).unwrap_or(Value::Null)))
}

fn small_budgets() -> HttpOptions {
    HttpOptions {
        receiving: ShareLimits {
            per_principal: 64 * 1024,
            total: 100 * 1024,
        },
        ..HttpOptions::default()
    }
}

#[tokio::test]
async fn bodies_being_received_are_budgeted_per_principal_and_in_all() {
    let (addr, server) = start(ConnectionLimits::default(), small_budgets()).await;
    // Mallory's first slow body holds 40 KiB of her 64; her second's
    // 40 KiB would pass it: 429, counted, and only her connection refused.
    let _first = stalled(addr, "mallory", 40 * 1024).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut second = stalled(addr, "mallory", 40 * 1024).await;
    let (status, refused) = response(&mut second).await.unwrap();
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["code"], -31003, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "too many request bodies are being received for this client; send again shortly"
    );
    assert_eq!(
        server.metrics().limits_reached("body_bytes_per_principal"),
        1
    );
    // Alice's 40 KiB would pass the 100 KiB all hold: 429 "in all".
    let _eve = stalled(addr, "eve", 40 * 1024).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut alice = stalled(addr, "alice", 40 * 1024).await;
    let (status, refused) = response(&mut alice).await.unwrap();
    assert_eq!(status, 429, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("being received in all"),
        "{refused}"
    );
    assert_eq!(server.metrics().limits_reached("body_bytes"), 1);
    // A small whole request still fits beside the stalled ones.
    let mut bob = stalled(addr, "bob", 0).await;
    let call = body("tools/call", json!({"name": "hello"})).to_string();
    bob.write_all(call.as_bytes()).await.unwrap();
    let (status, ok) = response(&mut bob).await.unwrap();
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "hello", "{ok}");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_gets_408_and_gives_its_bytes_back() {
    let options = HttpOptions {
        body_timeout: Duration::from_millis(300),
        ..small_budgets()
    };
    let (addr, server) = start(ConnectionLimits::default(), options).await;
    let mut slow = stalled(addr, "mallory", 60 * 1024).await;
    let (status, refused) = response(&mut slow).await.unwrap();
    assert_eq!(status, 408, "{refused}");
    assert_eq!(refused["error"]["code"], -31004, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "the request body did not arrive within 300ms"
    );
    assert_eq!(server.metrics().limits_reached("body_timeout"), 1);
    // Her 60 KiB were given back: another 60 KiB of hers is taken.
    let mut again = stalled(addr, "mallory", 60 * 1024).await;
    let (status, _) = response(&mut again).await.unwrap();
    assert_eq!(status, 408);
    assert_eq!(
        server.metrics().limits_reached("body_bytes_per_principal"),
        0
    );
}

#[tokio::test]
async fn a_head_that_does_not_arrive_in_time_closes_its_connection() {
    let limits = ConnectionLimits {
        header_timeout: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let (addr, _server) = start(limits, HttpOptions::default()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nhost: t\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest));
    read.await
        .expect("closed well before the test's own limit")
        .unwrap();
    // An idle keep-alive connection is closed the same way.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let read = tokio::time::timeout(Duration::from_secs(10), idle.read_to_end(&mut rest));
    read.await.expect("closed in time").unwrap();
}

#[tokio::test]
async fn connections_are_budgeted_per_address_and_in_all() {
    let limits = ConnectionLimits {
        max_per_address: 2,
        ..ConnectionLimits::default()
    };
    let (addr, server) = start(limits, HttpOptions::default()).await;
    let _a = TcpStream::connect(addr).await.unwrap();
    let _b = TcpStream::connect(addr).await.unwrap();
    let mut third = TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(10), third.read(&mut buf));
    assert_eq!(read.await.expect("closed at once").unwrap_or(0), 0);
    assert_eq!(
        server.metrics().limits_reached("connections_per_address"),
        1
    );

    // In all: the third connection waits, unserved, until one closes.
    let limits = ConnectionLimits {
        max_open: 2,
        ..ConnectionLimits::default()
    };
    let (addr, server) = start(limits, HttpOptions::default()).await;
    let a = TcpStream::connect(addr).await.unwrap();
    let _b = TcpStream::connect(addr).await.unwrap();
    let mut waiting = stalled(addr, "bob", 0).await;
    let call = body("tools/call", json!({"name": "hello"})).to_string();
    waiting.write_all(call.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(300), waiting.read(&mut buf)).await;
    assert!(early.is_err(), "not served while two are open");
    assert_eq!(server.metrics().limits_reached("connections"), 1);
    drop(a);
    let (status, ok) = response(&mut waiting).await.unwrap();
    assert_eq!(status, 200, "{ok}");
}

/// Refusals before the server sees a request are counted by reason
/// (`tern_http_refused_total`), the peer seeing only the refusal.
#[tokio::test]
async fn refusals_at_the_door_are_counted_by_reason() {
    let (addr, server) = start(ConnectionLimits::default(), HttpOptions::default()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n\
                connection: close\r\ncontent-length: 999999999\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let (status, _) = response(&mut tcp).await.unwrap();
    assert_eq!(status, 413);
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nhost: t\r\norigin: https://evil.example\r\n\
                connection: close\r\ncontent-length: 2\r\n\r\n{}";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let (status, _) = response(&mut tcp).await.unwrap();
    assert_eq!(status, 403);
    assert_eq!(server.metrics().refusals("too_large"), 1);
    assert_eq!(server.metrics().refusals("origin"), 1);
    let text = server.metrics().render_prometheus();
    assert!(
        text.contains("tern_http_refused_total{reason=\"origin\"} 1"),
        "{text}"
    );
}
