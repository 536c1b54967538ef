//! The proxy's rounds in both eras: a modern upstream's rounds under the
//! proxy's sealed state, a 2025-11-25 upstream's requests as rounds, a
//! 2025-11-25 client asked for a modern upstream's round, the gateway.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tern_proxy::ProxyOptions;
use tern_server::Sink;
use tern_testkit::request::{accept, all_caps, call, retry};
use tern_testkit::transport::Direct;
use tokio::sync::mpsc;

use super::common::{
    Sessioned, code, connect, inbound, legacy_session, parse, proxy_clocked, proxy_of, quick,
    roots_answer, send, upstream_server,
};

/// MRTR through the proxy (a 2026-07-28 client and upstream): the
/// upstream's keys and questions reach the client unchanged, the state is
/// the proxy's, and the answers reach the upstream with the upstream's own
/// state.
#[tokio::test]
async fn a_modern_round_passes_through_under_the_proxys_state() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct.clone()))], quick()).await;
    let first = call("deploy", json!({"environment": "staging"}), all_caps());
    let r = send(&proxy, &first).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"]["approve"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        result["inputRequests"]["approve"]["params"]["message"],
        "Approve deployment to staging?"
    );
    assert_eq!(result["inputRequests"]["roots"]["method"], "roots/list");
    let state = result["requestState"].clone();
    assert_eq!(proxy.pending_calls(), 0, "a small round is sealed whole");

    let answers = json!({"approve": accept(json!({"approved": true})), "roots": roots_answer()});
    let done = send(&proxy, &retry(&first, Some(&state), answers)).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "deployed to staging with 1 root(s)"
    );
    // Upstream: the first call, then the retry with its own state (not the
    // proxy's) and the answers under its keys.
    let seen = direct.seen();
    let retried = seen.last().unwrap().params().clone();
    assert_eq!(retried["name"], "deploy");
    let upstream_state = retried["requestState"].as_str().unwrap();
    assert_ne!(upstream_state, state.as_str().unwrap());
    assert_eq!(retried["inputResponses"]["approve"]["action"], "accept");
    assert_eq!(retried["inputResponses"]["roots"], roots_answer());
}

/// SECURITY.md §3: the proxy's state is hostile input. Tampered,
/// truncated and re-encoded states are -32602 and never reach upstream.
#[tokio::test]
async fn a_tampered_truncated_or_reencoded_state_is_refused_at_the_edge() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct.clone()))], quick()).await;
    let first = call("deploy", json!({"environment": "staging"}), all_caps());
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"approve": accept(json!({"approved": true})), "roots": roots_answer()});
    let sent_before = direct.seen().len();

    let mut tampered = state.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let truncated = state[..state.len() - 8].to_owned();
    // The same bytes in standard base64 with padding.
    let mut reencoded = state.replace('-', "+").replace('_', "/");
    while reencoded.len() % 4 != 0 {
        reencoded.push('=');
    }
    for bad in [tampered, truncated, reencoded] {
        let reply = send(&proxy, &retry(&first, Some(&json!(bad)), answers.clone())).await;
        assert_eq!(code(&reply), -32602, "{bad}: {reply}");
    }
    assert_eq!(direct.seen().len(), sent_before, "nothing reached upstream");
}

/// A state issued for one upstream's tool, retried on another upstream's
/// tool of the same name, is refused: the route is bound (params digest)
/// and so is the upstream inside the state.
#[tokio::test]
async fn a_state_cannot_be_redirected_to_another_upstream() {
    let (a, _ca) = Direct::new(upstream_server());
    let (b, _cb) = Direct::new(upstream_server());
    let proxy = proxy_of(
        vec![("a", connect(a.clone())), ("b", connect(b.clone()))],
        quick(),
    )
    .await;
    let first = call("a__deploy", json!({"environment": "staging"}), all_caps());
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].clone();
    let answers = json!({"approve": accept(json!({"approved": true})), "roots": roots_answer()});
    let mut redirected = retry(&first, Some(&state), answers);
    redirected["params"]["name"] = json!("b__deploy");
    let reply = send(&proxy, &redirected).await;
    assert_eq!(code(&reply), -32602, "{reply}");
    assert!(
        b.seen().iter().all(|s| s.body["method"] != "tools/call"),
        "b was never called"
    );
}

/// Gateway names: SERVER__NAME for every upstream's tools.
#[tokio::test]
async fn a_gateway_prefixes_every_upstreams_tools() {
    let (a, _ca) = Direct::new(upstream_server());
    let (b, _cb) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("a", connect(a)), ("b", connect(b))], quick()).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                      "params": {"_meta": tern_testkit::request::meta(json!({}))}});
    let r = send(&proxy, &list).await;
    let mut names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["a__deploy", "a__echo", "b__deploy", "b__echo"]);
    let r = send(&proxy, &call("b__echo", json!({"text": "hi"}), json!({}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
}

/// MRTR-S9 through the proxy: the client's capabilities are forwarded, so
/// the upstream's gate answers -32021 naming what is missing.
#[tokio::test]
async fn the_clients_capabilities_are_forwarded_per_request() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct.clone()))], quick()).await;
    let r = send(
        &proxy,
        &call(
            "deploy",
            json!({"environment": "x"}),
            json!({"elicitation": {"form": {}}}),
        ),
    )
    .await;
    assert_eq!(code(&r), -32021, "{r}");
    assert!(
        r["error"]["data"]["requiredCapabilities"]
            .get("roots")
            .is_some(),
        "{r}"
    );
    let seen = direct.seen();
    let sent = seen
        .iter()
        .find(|s| s.body["method"] == "tools/call")
        .expect("the call went upstream");
    assert_eq!(
        sent.params()["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

/// A modern client, a 2025-11-25 upstream: each request the upstream sends
/// during the call is one input round under the proxy's state, keyed by
/// its method; the answers go upstream as the responses.
#[tokio::test]
async fn a_legacy_upstreams_requests_become_rounds() {
    let up = Sessioned::new();
    let proxy = proxy_of(vec![("old", connect(up.clone()))], quick()).await;
    let first = call("deploy", json!({"environment": "prod"}), all_caps());
    let r = send(&proxy, &first).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["elicitation/create"]);
    assert_eq!(proxy.pending_calls(), 1);
    let answer = json!({"elicitation/create": accept(json!({"approved": true}))});
    let r = send(
        &proxy,
        &retry(&first, Some(&result["requestState"]), answer),
    )
    .await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"]["roots/list#2"]["method"],
        "roots/list"
    );
    let mut second = retry(
        &first,
        Some(&result["requestState"]),
        json!({"roots/list#2": roots_answer()}),
    );
    second["id"] = json!(3);
    let done = send(&proxy, &second).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed to prod with 1 root(s)",
        "{done}"
    );
    assert_eq!(proxy.pending_calls(), 0);
    assert_eq!(up.session.waiting(), 0);
}

/// A held call is used once: the same state again finds nothing and is
/// told to restart (-32602 with restart), as is a retry after the held
/// call's lifetime.
#[tokio::test]
async fn a_held_call_is_single_use_and_expires() {
    let up = Sessioned::new();
    let options = ProxyOptions {
        pending_ttl: Duration::from_secs(60),
        ..quick()
    };
    let clock = tern_server::clock::ManualClock::new(1_000_000);
    let proxy = proxy_clocked(vec![("old", connect(up.clone()))], options, clock.clone()).await;
    let first = call("deploy", json!({"environment": "prod"}), all_caps());
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].clone();
    let answer = json!({"elicitation/create": accept(json!({"approved": true}))});
    let ok = send(&proxy, &retry(&first, Some(&state), answer.clone())).await;
    assert_eq!(ok["result"]["resultType"], "input_required", "{ok}");
    let again = send(&proxy, &retry(&first, Some(&state), answer.clone())).await;
    assert_eq!(code(&again), -32602, "{again}");
    assert_eq!(again["error"]["data"]["restart"], true, "{again}");

    // A second call, answered only after its lifetime.
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].clone();
    clock.advance(60);
    let late = send(&proxy, &retry(&first, Some(&state), answer)).await;
    assert_eq!(code(&late), -32602, "{late}");
    assert_eq!(late["error"]["data"]["restart"], true, "{late}");
}

/// A 2025-11-25 client, a modern upstream: the upstream's round reaches
/// the client as server-initiated requests on the call's stream; a client
/// that never answers fails the call once the answer timeout passes.
#[tokio::test]
async fn a_legacy_client_is_asked_and_one_that_never_answers_fails_the_call() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct))], quick()).await;
    let server = proxy.server();
    let session = legacy_session(&server).await;

    let deploy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"environment": "staging"}}});
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    let (s2, sess2, d2) = (server.clone(), session.clone(), deploy.clone());
    let call =
        tokio::spawn(async move { parse(s2.handle_in(&sess2, inbound(&d2), Sink::new(tx)).await) });
    let mut methods = Vec::new();
    for _ in 0..2 {
        let frame = rx.recv().await.expect("a server request");
        let req: Value = serde_json::from_slice(&frame).unwrap();
        methods.push(req["method"].as_str().unwrap().to_owned());
        let result = if req["method"] == "roots/list" {
            roots_answer()
        } else {
            accept(json!({"approved": true}))
        };
        let resp = json!({"jsonrpc": "2.0", "id": req["id"], "result": result});
        server
            .handle_in(&session, inbound(&resp), Sink::none())
            .await;
    }
    methods.sort();
    assert_eq!(methods, ["elicitation/create", "roots/list"]);
    let done = call.await.unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed to staging with 1 root(s)",
        "{done}"
    );
    assert!(
        done["result"].get("resultType").is_none(),
        "legacy shape: {done}"
    );

    // The same call, never answered.
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    let (s2, sess2) = (server.clone(), session.clone());
    let call =
        tokio::spawn(
            async move { parse(s2.handle_in(&sess2, inbound(&deploy), Sink::new(tx)).await) },
        );
    let _asked = rx.recv().await.expect("asked");
    let failed = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends")
        .unwrap();
    assert_eq!(code(&failed), -31004, "{failed}");
}

/// An upstream's template with reserved and query expressions (RFC 6570
/// levels 2 and 3) is routed: the read reaches the upstream with the URI
/// as the client sent it, and the upstream reads its variables.
#[tokio::test]
async fn a_template_with_reserved_and_query_expressions_is_routed() {
    async fn file(
        tern_server::Uri(uri): tern_server::Uri,
        tern_server::UriParams(vars): tern_server::UriParams,
    ) -> tern_server::ResourceResult {
        let rev = vars.get("rev").map_or("head", String::as_str);
        tern_server::ResourceResult::text(&uri, "text/plain", format!("{} at {rev}", vars["path"]))
    }
    let upstream = upstream_server().template_def(tern_server::TemplateDef::new(
        "repo://files/{+path}{?rev}",
        "file",
        file,
    ));
    let (direct, _clock) = Direct::new(upstream);
    let proxy = proxy_of(vec![("up", connect(direct))], quick()).await;
    let read = |uri: &str| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read",
               "params": {"_meta": tern_testkit::request::meta(all_caps()), "uri": uri}})
    };
    let r = send(&proxy, &read("repo://files/src/lib.rs?rev=v1")).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(
        r["result"]["contents"][0]["uri"],
        "repo://files/src/lib.rs?rev=v1"
    );
    assert_eq!(r["result"]["contents"][0]["text"], "src/lib.rs at v1");
    let r = send(&proxy, &read("repo://files/docs/a/b.md")).await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "docs/a/b.md at head",
        "{r}"
    );
    // A URI the template does not describe is not routed upstream.
    let r = send(&proxy, &read("repo://other/x")).await;
    assert_eq!(code(&r), -32602, "{r}");
    assert_eq!(r["error"]["data"]["uri"], "repo://other/x");
}
