//! What a client makes the server hold or do, bounded on every road its
//! answers take (SECURITY.md "Budgets"): a retry's `inputResponses`, a
//! 2025-11-25 session's responses, `tasks/update`; what a session may
//! subscribe to; the rounds of a task; and which side a refusal blames.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tern_server::{
    Ask, Config, ElicitForm, Elicited, Error, Need, Server, Task, TaskLimits, TaskScope,
    TaskSupport, ToolDef, ToolResult,
};

use super::legacy::{Legacy, all_legacy_caps, deploy, requests};
use super::support::{Harness, accept, all_caps, call, error, result, retry};
use super::tasks::{alice, answer, asked_keys, create, get, wait_for};

/// More than `Config::max_input_bytes` plus `max_sample_bytes` (256 KiB +
/// 1 MiB) of answer.
fn oversized() -> String {
    "x".repeat(1400 * 1024)
}

/// SECURITY.md "2025-11-25 sessions": a session holds at most 128
/// resource subscriptions, each URI at most 2,048 bytes; past either,
/// -32602 and nothing more is held.
#[tokio::test]
async fn a_session_holds_a_bounded_number_of_bounded_subscriptions() {
    let l = Legacy::with(Server::builder("t", "1").tool("deploy", "asks", deploy));
    l.initialize(all_legacy_caps()).await;
    let subscribe = |id: usize, uri: String| {
        json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
               "params": {"uri": uri}})
    };
    for i in 0..128 {
        let r = l.send(&subscribe(i, format!("test://r/{i}"))).await;
        assert_eq!(r["result"], json!({}), "{r}");
    }
    let r = l.send(&subscribe(200, "test://r/128".into())).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(
        r["error"]["message"],
        "this session already holds 128 subscriptions"
    );
    assert!(!l.session.is_subscribed("test://r/128"));
    // One already held may be asked for again; one let go makes room.
    let again = l.send(&subscribe(201, "test://r/0".into())).await;
    assert_eq!(again["result"], json!({}), "{again}");
    let un = l
        .send(
            &json!({"jsonrpc": "2.0", "id": 202, "method": "resources/unsubscribe",
                       "params": {"uri": "test://r/0"}}),
        )
        .await;
    assert_eq!(un["result"], json!({}), "{un}");
    let r = l.send(&subscribe(203, "test://r/128".into())).await;
    assert_eq!(r["result"], json!({}), "{r}");
    assert!(l.session.is_subscribed("test://r/128"));
    // A URI past 2,048 bytes is refused whatever room is left.
    let long = format!("test://{}", "u".repeat(2048));
    let r = l.send(&subscribe(204, long.clone())).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "uri is longer than 2048 bytes");
    assert!(!l.session.is_subscribed(&long));
}

/// SECURITY.md "Every request (both eras)": a session client's responses
/// are a round's answers and get the `inputResponses` budget; past it the
/// call ends with -32602 and the handler never sees them.
#[tokio::test]
async fn a_session_clients_oversized_answer_ends_the_call_with_32602() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = runs.clone();
    let l = Legacy::with(
        Server::builder("t", "1").tool("deploy", "asks", move |ask: Ask| {
            seen.fetch_add(1, Ordering::SeqCst);
            deploy(ask)
        }),
    );
    l.initialize(all_legacy_caps()).await;
    let (mut rx, reply) = l.call("deploy");
    let asked = requests(&mut rx, 2).await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[1]["id"],
                     "result": {"roots": [{"uri": "file:///work"}]}}))
        .await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result":
                     {"action": "accept", "content": {"approved": true, "junk": oversized()}}}))
        .await;
    let reply = reply.await.unwrap();
    assert_eq!(reply["error"]["code"], -32602, "{}", reply["error"]);
    assert_eq!(reply["error"]["message"], "inputResponses is too large");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the handler ran once, unanswered"
    );
}

/// A tool that asks "first", then "second", in two rounds.
async fn two_questions(ask: Ask) -> Result<ToolResult, Error> {
    ask.confirm("first", "First?")?;
    ask.confirm("second", "Second?")?;
    Ok(ToolResult::text("both answered"))
}

/// SECURITY.md "Every request": one flow's lifetime bounds a 2025-11-25
/// call too, however many rounds it asks: each round's wait for the client
/// ends at the flow's deadline, not a full answer timeout past it.
#[tokio::test(start_paused = true)]
async fn a_session_call_ends_at_its_flows_lifetime_whatever_its_rounds() {
    let config = Config {
        flow_ttl: Duration::from_secs(100),
        client_answer_timeout: Duration::from_secs(60),
        ..Config::default()
    };
    let l = Legacy::with(
        Server::builder("t", "1")
            .tool("two", "asks twice", two_questions)
            .config(config),
    );
    l.initialize(all_legacy_caps()).await;
    let started = tern_testkit::runtime_now();
    let (mut rx, reply) = l.call("two");
    let asked = requests(&mut rx, 1).await;
    assert_eq!(asked[0]["params"]["message"], "First?");
    tokio::time::sleep(Duration::from_secs(50)).await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"],
                     "result": {"action": "accept", "content": {"confirm": true}}}))
        .await;
    let asked = requests(&mut rx, 1).await;
    assert_eq!(asked[0]["params"]["message"], "Second?");
    let reply = reply.await.unwrap();
    assert_eq!(reply["error"]["code"], -31004, "{reply}");
    assert_eq!(reply["error"]["data"]["limit"], "client_answer", "{reply}");
    assert_eq!(
        reply["error"]["message"],
        "the client did not answer elicitation/create in time"
    );
    // The flow's 100 s, not the 50 s + 60 s the second round's own wait
    // would have given.
    assert_eq!(started.elapsed().as_secs(), 100);
}

/// SECURITY.md "Tasks": `tasks/update` gets the same `inputResponses`
/// budget as a retry; past it, -32602 and the question stays open.
#[tokio::test]
async fn an_oversized_task_update_is_refused_and_its_question_stays_open() {
    let starts = Arc::new(AtomicUsize::new(0));
    let h =
        Harness::new(Server::builder("tasks", "1").tool_def(super::tasks::approval_tool(starts)));
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    let reply = answer(
        &h,
        &id,
        json!({"approve": {"action": "decline", "junk": oversized()}}),
    )
    .await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["message"], "inputResponses is too large");
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["approve"]);
}

/// SECURITY.md "Tasks": an answer that is no sample gets 256 KiB, on
/// `tasks/update` as on every road: at the limit it is taken, one byte
/// past it (well within the 1 MiB more that samples get) it is refused and
/// the question stays open.
#[tokio::test]
async fn a_task_update_answer_is_held_to_256_kib_unless_it_is_a_sample() {
    let starts = Arc::new(AtomicUsize::new(0));
    let h =
        Harness::new(Server::builder("tasks", "1").tool_def(super::tasks::approval_tool(starts)));
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    // "approve" and `{"action":"decline","junk":"…"}`: 7 + 30 bytes + junk.
    let decline = |junk: usize| json!({"approve": {"action": "decline", "junk": "x".repeat(junk)}});
    let at_limit = 256 * 1024 - 37;
    let (code, e) = error(&answer(&h, &id, decline(at_limit + 1)).await);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["message"], "inputResponses is too large");
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["approve"]);
    result(&answer(&h, &id, decline(at_limit)).await);
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "not approved", "{t}");
}

/// A task whose body asks a new question after every answer, for ever.
fn asks_forever(asked: Arc<AtomicUsize>) -> ToolDef {
    let handler = move |task: Task| {
        let asked = asked.clone();
        async move {
            task.run(move |scope: TaskScope| async move {
                for i in 0.. {
                    asked.fetch_add(1, Ordering::SeqCst);
                    scope.ask(Need::confirm(&format!("q{i}"), "Again?")).await?;
                }
                Ok::<_, Error>(ToolResult::text("never"))
            })
        }
    };
    ToolDef::new("forever", "asks for ever", handler).task(TaskSupport::Required)
}

/// SECURITY.md "Tasks": input rounds within a task are bounded by the
/// route's ceiling (8) for the whole task, not for each question its body
/// asks: the ninth round fails the task.
#[tokio::test]
async fn a_tasks_rounds_are_bounded_across_all_its_questions() {
    let asked = Arc::new(AtomicUsize::new(0));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(asks_forever(asked.clone())));
    let id = create(&h, alice(), "forever").await;
    for i in 0..8 {
        let t = wait_for(&h, alice(), &id, "input_required").await;
        let key = format!("q{i}");
        assert_eq!(asked_keys(&t), [key.as_str()], "{t}");
        let ack = answer(&h, &id, json!({ key: accept(json!({"confirm": true})) })).await;
        result(&ack);
    }
    let t = wait_for(&h, alice(), &id, "failed").await;
    assert_eq!(t["error"]["message"], "too many input rounds", "{t}");
    assert_eq!(asked.load(Ordering::SeqCst), 9);
    assert_eq!(h.server.metrics().tasks_ended("failed"), 1);
}

#[derive(Debug, Deserialize, ElicitForm)]
struct Note {
    /// Anything to add?
    text: String,
}

/// A tool that asks a free-text note, then a confirmation: the note is
/// carried in the second round's state.
async fn note_then_confirm(ask: Ask) -> Result<ToolResult, Error> {
    let note = match ask.form::<Note>("note", "Add a note")? {
        Elicited::Accepted(n) => n.text,
        _ => String::new(),
    };
    ask.confirm("sure", "Sure?")?;
    Ok(ToolResult::text(format!("noted {} bytes", note.len())))
}

/// SECURITY.md "Every request": the answers a state carries are the
/// client's, so answers too large to carry are the client's -32602, not a
/// -32603 counted as the server's own failure.
#[tokio::test]
async fn answers_too_large_to_carry_are_the_clients_32602() {
    let h = Harness::new(Server::builder("t", "1").tool("note", "asks", note_then_confirm));
    let first = call("note", json!({}), all_caps());
    let r1 = result(&h.send(&first).await);
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    let long = retry(
        &first,
        Some(&r1["requestState"]),
        json!({"note": accept(json!({"text": "n".repeat(5000)}))}),
    );
    let (code, e) = error(&h.send(&long).await);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(
        e["message"],
        "the answers to carry into the next round are too large: at most 4096 \
         bytes with the handler's continuation"
    );
    assert_eq!(h.server.metrics().failed("internal"), 0);
    // A note that fits goes on to the next round.
    let short = retry(
        &first,
        Some(&r1["requestState"]),
        json!({"note": accept(json!({"text": "n".repeat(3000)}))}),
    );
    let r2 = result(&h.send(&short).await);
    assert_eq!(r2["resultType"], "input_required", "{r2}");
    assert_eq!(asked_keys(&r2), ["sure"]);
}

/// Two questions of one round under one key would share the client's one
/// answer: the round is refused as the handler's bug (-32603) and nothing
/// is asked.
#[tokio::test]
async fn two_questions_under_one_key_are_never_asked() {
    async fn shared_key(ask: Ask) -> Result<ToolResult, Error> {
        ask.all((
            Need::confirm("k", "Delete prod?"),
            Need::confirm("k", "Subscribe?"),
        ))?;
        Ok(ToolResult::text("both"))
    }
    let h = Harness::new(Server::builder("t", "1").tool("shared", "asks", shared_key));
    let reply = h.send(&call("shared", json!({}), all_caps())).await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32603, "{e}");
    assert_eq!(e["message"], "Internal error");
    assert_eq!(h.server.metrics().failed("internal"), 1);
}

/// SECURITY.md "Tasks": past its time to live a task is unknown to
/// `tasks/update` as to `tasks/get`, its body stopped, without any other
/// request sweeping first; a late answer never wakes it.
#[tokio::test]
async fn an_answer_after_a_tasks_time_to_live_finds_no_task() {
    let starts = Arc::new(AtomicUsize::new(0));
    let h = Harness::new(
        Server::builder("tasks", "1")
            .tool_def(super::tasks::approval_tool(starts.clone()))
            .config(Config {
                tasks: TaskLimits {
                    ttl: Duration::from_secs(60),
                    ..TaskLimits::default()
                },
                ..Config::default()
            }),
    );
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    h.clock.advance(61);
    let reply = answer(
        &h,
        &id,
        json!({"approve": accept(json!({"approved": true}))}),
    )
    .await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["message"], "Unknown task");
    assert_eq!(h.server.metrics().tasks_ended("expired"), 1);
    assert_eq!(h.server.metrics().tasks_ended("completed"), 0);
    assert_eq!(starts.load(Ordering::SeqCst), 1);
}
