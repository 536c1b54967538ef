//! A hostile 2025-11-25 server against the client's call budget: a server
//! that asks for input a thousand times in one call gets the round ceiling
//! (MRTR-C-A3), a flood of pings gets `MAX_OTHER_SERVER_REQUESTS`, and a
//! `-32042` listing more URLs than an interim result may carry is refused
//! before anything is shown (SECURITY.md §3.10). A server that also
//! answers `input_required` gets no fresh budget with each retry: the call
//! has one.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tern_client::{
    BoxFuture, CallOptions, Client, EraPolicy, Error, Frames, MAX_INPUT_REQUESTS,
    MAX_OTHER_SERVER_REQUESTS, OutboundNotification, OutboundRequest, OutboundResponse, Transport,
};
use tern_proto::decode::{Limits, Message, decode_message};
use tern_types::ElicitValue;
use tokio::sync::mpsc;

use super::support::{Canned, obj, text};

fn message(v: &Value) -> Message {
    decode_message(&serde_json::to_vec(v).unwrap(), &Limits::default()).unwrap()
}

/// A legacy server that answers `initialize`, then meets every
/// `tools/call` with up to `times` requests of its own (`ask`), one at a
/// time, each waiting for the client's answer; then the result, or with
/// `interim`, an `input_required` result asking for the roots again.
#[derive(Clone)]
struct Asking {
    ask: Value,
    times: usize,
    interim: bool,
    /// The client's answers, in order.
    answers: Arc<Mutex<Vec<Value>>>,
    /// The `inputResponses` of each `tools/call`, in order.
    retried_with: Arc<Mutex<Vec<Value>>>,
    inbox: Arc<Mutex<Option<mpsc::UnboundedSender<()>>>>,
}

impl Asking {
    fn new(ask: Value, times: usize) -> Self {
        Asking {
            ask,
            times,
            interim: false,
            answers: Arc::default(),
            retried_with: Arc::default(),
            inbox: Arc::default(),
        }
    }

    fn then_input_required(mut self) -> Self {
        self.interim = true;
        self
    }

    fn answers(&self) -> Vec<Value> {
        self.answers.lock().unwrap().clone()
    }
}

impl Transport for Asking {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let id = body["id"].clone();
        Box::pin(async move {
            if body["method"] == "initialize" {
                return Ok(Frames::ready(message(&json!({"jsonrpc": "2.0", "id": id,
                    "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "asking", "version": "1"}}}))));
            }
            if let Some(responses) = body["params"].get("inputResponses") {
                self.retried_with.lock().unwrap().push(responses.clone());
            }
            let (tx, rx) = mpsc::channel(4);
            let (in_tx, mut in_rx) = mpsc::unbounded_channel();
            *self.inbox.lock().unwrap() = Some(in_tx);
            let (ask, times, interim) = (self.ask.clone(), self.times, self.interim);
            tokio::spawn(async move {
                for n in 0..times {
                    let mut r = ask.clone();
                    r["jsonrpc"] = json!("2.0");
                    r["id"] = json!(format!("s{n}"));
                    if tx.send(Ok(message(&r))).await.is_err() {
                        return;
                    }
                    // The client answers, or gives up on the call; after a
                    // refusal it is gone, though a hostile server would ask
                    // again all the same.
                    if in_rx.recv().await.is_none() {
                        return;
                    }
                }
                let result = if interim {
                    json!({"resultType": "input_required",
                        "inputRequests": {"again": {"method": "roots/list"}}})
                } else {
                    json!({"content": [{"type": "text", "text": "done"}]})
                };
                let done = json!({"jsonrpc": "2.0", "id": id, "result": result});
                let _ = tx.send(Ok(message(&done))).await;
            });
            Ok(Frames::new(rx))
        })
    }

    fn notify(&self, _n: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    fn respond(&self, response: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        self.answers.lock().unwrap().push(body);
        if let Some(inbox) = self.inbox.lock().unwrap().as_ref() {
            let _ = inbox.send(());
        }
        Box::pin(async { Ok(()) })
    }
}

fn client(t: &Asking, provider: Canned) -> Client {
    Client::builder(t.clone())
        .era(EraPolicy::Legacy)
        .provider(provider)
        .build()
}

/// Calls `list`, which the server's questions must make fail.
async fn list_refused(t: &Asking, provider: &Canned) -> Error {
    client(t, provider.clone())
        .call_tool("list", obj(json!({})))
        .await
        .unwrap_err()
}

/// The round of each question the provider was asked, in order.
fn rounds_asked(provider: &Canned) -> Vec<u32> {
    let asked = provider.asked.lock().unwrap();
    asked.iter().map(|cx| cx.round).collect()
}

/// The client's answer to the question past the ceiling: the error the
/// call ended with, sent to the server as -32603.
fn refusal_of(answer: &Value, e: &Error) {
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(answer["error"]["message"], e.to_string());
}

#[tokio::test]
async fn a_thousand_roots_requests_get_the_round_ceiling() {
    // MRTR-C-A3: 10 rounds by default, the call's first request being the
    // first, so 9 of the server's requests are answered, as a modern flow
    // answers 9 interim results.
    let t = Asking::new(json!({"method": "roots/list"}), 1000);
    let provider = Canned::default();
    let e = list_refused(&t, &provider).await;
    assert!(e.is_round_limit(), "{e}");
    assert_eq!(
        e.to_string(),
        "round limit: the flow needs more than 10 rounds: the server's roots/list request during tools/call would start round 11"
    );
    let answers = t.answers();
    assert_eq!(answers.len(), 10, "nine answers, then the refusal");
    for a in &answers[..9] {
        assert_eq!(a["result"], json!({"roots": [{"uri": "file:///work"}]}));
    }
    refusal_of(&answers[9], &e);
    assert_eq!(rounds_asked(&provider), (1..=9).collect::<Vec<_>>());
}

#[tokio::test]
async fn retries_after_input_required_share_the_call_s_budget() {
    // MRTR-C-A3, SECURITY.md: one budget per call. Four questions on the
    // first request (rounds 1 to 4), its interim result (round 5), four on
    // the retry (rounds 6 to 9), and the next interim result would start
    // round 11: nine answers in all, as a modern flow gets.
    let t = Asking::new(json!({"method": "roots/list"}), 4).then_input_required();
    let provider = Canned::default();
    let e = list_refused(&t, &provider).await;
    assert_eq!(
        e.to_string(),
        "round limit: the flow needs more than 10 rounds"
    );
    let answers = t.answers();
    assert_eq!(answers.len(), 8);
    assert!(answers.iter().all(|a| a["result"]["roots"].is_array()));
    let retried_with = t.retried_with.lock().unwrap().clone();
    assert_eq!(
        retried_with,
        [json!({"again": {"roots": [{"uri": "file:///work"}]}})]
    );
    assert_eq!(rounds_asked(&provider), (1..=9).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_retry_s_questions_past_the_call_s_budget_are_refused() {
    // Five questions (rounds 1 to 5), the interim result (6), three more
    // on the retry (7 to 9); the fourth is refused: nine answers in all.
    let t = Asking::new(json!({"method": "roots/list"}), 5).then_input_required();
    let provider = Canned::default();
    let e = list_refused(&t, &provider).await;
    assert!(e.is_round_limit(), "{e}");
    assert_eq!(
        e.to_string(),
        "round limit: the flow needs more than 10 rounds: the server's roots/list request during tools/call would start round 11"
    );
    let answers = t.answers();
    assert_eq!(answers.len(), 9, "eight answers, then the refusal");
    assert!(answers[..8].iter().all(|a| a["result"]["roots"].is_array()));
    refusal_of(&answers[8], &e);
    assert_eq!(t.retried_with.lock().unwrap().len(), 1);
    assert_eq!(provider.asked.lock().unwrap().len(), 9);
}

#[tokio::test]
async fn the_ceiling_of_the_call_options_applies_to_forms_too() {
    let form = json!({"method": "elicitation/create", "params": {"mode": "form",
        "message": "Again?", "requestedSchema": {"type": "object",
            "properties": {"ok": {"type": "boolean"}}}}});
    let t = Asking::new(form, 1000);
    let provider = Canned::accepting(&[("ok", ElicitValue::Bool(true))]);
    let c = client(&t, provider.clone());
    let e = c
        .call_tool_with("again", obj(json!({})), &CallOptions::new().max_rounds(3))
        .await
        .unwrap_err();
    assert!(e.is_round_limit(), "{e}");
    assert!(
        e.to_string()
            .contains("the flow needs more than 3 rounds: the server's elicitation/create request"),
        "{e}"
    );
    assert_eq!(provider.asked.lock().unwrap().len(), 2);
    let answers = t.answers();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["result"]["action"], "accept");
    assert_eq!(answers[1]["result"]["content"], json!({"ok": true}));
    assert_eq!(answers[2]["error"]["code"], -32603);
}

#[tokio::test]
async fn a_server_within_the_ceiling_completes() {
    let t = Asking::new(json!({"method": "roots/list"}), 9);
    let provider = Canned::default();
    let r = client(&t, provider.clone())
        .call_tool("list", obj(json!({})))
        .await
        .unwrap();
    assert_eq!(text(&r), "done");
    assert_eq!(t.answers().len(), 9);
    // Each question comes with what it belongs to: the call, its round,
    // and the identity the server gave in `initialize`.
    let asked = provider.asked.lock().unwrap();
    assert_eq!(asked.len(), 9);
    for (n, cx) in asked.iter().enumerate() {
        assert_eq!(cx.method, "tools/call");
        assert_eq!(cx.key, "roots/list");
        assert_eq!(cx.round, u32::try_from(n + 1).unwrap());
        assert_eq!(
            cx.server_info,
            Some(json!({"name": "asking", "version": "1"}))
        );
    }
}

#[tokio::test]
async fn a_flood_of_pings_ends_the_call() {
    let t = Asking::new(json!({"method": "ping"}), 100_000);
    let e = client(&t, Canned::default())
        .call_tool("slow", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_protocol() && !e.is_round_limit(), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "protocol violation by the server: the server sent more than {MAX_OTHER_SERVER_REQUESTS} requests other than for input during tools/call (the last: ping request)"
        )
    );
    let answers = t.answers();
    assert_eq!(answers.len(), MAX_OTHER_SERVER_REQUESTS as usize + 1);
    assert!(answers[..100].iter().all(|a| a["result"] == json!({})));
    assert_eq!(answers[100]["error"]["code"], -32603);
}

#[tokio::test]
async fn undeclared_requests_count_against_the_ceiling() {
    // Sampling is not declared: each request is answered -32601 (MRTR-C-A2)
    // and still counts, so refusing is no way around the ceiling.
    let ask = json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10}});
    let t = Asking::new(ask, 1000);
    let provider = Canned {
        kinds: Some(tern_client::InputKinds::NONE.with_roots()),
        ..Canned::default()
    };
    let e = client(&t, provider.clone())
        .call_tool("s", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_round_limit(), "{e}");
    let answers = t.answers();
    assert_eq!(answers.len(), 10);
    assert!(answers[..9].iter().all(|a| a["error"]["code"] == -32601));
    assert!(provider.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_32042_listing_too_many_urls_is_refused_unseen() {
    let urls: Vec<Value> = (0..=MAX_INPUT_REQUESTS)
        .map(|i| {
            json!({"mode": "url", "elicitationId": format!("e{i}"),
            "url": format!("https://auth.example.com/{i}"), "message": "Sign in"})
        })
        .collect();
    let t = super::support::Scripted::new(move |body, _| match body["method"].as_str() {
        Some("initialize") => {
            super::support::Answer::Result(json!({"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}))
        }
        _ => super::support::Answer::Error(json!({"code": -32042, "message": "sign in",
            "data": {"elicitations": urls}})),
    });
    let provider = Canned {
        kinds: Some(tern_client::InputKinds::NONE.with_url()),
        ..Canned::default()
    };
    let e = Client::builder(t.clone())
        .era(EraPolicy::Legacy)
        .provider(provider.clone())
        .build()
        .call_tool("sync", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_protocol(), "{e}");
    assert_eq!(
        e.to_string(),
        "protocol violation by the server: a -32042 error listing 17 elicitations exceeds 16"
    );
    assert!(provider.asked.lock().unwrap().is_empty());
}

/// A legacy server that answers `initialize`, then meets `tools/call` with
/// a progress notification every 400 ms and never a response.
struct Trickling;

impl Transport for Trickling {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        Box::pin(async move {
            if body["method"] == "initialize" {
                return Ok(Frames::ready(message(
                    &json!({"jsonrpc": "2.0", "id": body["id"],
                    "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "trickling", "version": "1"}}}),
                )));
            }
            let (tx, rx) = mpsc::channel(4);
            tokio::spawn(async move {
                for n in 0.. {
                    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
                    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": "p", "progress": n}});
                    if tx.send(Ok(message(&note))).await.is_err() {
                        return;
                    }
                }
            });
            Ok(Frames::new(rx))
        })
    }

    fn notify(&self, _n: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    fn respond(&self, _r: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_trickles_notifications_gets_the_request_timeout() {
    // CANC-7: the request timeout bounds the server's time in total, in
    // both eras; a notification does not restart it.
    let started = tern_testkit::runtime_now();
    let e = Client::builder(Trickling)
        .era(EraPolicy::Legacy)
        .request_timeout(std::time::Duration::from_secs(2))
        .build()
        .call_tool("slow", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert_eq!(
        e.to_string(),
        "timed out: no response to tools/call within 2s"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_person_slower_than_the_request_timeout_is_not_hurried() {
    // The time spent answering the server's request is the person's, not
    // the server's: a 5 s answer within a 1 s request timeout completes.
    let t = Asking::new(json!({"method": "roots/list"}), 1);
    let provider = Canned {
        think: std::time::Duration::from_secs(5),
        ..Canned::default()
    };
    let r = Client::builder(t.clone())
        .era(EraPolicy::Legacy)
        .provider(provider.clone())
        .request_timeout(std::time::Duration::from_secs(1))
        .build()
        .call_tool("list", obj(json!({})))
        .await
        .unwrap();
    assert_eq!(text(&r), "done");
    assert_eq!(
        t.answers()[0]["result"],
        json!({"roots": [{"uri": "file:///work"}]})
    );
}
