//! The proxy's budgets driven past their limits (issue 27 point 9): pending
//! calls per principal and in total, the round ceiling against an
//! upstream that never stops asking, and the lifetime of pending calls
//! beside an upstream that never lists.

use std::time::Duration;

use serde_json::{Value, json};
use tern_proto::Principal;
use tern_proxy::{Proxy, ProxyOptions};
use tern_server::clock::ManualClock;
use tern_server::{Ask, Config, Error, Need, Server, ToolResult};
use tern_testkit::request::{accept, all_caps, call, retry};
use tern_testkit::transport::{Answer, Scripted};
use tern_types::ErrorCode;

use super::common::{
    Sessioned, code, connect, proxy_with, quick, roots_answer, send_as, upstream_server, who,
};

fn budget(max_pending: usize, per_principal: Option<usize>) -> ProxyOptions {
    ProxyOptions {
        max_pending,
        max_pending_per_principal: per_principal,
        ..quick()
    }
}

async fn legacy_proxy(up: &Sessioned, options: ProxyOptions) -> Proxy {
    let config = Config {
        client_answer_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    proxy_with(vec![("old", connect(up.clone()))], options, config).await
}

fn deploy(environment: &str) -> Value {
    call("deploy", json!({"environment": environment}), all_caps())
}

/// Starts a deploy as `p`: its first round, held in the proxy.
async fn park(proxy: &Proxy, p: &Principal, environment: &str) -> Value {
    let r = send_as(proxy, p, &deploy(environment)).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    r["result"]["requestState"].clone()
}

/// Asserts `r` is the proxy's busy refusal (-31003) for the budget
/// `limit`.
fn refused(r: &Value, limit: &str) -> String {
    assert_eq!(code(r), ErrorCode::BUSY.0, "{r}");
    assert_eq!(r["error"]["data"]["limit"], limit, "{r}");
    r["error"]["message"].as_str().unwrap().to_owned()
}

/// Waits until the proxy has abandoned `n` upstream calls: a call the
/// proxy does not hold is cancelled upstream as it goes.
async fn abandoned(up: &Sessioned, n: usize) {
    for _ in 0..100 {
        if up.abandoned().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(up.abandoned(), vec!["tools/call"; n]);
}

/// `--max-pending 4` with two per principal: alice holds two and her
/// third is refused for her share while bob still gets his two; then the
/// pool is full for carol. Each refused call is cancelled upstream (and
/// no held one is), and a call alice finishes frees her share.
#[tokio::test]
async fn one_principal_cannot_fill_the_pool_for_everyone() {
    let up = Sessioned::new();
    let proxy = legacy_proxy(&up, budget(4, Some(2))).await;
    let (alice, bob, carol) = (who("alice"), who("bob"), who("carol"));
    let first = park(&proxy, &alice, "a1").await;
    park(&proxy, &alice, "a2").await;
    let third = send_as(&proxy, &alice, &deploy("a3")).await;
    assert_eq!(
        refused(&third, "proxy_pending_per_principal"),
        "this caller holds 2 pending calls at the proxy, as many as one caller may; answer or abandon one first"
    );
    park(&proxy, &bob, "b1").await;
    park(&proxy, &bob, "b2").await;
    assert_eq!(proxy.pending_calls(), 4);
    let full = send_as(&proxy, &carol, &deploy("c1")).await;
    assert_eq!(
        refused(&full, "proxy_pending"),
        "the proxy holds 4 pending calls, as many as it may; try again later"
    );
    abandoned(&up, 2).await;

    // Alice finishes her first deploy: its two rounds, then the result.
    let answer = json!({"elicitation/create": accept(json!({"approved": true}))});
    let r = send_as(&proxy, &alice, &retry(&deploy("a1"), Some(&first), answer)).await;
    let state = r["result"]["requestState"].clone();
    let roots = json!({"roots/list#2": roots_answer()});
    let done = send_as(&proxy, &alice, &retry(&deploy("a1"), Some(&state), roots)).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed to a1 with 1 root(s)",
        "{done}"
    );
    assert_eq!(proxy.pending_calls_of(&alice), 1);
    assert_eq!(proxy.pending_calls_of(&bob), 2);
    park(&proxy, &alice, "a4").await;
}

/// Without a per-principal setting the share is a quarter of the pool:
/// with 4 in all, the first client holds one call and the next client's
/// first call is still served (the case).
#[tokio::test]
async fn the_default_share_is_a_quarter_of_the_pool() {
    assert_eq!(budget(4, None).per_principal(), 1);
    assert_eq!(ProxyOptions::default().per_principal(), 256);
    let up = Sessioned::new();
    let proxy = legacy_proxy(&up, budget(4, None)).await;
    park(&proxy, &who("alice"), "a1").await;
    let second = send_as(&proxy, &who("alice"), &deploy("a2")).await;
    refused(&second, "proxy_pending_per_principal");
    park(&proxy, &who("bob"), "b1").await;
    assert_eq!(proxy.pending_calls(), 2);
}

/// A share larger than the pool, or of nothing, is refused when the proxy
/// is built.
#[tokio::test]
async fn a_share_outside_the_pool_is_refused_at_build() {
    for bad in [budget(4, Some(5)), budget(4, Some(0)), budget(0, None)] {
        let e = Proxy::builder(Server::builder("proxy", "1"))
            .options(bad)
            .upstream("up", connect(Sessioned::new()))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("pending"), "{e}");
    }
}

/// A 2025-11-25 upstream whose tool asks question after question, a
/// thousand of them.
async fn quiz(ask: Ask) -> Result<ToolResult, Error> {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    for i in 0..1000 {
        ask.all(Need::form_schema(
            &format!("q{i}"),
            &format!("Question {i}?"),
            schema.clone(),
        ))?;
    }
    Ok(ToolResult::text("all answered"))
}

/// An upstream that never stops asking is stopped at the proxy's round
/// ceiling (here 3): the round past it is "too many input rounds" and
/// nothing is held for it; the upstream's call is cancelled.
#[tokio::test]
async fn an_upstream_that_asks_forever_stops_at_the_round_ceiling() {
    let upstream = upstream_server()
        .tool("quiz", "Asks and asks", quiz)
        .config(Config {
            max_rounds: u8::MAX,
            ..Config::default()
        });
    let up = Sessioned::of(upstream);
    let config = Config {
        max_rounds: 3,
        client_answer_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    let proxy = proxy_with(vec![("old", connect(up.clone()))], quick(), config).await;
    let first = call("quiz", json!({}), all_caps());
    let alice = who("alice");
    let mut r = send_as(&proxy, &alice, &first).await;
    for round in 1..=3 {
        let result = &r["result"];
        assert_eq!(result["resultType"], "input_required", "round {round}: {r}");
        let key = result["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let answer = json!({ key: accept(json!({"a": "x"})) });
        r = send_as(
            &proxy,
            &alice,
            &retry(&first, Some(&result["requestState"]), answer),
        )
        .await;
    }
    assert_eq!(code(&r), -32602, "{r}");
    assert_eq!(r["error"]["message"], "too many input rounds", "{r}");
    assert_eq!(proxy.pending_calls(), 0);
    abandoned(&up, 1).await;
}

#[tokio::test]
async fn anonymous_callers_share_the_whole_pool() {
    // Without authentication every client is one principal: a quarter of
    // the pool would starve a server with many honest clients, so the
    // total bounds it alone.
    let up = Sessioned::new();
    let proxy = legacy_proxy(&up, budget(4, None)).await;
    let anonymous = Principal::Anonymous;
    for n in 0..4 {
        park(&proxy, &anonymous, &format!("anon{n}")).await;
    }
    let fifth = send_as(&proxy, &anonymous, &deploy("anon4")).await;
    refused(&fifth, "proxy_pending");
    assert_eq!(proxy.pending_calls(), 4);
}

/// Waits until `done()` holds, for at most two sweep intervals (4 s).
async fn within_two_sweeps(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within two sweep intervals");
}

/// One upstream whose lists never come (each sync of it waits
/// `upstream_timeout`, here 300 s) holds up neither the sweep nor the
/// other upstream's sync: a held call past its lifetime is dropped within
/// a sweep interval (2 s) of it, cancelled upstream, and its slot serves
/// the next call.
#[tokio::test]
async fn a_stalled_upstream_does_not_hold_up_the_expiry_of_pending_calls() {
    let up = Sessioned::new();
    let stuck = Scripted::new(|req, _| match req["method"].as_str().unwrap_or_default() {
        "server/discover" => Answer::Result(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0
        })),
        _ => Answer::Silence,
    });
    let clock = ManualClock::new(1_000_000);
    let server = Server::builder("proxy", "1.0.0").clock(clock.clone());
    let options = ProxyOptions {
        pending_ttl: Duration::from_secs(60),
        upstream_timeout: Duration::from_secs(300),
        ..budget(1, None)
    };
    // Never synced here: `maintain` lists both, "stuck" first.
    let proxy = Proxy::builder(server)
        .options(options)
        .upstream("stuck", connect(stuck.clone()))
        .upstream("old", connect(up.clone()))
        .build()
        .unwrap();
    let maintain = tokio::spawn(proxy.clone().maintain());
    let anonymous = Principal::Anonymous;
    let held = call("old__deploy", json!({"environment": "a"}), all_caps());
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                      "params": {"_meta": tern_testkit::request::meta(json!({}))}});
    let mut listed = false;
    for _ in 0..200 {
        let r = send_as(&proxy, &anonymous, &list).await;
        listed = r["result"]["tools"][0]["name"] == "old__deploy";
        if listed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(listed, "\"old\" is listed while \"stuck\" does not answer");
    assert!(
        stuck
            .seen()
            .iter()
            .any(|s| s.body["method"] == "tools/list"),
        "\"stuck\" is being listed"
    );

    let r = send_as(&proxy, &anonymous, &held).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let full = send_as(&proxy, &anonymous, &held).await;
    refused(&full, "proxy_pending");

    clock.advance(60);
    within_two_sweeps("the expiry", || proxy.pending_calls() == 0).await;
    abandoned(&up, 2).await;
    let r = send_as(&proxy, &anonymous, &held).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(proxy.pending_calls(), 1);
    maintain.abort();
}
