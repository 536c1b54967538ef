//! Multi round-trip flows against a real `tern_server::Server`, back to
//! back in memory (MRTR-C1..C8, MRTR-C-A3, MRTR-C4).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tern_client::{
    BoxFuture, CallOptions, CancelToken, Client, InputContext, InputKinds, InputProvider,
    PendingCall, Refusal, Step,
};
use tern_server::{
    Ask, ElicitForm, Elicited, Error, Need, Pending, Progress, Resumed, Server, ToolResult,
};
use tern_types::{
    CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue,
    InputResponse, InputResponses, meta_keys,
};
use tokio::sync::Notify;

use super::support::{Canned, Direct, obj, text};

#[derive(Debug, Deserialize, ElicitForm)]
struct NameForm {
    /// Your name
    name: String,
}

async fn greet(ask: Ask) -> Result<ToolResult, Error> {
    match ask.form::<NameForm>("user_name", "What is your name?")? {
        Elicited::Accepted(f) => Ok(ToolResult::text(format!("Hello, {}!", f.name))),
        Elicited::Declined => Err(Error::tool("declined")),
        Elicited::Cancelled => Err(Error::tool("cancelled")),
    }
}

async fn everything(ask: Ask) -> Result<ToolResult, Error> {
    let (name, sample, roots) = ask.all((
        Need::form::<NameForm>("user_name", "Name?"),
        Need::sample_text("capital", "Capital of France?", 10),
        Need::roots("roots"),
    ))?;
    let name = name.accepted().map_or_else(String::new, |f| f.name);
    Ok(ToolResult::text(format!(
        "{name}/{}/{}",
        sample.text(),
        roots.len()
    )))
}

async fn polling(Resumed(n): Resumed<u32>) -> Result<ToolResult, Error> {
    let n = n.unwrap_or(0);
    let until = 2;
    if n >= until {
        return Ok(ToolResult::text(format!("ready after {n}")));
    }
    Err(Pending::state_only().with_continuation(&(n + 1)).into())
}

async fn forever(Resumed(n): Resumed<u32>) -> Result<ToolResult, Error> {
    Err(Pending::state_only()
        .with_continuation(&(n.unwrap_or(0) + 1))
        .into())
}

async fn ask_again(ask: Ask, Resumed(n): Resumed<u32>) -> Result<ToolResult, Error> {
    // Asks a new question every round: never finishes.
    let n = n.unwrap_or(0);
    let _ = ask.form::<NameForm>(&format!("q{n}"), "Again?")?;
    Err(Pending::state_only().with_continuation(&(n + 1)).into())
}

async fn with_progress(progress: Progress) -> ToolResult {
    progress.notify(1.0, Some(2.0), Some("half")).await;
    progress.notify(2.0, Some(2.0), Some("done")).await;
    ToolResult::text("finished")
}

fn server() -> (Direct, tern_server::clock::ManualClock) {
    Direct::new(
        Server::builder("flows", "1.0.0")
            .tool("greet", "Asks a name", greet)
            .tool("everything", "Asks three things", everything)
            .tool("polling", "State-only rounds", polling)
            .tool("forever", "Never finishes", forever)
            .tool("ask_again", "Asks every round", ask_again)
            .tool("progress", "Reports progress", with_progress),
    )
}

fn ada() -> Canned {
    Canned::accepting(&[("name", ElicitValue::String("Ada".into()))])
}

#[tokio::test]
async fn an_elicitation_round_is_answered_and_retried() {
    let (t, _) = server();
    let provider = ada();
    let asked = provider.asked.clone();
    let client = Client::builder(t.clone()).provider(provider).build();
    let r = client.call_tool("greet", obj(json!({}))).await.unwrap();
    assert_eq!(text(&r), "Hello, Ada!");
    assert!(!r.is_error());
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].key, "user_name");
    assert_eq!(asked[0].round, 1);
    assert_eq!(asked[0].target.as_deref(), Some("greet"));
    let seen = t.seen();
    assert_eq!(seen.len(), 2);
    // MRTR-C6: a new id; MRTR-C7: same method and params; MRTR-C8: fresh
    // _meta on the retry too.
    assert_ne!(seen[0].body["id"], seen[1].body["id"]);
    assert_eq!(seen[1].body["method"], "tools/call");
    assert_eq!(seen[1].params()["name"], "greet");
    assert_eq!(seen[1].params()["arguments"], json!({}));
    assert_eq!(
        seen[1].params()["inputResponses"],
        json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}})
    );
    assert!(seen[1].params()["requestState"].is_string());
    for s in &seen {
        let meta = &s.params()["_meta"];
        assert_eq!(meta[meta_keys::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(
            meta[meta_keys::CLIENT_CAPABILITIES],
            json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
        );
        assert_eq!(meta[meta_keys::CLIENT_INFO]["name"], "tern-client");
    }
    assert!(seen[0].params().get("requestState").is_none());
}

#[tokio::test]
async fn a_decline_is_an_answer_the_server_handles() {
    let (t, _) = server();
    let provider = Canned {
        decline: true,
        ..ada()
    };
    let client = Client::builder(t).provider(provider).build();
    let r = client.call_tool("greet", obj(json!({}))).await.unwrap();
    assert!(r.is_error());
    assert_eq!(text(&r), "declined");
}

/// Waits until all three kinds were asked before answering any: a
/// sequential driver would deadlock here.
struct Gathering {
    barrier: Arc<tokio::sync::Barrier>,
    inner: Canned,
}

impl InputProvider for Gathering {
    fn kinds(&self) -> InputKinds {
        self.inner.kinds()
    }
    fn elicit_form(
        &self,
        cx: InputContext,
        p: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async move {
            self.barrier.wait().await;
            self.inner.elicit_form(cx, p).await
        })
    }
    fn sample(
        &self,
        cx: InputContext,
        p: tern_types::CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<tern_types::CreateMessageResult, Refusal>> {
        Box::pin(async move {
            self.barrier.wait().await;
            self.inner.sample(cx, p).await
        })
    }
    fn list_roots(
        &self,
        cx: InputContext,
    ) -> BoxFuture<'_, Result<tern_types::ListRootsResult, Refusal>> {
        Box::pin(async move {
            self.barrier.wait().await;
            self.inner.list_roots(cx).await
        })
    }
}

#[tokio::test]
async fn every_entry_of_a_round_is_fulfilled_concurrently() {
    let (t, _) = server();
    let provider = Gathering {
        barrier: Arc::new(tokio::sync::Barrier::new(3)),
        inner: ada(),
    };
    let client = Client::builder(t.clone()).provider(provider).build();
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        client.call_tool("everything", obj(json!({}))),
    )
    .await
    .expect("no deadlock")
    .unwrap();
    assert_eq!(text(&r), "Ada/Paris/1");
    let seen = t.seen();
    let responses = &seen[1].params()["inputResponses"];
    let mut keys: Vec<&String> = responses.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["capital", "roots", "user_name"]);
    assert_eq!(responses["capital"]["model"], "test-model");
    assert_eq!(responses["roots"]["roots"][0]["uri"], "file:///work");
}

#[tokio::test]
async fn a_refused_sample_ends_the_call_locally_without_a_retry() {
    // MRTR-C4.
    let (t, _) = server();
    let provider = Canned {
        refuse_sampling: true,
        ..ada()
    };
    let client = Client::builder(t.clone()).provider(provider).build();
    let e = client
        .call_tool("everything", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_refused(), "{e}");
    assert!(!e.is_remote() && !e.is_protocol());
    assert_eq!(t.seen().len(), 1);
}

#[tokio::test]
async fn an_undeclared_kind_the_server_needs_is_its_minus_32021() {
    // The server's gate (MRTR-S9) answers -32021; the client reports it as
    // remote and a capability gap, never as a local decline.
    let (t, _) = server();
    let provider = Canned {
        kinds: Some(InputKinds::NONE.with_form()),
        ..ada()
    };
    let client = Client::builder(t).provider(provider).build();
    let e = client
        .call_tool("everything", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_remote() && e.is_capability(), "{e}");
    assert_eq!(e.remote_error().unwrap().code.0, -32021);
}

/// Signals when asked, then never answers.
struct Stuck(Arc<Notify>);

impl InputProvider for Stuck {
    fn kinds(&self) -> InputKinds {
        InputKinds::NONE.with_form()
    }
    fn elicit_form(
        &self,
        _cx: InputContext,
        _p: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        self.0.notify_one();
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn cancelling_stops_the_loop_while_input_is_pending() {
    let (t, _) = server();
    let asked = Arc::new(Notify::new());
    let client = Client::builder(t.clone())
        .provider(Stuck(asked.clone()))
        .build();
    let token = CancelToken::new();
    let opts = CallOptions::new().cancel(token.clone());
    let call =
        tokio::spawn(async move { client.call_tool_with("greet", obj(json!({})), &opts).await });
    asked.notified().await;
    token.cancel();
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    // No retry went out after the cancellation.
    assert_eq!(t.seen().len(), 1);
}

#[tokio::test]
async fn a_cancelled_token_sends_nothing() {
    let (t, _) = server();
    let client = Client::builder(t.clone()).provider(ada()).build();
    let token = CancelToken::new();
    token.cancel();
    let e = client
        .call_tool_with("greet", obj(json!({})), &CallOptions::new().cancel(token))
        .await
        .unwrap_err();
    assert!(e.is_cancelled());
    assert!(t.seen().is_empty());
}

#[tokio::test(start_paused = true)]
async fn state_only_rounds_back_off_then_finish() {
    let (t, _) = server();
    let client = Client::new(t.clone());
    let start = tern_testkit::runtime_now();
    let r = client.call_tool("polling", obj(json!({}))).await.unwrap();
    assert_eq!(text(&r), "ready after 2");
    let seen = t.seen();
    assert_eq!(seen.len(), 3);
    // MRTR-C5 and MRTR-C7: state only, no inputResponses.
    for s in &seen[1..] {
        assert!(s.params()["requestState"].is_string());
        assert!(s.params().get("inputResponses").is_none());
    }
    // 100 ms then 200 ms, each plus up to 50% jitter.
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_millis(450), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn more_than_three_state_only_rounds_is_a_round_limit() {
    let (t, _) = server();
    let client = Client::new(t.clone());
    let e = client
        .call_tool("forever", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_round_limit(), "{e}");
    // The first request plus three state-only retries.
    assert_eq!(t.seen().len(), 4);
}

#[tokio::test]
async fn the_round_ceiling_stops_a_flow_that_keeps_asking() {
    let (t, _) = server();
    let client = Client::builder(t.clone())
        .provider(ada())
        .max_rounds(3)
        .build();
    let e = client
        .call_tool("ask_again", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_round_limit(), "{e}");
    assert_eq!(t.seen().len(), 3);
}

#[tokio::test]
async fn a_pending_call_survives_serialisation_and_resumes_elsewhere() {
    let (t, _) = server();
    let first = Client::builder(t.clone()).provider(ada()).build();
    let Step::Pending(pending) = first.call_tool_once("greet", obj(json!({}))).await.unwrap()
    else {
        panic!("expected input_required");
    };
    assert_eq!(pending.method(), "tools/call");
    assert_eq!(pending.round(), 1);
    assert_eq!(pending.params()["name"], "greet");
    assert!(pending.input_requests().get("user_name").is_some());
    let wire = serde_json::to_string(&pending).unwrap();

    // Another process: a fresh client over the same server.
    let restored: PendingCall<CallToolResult> = serde_json::from_str(&wire).unwrap();
    assert_eq!(restored, pending);
    let second = Client::builder(t.clone()).provider(ada()).build();
    let mut responses = InputResponses::new();
    let accept = ElicitResult {
        action: ElicitAction::Accept,
        content: Some([("name".to_owned(), ElicitValue::String("Grace".into()))].into()),
    };
    responses.insert("user_name", &InputResponse::Elicit(accept));
    let done = second.resume(restored, responses).await.unwrap();
    let r = done.complete().expect("complete");
    assert_eq!(text(&r), "Hello, Grace!");
    let seen = t.seen();
    assert_eq!(
        seen[1].params()["requestState"].as_str(),
        pending.request_state()
    );
}

#[tokio::test]
async fn missing_answers_are_refused_before_anything_is_sent() {
    // MRTR-C3: every key answered; the server would only ask again.
    let (t, _) = server();
    let client = Client::new(t.clone());
    let pending = client
        .call_tool_once("everything", obj(json!({})))
        .await
        .unwrap_err();
    // NoInput declares nothing: the server refuses with -32021.
    assert!(pending.is_capability());

    let client = Client::builder(t.clone()).provider(ada()).build();
    let pending = client
        .call_tool_once("everything", obj(json!({})))
        .await
        .unwrap()
        .pending()
        .unwrap();
    let mut partial = InputResponses::new();
    partial.insert(
        "user_name",
        &InputResponse::Elicit(ElicitResult::new(ElicitAction::Decline)),
    );
    let before = t.seen().len();
    let e = client.resume(pending.clone(), partial).await.unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert_eq!(t.seen().len(), before);

    // finish() answers through the provider and completes.
    let r = client.finish(pending, &CallOptions::new()).await.unwrap();
    assert_eq!(text(&r), "Ada/Paris/1");
}

#[tokio::test]
async fn progress_notifications_reach_the_caller_with_a_fresh_token() {
    let (t, _) = server();
    let client = Client::new(t.clone());
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let opts = CallOptions::new().on_notification(move |n| {
        sink.lock()
            .unwrap()
            .push(Value::Object(n.params.clone().unwrap_or_default()));
    });
    let r = client
        .call_tool_with("progress", obj(json!({})), &opts)
        .await
        .unwrap();
    assert_eq!(text(&r), "finished");
    let token = t.seen()[0].params()["_meta"]["progressToken"].clone();
    assert!(token.is_string());
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0]["progressToken"], token);
    assert_eq!(got[1]["progress"], json!(2.0));
}

#[tokio::test(start_paused = true)]
async fn the_whole_flow_has_a_deadline() {
    let (t, _) = server();
    let client = Client::builder(t)
        .provider(Stuck(Arc::new(Notify::new())))
        .build();
    let e = client
        .call_tool_with(
            "greet",
            obj(json!({})),
            &CallOptions::new().timeout(Duration::from_secs(2)),
        )
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
}

#[tokio::test]
async fn an_expired_state_is_the_servers_error_and_the_flow_is_not_restarted() {
    // MRTR-E-A1: the client reports the -32602 and sends nothing else.
    let (t, clock) = server();
    let client = Client::builder(t.clone()).provider(ada()).build();
    let pending = client
        .call_tool_once("greet", obj(json!({})))
        .await
        .unwrap()
        .pending()
        .unwrap();
    let responses = client.answer(&pending).await.unwrap();
    clock.advance(3600 * 2);
    let e = client.resume(pending, responses).await.unwrap_err();
    assert!(e.is_remote(), "{e}");
    assert_eq!(e.remote_error().unwrap().code.0, -32602);
    assert_eq!(t.seen().len(), 2);
}

#[tokio::test]
async fn the_future_of_a_call_stays_small_wherever_it_is_held() {
    // A caller's future for a call is moved (into a task, a box, a parent
    // future) and copied whole each time. Its rounds live on the heap, so it
    // is a few hundred bytes; before, one round of `tools/call` was 8 KiB.
    let (t, _) = server();
    let client = Client::new(t);
    let opts = CallOptions::default();
    let sizes = [
        (
            "call_tool_with",
            size_of_val(&client.call_tool_with("greet", obj(json!({})), &opts)),
        ),
        (
            "start_tool",
            size_of_val(&client.start_tool("greet", obj(json!({})), &opts)),
        ),
        (
            "call_tool_once_with",
            size_of_val(&client.call_tool_once_with("greet", obj(json!({})), &opts)),
        ),
        (
            "relay::once",
            size_of_val(&tern_client::relay::once::<CallToolResult>(
                &client,
                obj(json!({})),
                &opts,
            )),
        ),
        (
            "get_prompt_with",
            size_of_val(&client.get_prompt_with("p", None, &opts)),
        ),
        (
            "read_resource_with",
            size_of_val(&client.read_resource_with("r:", &opts)),
        ),
    ];
    for (call, size) in sizes {
        assert!(size <= 1024, "{call}: {size} bytes");
    }
}
