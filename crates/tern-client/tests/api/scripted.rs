//! The driver against a scripted server: exact echo of state, new ids,
//! same params, isolation of concurrent calls, and the refusals of
//! MRTR-C-A1/A2, BASE-C12/C13, VER-C3.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tern_client::{Client, EraPolicy, InputKinds, Step};
use tern_types::ElicitValue;
use tokio::sync::Notify;

use super::support::{Answer, Canned, Scripted, obj, text};

/// A state with escapes, non-ASCII and characters JSON may write either
/// way: it must come back as the same decoded string (MRTR-C5).
const STATE: &str = "s\"1\\/é🙂\u{0001}==";

fn ask(key: &str, state: Option<&str>) -> Answer {
    let mut r = json!({"resultType": "input_required", "inputRequests": {
        key: {"method": "elicitation/create", "params": {"message": "Confirm?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}});
    if let Some(s) = state {
        r["requestState"] = json!(s);
    }
    Answer::Result(r)
}

fn done(text: &str) -> Answer {
    Answer::Result(json!({"resultType": "complete", "content": [{"type": "text", "text": text}]}))
}

fn ok_provider() -> Canned {
    Canned::accepting(&[("ok", ElicitValue::Bool(true))])
}

#[tokio::test]
async fn each_retry_echoes_the_exact_state_with_a_new_id_and_the_same_params() {
    let t = Scripted::new(|_, i| match i {
        0 => ask("first", Some(STATE)),
        1 => ask("second", None),
        _ => done("ok"),
    });
    let client = Client::builder(t.clone()).provider(ok_provider()).build();
    let args = obj(json!({"city": "Paris", "nested": {"n": [1, 2]}}));
    let r = client.call_tool("weather", args.clone()).await.unwrap();
    assert_eq!(text(&r), "ok");
    let seen = t.seen();
    assert_eq!(seen.len(), 3);
    let ids: Vec<&Value> = seen.iter().map(|s| &s.body["id"]).collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    for s in &seen {
        assert_eq!(s.body["method"], "tools/call");
        assert_eq!(s.params()["name"], "weather");
        assert_eq!(s.params()["arguments"], Value::Object(args.clone()));
    }
    assert!(seen[0].params().get("requestState").is_none());
    assert!(seen[0].params().get("inputResponses").is_none());
    assert_eq!(seen[1].params()["requestState"].as_str(), Some(STATE));
    assert_eq!(
        seen[1].params()["inputResponses"],
        json!({"first": {"action": "accept", "content": {"ok": true}}})
    );
    // The second interim result had no state: the retry has no key at all.
    assert!(seen[2].params().get("requestState").is_none());
    // Answers only for the latest round (MRTR-C7).
    assert_eq!(
        seen[2].params()["inputResponses"],
        json!({"second": {"action": "accept", "content": {"ok": true}}})
    );
}

/// Holds the first answer until told to go on.
struct Gate {
    reached: Arc<Notify>,
    go: Arc<Notify>,
    inner: Canned,
}

impl tern_client::InputProvider for Gate {
    fn kinds(&self) -> InputKinds {
        self.inner.kinds()
    }
    fn elicit_form(
        &self,
        cx: tern_client::InputContext,
        p: tern_types::ElicitRequestFormParams,
    ) -> tern_client::BoxFuture<'_, Result<tern_types::ElicitResult, tern_client::Refusal>> {
        Box::pin(async move {
            self.reached.notify_one();
            self.go.notified().await;
            self.inner.elicit_form(cx, p).await
        })
    }
}

#[tokio::test]
async fn a_concurrent_unrelated_call_carries_no_state_or_answers() {
    // MRTR-C9.
    let t = Scripted::new(|body, _| {
        let name = body["params"]["name"].as_str().unwrap_or_default();
        let retry = body["params"].get("requestState").is_some();
        match (name, retry) {
            ("flow", false) => ask("confirm", Some(STATE)),
            _ => done(name),
        }
    });
    let reached = Arc::new(Notify::new());
    let go = Arc::new(Notify::new());
    let client = Client::builder(t.clone())
        .provider(Gate {
            reached: reached.clone(),
            go: go.clone(),
            inner: ok_provider(),
        })
        .build();
    let c = client.clone();
    let flow = tokio::spawn(async move { c.call_tool("flow", obj(json!({}))).await });
    reached.notified().await;
    let other = client.call_tool("unrelated", obj(json!({}))).await.unwrap();
    assert_eq!(text(&other), "unrelated");
    go.notify_one();
    assert_eq!(text(&flow.await.unwrap().unwrap()), "flow");
    let seen = t.seen();
    let unrelated: Vec<_> = seen
        .iter()
        .filter(|s| s.params()["name"] == "unrelated")
        .collect();
    assert_eq!(unrelated.len(), 1);
    assert!(unrelated[0].params().get("requestState").is_none());
    assert!(unrelated[0].params().get("inputResponses").is_none());
    let retry = seen.last().unwrap();
    assert_eq!(retry.params()["name"], "flow");
    assert_eq!(retry.params()["requestState"].as_str(), Some(STATE));
}

#[tokio::test]
async fn an_input_request_for_an_undeclared_kind_fails_the_call() {
    // MRTR-C-A2: an error to the caller, never a made-up decline.
    let t = Scripted::new(|_, _| {
        Answer::Result(json!({"resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 5}}}}))
    });
    let client = Client::builder(t.clone())
        .provider(Canned {
            kinds: Some(InputKinds::NONE.with_form()),
            ..ok_provider()
        })
        .build();
    let e = client.call_tool("x", obj(json!({}))).await.unwrap_err();
    assert!(
        e.is_capability() && e.is_protocol() && !e.is_remote(),
        "{e}"
    );
    assert_eq!(t.seen().len(), 1);
}

#[tokio::test]
async fn malformed_interim_results_are_refused() {
    let cases = [
        json!({"resultType": "input_required"}),
        json!({"resultType": "input_required", "inputRequests": {}}),
        json!({"resultType": "input_required", "requestState": 42}),
        json!({"resultType": "input_required", "requestState": "x".repeat(64 * 1024 + 1)}),
        json!({"resultType": "input_required", "inputRequests": {"k": {"method": "ping"}}}),
        json!({"resultType": "input_required", "inputRequests": {"k": {"method": "elicitation/create"}}}),
        json!({"resultType": "input_required", "inputRequests": (0..17)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect::<serde_json::Map<_, _>>()}),
        json!({"resultType": "something_else", "content": []}),
    ];
    for case in cases {
        let answer = case.clone();
        let t = Scripted::new(move |_, _| Answer::Result(answer.clone()));
        let client = Client::builder(t.clone()).provider(ok_provider()).build();
        let e = client.call_tool("x", obj(json!({}))).await.unwrap_err();
        assert!(e.is_protocol(), "{case}: {e}");
        assert_eq!(t.seen().len(), 1, "{case}");
    }
}

#[tokio::test]
async fn input_required_on_another_method_is_a_protocol_error() {
    // MRTR-C-A1.
    let t = Scripted::new(|_, _| {
        Answer::Result(json!({"resultType": "input_required", "requestState": "s"}))
    });
    let client = Client::new(t);
    let e = client.list_tools(None).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
}

#[tokio::test]
async fn a_result_without_result_type_is_complete() {
    // BASE-C13: no retry.
    let t = Scripted::new(|_, _| {
        Answer::Result(json!({"content": [{"type": "text", "text": "legacy"}]}))
    });
    let client = Client::new(t.clone());
    let step = client.call_tool_once("x", obj(json!({}))).await.unwrap();
    let Step::Complete(r) = step else {
        panic!("complete expected")
    };
    assert_eq!(text(&r), "legacy");
    assert_eq!(t.seen().len(), 1);
}

#[tokio::test]
async fn unsupported_version_is_retried_once() {
    // VER-C3 and the request-metadata mock: same version, one retry.
    let t = Scripted::new(|_, i| match i {
        0 => Answer::Error(
            json!({"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}),
        ),
        _ => Answer::Result(
            json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}),
        ),
    });
    let client = Client::new(t.clone());
    assert!(client.list_tools(None).await.unwrap().tools.is_empty());
    let seen = t.seen();
    assert_eq!(seen.len(), 2);
    assert_ne!(seen[0].body["id"], seen[1].body["id"]);
    assert_eq!(
        seen[1].params()["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        seen[1].headers.protocol_version.as_deref(),
        Some("2026-07-28")
    );

    // Bounded: a second -32022 is the caller's error.
    let t = Scripted::new(|_, _| {
        Answer::Error(
            json!({"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}),
        )
    });
    let client = Client::new(t.clone());
    let e = client.discover().await.unwrap_err();
    assert!(e.is_remote());
    assert_eq!(e.remote_error().unwrap().code.0, -32022);
    assert_eq!(t.seen().len(), 2);

    // No common version: no retry.
    let t = Scripted::new(|_, _| {
        Answer::Error(
            json!({"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}),
        )
    });
    let client = Client::new(t.clone());
    assert!(client.discover().await.unwrap_err().is_remote());
    assert_eq!(t.seen().len(), 1);
}

#[tokio::test]
async fn a_remote_error_keeps_the_peers_error_object() {
    // ERR-A1.
    let t = Scripted::new(|_, _| {
        Answer::Error(json!({"code": -32602, "message": "Unknown tool", "data": {"tool": "x"}}))
    });
    let e = Client::new(t)
        .call_tool("x", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_remote() && !e.is_protocol() && !e.is_transport());
    let o = e.remote_error().unwrap();
    assert_eq!(o.code.0, -32602);
    assert_eq!(o.message, "Unknown tool");
    assert_eq!(o.data, Some(json!({"tool": "x"})));
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out() {
    let t = Scripted::new(|_, _| Answer::Silence);
    let client = Client::builder(t)
        .request_timeout(Duration::from_secs(1))
        .build();
    let e = client.discover().await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
}

#[tokio::test]
async fn headers_mirror_the_body_and_annotated_arguments() {
    // HTTP-C8, HTTP-C10, HTTP-XMH-C3/C4.
    let mut t = Scripted::new(|body, _| match body["method"].as_str() {
        Some("tools/list") => Answer::Result(json!({"resultType": "complete", "ttlMs": 0,
            "cacheScope": "private", "tools": [
            {"name": "good", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "f": {"type": "number", "x-mcp-header": "F"}}}}]})),
        Some("resources/read") => Answer::Result(json!({"resultType": "complete",
            "contents": [], "ttlMs": 0, "cacheScope": "private"})),
        _ => done("ok"),
    });
    t.mirrors = true;
    let client = Client::new(t.clone());
    let tools = client.list_tools(None).await.unwrap().tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    client
        .call_tool("good", obj(json!({"region": " padded ", "n": null})))
        .await
        .unwrap();
    client.read_resource("file:///a b/é.txt").await.unwrap();
    let seen = t.seen();
    let call = &seen[1].headers;
    assert_eq!(call.method.as_deref(), Some("tools/call"));
    assert_eq!(call.name.as_deref(), Some("good"));
    assert_eq!(call.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(
        call.params,
        [("Region".to_owned(), "=?base64?IHBhZGRlZCA=?=".to_owned())]
    );
    let read = &seen[2].headers;
    assert_eq!(read.method.as_deref(), Some("resources/read"));
    assert_eq!(
        read.name.as_deref(),
        Some("=?base64?ZmlsZTovLy9hIGIvw6kudHh0?=")
    );
    assert_eq!(seen[0].headers.name, None);
}

/// A 2025-11-25 server whose first `tools/call` needs a sign-in at a URL
/// (-32042) and whose next one succeeds.
fn url_required() -> Scripted {
    Scripted::new(|body, _| match body["method"].as_str() {
        Some("initialize") => Answer::Result(json!({"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}})),
        Some("tools/call") if body["id"] == json!(2) => Answer::Error(json!({
            "code": -32042, "message": "This request requires more information.",
            "data": {"elicitations": [{"mode": "url", "elicitationId": "e-1",
                "url": "https://auth.example.com/start", "message": "Sign in"}]}})),
        _ => Answer::Result(json!({"content": [{"type": "text", "text": "signed in"}]})),
    })
}

fn url_provider(decline: bool) -> Canned {
    Canned {
        kinds: Some(InputKinds::NONE.with_form().with_url()),
        decline,
        ..Canned::default()
    }
}

#[tokio::test]
async fn a_legacy_32042_shows_the_urls_then_sends_the_call_again() {
    let t = url_required();
    let provider = url_provider(false);
    let client = Client::builder(t.clone())
        .era(EraPolicy::Legacy)
        .provider(provider.clone())
        .build();
    let r = client.call_tool("sync", obj(json!({}))).await.unwrap();
    assert_eq!(text(&r), "signed in");
    let seen = t.seen();
    let methods: Vec<&Value> = seen.iter().map(|s| &s.body["method"]).collect();
    assert_eq!(methods, ["initialize", "tools/call", "tools/call"]);
    assert_ne!(seen[1].body["id"], seen[2].body["id"]);
    let asked = provider.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].key, "elicitation/create");
}

#[tokio::test]
async fn a_declined_32042_url_ends_the_call_with_that_error() {
    let t = url_required();
    let client = Client::builder(t.clone())
        .era(EraPolicy::Legacy)
        .provider(url_provider(true))
        .build();
    let e = client.call_tool("sync", obj(json!({}))).await.unwrap_err();
    assert_eq!(e.remote_error().map(|o| o.code.0), Some(-32042), "{e}");
    assert_eq!(t.seen().len(), 2, "not sent again");
    // A client that cannot open URLs is never shown one.
    let client = Client::builder(url_required())
        .era(EraPolicy::Legacy)
        .provider(Canned::default())
        .build();
    let e = client.call_tool("sync", obj(json!({}))).await.unwrap_err();
    assert!(e.to_string().contains("URL elicitation"), "{e}");
    assert!(e.is_capability(), "{e}");
}
