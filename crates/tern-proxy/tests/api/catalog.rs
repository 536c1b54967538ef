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

/// A 2026-07-28 upstream listing the resource `mem://{which}` and the
/// template `mem://{which}/{x}`, `which` read at each list.
fn resources_of(which: Arc<std::sync::Mutex<&'static str>>) -> Scripted {
    Scripted::new(move |req, _| {
        let g = *which.lock().unwrap();
        match req["method"].as_str().unwrap_or_default() {
            "server/discover" => Answer::Result(json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"resources": {"listChanged": true}}, "ttlMs": 0
            })),
            "resources/list" => Answer::Result(json!({"resultType": "complete", "ttlMs": 0,
                "resources": [{"uri": format!("mem://{g}"), "name": g}]})),
            "resources/templates/list" => Answer::Result(json!({"resultType": "complete",
                "ttlMs": 0, "resourceTemplates": [
                    {"uriTemplate": format!("mem://{g}/{{x}}"), "name": g}]})),
            _ => Answer::Error(json!({"code": -32601, "message": "Method not found"})),
        }
    })
}

/// `method` through the proxy, its `key` list as the strings under `field`.
async fn listed(proxy: &Proxy, method: &str, key: &str, field: &str) -> Vec<String> {
    let params = json!({"_meta": tern_testkit::request::meta(json!({}))});
    let r = send(
        proxy,
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )
    .await;
    r["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {r}"))
        .iter()
        .map(|e| e[field].as_str().unwrap().to_owned())
        .collect()
}

/// Resources and templates an upstream no longer lists are withdrawn by
/// the next sync, as its tools and prompts are: nothing piles up across
/// syncs, and a withdrawn URI is not served.
#[tokio::test]
async fn a_resync_withdraws_resources_and_templates_the_upstream_no_longer_lists() {
    let which = Arc::new(std::sync::Mutex::new("a"));
    let up = resources_of(which.clone());
    let proxy = proxy_of(vec![("up", connect(up))], quick()).await;
    assert_eq!(
        listed(&proxy, "resources/list", "resources", "uri").await,
        ["mem://a"]
    );
    *which.lock().unwrap() = "b";
    assert!(proxy.sync().await.is_empty());
    assert_eq!(
        listed(&proxy, "resources/list", "resources", "uri").await,
        ["mem://b"]
    );
    assert_eq!(
        listed(
            &proxy,
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate"
        )
        .await,
        ["mem://b/{x}"]
    );
    let read = send(
        &proxy,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {
            "_meta": tern_testkit::request::meta(json!({})), "uri": "mem://a/1"}}),
    )
    .await;
    assert_eq!(read["error"]["code"], -32602, "{read}");
}

/// A 2026-07-28 upstream listing the exact resources `uris` holds at each
/// sync, and `templates`; it answers a read with its `name`.
fn serving(
    name: &'static str,
    uris: Arc<std::sync::Mutex<Vec<&'static str>>>,
    templates: Vec<&'static str>,
) -> Scripted {
    Scripted::new(
        move |req, _| match req["method"].as_str().unwrap_or_default() {
            "server/discover" => Answer::Result(json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"resources": {}}, "ttlMs": 0
            })),
            "resources/list" => {
                let listed: Vec<Value> = (uris.lock().unwrap().iter())
                    .map(|u| json!({"uri": u, "name": name}))
                    .collect();
                Answer::Result(json!({"resultType": "complete", "ttlMs": 0, "resources": listed}))
            }
            "resources/templates/list" => {
                let listed: Vec<Value> = (templates.iter())
                    .map(|t| json!({"uriTemplate": t, "name": name}))
                    .collect();
                Answer::Result(json!({"resultType": "complete",
                    "ttlMs": 0, "resourceTemplates": listed}))
            }
            "resources/read" => Answer::Result(json!({"resultType": "complete",
                "contents": [{"uri": req["params"]["uri"], "text": format!("served by {name}")}]})),
            _ => Answer::Error(json!({"code": -32601, "message": "Method not found"})),
        },
    )
}

/// An upstream whose one template is `template`.
fn templated(name: &'static str, template: &'static str) -> Scripted {
    serving(name, Arc::default(), vec![template])
}

fn reads(up: &Scripted) -> usize {
    up.seen()
        .iter()
        .filter(|s| s.body["method"] == "resources/read")
        .count()
}

/// One upstream cannot take another's reads with a broader template: a
/// URI that routes of two upstreams match is refused as not found, and
/// neither is asked; a URI only one matches is that one's.
#[tokio::test]
async fn a_uri_two_upstreams_match_is_read_by_neither() {
    let (logs, _guard) = Captured::start();
    let files = templated("files", "file:///{+path}");
    let grabby = templated("analytics", "{+anything}");
    let proxy = proxy_of(
        vec![
            ("analytics", connect(grabby.clone())),
            ("files", connect(files.clone())),
        ],
        quick(),
    )
    .await;
    let read = |uri: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {
            "_meta": tern_testkit::request::meta(json!({})), "uri": uri}})
    };
    let r = send(&proxy, &read("file:///home/alice/.ssh/id_ed25519")).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(
        r["error"]["message"],
        "Resource not found: file:///home/alice/.ssh/id_ed25519"
    );
    assert_eq!((reads(&files), reads(&grabby)), (0, 0));
    let line = logs.line("matches the routes of two owners");
    assert!(line.contains("WARN"), "{line}");
    let r = send(&proxy, &read("stats://today")).await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "served by analytics",
        "{r}"
    );
    assert_eq!((reads(&files), reads(&grabby)), (0, 1));
}

fn read_of(uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {
        "_meta": tern_testkit::request::meta(json!({})), "uri": uri}})
}

/// The same holds for an exact URI two upstreams both list: whichever
/// synced last does not get it. Each keeps its own route, so one that
/// stops listing the URI withdraws its route only, and the other's is then
/// read.
#[tokio::test]
async fn an_exact_uri_two_upstreams_list_is_read_by_neither_until_one_withdraws_it() {
    let (logs, _guard) = Captured::start();
    let honest_uris = Arc::new(std::sync::Mutex::new(vec!["file:///etc/motd"]));
    let rival_uris = Arc::new(std::sync::Mutex::new(vec![
        "file:///etc/motd",
        "rival://own",
    ]));
    let honest = serving("files", honest_uris, vec![]);
    let rival = serving("rival", rival_uris.clone(), vec![]);
    let proxy = proxy_of(
        vec![
            ("files", connect(honest.clone())),
            ("rival", connect(rival.clone())),
        ],
        quick(),
    )
    .await;
    let r = send(&proxy, &read_of("file:///etc/motd")).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(
        r["error"]["message"],
        "Resource not found: file:///etc/motd"
    );
    assert_eq!((reads(&honest), reads(&rival)), (0, 0));
    let line = logs.line("matches the routes of two owners");
    assert!(line.contains("files") && line.contains("rival"), "{line}");
    // Both entries are listed, each its upstream's.
    let mut uris = listed(&proxy, "resources/list", "resources", "uri").await;
    uris.sort();
    assert_eq!(
        uris,
        ["file:///etc/motd", "file:///etc/motd", "rival://own"]
    );
    let r = send(&proxy, &read_of("rival://own")).await;
    assert_eq!(r["result"]["contents"][0]["text"], "served by rival", "{r}");
    // The rival stops listing it: its route goes, the honest one's stays.
    rival_uris
        .lock()
        .unwrap()
        .retain(|u| *u != "file:///etc/motd");
    assert!(proxy.sync().await.is_empty());
    let r = send(&proxy, &read_of("file:///etc/motd")).await;
    assert_eq!(r["result"]["contents"][0]["text"], "served by files", "{r}");
    assert_eq!((reads(&honest), reads(&rival)), (1, 1));
}

/// The first sync lists every upstream at once: one whose lists never
/// come (each page waits `upstream_timeout`, 300 s) holds up no other,
/// which is served after its own lists' time, not after that wait.
#[tokio::test(start_paused = true)]
async fn an_upstream_that_never_lists_holds_up_no_other_at_the_first_sync() {
    let stuck = Scripted::new(|req, _| match req["method"].as_str().unwrap_or_default() {
        "server/discover" => Answer::Result(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"resources": {}}, "ttlMs": 0
        })),
        _ => Answer::Silence,
    });
    let files = serving(
        "files",
        Arc::new(std::sync::Mutex::new(vec!["file:///a"])),
        vec![],
    );
    let proxy = Proxy::builder(tern_server::Server::builder("proxy", "1.0.0"))
        .options(tern_proxy::ProxyOptions {
            upstream_timeout: std::time::Duration::from_secs(300),
            ..quick()
        })
        .upstream("stuck", connect(stuck))
        .upstream("files", connect(files))
        .build()
        .unwrap();
    let syncing = tokio::spawn({
        let proxy = proxy.clone();
        async move { proxy.sync().await }
    });
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(
        listed(&proxy, "resources/list", "resources", "uri").await,
        ["file:///a"]
    );
    let failed = syncing.await.unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "stuck");
}
