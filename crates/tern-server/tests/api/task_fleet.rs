//! Tasks across a fleet: instances sharing one task store. A task runs on
//! the instance that created it; `tasks/get`, `tasks/update` and
//! `tasks/cancel` work on any instance, with the same checks as on the
//! owner; a task whose instance stopped reads `failed` once its lease
//! lapses (ARCHITECTURE.md "Tasks", SECURITY.md "Budgets").

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tern_seal::{BoxFuture, Durability, MemoryTaskStore, StoreError, TaskEntry, TaskStore};
use tern_server::{Server, TaskLimits};

use super::support::{Harness, NOW, accept, error, result};
use super::tasks::{
    alice, approval_tool, assert_bare_ack, bob, create, get, sleeper, task_req, wait_for,
};

/// Two instances of one deployment over one store, and the approval
/// tool's start count (over both).
fn fleet(store: Arc<dyn TaskStore>) -> (Harness, Harness, Arc<AtomicUsize>) {
    fleet_with(store, TaskLimits::default())
}

fn fleet_with(
    store: Arc<dyn TaskStore>,
    limits: TaskLimits,
) -> (Harness, Harness, Arc<AtomicUsize>) {
    let starts = Arc::new(AtomicUsize::new(0));
    let keys = tern_seal::KeyRing::ephemeral().unwrap();
    let one = || {
        Harness::new(
            Server::builder("tasks", "1")
                .keys(keys.clone())
                .tool_def(approval_tool(starts.clone()))
                .tool_def(sleeper())
                .task_store(store.clone())
                .config(tern_server::Config {
                    tasks: limits.clone(),
                    ..tern_server::Config::default()
                }),
        )
    };
    (one(), one(), starts)
}

async fn update(h: &Harness, id: &str, responses: Value) -> (u16, Value) {
    h.send_as(
        alice(),
        &task_req("tasks/update", id, json!({"inputResponses": responses})),
    )
    .await
}

/// Alice's approval of the `approve` tool's question, through `h`.
async fn approve(h: &Harness, id: &str) -> (u16, Value) {
    update(h, id, json!({"approve": accept(json!({"approved": true}))})).await
}

fn keys(t: &Value) -> Vec<String> {
    t["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_task_runs_on_one_instance_and_is_answered_through_another() {
    let (a, b, starts) = fleet(Arc::new(MemoryTaskStore::default()));
    let id = create(&a, alice(), "approve").await;
    // Created before the reply left: the other instance finds it at once.
    let t = get(&b, alice(), &id).await;
    assert!(
        ["working", "input_required"].contains(&t["status"].as_str().unwrap()),
        "{t}"
    );
    let t = wait_for(&b, alice(), &id, "input_required").await;
    assert_eq!(keys(&t), ["approve"]);
    assert_eq!(
        t["inputRequests"]["approve"]["method"],
        "elicitation/create"
    );

    let ack = result(&approve(&b, &id).await);
    assert_bare_ack(&ack);
    // Applied before the acknowledgement: no instance lists the key again.
    for h in [&a, &b] {
        let t = get(h, alice(), &id).await;
        assert!(!keys(&t).contains(&"approve".to_owned()), "{t}");
    }
    // The owner picks the answer up and asks the next question.
    let mut t = json!(null);
    for _ in 0..200 {
        t = get(&b, alice(), &id).await;
        if keys(&t) == ["profile"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(keys(&t), ["profile"], "{t}");
    // Answered on the owner this time.
    result(&update(&a, &id, json!({"profile": accept(json!({"name": "Ada"}))})).await);
    let t = wait_for(&b, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "approved by Ada");
    assert!(t.get("pollIntervalMs").is_none(), "{t}");
    assert_eq!(
        starts.load(Ordering::SeqCst),
        1,
        "the body runs once, on its owner"
    );
    assert_eq!(a.server.metrics().tasks_ended("completed"), 1);
    assert_eq!(b.server.metrics().tasks_ended("completed"), 0);
}

#[tokio::test]
async fn another_instance_checks_answers_and_principals_as_the_owner_does() {
    let (a, b, _) = fleet(Arc::new(MemoryTaskStore::default()));
    let id = create(&a, alice(), "approve").await;
    wait_for(&b, alice(), &id, "input_required").await;
    // Another principal's task is as unknown as a guessed id, on any
    // instance, for every method.
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let extra = json!({"inputResponses": {"approve": accept(json!({"approved": false}))}});
        let theirs = b
            .send_as(bob(), &task_req(method, &id, extra.clone()))
            .await;
        let guessed = b
            .send_as(alice(), &task_req(method, &"0".repeat(32), extra.clone()))
            .await;
        let malformed = b
            .send_as(alice(), &task_req(method, "../../etc", extra))
            .await;
        assert_eq!(error(&theirs).0, -32602, "{method}");
        assert_eq!(error(&theirs).1["message"], error(&guessed).1["message"]);
        assert_eq!(error(&theirs).1["message"], error(&malformed).1["message"]);
    }
    // The schema says boolean: refused on the instance that received it,
    // and the key stays open everywhere.
    let (code, e) = error(
        &update(
            &b,
            &id,
            json!({"approve": accept(json!({"approved": "yes"}))}),
        )
        .await,
    );
    assert_eq!(code, -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("approve"), "{e}");
    // A key never asked is ignored.
    result(&update(&b, &id, json!({"profile": accept(json!({"name": "Eve"}))})).await);
    for h in [&a, &b] {
        let t = get(h, alice(), &id).await;
        assert_eq!(t["status"], "input_required", "{t}");
        assert_eq!(keys(&t), ["approve"]);
    }
    // Declining is an answer, carried to the owner's body.
    result(&update(&b, &id, json!({"approve": {"action": "decline"}})).await);
    let t = wait_for(&b, alice(), &id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "not approved");
    // After the end, answers are acknowledged and ignored.
    result(&approve(&b, &id).await);
    assert_eq!(
        get(&a, alice(), &id).await["result"]["content"][0]["text"],
        "not approved"
    );
}

#[tokio::test]
async fn a_cancel_through_another_instance_stops_the_owners_body() {
    let (a, b, _) = fleet(Arc::new(MemoryTaskStore::default()));
    let id = create(&a, alice(), "sleep").await;
    let ack = result(
        &b.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_bare_ack(&ack);
    assert_eq!(get(&b, alice(), &id).await["status"], "cancelled");
    for _ in 0..200 {
        if a.server.metrics().tasks_ended("cancelled") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        a.server.metrics().tasks_ended("cancelled"),
        1,
        "the owner saw the flag"
    );
    let t = get(&a, alice(), &id).await;
    assert_eq!(t["status"], "cancelled");
    assert!(t.get("pollIntervalMs").is_none(), "{t}");
    // Cancelling again, anywhere, is the same empty answer.
    let again = result(
        &b.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_eq!(again, ack);
}

#[tokio::test]
async fn a_task_whose_instance_stopped_reads_failed_once_its_lease_lapses() {
    let (a, b, _) = fleet(Arc::new(MemoryTaskStore::default()));
    let id = create(&a, alice(), "sleep").await;
    // Within the lease the other instance trusts the record.
    b.clock.advance(TaskLimits::default().lease.as_secs() - 1);
    assert_eq!(get(&b, alice(), &id).await["status"], "working");
    // Past it, with no renewal (the owner's clock stood still, as a dead
    // instance's does), the task has failed: never `working` forever.
    b.clock.advance(2);
    let t = get(&b, alice(), &id).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["code"], -32603);
    assert_eq!(
        t["error"]["message"],
        "the server running this task stopped"
    );
    assert!(t.get("pollIntervalMs").is_none(), "{t}");
    // A failed task takes no answers and no cancel.
    let ack = result(
        &b.send_as(alice(), &task_req("tasks/cancel", &id, json!({})))
            .await,
    );
    assert_bare_ack(&ack);
    assert_eq!(get(&b, alice(), &id).await["status"], "failed");
}

/// A shared store that counts its reads, each of which may take a while
/// (as a remote store's do).
#[derive(Default)]
struct Counting {
    inner: MemoryTaskStore,
    gets: AtomicUsize,
    read_takes: Duration,
}

impl Counting {
    fn gets(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }
}

impl TaskStore for Counting {
    fn put(&self, id: &str, r: Vec<u8>, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        self.inner.put(id, r, ttl)
    }
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        let read = self.inner.get(id);
        let takes = self.read_takes;
        Box::pin(async move {
            if !takes.is_zero() {
                tokio::time::sleep(takes).await;
            }
            read.await
        })
    }
    fn answer(
        &self,
        id: &str,
        answers: Vec<(String, Vec<u8>)>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.inner.answer(id, answers, ttl)
    }
    fn cancel(&self, id: &str, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        self.inner.cancel(id, ttl)
    }
    fn durability(&self) -> Durability {
        self.inner.durability()
    }
}

#[tokio::test(start_paused = true)]
async fn an_owner_looks_for_answers_less_often_while_nothing_happens() {
    let store = Arc::new(Counting::default());
    let (a, b, _) = fleet(store.clone());
    let id = create(&a, alice(), "approve").await;
    wait_for(&a, alice(), &id, "input_required").await;
    // A question nobody answers for a minute: the owner's looks slow to
    // one a second (at 100 ms it was 600).
    let before = store.gets();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let idle = store.gets() - before;
    assert!((58..=64).contains(&idle), "{idle} looks in an idle minute");
    // An answer posted on another instance is picked up at the next look
    // (within the longest wait, 1 s), and the rounds after it are looked
    // at often again: 100, 100, 200, 400 and 800 ms after it, then each
    // second, so six or seven looks in three seconds (three without the
    // return to 100 ms, thirty at a fixed 100 ms).
    result(&approve(&b, &id).await);
    let posted = store.gets();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let busy = store.gets() - posted;
    assert!(
        (6..=8).contains(&busy),
        "{busy} looks in the 3 s after an answer"
    );
    let t = get(&a, alice(), &id).await;
    assert_eq!(keys(&t), ["profile"], "{t}");
}

#[tokio::test(start_paused = true)]
async fn a_live_task_never_reads_failed_under_the_shortest_lease() {
    let store = Arc::new(Counting {
        read_takes: Duration::from_millis(100),
        ..Counting::default()
    });
    let limits = TaskLimits {
        lease: Duration::from_secs(1),
        ..TaskLimits::default()
    };
    let (a, b, _) = fleet_with(store.clone(), limits);
    let id = create(&a, alice(), "sleep").await;
    // Both instances' clocks follow the runtime's, as real clocks follow
    // the wall; every 10 ms for a minute the record must vouch for the
    // task in the current second (another instance reads `failed` once
    // `lease < now`). The owner's slow looks must not stretch the time
    // between renewals past the lease.
    let start = tern_testkit::runtime_now();
    while start.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = NOW + start.elapsed().as_secs();
        a.clock.set(now);
        b.clock.set(now);
        let entry = store.inner.get(&id).await.unwrap().unwrap();
        let record: Value = serde_json::from_slice(&entry.record).unwrap();
        let lease = record["lease"].as_u64().unwrap();
        assert!(
            lease >= now,
            "at {:?} the lease ends at {lease}, now is {now}",
            start.elapsed()
        );
    }
    assert_eq!(get(&b, alice(), &id).await["status"], "working");
}

/// A store that cannot be reached.
struct Down;

impl TaskStore for Down {
    fn put(&self, _: &str, _: Vec<u8>, _: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::Unavailable("down".into())) })
    }
    fn get(&self, _: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>> {
        Box::pin(async { Err(StoreError::Unavailable("down".into())) })
    }
    fn answer(
        &self,
        _: &str,
        _: Vec<(String, Vec<u8>)>,
        _: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::Unavailable("down".into())) })
    }
    fn cancel(&self, _: &str, _: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::Unavailable("down".into())) })
    }
    fn durability(&self) -> Durability {
        Durability::Shared
    }
}

#[tokio::test]
async fn a_store_that_is_down_refuses_the_task_and_leaves_nothing_running() {
    let (a, _, _) = fleet(Arc::new(Down));
    let reply = a
        .send_as(alice(), &super::tasks::call("sleep", super::tasks::caps()))
        .await;
    let (code, e) = error(&reply);
    assert_eq!(code, -32603, "{e}");
    assert!(e["data"]["correlationId"].is_string(), "{e}");
    assert_eq!(a.server.metrics().tasks_ended("cancelled"), 1);
}

#[test]
fn several_instances_with_a_task_tool_need_a_shared_task_store() {
    let build = |store: Option<Arc<dyn TaskStore>>| {
        let mut b = Server::builder("tasks", "1")
            .keys(tern_seal::KeyRing::ephemeral().unwrap())
            .replay_store(Arc::new(SharedReplay))
            .tool_def(sleeper())
            .instances(2);
        if let Some(s) = store {
            b = b.task_store(s);
        }
        b.build().map(drop).map_err(|e| e.to_string())
    };
    let none = build(None).unwrap_err();
    assert!(none.contains("needs a shared task store"), "{none}");
    let memory = build(Some(Arc::new(MemoryTaskStore::default()))).unwrap_err();
    assert!(memory.contains("needs a shared task store"), "{memory}");
    build(Some(Arc::new(Down))).unwrap();
}

/// A replay store that says it is shared, so the replay guard passes and
/// the task guard is what is tested.
struct SharedReplay;

impl tern_seal::ReplayStore for SharedReplay {
    fn consume(
        &self,
        _: tern_seal::ConsumeKey,
        _: Duration,
    ) -> BoxFuture<'_, Result<tern_seal::Consumed, StoreError>> {
        Box::pin(async { Err(StoreError::Unavailable("unused".into())) })
    }
    fn durability(&self) -> Durability {
        Durability::Shared
    }
}

/// SECURITY.md "Tasks": in a fleet as alone, past its time to live a task
/// is unknown and its owner's body is stopped, counted expired, on the
/// first `tasks/get` the owner serves (its store's record lapses with it).
#[tokio::test]
async fn a_fleet_task_past_its_time_to_live_is_stopped_by_its_owner() {
    let limits = TaskLimits {
        ttl: Duration::from_secs(60),
        ..TaskLimits::default()
    };
    let (a, _b, _) = fleet_with(Arc::new(MemoryTaskStore::default()), limits);
    let id = create(&a, alice(), "approve").await;
    wait_for(&a, alice(), &id, "input_required").await;
    a.clock.advance(61);
    super::tasks::assert_gone(&a, alice(), &id).await;
    assert_eq!(a.server.metrics().tasks_ended("expired"), 1);
    let (code, e) = error(&approve(&a, &id).await);
    assert_eq!(
        (code, e["message"].clone()),
        (-32602, json!("Unknown task"))
    );
}
