//! What the server refuses at the door, with which status and code: GET
//! and DELETE without a session, a foreign Origin, an oversized body,
//! headers out of the validation order, an `initialize` of neither era, and
//! bodies that are not JSON-RPC (HTTP-A1, HTTP-A5, COMPAT-S3).

use reqwest::StatusCode;
use serde_json::json;

use super::{body, exchange, json_of, post, start};

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
