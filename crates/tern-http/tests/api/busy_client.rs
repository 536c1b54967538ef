//! tern-client against a busy tern-http server (issue 52): the 429's
//! JSON-RPC body decides, so the client reads it as busy, sends the request
//! again after the server's `Retry-After` time, and gives up after the
//! bound with the refusal.

use std::time::Duration;

use serde_json::json;
use tern_client::{Client, MAX_BUSY_RETRIES};
use tern_http::{HttpOptions, HttpTransport};

use super::busy::{meta, post, running, start};

#[tokio::test]
async fn the_client_reads_a_429_as_busy_and_gives_up_after_the_bound() {
    let addr = start(running(8, 1), HttpOptions::default()).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"_meta": meta(), "name": "forever", "arguments": {}}});
    tokio::spawn(post(addr, None, "tools/call", call.to_string()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let client = Client::new(HttpTransport::new(&format!("http://{addr}/mcp")).unwrap());
    let started = tern_testkit::runtime_now();
    let e = client.list_tools(None).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(
        e.remote_error().unwrap().busy_data().unwrap().limit,
        "requests"
    );
    // Each of the retries waited at least the server's second.
    assert!(started.elapsed() >= Duration::from_secs(u64::from(MAX_BUSY_RETRIES)));
}
