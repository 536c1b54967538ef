//! How a task ends without finishing: cancelled (idempotently), gone
//! after its time to live, in its second however often the table was read,
//! and failed past its input wait.

use std::time::Duration;

use serde_json::json;
use tern_server::TaskLimits;

use super::super::support::{NOW, result};
use super::{alice, assert_bare_ack, assert_gone, create, get, harness, task_req, wait_for};

#[tokio::test]
async fn cancelling_stops_the_body_and_is_idempotent() {
    let (h, _) = harness(TaskLimits::default());
    let id = create(&h, alice(), "sleep").await;
    let ack = result(
        &h.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_bare_ack(&ack);
    assert_eq!(get(&h, alice(), &id).await["status"], "cancelled");
    let again = result(
        &h.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_eq!(again, ack);
    assert_eq!(h.server.metrics().tasks_ended("cancelled"), 1);
}

#[tokio::test]
async fn a_task_is_gone_after_its_time_to_live() {
    let limits = TaskLimits {
        ttl: Duration::from_secs(60),
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    let id = create(&h, alice(), "sleep").await;
    let t = get(&h, alice(), &id).await;
    assert_eq!(t["ttlMs"], 60_000);
    h.clock.advance(59);
    assert_eq!(get(&h, alice(), &id).await["status"], "working");
    h.clock.advance(1);
    assert_gone(&h, alice(), &id).await;
    assert_eq!(h.server.metrics().tasks_ended("expired"), 1);
}

#[tokio::test]
async fn a_task_lapses_in_its_second_however_often_the_table_was_read_before() {
    // The table is swept once per second of the clock: what that must not
    // change is which tasks a request finds. One second is the shortest life.
    let limits = TaskLimits {
        ttl: Duration::from_secs(1),
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    let a = create(&h, alice(), "sleep").await;
    for _ in 0..3 {
        assert_eq!(get(&h, alice(), &a).await["status"], "working");
    }
    h.clock.advance(1);
    // The second `a` lapses in: the first request sees it gone, and so does
    // every later one, while a task made in that second lives.
    let b = create(&h, alice(), "sleep").await;
    for _ in 0..2 {
        assert_gone(&h, alice(), &a).await;
    }
    assert_eq!(get(&h, alice(), &b).await["status"], "working");
    assert_eq!(h.server.metrics().tasks_ended("expired"), 1);
    // A wall clock stepped back is a second of its own: `b` lives on, and
    // lapses once the clock passes its second again.
    h.clock.set(NOW + 1 - 5);
    assert_eq!(get(&h, alice(), &b).await["status"], "working");
    h.clock.advance(6);
    assert_gone(&h, alice(), &b).await;
    assert_eq!(h.server.metrics().tasks_ended("expired"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_task_waiting_past_its_input_wait_fails() {
    let limits = TaskLimits {
        input_wait: Duration::from_secs(30),
        ..TaskLimits::default()
    };
    let (h, _) = harness(limits);
    let id = create(&h, alice(), "approve").await;
    wait_for(&h, alice(), &id, "input_required").await;
    tokio::time::sleep(Duration::from_secs(31)).await;
    let t = wait_for(&h, alice(), &id, "failed").await;
    assert_eq!(t["error"]["code"], -31004, "{t}");
    assert!(t.get("result").is_none());
    assert_eq!(h.server.metrics().limits_reached("task_input_wait"), 1);
}
