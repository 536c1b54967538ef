//! What tasks may hold: a principal's share of live tasks, a polling flood
//! that holds nothing new, a result's size, the table's size, and the
//! answers of one update.

use serde_json::{Value, json};
use tern_server::{Server, Task, TaskLimits, TaskSupport, ToolDef, ToolResult};

use super::super::support::{Harness, error};
use super::{
    alice, assert_gone, bob, call, caps, create, get, harness, sleeper, task_req, wait_for,
};

#[tokio::test]
async fn one_principal_holds_at_most_its_share_of_live_tasks() {
    let limits = TaskLimits {
        max_live_per_principal: 3,
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    for _ in 0..3 {
        create(&h, alice(), "sleep").await;
    }
    let (code, e) = error(&h.send_as(alice(), &call("sleep", caps())).await);
    assert_eq!(code, -31003, "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("unfinished tasks"),
        "{e}"
    );
    assert_eq!(h.server.metrics().limits_reached("tasks_per_principal"), 1);
    // Another principal is not held by Alice's.
    create(&h, bob(), "sleep").await;
}

#[tokio::test]
async fn a_polling_flood_holds_nothing_new() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "sleep").await;
    let first = get(&h, alice(), &id).await;
    for _ in 0..2000 {
        let t = get(&h, alice(), &id).await;
        assert_eq!(t["taskId"], first["taskId"]);
    }
    // Polls create nothing: the principal's budget is as it was.
    let limits = TaskLimits::default().max_live_per_principal;
    for _ in 1..limits {
        create(&h, alice(), "sleep").await;
    }
    assert_eq!(
        error(&h.send_as(alice(), &call("sleep", caps())).await).0,
        -31003
    );
}

/// A server with one task tool that answers at once with `bytes` of text.
fn quick(limits: TaskLimits, bytes: usize) -> Harness {
    let handler = move |task: Task| async move {
        task.run(move |_| async move { ToolResult::text("x".repeat(bytes)) })
    };
    let tool = ToolDef::new("quick", "answers at once", handler).task(TaskSupport::Optional);
    Harness::new(
        Server::builder("tasks", "1")
            .tool_def(tool)
            .tool_def(sleeper())
            .config(tern_server::Config {
                tasks: limits,
                ..tern_server::Config::default()
            }),
    )
}

#[tokio::test]
async fn a_result_past_its_size_limit_fails_the_task() {
    let limits = TaskLimits {
        max_result_bytes: 1024,
        ..TaskLimits::default()
    };
    let h = quick(limits, 2000);
    let id = create(&h, alice(), "quick").await;
    let t = wait_for(&h, alice(), &id, "failed").await;
    // The detail is logged; the peer sees -32603 with a correlation id.
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert!(t.get("result").is_none());
    assert_eq!(h.server.metrics().limits_reached("task_result_bytes"), 1);
    // Just under the limit is kept.
    let h = quick(
        TaskLimits {
            max_result_bytes: 1024,
            ..TaskLimits::default()
        },
        900,
    );
    let id = create(&h, alice(), "quick").await;
    assert_eq!(
        wait_for(&h, alice(), &id, "completed").await["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        900
    );
}

#[tokio::test]
async fn the_table_drops_the_oldest_finished_task_and_refuses_when_none_is() {
    let limits = TaskLimits {
        max_kept: 2,
        ..TaskLimits::default()
    };
    let h = quick(limits, 1);
    let first = create(&h, alice(), "quick").await;
    wait_for(&h, alice(), &first, "completed").await;
    h.clock.advance(1);
    let second = create(&h, bob(), "quick").await;
    wait_for(&h, bob(), &second, "completed").await;
    h.clock.advance(1);
    // Full: the oldest finished task (Alice's first) makes room.
    let third = create(&h, alice(), "sleep").await;
    assert_gone(&h, alice(), &first).await;
    assert_eq!(get(&h, bob(), &second).await["status"], "completed");
    // Full of one finished and one running: the finished one goes; then
    // two running and nothing finished: refused.
    create(&h, bob(), "sleep").await;
    let (code, e) = error(&h.send_as(alice(), &call("sleep", caps())).await);
    assert_eq!(code, -31003, "{e}");
    assert_eq!(h.server.metrics().limits_reached("tasks_total"), 1);
    assert_eq!(get(&h, alice(), &third).await["status"], "working");
}

#[tokio::test]
async fn an_update_with_too_many_answers_is_refused() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    let max = tern_server::Config::default().max_input_responses;
    let many: serde_json::Map<String, Value> = (0..=max)
        .map(|i| (format!("k{i}"), json!({"action": "decline"})))
        .collect();
    let reply = h
        .send_as(
            alice(),
            &task_req("tasks/update", &id, json!({"inputResponses": many})),
        )
        .await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32602, "{e}");
    assert_eq!(e["message"], "inputResponses has more than 64 entries");
    assert_eq!(get(&h, alice(), &id).await["status"], "input_required");
}
