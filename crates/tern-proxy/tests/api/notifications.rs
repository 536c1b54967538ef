//! An upstream's progress notifications on their way to a client that
//! does not read them: what waits in the proxy is bounded by
//! `MAX_RELAYED` notifications and `MAX_RELAYED_BYTES` (SECURITY.md,
//! "`tern proxy`"), the rest dropped and counted, and the upstream call
//! is never held up by the client.

use bytes::Bytes;
use serde_json::{Value, json};
use tern_proxy::{MAX_RELAYED, MAX_RELAYED_BYTES, Proxy};
use tern_server::{Args, Progress, Server, Sink, ToolResult};
use tern_testkit::logs::Captured;
use tern_testkit::request::call;
use tern_testkit::transport::Direct;
use tokio::sync::mpsc;

use super::common::{connect, inbound, parse, proxy_of, quick};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Noise {
    count: u32,
    /// Bytes of each notification's message.
    size: usize,
}

/// Reports progress `count` times, each with a message of `size` bytes.
async fn noisy(Args(n): Args<Noise>, progress: Progress) -> ToolResult {
    let message = "m".repeat(n.size);
    for done in 1..=n.count {
        progress
            .notify(f64::from(done), Some(f64::from(n.count)), Some(&message))
            .await;
    }
    ToolResult::text("done")
}

async fn noisy_proxy() -> Proxy {
    let (direct, _clock) =
        Direct::new(Server::builder("noisy", "1.0.0").tool("noisy", "Reports progress", noisy));
    proxy_of(vec![("up", connect(direct))], quick()).await
}

/// Calls `noisy` asking for progress, on a stream whose one place is
/// taken before the call starts and that nobody reads until the call is
/// over; returns the call's reply and every progress value the stream
/// then delivers.
async fn call_unread(proxy: &Proxy, count: u32, size: usize) -> (Value, Vec<f64>) {
    let mut body = call("noisy", json!({"count": count, "size": size}), json!({}));
    body["params"]["_meta"]["progressToken"] = json!("p");
    let (tx, mut rx) = mpsc::channel::<Bytes>(1);
    tx.send(Bytes::from_static(b"taken")).await.unwrap();
    let reply = parse(proxy.server().handle(inbound(&body), Sink::new(tx)).await);
    assert_eq!(rx.recv().await.as_deref(), Some(&b"taken"[..]));
    let mut delivered = Vec::new();
    while let Some(frame) = rx.recv().await {
        let n: Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "p", "{n}");
        delivered.push(n["params"]["progress"].as_f64().unwrap());
    }
    (reply, delivered)
}

/// 3,000 small notifications to a client that does not read: the call
/// completes, the first `MAX_RELAYED` reach the client once it reads, in
/// order, and the rest are dropped and counted.
#[tokio::test]
async fn a_client_that_does_not_read_holds_at_most_the_relay_budget() {
    assert_eq!(MAX_RELAYED, 64);
    let (logs, _guard) = Captured::start();
    let proxy = noisy_proxy().await;
    let (reply, delivered) = call_unread(&proxy, 3_000, 8).await;
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
    let first: Vec<f64> = (1..=64).map(f64::from).collect();
    assert_eq!(delivered, first);
    assert_eq!(proxy.notifications_dropped(), 3_000 - 64);
    // The operator reads it once for the request, naming the upstream.
    let needle = "not reading its call's notifications";
    let line = logs.line(needle);
    assert!(
        line.contains("WARN") && line.contains("upstream=up"),
        "{line}"
    );
    assert_eq!(logs.text().matches(needle).count(), 1);
}

/// Notifications of 64 KiB count by their bytes: 15 fit in
/// `MAX_RELAYED_BYTES` (each is a little over 64 KiB as JSON), and one
/// larger than the whole budget is never relayed.
#[tokio::test]
async fn large_notifications_are_held_by_their_bytes() {
    assert_eq!(MAX_RELAYED_BYTES, 1024 * 1024);
    let proxy = noisy_proxy().await;
    let (reply, delivered) = call_unread(&proxy, 300, 64 * 1024).await;
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
    let first: Vec<f64> = (1..=15).map(f64::from).collect();
    assert_eq!(delivered, first);
    assert_eq!(proxy.notifications_dropped(), 300 - 15);

    let (_, delivered) = call_unread(&proxy, 1, MAX_RELAYED_BYTES).await;
    assert!(delivered.is_empty(), "{delivered:?}");
    assert_eq!(proxy.notifications_dropped(), 300 - 15 + 1);
}

/// A client that reads loses nothing within the budget: fewer
/// notifications than `MAX_RELAYED` all arrive, in order.
#[tokio::test]
async fn a_client_that_reads_gets_every_notification_within_the_budget() {
    let proxy = noisy_proxy().await;
    let mut body = call("noisy", json!({"count": 50, "size": 8}), json!({}));
    body["params"]["_meta"]["progressToken"] = json!(7);
    let (tx, mut rx) = mpsc::channel::<Bytes>(1);
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(frame) = rx.recv().await {
            let n: Value = serde_json::from_slice(&frame).unwrap();
            seen.push(n["params"]["progress"].as_f64().unwrap());
        }
        seen
    });
    let reply = parse(proxy.server().handle(inbound(&body), Sink::new(tx)).await);
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
    let all: Vec<f64> = (1..=50).map(f64::from).collect();
    assert_eq!(reader.await.unwrap(), all);
    assert_eq!(proxy.notifications_dropped(), 0);
}
