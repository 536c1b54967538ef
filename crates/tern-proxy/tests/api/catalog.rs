//! What an upstream lists, against the proxy's budgets for its catalog:
//! at most `MAX_LISTED` entries and `MAX_LISTED_BYTES` of them per list,
//! the rest left out, and a later sync withdrawing what went away.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tern_proxy::{MAX_LISTED, MAX_LISTED_BYTES, Proxy};
use tern_testkit::logs::Captured;
use tern_testkit::transport::{Answer, Scripted};

use super::common::{connect, proxy_of, quick, send};

/// A 2026-07-28 upstream listing `count()` tools, `per_page` a page, each
/// with a description of `description` bytes.
fn listing(count: Arc<AtomicUsize>, per_page: usize, description: usize) -> Scripted {
    Scripted::new(
        move |req, _| match req["method"].as_str().unwrap_or_default() {
            "server/discover" => Answer::Result(json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}}, "ttlMs": 0
            })),
            "tools/list" => {
                let count = count.load(Ordering::SeqCst);
                let from: usize = req["params"]["cursor"]
                    .as_str()
                    .map_or(0, |c| c.parse().unwrap());
                let to = (from + per_page).min(count);
                let tools: Vec<Value> = (from..to)
                    .map(|n| {
                        json!({"name": format!("t{n:04}"), "description": "d".repeat(description),
                            "inputSchema": {"type": "object"}})
                    })
                    .collect();
                let mut page = json!({"resultType": "complete", "tools": tools, "ttlMs": 0});
                if to < count {
                    page["nextCursor"] = json!(to.to_string());
                }
                Answer::Result(page)
            }
            _ => Answer::Error(json!({"code": -32601, "message": "Method not found"})),
        },
    )
}

/// Every tool the proxy offers, page by page.
async fn offered(proxy: &Proxy) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let mut params = json!({"_meta": tern_testkit::request::meta(json!({}))});
        if let Some(c) = &cursor {
            params["cursor"] = c.clone();
        }
        let r = send(
            proxy,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}),
        )
        .await;
        let tools = r["result"]["tools"].as_array().expect("a page of tools");
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match r["result"].get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => return names,
        }
    }
}

fn lists_asked(up: &Scripted) -> usize {
    up.seen()
        .iter()
        .filter(|s| s.body["method"] == "tools/list")
        .count()
}

#[tokio::test]
async fn an_upstream_listing_more_entries_than_the_proxy_takes_is_cut_at_the_budget() {
    assert_eq!(MAX_LISTED, 1_000);
    let (logs, _guard) = Captured::start();
    let count = Arc::new(AtomicUsize::new(2_100));
    let up = listing(count.clone(), 700, 8);
    let proxy = proxy_of(vec![("up", connect(up.clone()))], quick()).await;
    // The operator reads which upstream went past which budget.
    let line = logs.line("lists more than the proxy takes");
    assert!(
        line.contains("WARN")
            && line.contains("upstream=up")
            && line.contains("list=\"tools\"")
            && line.contains("kept=1000"),
        "{line}"
    );
    let names = offered(&proxy).await;
    assert_eq!(names.len(), MAX_LISTED);
    let want: Vec<String> = (0..MAX_LISTED).map(|n| format!("t{n:04}")).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, want);
    // The page that filled the budget was the last one asked for.
    assert_eq!(lists_asked(&up), 2);
    // A later sync of a shorter list withdraws the rest in the same change.
    count.store(3, Ordering::SeqCst);
    assert!(proxy.sync().await.is_empty());
    let mut names = offered(&proxy).await;
    names.sort();
    assert_eq!(names, ["t0000", "t0001", "t0002"]);
}

#[tokio::test]
async fn an_upstream_listing_more_bytes_than_the_proxy_takes_is_cut_at_the_budget() {
    assert_eq!(MAX_LISTED_BYTES, 8 * 1024 * 1024);
    // Tools of a little over 1 MiB each, three a page: seven fit.
    let up = listing(Arc::new(AtomicUsize::new(9)), 3, 1024 * 1024);
    let proxy = proxy_of(vec![("up", connect(up.clone()))], quick()).await;
    let mut names = offered(&proxy).await;
    names.sort();
    assert_eq!(
        names,
        [
            "t0000", "t0001", "t0002", "t0003", "t0004", "t0005", "t0006"
        ]
    );
    assert_eq!(lists_asked(&up), 3);
}

#[tokio::test]
async fn an_upstream_list_that_is_malformed_is_left_out_and_said_which() {
    let (logs, _guard) = Captured::start();
    let up = Scripted::new(|req, _| match req["method"].as_str().unwrap_or_default() {
        "server/discover" => Answer::Result(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0
        })),
        // `tools` must be an array of tools.
        "tools/list" => Answer::Result(json!({"resultType": "complete", "tools": "t0000"})),
        _ => Answer::Error(json!({"code": -32601, "message": "Method not found"})),
    });
    let proxy = proxy_of(vec![("up", connect(up.clone()))], quick()).await;
    let r = send(
        &proxy,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": tern_testkit::request::meta(json!({}))}}),
    )
    .await;
    // Nothing listed, so no tools to offer at all.
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(lists_asked(&up), 1);
    let line = logs.line("an upstream list is malformed");
    assert!(
        line.contains("WARN") && line.contains("upstream=up") && line.contains("list=\"tools\""),
        "{line}"
    );
}
