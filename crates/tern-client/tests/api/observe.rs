//! The driver's per-round observer, per-call options on every round, and a
//! panicking input provider (MRTR-C-A3).

use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::json;
use tern_client::{CallOptions, Client, RoundEvent};
use tern_server::{Ask, ElicitForm, Elicited, Error, Server, ToolResult};
use tern_testkit::provider::{Ada, Panicky};

use super::support::{Direct, obj, text};

#[derive(Debug, Deserialize, ElicitForm)]
struct NameForm {
    /// Your name
    name: String,
}

async fn greet(ask: Ask) -> Result<ToolResult, Error> {
    match ask.form::<NameForm>("user_name", "What is your name?")? {
        Elicited::Accepted(f) => Ok(ToolResult::text(format!("Hello, {}!", f.name))),
        _ => Err(Error::tool("no name")),
    }
}

fn server() -> Direct {
    Direct::new(Server::builder("t", "1").tool("greet", "greets", greet)).0
}

fn record(log: &Arc<Mutex<Vec<String>>>) -> CallOptions {
    let log = log.clone();
    CallOptions::new().observe(move |e| {
        let line = match e {
            RoundEvent::Sending { round, method } => format!("send {round} {method}"),
            RoundEvent::InputRequired {
                round,
                input_requests,
                request_state,
            } => format!(
                "interim {round} {:?} state={}",
                input_requests.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                request_state.is_some()
            ),
            RoundEvent::Answered { round, responses } => {
                format!(
                    "answered {round} {:?}",
                    responses.keys().collect::<Vec<_>>()
                )
            }
            RoundEvent::Complete { round } => format!("complete {round}"),
            _ => "other".into(),
        };
        log.lock().unwrap().push(line);
    })
}

#[tokio::test]
async fn the_observer_sees_every_round_in_order() {
    let client = Client::builder(server()).provider(Ada).build();
    let log = Arc::default();
    let r = client
        .call_tool_with("greet", obj(json!({})), &record(&log))
        .await
        .unwrap();
    assert_eq!(text(&r), "Hello, Ada!");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "send 1 tools/call",
            "interim 1 [\"user_name\"] state=true",
            "answered 1 [\"user_name\"]",
            "send 2 tools/call",
            "complete 2",
        ]
    );
}

#[tokio::test]
async fn the_call_s_round_limit_applies_on_resume_too() {
    let client = Client::builder(server()).provider(Ada).build();
    let opts = CallOptions::new().max_rounds(1);
    let e = client
        .call_tool_with("greet", obj(json!({})), &opts)
        .await
        .unwrap_err();
    assert!(e.is_round_limit(), "{e}");
    let pending = client
        .call_tool_once_with("greet", obj(json!({})), &opts)
        .await
        .unwrap()
        .pending()
        .unwrap();
    let answers = client.answer(&pending).await.unwrap();
    let e = client
        .resume_with(pending, answers, &opts)
        .await
        .unwrap_err();
    assert!(e.is_round_limit(), "{e}");
}

#[tokio::test]
async fn a_cancelled_token_stops_a_resume() {
    let client = Client::builder(server()).provider(Ada).build();
    let pending = client
        .call_tool_once("greet", obj(json!({})))
        .await
        .unwrap()
        .pending()
        .unwrap();
    let answers = client.answer(&pending).await.unwrap();
    let token = tern_client::CancelToken::new();
    token.cancel();
    let e = client
        .resume_with(pending, answers, &CallOptions::new().cancel(token))
        .await
        .unwrap_err();
    assert!(e.is_cancelled(), "{e}");
}

#[tokio::test]
async fn a_panicking_provider_ends_its_call_with_an_error() {
    let client = Client::builder(server()).provider(Panicky).build();
    let e = client.call_tool("greet", obj(json!({}))).await.unwrap_err();
    assert!(e.is_refused(), "{e}");
    assert!(e.to_string().contains("user_name"), "{e}");
    // The client (and the task) are still usable.
    let again = Client::builder(server()).provider(Ada).build();
    assert_eq!(
        text(&again.call_tool("greet", obj(json!({}))).await.unwrap()),
        "Hello, Ada!"
    );
}
