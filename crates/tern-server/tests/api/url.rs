//! URL-mode elicitation (ELIC-10, ELIC-S15): accept is consent, not
//! completion; the server keeps its own correlation id (the flow id) and
//! asks again while the out-of-band step is unfinished, bounded by the
//! round ceiling.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tern_proto::Principal;
use tern_server::{Ask, Authenticated, Elicited, Error, Flow, Need, Server, State, ToolResult};

use super::support::*;

#[derive(Default)]
struct Logins {
    completed: Mutex<HashSet<[u8; 16]>>,
    seen: Mutex<Vec<[u8; 16]>>,
}

async fn login(
    ask: Ask,
    flow: Flow,
    State(logins): State<Arc<Logins>>,
) -> Result<ToolResult, Error> {
    logins.seen.lock().unwrap().push(flow.id);
    let hex: String = flow.id.iter().map(|b| format!("{b:02x}")).collect();
    let url = format!("https://login.example/{hex}");
    let need = || Need::url("login", "Sign in to continue", &url);
    match ask.all(need())? {
        Elicited::Accepted(()) if logins.completed.lock().unwrap().contains(&flow.id) => {
            Ok(ToolResult::text("signed in"))
        }
        Elicited::Accepted(()) => Err(ask.again(need())),
        Elicited::Declined | Elicited::Cancelled => Err(Error::tool("sign-in refused")),
    }
}

#[tokio::test]
async fn url_flows_ask_again_until_the_interaction_completes() {
    let logins = Arc::new(Logins::default());
    let h = Harness::new(
        Server::builder("t", "1")
            .state(logins.clone())
            .tool("login", "signs in", login),
    );
    let first = call("login", json!({}), json!({"elicitation": {"url": {}}}));
    let r1 = result(&h.send(&first).await);
    let asked = r1["inputRequests"]["login"].clone();
    assert_eq!(asked["params"]["mode"], "url");
    let consent = json!({"login": {"action": "accept"}});
    // Consent, but the person has not finished: the same request again.
    let r2 = result(
        &h.send(&retry(&first, Some(&r1["requestState"]), consent.clone()))
            .await,
    );
    assert_eq!(r2["resultType"], "input_required");
    assert_eq!(r2["inputRequests"]["login"], asked);
    // The flow id is constant across rounds: the server's correlation id.
    let seen = logins.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1]);
    // The page marks the flow complete; the next retry finishes.
    logins.completed.lock().unwrap().insert(seen[0]);
    let r3 = h
        .send(&retry(&first, Some(&r2["requestState"]), consent.clone()))
        .await;
    assert_eq!(text(result(&r3)), "signed in");
    // A later decline is not masked by the earlier consent.
    let r4 = h
        .send(&retry(
            &first,
            Some(&r2["requestState"]),
            json!({"login": {"action": "decline"}}),
        ))
        .await;
    assert_eq!(result(&r4)["isError"], true);
}

#[tokio::test]
async fn anonymous_callers_are_refused_where_a_principal_is_required() {
    // SECURITY.md §3.6.
    async fn mine(Authenticated(p): Authenticated) -> ToolResult {
        ToolResult::text(format!("{p:?}"))
    }
    let h = Harness::new(Server::builder("t", "1").tool("mine", "needs a caller", mine));
    let (code, _) = error(&h.send(&call("mine", json!({}), json!({}))).await);
    assert_eq!(code, -31401);
    let alice = Principal::Static {
        secret_id: "alice".into(),
    };
    let r = h.send_as(alice, &call("mine", json!({}), json!({}))).await;
    assert!(text(result(&r)).contains("alice"));
}
