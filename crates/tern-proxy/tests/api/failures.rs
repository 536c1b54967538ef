//! Upstream failures as the downstream client sees them (issue 27 point
//! 11): named by the upstream's configured name, never by its address;
//! codes from Tern's registry; an upstream's own application codes passed
//! through unless they could be taken for the proxy's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tern_client::{
    BoxFuture, Client, Error as ClientError, Frames, OutboundNotification, OutboundRequest,
    Transport,
};
use tern_proxy::{Connect, ProxyOptions, UPSTREAM_ERROR, UPSTREAM_UNAVAILABLE};
use tern_testkit::request::{all_caps, call};
use tern_testkit::transport::{Answer, Scripted};

use super::common::{code, connect, one_tool, proxy_of, quick, send};

/// Where the failing upstream lives: nothing of it may reach a client.
const ADDRESS: &str = "http://10.9.8.7:4242/mcp";

/// Asserts `reply` is `expected` naming the upstream `name` and nothing of
/// its address.
fn named_without_address(reply: &Value, expected: i64, name: &str) -> String {
    assert_eq!(code(reply), expected, "{reply}");
    let text = reply["error"].to_string();
    assert!(!text.contains("10.9.8.7"), "{text}");
    assert!(!text.contains("4242"), "{text}");
    assert!(!text.contains("http"), "{text}");
    assert_eq!(reply["error"]["data"]["upstream"], name, "{reply}");
    reply["error"]["message"].as_str().unwrap().to_owned()
}

/// A scripted upstream whose network can be cut: requests then fail the
/// way an HTTP transport's do, with the URL in the error text.
#[derive(Clone)]
struct Cuttable {
    script: Scripted,
    down: Arc<AtomicBool>,
}

impl Transport for Cuttable {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, ClientError>> {
        if self.down.load(Ordering::SeqCst) {
            return Box::pin(async {
                Err(ClientError::transport_from(
                    format!("error sending request for url ({ADDRESS})"),
                    std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"),
                ))
            });
        }
        self.script.request(request)
    }

    fn notify(&self, n: OutboundNotification) -> BoxFuture<'_, Result<(), ClientError>> {
        self.script.notify(n)
    }
}

/// Connects to `t` while it is up; while it is down, fails as a connector
/// does, naming the URL.
fn connect_cuttable(t: Cuttable) -> Connect {
    Arc::new(move || {
        let t = t.clone();
        Box::pin(async move {
            if t.down.load(Ordering::SeqCst) {
                Err(format!("{ADDRESS}: connection refused (os error 111)"))
            } else {
                Ok(Client::builder(t))
            }
        })
    })
}

/// An upstream lost in the middle of the gateway's life: the call it
/// breaks, and the next one that cannot reach it, are -31002 naming
/// "search" and nothing of its URL; once it is back, calls pass again.
#[tokio::test]
async fn an_unreachable_upstream_is_named_and_its_address_kept_back() {
    let upstream = Cuttable {
        script: one_tool(|| Answer::Result(json!({"content": [{"type": "text", "text": "ok"}]}))),
        down: Arc::default(),
    };
    let proxy = proxy_of(
        vec![("search", connect_cuttable(upstream.clone()))],
        quick(),
    )
    .await;
    upstream.down.store(true, Ordering::SeqCst);
    let lost = send(&proxy, &call("t", json!({}), json!({}))).await;
    let message = named_without_address(&lost, UPSTREAM_UNAVAILABLE, "search");
    assert_eq!(
        message,
        "the upstream server \"search\" is unavailable: the connection to it was lost"
    );
    let gone = send(&proxy, &call("t", json!({}), json!({}))).await;
    let message = named_without_address(&gone, UPSTREAM_UNAVAILABLE, "search");
    assert_eq!(
        message,
        "the upstream server \"search\" is unavailable: it cannot be reached"
    );
    upstream.down.store(false, Ordering::SeqCst);
    let back = send(&proxy, &call("t", json!({}), json!({}))).await;
    assert_eq!(back["result"]["content"][0]["text"], "ok", "{back}");
}

/// An upstream that never answers: -31002 after the upstream timeout,
/// saying how long the proxy waited.
#[tokio::test]
async fn an_upstream_that_hangs_times_out() {
    let script = one_tool(|| Answer::Silence);
    let options = ProxyOptions {
        upstream_timeout: Duration::from_millis(200),
        ..quick()
    };
    let proxy = proxy_of(vec![("slow", connect(script))], options).await;
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        send(&proxy, &call("t", json!({}), json!({}))),
    )
    .await
    .expect("the proxy answers");
    let message = named_without_address(&r, UPSTREAM_UNAVAILABLE, "slow");
    assert_eq!(
        message,
        "the upstream server \"slow\" is unavailable: it did not answer within 200 ms"
    );
}

/// An upstream whose answer is not a valid result: -31000 naming it, and
/// the proxy keeps serving.
#[tokio::test]
async fn an_upstream_answering_garbage_is_a_clear_error() {
    let script =
        one_tool(|| Answer::Result(json!({"resultType": "complete", "content": "not blocks"})));
    let proxy = proxy_of(vec![("odd", connect(script))], quick()).await;
    let r = send(&proxy, &call("t", json!({}), json!({}))).await;
    let message = named_without_address(&r, UPSTREAM_ERROR, "odd");
    assert_eq!(
        message,
        "the upstream server \"odd\" answered with something that is not a valid response"
    );
}

/// A hostile upstream round of 1,000 questions (MRTR-C-A2 allows 16) is
/// refused by the proxy's client: -31000 naming the upstream, nothing
/// relayed, nothing held.
#[tokio::test]
async fn an_upstream_asking_a_thousand_questions_at_once_is_refused() {
    let script = one_tool(|| {
        let mut requests = serde_json::Map::new();
        for i in 0..1000 {
            requests.insert(
                format!("q{i}"),
                json!({"method": "elicitation/create", "params": {"mode": "form",
                    "message": format!("Question {i}?"),
                    "requestedSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            );
        }
        Answer::Result(
            json!({"resultType": "input_required", "inputRequests": requests,
                              "requestState": "s"}),
        )
    });
    let proxy = proxy_of(vec![("many", connect(script))], quick()).await;
    let r = send(&proxy, &call("t", json!({}), all_caps())).await;
    named_without_address(&r, UPSTREAM_ERROR, "many");
    assert_eq!(proxy.pending_calls(), 0);
}

/// An upstream answering `tools/call` with the error object its arguments
/// name.
fn erring() -> Scripted {
    Scripted::new(|req, _| match req["method"].as_str().unwrap_or_default() {
        "server/discover" => Answer::Result(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0
        })),
        "tools/list" => Answer::Result(json!({
            "resultType": "complete",
            "tools": [{"name": "fail", "inputSchema": {"type": "object"}}], "ttlMs": 0
        })),
        "tools/call" => Answer::Error(req["params"]["arguments"]["error"].clone()),
        _ => Answer::Error(json!({"code": -32601, "message": "Method not found"})),
    })
}

/// The upstream's own application codes reach the client unchanged (a
/// reference workload's "declined" -31001 among them), except the codes
/// the proxy emits itself and the reserved ones the proxy cannot pass on:
/// those become -31000 naming the upstream, with its code in
/// `data.upstreamCode`. Its -32602 stays a -32602.
#[tokio::test]
async fn an_upstreams_own_codes_pass_through_unless_they_could_be_the_proxys() {
    let proxy = proxy_of(vec![("up", connect(erring()))], quick()).await;
    let fail = |error: Value| call("fail", json!({"error": error}), json!({}));
    for passed in [
        json!({"code": -31001, "message": "The person declined", "data": {"why": "no"}}),
        json!({"code": 4000, "message": "Out of stock"}),
        json!({"code": -32602, "message": "Unknown item", "data": {"item": "x"}}),
    ] {
        let r = send(&proxy, &fail(passed.clone())).await;
        assert_eq!(r["error"], passed, "{r}");
    }
    for (own, message) in [
        (-31000, "its own upstream failed"),
        (-31002, "its own upstream is down"),
        (-31003, "its own budget is reached"),
        (-32603, "internal error"),
    ] {
        let r = send(&proxy, &fail(json!({"code": own, "message": message}))).await;
        assert_eq!(code(&r), UPSTREAM_ERROR, "{r}");
        assert_eq!(
            r["error"]["message"],
            format!("the upstream server \"up\" answered {own}: {message}")
        );
        assert_eq!(
            r["error"]["data"],
            json!({"upstream": "up", "upstreamCode": own})
        );
    }
}
