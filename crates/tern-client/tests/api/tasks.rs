//! Tasks from the client's side: a real server's task followed to its end
//! with in-task input through the provider, a task resumed by another
//! client from its serialised form, and a hostile server (a task never
//! asked for, an answer about another task, a key listed again, a task
//! that never ends, a call cancelled while its task runs).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tern_client::{CallOptions, CancelToken, Client, PendingTask, RoundEvent, Step};
use tern_server::{
    Config, ElicitForm, Elicited, Error, Need, Outcome, Server, Task, TaskLimits, TaskScope,
    TaskSupport, ToolDef, ToolResult,
};
use tern_types::{CallToolResult, ElicitValue};

use super::support::{Answer, Canned, Direct, Scripted, obj, text};

const EXT: &str = "io.modelcontextprotocol/tasks";

#[derive(Debug, Deserialize, ElicitForm)]
struct NameForm {
    /// Your name
    name: String,
}

async fn greet_task(task: Task) -> Outcome {
    task.run(|scope: TaskScope| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let name = match scope
            .ask(Need::form::<NameForm>("user_name", "What is your name?"))
            .await?
        {
            Elicited::Accepted(f) => f.name,
            Elicited::Declined | Elicited::Cancelled => "nobody".to_owned(),
        };
        Ok::<_, Error>(ToolResult::text(format!("Hello, {name}, from a task")))
    })
}

fn server() -> Direct {
    let config = Config {
        tasks: TaskLimits {
            poll_interval: Duration::from_millis(100),
            ..TaskLimits::default()
        },
        ..Config::default()
    };
    Direct::new(
        Server::builder("tasks", "1").config(config).tool_def(
            ToolDef::new("greet", "asks in a task", greet_task).task(TaskSupport::Optional),
        ),
    )
    .0
}

fn ada() -> Canned {
    Canned::accepting(&[("name", ElicitValue::String("Ada".into()))])
}

fn methods(t: &Direct) -> Vec<String> {
    t.seen()
        .iter()
        .map(|s| s.body["method"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_task_is_followed_to_its_result_answering_in_task_questions() {
    let t = server();
    let provider = ada();
    let asked = provider.asked.clone();
    let client = Client::builder(t.clone())
        .provider(provider)
        .tasks(true)
        .build();
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = events.clone();
    let opts = CallOptions::new().observe(move |e: &RoundEvent<'_>| {
        if let RoundEvent::Task { status, .. } = e {
            log.lock().unwrap().push((*status).to_owned());
        }
    });
    let r = client
        .call_tool_with("greet", obj(json!({})), &opts)
        .await
        .unwrap();
    assert_eq!(text(&r), "Hello, Ada, from a task");
    let seen = methods(&t);
    assert_eq!(seen[0], "tools/call");
    assert_eq!(seen.iter().filter(|m| *m == "tasks/update").count(), 1);
    assert_eq!(seen.last().unwrap(), "tasks/get");
    // The extension is declared on every request.
    for s in t.seen() {
        let caps = &s.params()["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert_eq!(caps["extensions"][EXT], json!({}), "{}", s.body);
    }
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].key, "user_name");
    assert_eq!(asked[0].target.as_deref(), Some("greet"));
    let events = events.lock().unwrap();
    assert_eq!(events.first().map(String::as_str), Some("working"));
    assert!(events.iter().any(|s| s == "input_required"), "{events:?}");
    assert_eq!(events.last().map(String::as_str), Some("completed"));
}

#[tokio::test]
async fn without_the_extension_the_same_tool_runs_inline() {
    let t = server();
    let client = Client::builder(t.clone()).provider(ada()).build();
    let r = client.call_tool("greet", obj(json!({}))).await.unwrap();
    assert_eq!(text(&r), "Hello, Ada, from a task");
    assert_eq!(methods(&t), ["tools/call", "tools/call"]);
}

#[tokio::test]
async fn a_pending_task_serialises_and_another_client_finishes_it() {
    let t = server();
    let first = Client::builder(t.clone())
        .provider(ada())
        .tasks(true)
        .build();
    let step = first.call_tool_once("greet", obj(json!({}))).await.unwrap();
    let Step::Task(task) = step else {
        panic!("not a task");
    };
    let saved = serde_json::to_string(&task).unwrap();
    let back: PendingTask<CallToolResult> = serde_json::from_str(&saved).unwrap();
    assert_eq!(back, task);
    assert_eq!(back.task_id().len(), 32);
    let second = Client::builder(t.clone())
        .provider(ada())
        .tasks(true)
        .build();
    let r = second.wait_task(back, &CallOptions::new()).await.unwrap();
    assert_eq!(text(&r), "Hello, Ada, from a task");
}

fn working(id: &str) -> Answer {
    Answer::Result(
        json!({"resultType": "complete", "taskId": id, "status": "working",
        "createdAt": "2026-12-05T00:00:00Z", "lastUpdatedAt": "2026-12-05T00:00:00Z",
        "ttlMs": 60000, "pollIntervalMs": 0}),
    )
}

fn created(id: &str) -> Answer {
    Answer::Result(
        json!({"resultType": "task", "taskId": id, "status": "working",
        "createdAt": "2026-12-05T00:00:00Z", "lastUpdatedAt": "2026-12-05T00:00:00Z",
        "ttlMs": 60000}),
    )
}

fn ack() -> Answer {
    Answer::Result(json!({"resultType": "complete"}))
}

#[tokio::test]
async fn a_task_for_a_call_that_did_not_declare_the_extension_is_refused() {
    let t = Scripted::new(|_, _| created("t1"));
    let client = Client::builder(t.clone()).provider(ada()).build();
    let e = client.call_tool("x", obj(json!({}))).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    assert!(e.to_string().contains("EXT-3"), "{e}");
    assert_eq!(t.seen().len(), 1);
}

#[tokio::test]
async fn an_answer_about_another_task_is_refused() {
    let t = Scripted::new(|_, i| if i == 0 { created("t1") } else { working("t2") });
    let client = Client::builder(t).provider(ada()).tasks(true).build();
    let e = client.call_tool("x", obj(json!({}))).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    assert!(e.to_string().contains("\"t2\""), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_key_listed_again_is_answered_once_and_the_poll_interval_is_bounded() {
    let question = json!({"method": "elicitation/create", "params": {"message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
    let t = Scripted::new(move |body, i| {
        match (body["method"].as_str().unwrap(), i) {
            ("tools/call", _) => created("t1"),
            ("tasks/update", _) => ack(),
            // The server keeps listing the answered key for a while.
            ("tasks/get", 1..=4) => Answer::Result(json!({"resultType": "complete",
                "taskId": "t1", "status": "input_required", "pollIntervalMs": 0,
                "inputRequests": {"n": question.clone()}})),
            ("tasks/get", _) => Answer::Result(json!({"resultType": "complete",
                "taskId": "t1", "status": "completed",
                "result": {"content": [{"type": "text", "text": "done"}]}})),
            (m, _) => panic!("unexpected {m}"),
        }
    });
    let client = Client::builder(t.clone())
        .provider(ada())
        .tasks(true)
        .build();
    let started = tern_testkit::runtime_now();
    let r = client.call_tool("x", obj(json!({}))).await.unwrap();
    assert_eq!(text(&r), "done");
    let seen: Vec<Value> = t.seen().iter().map(|s| s.body["method"].clone()).collect();
    assert_eq!(
        seen.iter().filter(|m| *m == "tasks/update").count(),
        1,
        "{seen:?}"
    );
    // pollIntervalMs 0 is held at the floor: the two polls that saw only
    // the answered key each waited 100 ms (none after the update).
    assert_eq!(started.elapsed(), Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn a_task_past_its_deadline_is_cancelled_at_the_server() {
    let t = Scripted::new(|body, i| match body["method"].as_str().unwrap() {
        "tools/call" if i == 0 => created("t1"),
        "tasks/cancel" => ack(),
        _ => working("t1"),
    });
    let client = Client::builder(t.clone())
        .provider(ada())
        .tasks(true)
        .task_timeout(Duration::from_secs(5))
        .build();
    let e = client.call_tool("x", obj(json!({}))).await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    let seen = t.seen();
    let last = seen.last().unwrap();
    assert_eq!(last.body["method"], "tasks/cancel");
    assert_eq!(last.body["params"]["taskId"], "t1");
    // Every tasks request names its task in `Mcp-Name`.
    for s in &seen[1..] {
        assert_eq!(s.headers.name.as_deref(), Some("t1"), "{}", s.body);
        assert_eq!(s.headers.method.as_deref(), s.body["method"].as_str());
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_call_cancels_its_task() {
    let t = Scripted::new(|body, i| match body["method"].as_str().unwrap() {
        "tools/call" if i == 0 => created("t1"),
        "tasks/cancel" => ack(),
        _ => working("t1"),
    });
    let client = Client::builder(t.clone())
        .provider(ada())
        .tasks(true)
        .build();
    let cancel = CancelToken::new();
    let opts = CallOptions::new().cancel(cancel.clone());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool_with("x", obj(json!({})), &opts).await }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    cancel.cancel();
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    let last = t.seen().last().unwrap().body.clone();
    assert_eq!(last["method"], "tasks/cancel");
}
