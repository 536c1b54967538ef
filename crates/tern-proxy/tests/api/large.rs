//! Upstream rounds too large for the proxy's sealed state (issue 27 point
//! 10): a 20 KiB form schema and an 8 KiB upstream `requestState` relay end
//! to end; the round is held for its principal, single use, for its
//! lifetime, and within `max_round_bytes`; the answers stay pinned to the
//! questions (MRTR-S8, SECURITY.md §3.8).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tern_client::{BoxFuture, Client, InputContext, InputKinds, InputProvider, Refusal};
use tern_proxy::{Proxy, ProxyOptions};
use tern_testkit::request::{accept, all_caps, call, retry};
use tern_testkit::transport::{Answer, Direct, Scripted};
use tern_types::{ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue, ErrorCode};

use tern_server::clock::ManualClock;

use super::common::{code, connect, proxy_clocked, proxy_of, quick, send, send_as, who};

/// A form schema of at least 20 KiB: `approved` and forty described text
/// fields.
fn big_schema() -> Value {
    let mut properties = Map::new();
    properties.insert("approved".into(), json!({"type": "boolean"}));
    for i in 0..40 {
        properties.insert(
            format!("note_{i:02}"),
            json!({"type": "string", "description": format!("{i:02} {}", "d".repeat(500))}),
        );
    }
    let schema = json!({"type": "object", "properties": properties, "required": ["approved"]});
    assert!(schema.to_string().len() >= 20 * 1024);
    schema
}

/// An upstream `requestState` of exactly 8 KiB.
fn big_state() -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    (0..8192)
        .map(|i| char::from(alphabet[(i * 7 + i / 64) % 64]))
        .collect()
}

/// A 2026-07-28 upstream whose tool `t` asks `schema` with `state` in its
/// first round and completes with what it was answered.
fn asking(schema: Value, state: String) -> Scripted {
    Scripted::new(
        move |req, _| match req["method"].as_str().unwrap_or_default() {
            "server/discover" => Answer::Result(json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "ttlMs": 0
            })),
            "tools/list" => Answer::Result(json!({
                "resultType": "complete",
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}], "ttlMs": 0
            })),
            _ => match req["params"].get("requestState") {
                None => Answer::Result(json!({
                    "resultType": "input_required",
                    "inputRequests": {"approve": {"method": "elicitation/create", "params": {
                        "mode": "form", "message": "Approve?", "requestedSchema": schema}}},
                    "requestState": state
                })),
                Some(_) => {
                    let answer = &req["params"]["inputResponses"]["approve"];
                    Answer::Result(json!({"resultType": "complete", "content": [
                        {"type": "text", "text": format!("approved: {}", answer["content"]["approved"])}]}))
                }
            },
        },
    )
}

fn approve() -> Value {
    json!({"approve": accept(json!({"approved": true}))})
}

/// The upstream's retries (the requests carrying its state).
fn retries(upstream: &Scripted) -> Vec<Map<String, Value>> {
    upstream
        .seen()
        .iter()
        .filter(|s| s.params().contains_key("requestState"))
        .map(|s| s.params().clone())
        .collect()
}

/// A downstream client's provider that accepts every form and keeps what
/// it was asked.
#[derive(Clone, Default)]
struct Approving {
    seen: Arc<Mutex<Vec<ElicitRequestFormParams>>>,
}

impl InputProvider for Approving {
    fn kinds(&self) -> InputKinds {
        InputKinds::NONE.with_form()
    }

    fn elicit_form(
        &self,
        _cx: InputContext,
        p: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        self.seen.lock().unwrap().push(p);
        Box::pin(async {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some([("approved".to_owned(), ElicitValue::Bool(true))].into()),
            })
        })
    }
}

/// The point-10 round: a 20 KiB schema with an 8 KiB state. Raw, the
/// client sees the schema whole under a small proxy state while the round
/// waits in the proxy; the retry reaches the upstream with its state byte
/// for byte and the answer; the same state again is told to restart. Then
/// a real tern-client drives the same tool to the end through the proxy.
#[tokio::test]
async fn a_20_kib_schema_and_an_8_kib_upstream_state_relay_end_to_end() {
    let (schema, state) = (big_schema(), big_state());
    let upstream = asking(schema.clone(), state.clone());
    let proxy = proxy_of(vec![("big", connect(upstream.clone()))], quick()).await;
    let first = call("t", json!({}), all_caps());
    let r = send(&proxy, &first).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"]["approve"]["params"]["requestedSchema"],
        schema
    );
    let proxy_state = result["requestState"].clone();
    assert!(proxy_state.as_str().unwrap().len() < 1024, "{proxy_state}");
    assert_eq!(proxy.pending_calls(), 1);

    let done = send(&proxy, &retry(&first, Some(&proxy_state), approve())).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "approved: true",
        "{done}"
    );
    assert_eq!(proxy.pending_calls(), 0);
    let sent = retries(&upstream);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["requestState"], state);
    assert_eq!(sent[0]["inputResponses"], approve());
    let again = send(&proxy, &retry(&first, Some(&proxy_state), approve())).await;
    assert_eq!(code(&again), -32602, "{again}");
    assert_eq!(again["error"]["data"]["restart"], true, "{again}");
    assert_eq!(
        retries(&upstream).len(),
        1,
        "the replay never went upstream"
    );

    let asked = Approving::default();
    let downstream = Direct {
        server: proxy.server(),
        log: Default::default(),
    };
    let client = Client::builder(downstream).provider(asked.clone()).build();
    let out = client.call_tool("t", Map::new()).await.unwrap();
    assert_eq!(
        serde_json::to_value(&out).unwrap()["content"][0]["text"],
        "approved: true"
    );
    let seen = asked.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        serde_json::to_value(&seen[0].requested_schema).unwrap(),
        schema
    );
    assert_eq!(retries(&upstream)[1]["requestState"], state);
    assert_eq!(proxy.pending_calls(), 0);
}

/// A round that fits is sealed whole: nothing is held, and the retry
/// still reaches the upstream with its exact state.
#[tokio::test]
async fn a_round_that_fits_is_sealed_and_holds_nothing() {
    let state: String = big_state()[..2048].to_owned();
    let schema = json!({"type": "object", "properties": {"approved": {"type": "boolean"}}});
    let upstream = asking(schema, state.clone());
    let proxy = proxy_of(vec![("small", connect(upstream.clone()))], quick()).await;
    let first = call("t", json!({}), all_caps());
    let r = send(&proxy, &first).await;
    assert_eq!(proxy.pending_calls(), 0, "{r}");
    assert!(r["result"]["requestState"].as_str().unwrap().len() > 2048);
    let done = send(
        &proxy,
        &retry(&first, Some(&r["result"]["requestState"]), approve()),
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "approved: true",
        "{done}"
    );
    assert_eq!(retries(&upstream)[0]["requestState"], state);
}

/// A held round is its principal's: bob's retry with alice's state is
/// refused (-32602) and leaves it in place for her. A retry without the
/// answer is asked again and the round stays held; a malformed answer is
/// -32602 and the round stays held too; then alice's answer completes it.
#[tokio::test]
async fn a_held_round_is_bound_to_its_principal_and_its_questions() {
    let upstream = asking(big_schema(), big_state());
    let proxy = proxy_of(vec![("big", connect(upstream.clone()))], quick()).await;
    let (alice, bob) = (who("alice"), who("bob"));
    let first = call("t", json!({}), all_caps());
    let r = send_as(&proxy, &alice, &first).await;
    let state = r["result"]["requestState"].clone();

    let stolen = send_as(&proxy, &bob, &retry(&first, Some(&state), approve())).await;
    assert_eq!(code(&stolen), -32602, "{stolen}");
    assert_eq!(proxy.pending_calls_of(&alice), 1);

    let unanswered = send_as(&proxy, &alice, &retry(&first, Some(&state), json!({}))).await;
    let result = &unanswered["result"];
    assert_eq!(result["resultType"], "input_required", "{unanswered}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["approve"]);
    assert_eq!(proxy.pending_calls_of(&alice), 1);
    let state = result["requestState"].clone();

    let bad = json!({"approve": {"action": "maybe"}});
    let malformed = send_as(&proxy, &alice, &retry(&first, Some(&state), bad)).await;
    assert_eq!(code(&malformed), -32602, "{malformed}");
    assert_eq!(proxy.pending_calls_of(&alice), 1);

    let done = send_as(&proxy, &alice, &retry(&first, Some(&state), approve())).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "approved: true",
        "{done}"
    );
    assert_eq!(proxy.pending_calls(), 0);
    assert_eq!(
        retries(&upstream).len(),
        1,
        "only the answered retry went upstream"
    );
}

/// A held round lives `pending_ttl`: a retry after it is told to restart
/// and nothing reaches the upstream.
#[tokio::test]
async fn a_held_round_expires_with_its_lifetime() {
    let upstream = asking(big_schema(), big_state());
    let options = ProxyOptions {
        pending_ttl: Duration::from_secs(60),
        ..quick()
    };
    let clock = ManualClock::new(1_000_000);
    let proxy = proxy_clocked(
        vec![("big", connect(upstream.clone()))],
        options,
        clock.clone(),
    )
    .await;
    let first = call("t", json!({}), all_caps());
    let r = send(&proxy, &first).await;
    clock.advance(59);
    assert_eq!(proxy.pending_calls(), 1, "alive within its lifetime");
    clock.advance(1);
    let late = send(
        &proxy,
        &retry(&first, Some(&r["result"]["requestState"]), approve()),
    )
    .await;
    assert_eq!(code(&late), -32602, "{late}");
    assert_eq!(late["error"]["data"]["restart"], true, "{late}");
    assert_eq!(proxy.pending_calls(), 0);
    assert!(retries(&upstream).is_empty());
}

/// A round over `max_round_bytes` is refused with -31000 (the upstream
/// asked what the proxy cannot pass on; not busy, which a client would
/// retry to the same end) naming the budget, the upstream and the sizes;
/// nothing is held.
#[tokio::test]
async fn a_round_larger_than_the_proxy_holds_is_refused() {
    let upstream = asking(big_schema(), big_state());
    let options = ProxyOptions {
        max_round_bytes: 16 * 1024,
        ..quick()
    };
    let proxy: Proxy = proxy_of(vec![("big", connect(upstream))], options).await;
    let r = send(&proxy, &call("t", json!({}), all_caps())).await;
    assert_eq!(code(&r), ErrorCode::UPSTREAM_FAILED.0, "{r}");
    assert_eq!(r["error"]["data"]["limit"], "proxy_round_bytes");
    assert_eq!(r["error"]["data"]["upstream"], "big");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("the upstream server \"big\" asked a round larger than the proxy holds ("),
        "{message}"
    );
    assert!(message.ends_with("bytes; at most 16384)"), "{message}");
    assert_eq!(proxy.pending_calls(), 0);
}
