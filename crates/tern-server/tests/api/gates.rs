//! Capability gates (MRTR-S8, MRTR-S9, META-S10, ELIC-S3) and
//! authorization on every round (SECURITY.md §3.7).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use tern_server::{Ask, Either, Error, Need, OneOf, Server, ToolResult};
use tern_types::methods::Method;

use super::support::*;

/// The reference `deploy`: a required approval and optional roots, asked in
/// one round.
async fn deploy(ask: Ask) -> Result<ToolResult, Error> {
    let (approval, roots) = ask.all((
        Need::form::<Approval>("deployment_approval", "Approve deployment?"),
        Need::roots("workspace_roots").optional(),
    ))?;
    let n = roots.map_or(0, |r| r.len());
    Ok(ToolResult::text(format!(
        "{:?} with {n} root(s)",
        approval.accepted().map(|a| a.approved)
    )))
}

async fn either(ask: Ask) -> Result<ToolResult, Error> {
    let a = ask.all(OneOf(
        Need::form::<Approval>("ask_person", "Approve?"),
        Need::sample_text("ask_model", "Approve?", 5),
    ))?;
    Ok(ToolResult::text(match a {
        Either::First(_) => "person",
        Either::Second(_) => "model",
    }))
}

async fn login(ask: Ask) -> Result<ToolResult, Error> {
    ask.all(Need::url("login", "Sign in", "https://example.com/login"))?;
    Ok(ToolResult::text("consented"))
}

fn harness() -> Harness {
    Harness::new(
        Server::builder("t", "1")
            .tool("deploy", "d", deploy)
            .tool("either", "e", either)
            .tool("login", "l", login),
    )
}

#[tokio::test]
async fn an_undeclared_required_kind_is_32021_with_400() {
    // MRTR-S9 (b), META-S10: requiredCapabilities is an object of objects.
    let h = harness();
    let reply = h
        .send(&call(
            "deploy",
            json!({}),
            json!({"sampling": {}, "roots": {}}),
        ))
        .await;
    assert_eq!(reply.0, 400);
    let (code, e) = error(&reply);
    assert_eq!(code, -32021);
    assert_eq!(
        e["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
    );
    // URL mode needs elicitation.url; {"elicitation": {}} is form only
    // (ELIC-S3).
    let reply = h
        .send(&call("login", json!({}), json!({"elicitation": {}})))
        .await;
    assert_eq!(
        error(&reply).1["data"],
        json!({"requiredCapabilities": {"elicitation": {"url": {}}}})
    );
}

#[tokio::test]
async fn optional_needs_of_undeclared_kinds_are_skipped() {
    // MRTR-S9 (c).
    let h = harness();
    let first = call("deploy", json!({}), json!({"elicitation": {}}));
    let r = result(&h.send(&first).await);
    assert_eq!(
        r["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["deployment_approval"]
    );
    let done = h
        .send(&retry(
            &first,
            Some(&r["requestState"]),
            json!({"deployment_approval": accept(json!({"approved": true}))}),
        ))
        .await;
    assert_eq!(text(result(&done)), "Some(true) with 0 root(s)");
}

#[tokio::test]
async fn every_declared_need_goes_out_in_one_round() {
    // ARCHITECTURE.md: all missing requests of the round at once.
    let h = harness();
    let first = call("deploy", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    let keys: Vec<&String> = r["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["deployment_approval", "workspace_roots"]);
    assert_eq!(
        r["inputRequests"]["workspace_roots"],
        json!({"method": "roots/list", "params": {}})
    );
    // An optional need asked once and left unanswered reads as absent.
    let done = h
        .send(&retry(
            &first,
            Some(&r["requestState"]),
            json!({"deployment_approval": {"action": "cancel"}}),
        ))
        .await;
    assert_eq!(text(result(&done)), "None with 0 root(s)");
}

#[tokio::test]
async fn alternatives_use_a_declared_kind() {
    // MRTR-S9 (a), and the conformance capability-check probe.
    let h = harness();
    let r = result(
        &h.send(&call("either", json!({}), json!({"sampling": {}})))
            .await,
    );
    assert_eq!(
        r["inputRequests"]["ask_model"]["method"],
        "sampling/createMessage"
    );
    assert!(r["inputRequests"].get("ask_person").is_none());
    let r = result(&h.send(&call("either", json!({}), all_caps())).await);
    assert!(r["inputRequests"].get("ask_person").is_some());
    let reply = h.send(&call("either", json!({}), json!({}))).await;
    assert_eq!((reply.0, error(&reply).0), (400, -32021));
}

#[tokio::test]
async fn capabilities_are_read_from_each_round() {
    // META-S9, SECURITY.md §3.7: dropping elicitation between rounds.
    let h = harness();
    let first = call("deploy", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    let mut second = retry(
        &first,
        Some(&r["requestState"]),
        json!({"workspace_roots": {"roots": []}}),
    );
    second["params"]["_meta"] = meta(json!({"roots": {}}));
    assert_eq!(error(&h.send(&second).await).0, -32021);
}

#[tokio::test]
async fn authorization_runs_again_on_every_round() {
    // SECURITY.md §3.7: access revoked between rounds is refused even
    // though the state verifies.
    let revoked = Arc::new(AtomicBool::new(false));
    let flag = revoked.clone();
    let h = Harness::new(
        Server::builder("t", "1")
            .tool("deploy", "d", deploy)
            .authorize(move |_p, a| {
                if a.method == Method::ToolsCall && flag.load(Ordering::SeqCst) {
                    return Err(Error::application(-31003, "access revoked"));
                }
                Ok(())
            }),
    );
    let first = call("deploy", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    revoked.store(true, Ordering::SeqCst);
    let reply = h
        .send(&retry(
            &first,
            Some(&r["requestState"]),
            json!({"deployment_approval": accept(json!({"approved": true}))}),
        ))
        .await;
    let (code, e) = error(&reply);
    assert_eq!(
        (code, e["message"].as_str().unwrap()),
        (-31003, "access revoked")
    );
}
