//! Single use (MRTR-SEC4, SECURITY.md §3.9): replays, forks and races never
//! repeat an irreversible effect; a store that is down fails closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::json;
use tern_seal::{
    BoxFuture, ConsumeKey, Consumed, Durability, KeyRing, MemoryReplayStore, ReplayStore,
    StoreError,
};
use tern_server::{Ask, Elicited, Error, Server, SingleUse, State, ToolDef, ToolResult};

use super::support::*;

#[derive(Default)]
struct Ledger {
    redeemed: AtomicU32,
}

async fn redeem(
    ask: Ask,
    once: SingleUse,
    State(ledger): State<Ledger>,
) -> Result<ToolResult, Error> {
    match ask.form::<Approval>("confirm_redeem", "Redeem?")? {
        Elicited::Accepted(a) if a.approved => {
            // At the point of the effect, after authorization.
            once.consume("redeem").await?;
            ledger.redeemed.fetch_add(1, Ordering::SeqCst);
            Ok(ToolResult::text("redeemed"))
        }
        _ => Ok(ToolResult::text("not redeemed")),
    }
}

fn harness(store: Arc<dyn ReplayStore>) -> Harness {
    Harness::new(
        Server::builder("t", "1")
            .replay_store(store)
            .state(Ledger::default())
            .tool_def(ToolDef::new("redeem", "redeems once", redeem).single_use()),
    )
}

#[tokio::test]
async fn a_replayed_state_never_repeats_the_effect() {
    let h = harness(Arc::new(MemoryReplayStore::new()));
    let first = call("redeem", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    let again = retry(
        &first,
        Some(&r["requestState"]),
        json!({"confirm_redeem": accept(json!({"approved": true}))}),
    );
    assert_eq!(text(result(&h.send(&again).await)), "redeemed");
    // Same state, same answers: the uniform -32602 (SECURITY.md §3.5).
    let (code, e) = error(&h.send(&again).await);
    assert_eq!(
        (code, e["message"].as_str().unwrap()),
        (-32602, "invalid or expired requestState")
    );
    assert_eq!(h.server.metrics().rejected("already_consumed"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replays_have_exactly_one_winner() {
    let h = Arc::new(harness(Arc::new(MemoryReplayStore::new())));
    let first = call("redeem", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    let again = retry(
        &first,
        Some(&r["requestState"]),
        json!({"confirm_redeem": accept(json!({"approved": true}))}),
    );
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (h, again) = (h.clone(), again.clone());
        tasks.push(tokio::spawn(async move { h.send(&again).await }));
    }
    let mut wins = 0;
    for t in tasks {
        let reply = t.await.unwrap();
        if reply.1.get("result").is_some() {
            wins += 1;
        } else {
            assert_eq!(error(&reply).0, -32602);
        }
    }
    assert_eq!(wins, 1);
}

struct DownStore;

impl ReplayStore for DownStore {
    fn consume(
        &self,
        _key: ConsumeKey,
        _ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>> {
        Box::pin(async { Err(StoreError::Unavailable("connection refused".into())) })
    }
    fn durability(&self) -> Durability {
        Durability::Shared
    }
}

#[tokio::test]
async fn a_store_that_is_down_fails_closed() {
    // SECURITY.md §3.9: -32603, no effect, nothing consumed.
    let h = harness(Arc::new(DownStore));
    let first = call("redeem", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    let again = retry(
        &first,
        Some(&r["requestState"]),
        json!({"confirm_redeem": accept(json!({"approved": true}))}),
    );
    let (code, e) = error(&h.send(&again).await);
    assert_eq!(
        (code, e["message"].as_str().unwrap()),
        (-32603, "temporarily unable to complete")
    );
}

#[tokio::test]
async fn unsafe_deployments_refuse_to_start() {
    // SECURITY.md §3.9 startup guards.
    let persistent = KeyRing::ephemeral().unwrap();
    let e = Server::builder("t", "1")
        .keys(persistent)
        .tool_def(ToolDef::new("redeem", "once", redeem).single_use())
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("durable replay store"), "{e}");
    let e = Server::builder("t", "1").instances(3).build().unwrap_err();
    assert!(e.to_string().contains("shared replay store"), "{e}");
    assert!(
        Server::builder("t", "1")
            .instances(3)
            .replay_store(Arc::new(DownStore))
            .build()
            .is_ok()
    );
}

async fn transfer(ask: Ask, State(ledger): State<Ledger>) -> Result<ToolResult, Error> {
    match ask.form::<Approval>("confirm_transfer", "Transfer?")? {
        Elicited::Accepted(a) if a.approved => {
            let n = ledger.redeemed.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(ToolResult::text(format!("transfer #{n} done")))
        }
        _ => Ok(ToolResult::text("no transfer")),
    }
}

#[tokio::test]
async fn an_idempotent_route_answers_a_replay_with_the_kept_result() {
    // SECURITY.md §3.9: the idempotency-key pattern. The effect runs once;
    // the same principal replaying the last round gets the same result;
    // another principal gets the uniform refusal.
    let h = Harness::new(
        Server::builder("t", "1")
            .replay_store(Arc::new(MemoryReplayStore::new()))
            .state(Ledger::default())
            .tool_def(ToolDef::new("transfer", "moves money once", transfer).idempotent()),
    );
    let alice = tern_proto::Principal::Static {
        secret_id: "alice".into(),
    };
    let first = call("transfer", json!({}), all_caps());
    let r = result(&h.send_as(alice.clone(), &first).await);
    let again = retry(
        &first,
        Some(&r["requestState"]),
        json!({"confirm_transfer": accept(json!({"approved": true}))}),
    );
    let one = result(&h.send_as(alice.clone(), &again).await);
    let two = result(&h.send_as(alice.clone(), &again).await);
    assert_eq!(text(one.clone()), "transfer #1 done");
    assert_eq!(
        one, two,
        "the replay gets the kept result, not a second effect"
    );
    let bob = tern_proto::Principal::Static {
        secret_id: "bob".into(),
    };
    assert_eq!(error(&h.send_as(bob, &again).await).0, -32602);
}

#[tokio::test]
async fn a_forked_round_is_refused_on_a_single_use_route() {
    // Answering the same round twice with different answers: the second
    // fork never runs (SECURITY.md §3.9, forking).
    let h = harness(Arc::new(MemoryReplayStore::new()));
    let first = call("redeem", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    let no = retry(
        &first,
        Some(&r["requestState"]),
        json!({"confirm_redeem": accept(json!({"approved": false}))}),
    );
    let yes = retry(
        &first,
        Some(&r["requestState"]),
        json!({"confirm_redeem": accept(json!({"approved": true}))}),
    );
    assert_eq!(text(result(&h.send(&no).await)), "not redeemed");
    assert_eq!(error(&h.send(&yes).await).0, -32602);
}

async fn ask_twice(ask: Ask) -> Result<ToolResult, Error> {
    ask.form::<Approval>("ok", "OK?")?;
    Ok(ToolResult::text("done"))
}

#[tokio::test]
async fn a_state_issued_single_use_stays_single_use_after_the_route_changes() {
    // StateBody.once: re-registering the route without the flag does not
    // turn the states it already issued into replayable ones.
    let h = Harness::new(
        Server::builder("t", "1").tool_def(ToolDef::new("ask", "asks", ask_twice).single_use()),
    );
    let first = call("ask", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    h.server
        .add_tool(ToolDef::new("ask", "asks, no longer single use", ask_twice))
        .unwrap();
    let again = retry(
        &first,
        Some(&r["requestState"]),
        json!({"ok": accept(json!({"approved": true}))}),
    );
    assert_eq!(text(result(&h.send(&again).await)), "done");
    assert_eq!(error(&h.send(&again).await).0, -32602);
    assert_eq!(h.server.metrics().rejected("already_consumed"), 1);
    // A state issued after the change is not single use.
    let r = result(&h.send(&first).await);
    let fresh = retry(
        &first,
        Some(&r["requestState"]),
        json!({"ok": accept(json!({"approved": true}))}),
    );
    assert_eq!(text(result(&h.send(&fresh).await)), "done");
    assert_eq!(text(result(&h.send(&fresh).await)), "done");
}
