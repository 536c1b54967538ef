//! The sealed requestState: integrity, bindings, expiry, rounds, rotation
//! (MRTR-SEC1..4, MRTR-E-A1, SECURITY.md §3.1–§3.5).

use serde_json::{Value, json};
use tern_proto::Principal;
use tern_seal::{KeyFile, KeyRing};
use tern_server::{
    Args, Ask, Config, Elicited, Error, Flow, Pending, Resumed, RouteLimits, Server, ToolDef,
    ToolResult,
};

use super::support::*;

async fn approve(ask: Ask) -> Result<ToolResult, Error> {
    match ask.form::<Approval>("approval", "Approve?")? {
        Elicited::Accepted(a) => Ok(ToolResult::text(format!("approved={}", a.approved))),
        Elicited::Declined => Ok(ToolResult::text("declined")),
        Elicited::Cancelled => Ok(ToolResult::text("cancelled")),
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Target {
    env: String,
}

async fn deploy(Args(t): Args<Target>, ask: Ask) -> Result<ToolResult, Error> {
    let a = ask.form::<Approval>("approval", "Approve?")?;
    Ok(ToolResult::text(format!(
        "{} {:?}",
        t.env,
        a.accepted().map(|a| a.approved)
    )))
}

fn harness() -> Harness {
    Harness::new(
        Server::builder("t", "1")
            .tool("approve", "asks for approval", approve)
            .tool("approve_too", "asks for approval too", approve)
            .tool("deploy", "deploys", deploy)
            .prompt_def(tern_server::PromptDef::new(
                "deploy",
                "asks",
                |ask: Ask| async move {
                    ask.form::<Approval>("approval", "Approve?")?;
                    Ok::<_, Error>(tern_server::PromptResult::user_text("ok"))
                },
            )),
    )
}

/// Round 1 of `approve`: its state and the call that produced it.
async fn first_round(h: &Harness, name: &str, args: Value) -> (Value, Value) {
    let first = call(name, args, all_caps());
    let reply = h.send(&first).await;
    let r = result(&reply);
    assert_eq!(r["resultType"], "input_required");
    (first, r["requestState"].clone())
}

fn assert_invalid_state(reply: &(u16, Value)) {
    // MRTR-E-A1: one generic error, whatever failed.
    let (code, e) = error(reply);
    assert_eq!(code, -32602);
    assert_eq!(e["message"], "invalid or expired requestState");
    assert_eq!(e["data"], json!({"restart": true}));
}

#[tokio::test]
async fn interim_result_has_type_requests_and_state() {
    // MRTR-S3, MRTR-S4, META-S12.
    let h = harness();
    let reply = h.send(&call("approve", json!({}), all_caps())).await;
    let r = result(&reply);
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(
        r["inputRequests"]["approval"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        r["inputRequests"]["approval"]["params"]["requestedSchema"],
        json!({"type": "object", "properties": {"approved": {"type": "boolean", "description": "Approve?"}}, "required": ["approved"]})
    );
    assert!(r["requestState"].as_str().unwrap().len() > 100);
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "t"
    );
    assert!(
        r.get("ttlMs").is_none(),
        "MRTR-S12: interim results carry no cache hints"
    );
}

#[tokio::test]
async fn a_verified_answer_completes() {
    let h = harness();
    let (first, state) = first_round(&h, "approve", json!({})).await;
    let reply = h
        .send(&retry(
            &first,
            Some(&state),
            json!({"approval": accept(json!({"approved": true}))}),
        ))
        .await;
    assert_eq!(text(result(&reply)), "approved=true");
}

#[tokio::test]
async fn tampered_truncated_and_oversized_states_are_refused() {
    let h = harness();
    let (first, state) = first_round(&h, "approve", json!({})).await;
    let s = state.as_str().unwrap();
    let answers = json!({"approval": accept(json!({"approved": true}))});
    // The conformance suite's tamper: append text.
    let mut flipped = s.as_bytes().to_vec();
    flipped[40] = if flipped[40] == b'A' { b'B' } else { b'A' };
    for bad in [
        format!("{s}-TAMPERED"),
        String::from_utf8(flipped).unwrap(),
        s[..s.len() - 4].to_owned(),
        String::new(),
        "x".repeat(9000),
        "not base64 !!".to_owned(),
    ] {
        assert_invalid_state(
            &h.send(&retry(&first, Some(&json!(bad)), answers.clone()))
                .await,
        );
    }
    // Not a string at all.
    assert_invalid_state(&h.send(&retry(&first, Some(&json!(42)), answers)).await);
    let m = h.server.metrics();
    assert_eq!(m.rejected("too_long"), 1);
    assert_eq!(m.rejected("not_a_string"), 1);
    assert!(m.rejected("bad_tag") + m.rejected("malformed") >= 3);
}

#[tokio::test]
async fn state_expires_after_its_ttl_plus_skew() {
    // MRTR-SEC3: a short expiry; SECURITY.md §3.5 allows 30 s of skew.
    let h = harness();
    let (first, state) = first_round(&h, "approve", json!({})).await;
    let answers = json!({"approval": accept(json!({"approved": false}))});
    h.clock.advance(600 + 30);
    assert_eq!(
        text(result(
            &h.send(&retry(&first, Some(&state), answers.clone())).await
        )),
        "approved=false"
    );
    h.clock.advance(1);
    assert_invalid_state(&h.send(&retry(&first, Some(&state), answers)).await);
    assert_eq!(h.server.metrics().rejected("expired"), 1);
}

#[tokio::test]
async fn state_is_bound_to_principal_tool_arguments_and_method() {
    // MRTR-SEC3, SECURITY.md §3.6: every binding, one uniform error.
    let h = harness();
    let alice = Principal::Static {
        secret_id: "alice".into(),
    };
    let bob = Principal::Static {
        secret_id: "bob".into(),
    };
    let first = call("deploy", json!({"env": "prod"}), all_caps());
    let r = h.send_as(alice.clone(), &first).await;
    let state = result(&r)["requestState"].clone();
    let answers = json!({"approval": accept(json!({"approved": true}))});

    // Cross-principal.
    assert_invalid_state(
        &h.send_as(bob, &retry(&first, Some(&state), answers.clone()))
            .await,
    );
    // Cross-argument: same tool, other environment.
    let other_args = call("deploy", json!({"env": "staging"}), all_caps());
    assert_invalid_state(
        &h.send_as(
            alice.clone(),
            &retry(&other_args, Some(&state), answers.clone()),
        )
        .await,
    );
    // Cross-tool: another tool asking the same question.
    let other_tool = call("approve_too", json!({"env": "prod"}), all_caps());
    assert_invalid_state(
        &h.send_as(
            alice.clone(),
            &retry(&other_tool, Some(&state), answers.clone()),
        )
        .await,
    );
    // Cross-method: the same state on prompts/get.
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {
        "_meta": meta(all_caps()), "name": "deploy", "arguments": {"env": "prod"},
        "requestState": state, "inputResponses": answers}});
    assert_invalid_state(&h.send_as(alice.clone(), &prompt).await);
    assert_eq!(h.server.metrics().rejected("binding_mismatch"), 4);
    // The rightful owner still completes; key order and 1 vs 1.0 do not
    // change the digest (SECURITY.md §3.4).
    let reply = h
        .send_as(alice, &retry(&first, Some(&state), answers))
        .await;
    assert_eq!(text(result(&reply)), "prod Some(true)");
}

#[tokio::test]
async fn a_state_from_another_deployment_never_opens() {
    // SECURITY.md §3.1: the resource id is in the AAD.
    let keys = KeyFile::generate("a").unwrap();
    let a = Harness::new(
        Server::builder("t", "1")
            .keys(keys.key_ring().unwrap())
            .tool("approve", "x", approve),
    );
    let clock = tern_server::clock::ManualClock::new(NOW);
    let b = Server::builder("t", "1")
        .keys(keys.key_ring().unwrap())
        .resource_id("another-deployment")
        .clock(clock)
        .tool("approve", "x", approve)
        .build()
        .unwrap();
    let (first, state) = first_round(&a, "approve", json!({})).await;
    let b = Harness {
        server: b,
        clock: a.clock.clone(),
    };
    assert_invalid_state(&b.send(&retry(&first, Some(&state), json!({}))).await);
}

#[tokio::test]
async fn instances_sharing_keys_finish_each_others_flows_across_rotation() {
    // ARCHITECTURE.md "Many instances"; SECURITY.md §3.3 rotation.
    let mut file = KeyFile::generate("fleet").unwrap();
    let build = |ring: KeyRing, h_clock: &tern_server::clock::ManualClock| {
        Server::builder("t", "1")
            .keys(ring)
            .resource_id("fleet")
            .clock(h_clock.clone())
            .tool("approve", "x", approve)
            .build()
            .unwrap()
    };
    let clock = tern_server::clock::ManualClock::new(NOW);
    let one = Harness {
        server: build(file.key_ring().unwrap(), &clock),
        clock: clock.clone(),
    };
    let (first, state) = first_round(&one, "approve", json!({})).await;
    // Rotate: a new key becomes active, the old one verify-only for the grace.
    let kid = file.add_key().unwrap();
    file.activate(kid, NOW, tern_seal::DEFAULT_GRACE_SECS)
        .unwrap();
    let two = Harness {
        server: build(file.key_ring().unwrap(), &clock),
        clock: clock.clone(),
    };
    let answers = json!({"approval": accept(json!({"approved": true}))});
    assert_eq!(
        text(result(
            &two.send(&retry(&first, Some(&state), answers.clone()))
                .await
        )),
        "approved=true"
    );
    // After the grace period the old key no longer opens anything.
    clock.advance(tern_seal::DEFAULT_GRACE_SECS + 1);
    let (first, state) = first_round(&one, "approve", json!({})).await;
    assert_invalid_state(&two.send(&retry(&first, Some(&state), answers)).await);
}

#[tokio::test]
async fn answers_without_state_are_ignored_and_asked_again() {
    // SECURITY.md §3.8: an answer counts only with the state that asked it.
    let h = harness();
    let pre_answered = retry(
        &call("approve", json!({}), all_caps()),
        None,
        json!({"approval": accept(json!({"approved": true}))}),
    );
    let r = result(&h.send(&pre_answered).await);
    assert_eq!(r["resultType"], "input_required");
    assert!(r["inputRequests"]["approval"].is_object());
}

async fn endless(_ask: Ask, Resumed(n): Resumed<u32>) -> Result<ToolResult, Error> {
    let n = n.unwrap_or(0);
    if n >= 100 {
        return Ok(ToolResult::text("done"));
    }
    Err(Pending::state_only().with_continuation(&(n + 1)).into())
}

#[tokio::test]
async fn rounds_stop_at_the_ceiling() {
    // SECURITY.md §3.5: no interim result past the ceiling.
    let h = Harness::new(
        Server::builder("t", "1")
            .config(Config {
                max_rounds: 3,
                ..Config::default()
            })
            .tool("endless", "never finishes", endless)
            .tool_def(
                ToolDef::new("short", "lower route ceiling", endless).limits(RouteLimits {
                    max_rounds: Some(1),
                    ..RouteLimits::default()
                }),
            ),
    );
    let first = call("endless", json!({}), all_caps());
    let mut state: Option<Value> = None;
    for round in 1..=3 {
        let req = retry(&first, state.as_ref(), json!({}));
        let r = result(&h.send(&req).await);
        assert_eq!(r["resultType"], "input_required", "round {round}");
        assert!(r.get("inputRequests").is_none(), "a state-only round");
        state = Some(r["requestState"].clone());
    }
    let (code, e) = error(&h.send(&retry(&first, state.as_ref(), json!({}))).await);
    assert_eq!(
        (code, e["message"].as_str().unwrap()),
        (-32602, "too many input rounds")
    );
    // The lower of the route's and the server's ceiling applies.
    let short = call("short", json!({}), all_caps());
    let r = result(&h.send(&short).await);
    let (code, _) = error(
        &h.send(&retry(&short, Some(&r["requestState"]), json!({})))
            .await,
    );
    assert_eq!(code, -32602);
}

#[tokio::test]
async fn resumed_continuation_counts_rounds() {
    // The continuation travels sealed; the handler sees it typed.
    async fn counter(Resumed(n): Resumed<u32>, flow: Flow) -> Result<ToolResult, Error> {
        let n = n.unwrap_or(0);
        assert_eq!(
            u32::from(flow.round),
            n,
            "the round matches the continuation"
        );
        if n == 2 {
            return Ok(ToolResult::text(format!("after {n} rounds")));
        }
        Err(Pending::state_only().with_continuation(&(n + 1)).into())
    }
    let h = Harness::new(Server::builder("t", "1").tool("counter", "counts", counter));
    let first = call("counter", json!({}), json!({}));
    let mut state = None;
    let out = loop {
        let r = result(&h.send(&retry(&first, state.as_ref(), json!({}))).await);
        if r["resultType"] == "complete" {
            break r;
        }
        state = Some(r["requestState"].clone());
    };
    assert_eq!(text(out), "after 2 rounds");
}

#[tokio::test]
async fn earlier_answers_travel_in_the_state() {
    // MRTR-C7: the client answers only the latest round; the server keeps
    // the rest in requestState.
    async fn two_steps(ask: Ask) -> Result<ToolResult, Error> {
        let a = ask
            .form::<Approval>("first", "First?")?
            .accepted()
            .map(|a| a.approved);
        let b = ask
            .form::<Approval>("second", "Second?")?
            .accepted()
            .map(|a| a.approved);
        Ok(ToolResult::text(format!("{a:?} {b:?}")))
    }
    let h = Harness::new(Server::builder("t", "1").tool("two", "two rounds", two_steps));
    let first = call("two", json!({}), all_caps());
    let r1 = result(&h.send(&first).await);
    assert!(r1["inputRequests"].get("first").is_some());
    let r2 = result(
        &h.send(&retry(
            &first,
            Some(&r1["requestState"]),
            json!({"first": accept(json!({"approved": true}))}),
        ))
        .await,
    );
    assert_eq!(r2["resultType"], "input_required");
    assert!(
        r2["inputRequests"].get("second").is_some() && r2["inputRequests"].get("first").is_none()
    );
    assert_ne!(r1["requestState"], r2["requestState"]);
    let r3 = h
        .send(&retry(
            &first,
            Some(&r2["requestState"]),
            json!({"second": {"action": "decline"}}),
        ))
        .await;
    assert_eq!(text(result(&r3)), "Some(true) None");
}

/// A continuation that cannot be serialised: a map whose keys are not
/// strings.
async fn unsealable() -> Result<ToolResult, Error> {
    let by_pair: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
    Err(Pending::state_only().with_continuation(&by_pair).into())
}

#[tokio::test]
async fn a_continuation_that_does_not_serialise_fails_the_round_instead_of_vanishing() {
    let h = Harness::new(Server::builder("t", "1").tool("unsealable", "u", unsealable));
    let reply = h.send(&call("unsealable", json!({}), json!({}))).await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32603, "{e}");
    // The detail goes to the log under this id, not to the client.
    assert!(e["data"]["correlationId"].is_string(), "{e}");
    assert!(!e.to_string().contains("key must be a string"), "{e}");
}
