//! Which question an answer answers: an MRTR round's answer is not an
//! answer to the task's question under the same key, a key asked again in
//! a task goes out under a new wire key, and a refusal names the key sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tern_server::{
    Ask, Elicited, Error, Need, Server, Task, TaskScope, TaskSupport, ToolDef, ToolResult,
};

use super::super::support::{Harness, Profile, accept, error, result};
use super::{alice, answer, asked_keys, assert_bare_ack, call, caps, create, get, wait_for};

/// What a body or a handler made of a profile question.
fn said(p: Elicited<Profile>) -> String {
    match p {
        Elicited::Accepted(p) => p.name,
        Elicited::Declined => "declined".into(),
        Elicited::Cancelled => "cancelled".into(),
    }
}

/// A task tool whose handler asks an MRTR round under "k" before it hands
/// over its body, and whose body asks the very same question under the
/// very same key. Counts the handler's runs and the body's starts.
fn mrtr_then_task(runs: Arc<AtomicUsize>, starts: Arc<AtomicUsize>) -> ToolDef {
    let handler = move |ask: Ask, task: Task| {
        let (runs, starts) = (runs.clone(), starts.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let before = said(ask.form::<Profile>("k", "Who are you?")?);
            Ok::<_, Error>(task.run(move |scope: TaskScope| async move {
                starts.fetch_add(1, Ordering::SeqCst);
                let during = scope
                    .ask(Need::form::<Profile>("k", "Who are you?"))
                    .await?;
                Ok::<_, Error>(ToolResult::text(format!(
                    "before the task: {before}; in the task: {}",
                    said(during)
                )))
            }))
        }
    };
    ToolDef::new("mrtr_then_task", "asks, then asks in a task", handler).task(TaskSupport::Optional)
}

#[tokio::test]
async fn an_mrtr_answer_is_not_an_answer_to_the_tasks_question_under_the_same_key() {
    let (runs, starts) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let h = Harness::new(
        Server::builder("tasks", "1").tool_def(mrtr_then_task(runs.clone(), starts.clone())),
    );
    // The MRTR phase: an ordinary round, sealed, no task yet.
    let first = call("mrtr_then_task", caps());
    let r = result(&h.send_as(alice(), &first).await);
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(asked_keys(&r), ["k"]);
    assert!(r["requestState"].is_string(), "{r}");
    assert!(r.get("taskId").is_none(), "{r}");
    assert_eq!(starts.load(Ordering::SeqCst), 0);
    // The retry answers "k"; the handler hands over its body: a task.
    let retried = super::super::support::retry(
        &first,
        Some(&r["requestState"]),
        json!({"k": accept(json!({"name": "Ada"}))}),
    );
    let created = result(&h.send_as(alice(), &retried).await);
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one run per MRTR round");
    // The body's "k" is a new question: the MRTR answer does not answer it.
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["k"], "{t}");
    assert_eq!(t["inputRequests"]["k"]["method"], "elicitation/create");
    assert_eq!(t["inputRequests"]["k"]["params"]["message"], "Who are you?");
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    // Checked as the MRTR answer was: the schema's maxLength holds.
    let (code, e) = error(
        &answer(
            &h,
            &id,
            json!({"k": accept(json!({"name": "Bartholomew"}))}),
        )
        .await,
    );
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["data"]["key"], "k", "{e}");
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["k"]);
    // Answered in the task: it completes with both answers, apart.
    let ack = result(&answer(&h, &id, json!({"k": accept(json!({"name": "Bob"}))})).await);
    assert_bare_ack(&ack);
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(
        t["result"]["content"][0]["text"], "before the task: Ada; in the task: Bob",
        "{t}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the handler is not re-run");
    assert_eq!(starts.load(Ordering::SeqCst), 1, "the body is not re-run");
}

/// A task whose body asks the same question under "q" twice, one after
/// the other, and records each answer it got.
fn asks_twice(seen: Arc<Mutex<Vec<String>>>) -> ToolDef {
    let handler = move |task: Task| {
        let seen = seen.clone();
        async move {
            task.run(move |scope: TaskScope| async move {
                let first = said(
                    scope
                        .ask(Need::form::<Profile>("q", "Who are you?"))
                        .await?,
                );
                seen.lock().unwrap().push(first.clone());
                let second = said(
                    scope
                        .ask(Need::form::<Profile>("q", "Who are you?"))
                        .await?,
                );
                seen.lock().unwrap().push(second.clone());
                Ok::<_, Error>(ToolResult::text(format!(
                    "first: {first}; second: {second}"
                )))
            })
        }
    };
    ToolDef::new("twice", "asks q twice", handler).task(TaskSupport::Required)
}

#[tokio::test]
async fn a_key_asked_again_in_a_task_goes_out_under_a_new_wire_key() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(asks_twice(seen.clone())));
    let id = create(&h, alice(), "twice").await;
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["q"], "{t}");
    assert_bare_ack(&result(
        &answer(&h, &id, json!({"q": accept(json!({"name": "Ada"}))})).await,
    ));
    // The second question: the same handler key, never the same wire key.
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["q#2"], "{t}");
    assert_eq!(t["inputRequests"]["q#2"]["method"], "elicitation/create");
    assert_eq!(
        t["inputRequests"]["q#2"]["params"]["message"],
        "Who are you?"
    );
    assert_eq!(*seen.lock().unwrap(), ["Ada"]);
    // An answer to the spent "q" is acknowledged and ignored.
    assert_bare_ack(&result(
        &answer(&h, &id, json!({"q": accept(json!({"name": "Eve"}))})).await,
    ));
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(asked_keys(&t), ["q#2"]);
    assert_eq!(*seen.lock().unwrap(), ["Ada"], "the body saw nothing new");
    // The new key's answer is checked against its question.
    let (code, _) = error(&answer(&h, &id, json!({"q#2": accept(json!({"age": 3}))})).await);
    assert_eq!(code, -32602);
    assert_eq!(asked_keys(&get(&h, alice(), &id).await), ["q#2"]);
    // Answered under the new key: the task completes.
    assert_bare_ack(&result(
        &answer(&h, &id, json!({"q#2": accept(json!({"name": "Bob"}))})).await,
    ));
    let t = wait_for(&h, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "first: Ada; second: Bob");
    assert_eq!(*seen.lock().unwrap(), ["Ada", "Bob"]);
}

/// An invalid answer to a suffixed key is refused naming the key the
/// client sent ("q#2"), as an MRTR refusal names the key of its
/// `inputResponses` entry and as another instance of a fleet names it
/// (its store checks open questions by wire key).
#[tokio::test]
async fn a_refused_answer_to_a_suffixed_key_names_the_key_sent() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = Harness::new(Server::builder("tasks", "1").tool_def(asks_twice(seen)));
    let id = create(&h, alice(), "twice").await;
    wait_for(&h, alice(), &id, "input_required").await;
    result(&answer(&h, &id, json!({"q": accept(json!({"name": "Ada"}))})).await);
    let t = wait_for(&h, alice(), &id, "input_required").await;
    assert_eq!(asked_keys(&t), ["q#2"], "{t}");
    let (code, e) = error(&answer(&h, &id, json!({"q#2": accept(json!({"age": 3}))})).await);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["data"]["key"], "q#2", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("inputResponses.q#2"),
        "{e}"
    );
}
