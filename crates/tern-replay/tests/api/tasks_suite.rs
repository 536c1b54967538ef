//! The suite every `TaskStore` passes, the in-memory reference included:
//! the trait's contract (first answer wins, no record means `None`, the
//! owner's record replaced, the cancel flag, expiry on the store's clock,
//! the answer cap, handles sharing entries) and the crate's size bounds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tern_replay::{MAX_TASK_ANSWERS_BYTES, MAX_TASK_RECORD_BYTES};
use tern_seal::{MAX_TASK_ANSWERS, MAX_TASK_ID_BYTES, StoreError, TaskEntry, TaskStore};

/// A task TTL long enough to outlive any test.
pub(crate) const TTL: Duration = Duration::from_secs(600);

/// The short TTL of the expiry test, and how long it sleeps past it.
const SHORT: Duration = Duration::from_millis(1500);
const PAST_SHORT: Duration = Duration::from_millis(1800);

/// One backend under test: a store plus whatever keeps it alive.
pub(crate) trait TaskFixture: Sized {
    /// The handle type.
    type Store: TaskStore;

    /// Whether `get` sorts answers by key (Redis) rather than keeping the
    /// order they arrived in (memory, SQLite).
    const SORTED_BY_KEY: bool;

    /// Sets the backend up; one that cannot start fails the test.
    async fn start() -> Self;

    /// A new handle on the same entries: a new connection where the
    /// backend has them.
    async fn handle(&self) -> Self::Store;
}

/// A task id no other test in this process uses.
pub(crate) fn fresh_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("task-{}-{n}", std::process::id())
}

pub(crate) fn answer(key: &str, value: &[u8]) -> (String, Vec<u8>) {
    (key.to_owned(), value.to_vec())
}

/// The first answer under a key is kept, across calls, within one call and
/// across handles; a record rewritten keeps the answers.
pub(crate) async fn the_first_answer_under_a_key_wins<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let other = fx.handle().await;
    let id = fresh_id();
    store.put(&id, b"r1".to_vec(), TTL).await.expect("put");
    store
        .answer(&id, vec![answer("a", b"1")], TTL)
        .await
        .expect("answer");
    other
        .answer(&id, vec![answer("a", b"2"), answer("b", b"3")], TTL)
        .await
        .expect("answer");
    store
        .answer(&id, vec![answer("c", b"4"), answer("c", b"5")], TTL)
        .await
        .expect("answer");
    store.put(&id, b"r2".to_vec(), TTL).await.expect("put");
    let want = TaskEntry {
        record: b"r2".to_vec(),
        answers: vec![answer("a", b"1"), answer("b", b"3"), answer("c", b"4")],
        cancelled: false,
    };
    assert_eq!(store.get(&id).await, Ok(Some(want.clone())));
    assert_eq!(other.get(&id).await, Ok(Some(want)));
}

/// No record is `None`: an id never written, and one with answers and a
/// cancel flag but no record yet. Once the owner writes it, the answers
/// and the flag that came first are there.
pub(crate) async fn no_record_is_none<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    assert_eq!(store.get(&fresh_id()).await, Ok(None));
    let id = fresh_id();
    store
        .answer(&id, vec![answer("a", b"early")], TTL)
        .await
        .expect("answer");
    store.cancel(&id, TTL).await.expect("cancel");
    assert_eq!(store.get(&id).await, Ok(None));
    assert_eq!(fx.handle().await.get(&id).await, Ok(None));
    store.put(&id, b"late".to_vec(), TTL).await.expect("put");
    assert_eq!(
        store.get(&id).await,
        Ok(Some(TaskEntry {
            record: b"late".to_vec(),
            answers: vec![answer("a", b"early")],
            cancelled: true,
        }))
    );
    // Another task's entry is not this one's.
    assert_eq!(store.get(&fresh_id()).await, Ok(None));
}

/// Every byte value, twice: catches truncation at a NUL and text decoding.
fn binary() -> Vec<u8> {
    (0..=255u8).chain((0..=255u8).rev()).collect()
}

/// `put` replaces the record whole, binary bytes and size alike, and
/// leaves the answers and the flag alone.
pub(crate) async fn put_replaces_the_record<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let id = fresh_id();
    store.put(&id, binary(), TTL).await.expect("put");
    store
        .answer(&id, vec![answer("k", &binary())], TTL)
        .await
        .expect("answer");
    assert_eq!(
        store.get(&id).await,
        Ok(Some(TaskEntry {
            record: binary(),
            answers: vec![("k".into(), binary())],
            cancelled: false,
        }))
    );
    fx.handle()
        .await
        .put(&id, b"short".to_vec(), TTL)
        .await
        .expect("put");
    assert_eq!(
        store.get(&id).await,
        Ok(Some(TaskEntry {
            record: b"short".to_vec(),
            answers: vec![("k".into(), binary())],
            cancelled: false,
        }))
    );
    let big = vec![0x5A; MAX_TASK_RECORD_BYTES];
    store
        .put(&id, big.clone(), TTL)
        .await
        .expect("a record of exactly the cap is kept");
    assert_eq!(
        store.get(&id).await.map(|e| e.map(|e| e.record)),
        Ok(Some(big))
    );
}

/// The flag is off until `cancel`, then on for every handle, and stays on
/// through a later `put` and a second `cancel`.
pub(crate) async fn cancel_sets_the_flag<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let id = fresh_id();
    store.put(&id, b"r".to_vec(), TTL).await.expect("put");
    assert_eq!(
        store.get(&id).await.map(|e| e.map(|e| e.cancelled)),
        Ok(Some(false))
    );
    fx.handle().await.cancel(&id, TTL).await.expect("cancel");
    store.cancel(&id, TTL).await.expect("cancel again");
    store.put(&id, b"r2".to_vec(), TTL).await.expect("put");
    let want = TaskEntry {
        record: b"r2".to_vec(),
        answers: Vec::new(),
        cancelled: true,
    };
    assert_eq!(store.get(&id).await, Ok(Some(want.clone())));
    assert_eq!(fx.handle().await.get(&id).await, Ok(Some(want)));
    // Cancelling one task cancels no other.
    let other = fresh_id();
    store.put(&other, b"r".to_vec(), TTL).await.expect("put");
    assert_eq!(
        store.get(&other).await.map(|e| e.map(|e| e.cancelled)),
        Ok(Some(false))
    );
}

/// Past its TTL an entry is gone, answers and flag with it, so a new write
/// starts afresh; a shorter TTL passed later never shortens an entry.
pub(crate) async fn entries_expire_after_their_ttl<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let gone = fresh_id();
    store.put(&gone, b"r".to_vec(), SHORT).await.expect("put");
    store
        .answer(&gone, vec![answer("a", b"1")], SHORT)
        .await
        .expect("answer");
    store.cancel(&gone, SHORT).await.expect("cancel");
    let kept = fresh_id();
    store.put(&kept, b"long".to_vec(), TTL).await.expect("put");
    store
        .answer(&kept, vec![answer("a", b"1")], SHORT)
        .await
        .expect("answer");
    store
        .put(&kept, b"still".to_vec(), SHORT)
        .await
        .expect("put");
    let forever = fresh_id();
    store
        .put(&forever, b"r".to_vec(), Duration::MAX)
        .await
        .expect("a TTL beyond any clock is kept, not refused");
    assert_eq!(
        store.get(&gone).await,
        Ok(Some(TaskEntry {
            record: b"r".to_vec(),
            answers: vec![answer("a", b"1")],
            cancelled: true,
        }))
    );
    tokio::time::sleep(PAST_SHORT).await;
    assert_eq!(store.get(&gone).await, Ok(None));
    assert_eq!(fx.handle().await.get(&gone).await, Ok(None));
    assert_eq!(
        store.get(&kept).await,
        Ok(Some(TaskEntry {
            record: b"still".to_vec(),
            answers: vec![answer("a", b"1")],
            cancelled: false,
        })),
        "the longer TTL passed first still holds"
    );
    assert!(store.get(&forever).await.expect("reads").is_some());
    // Written again, the expired task starts empty.
    store
        .answer(&gone, vec![answer("b", b"2")], TTL)
        .await
        .expect("answer");
    store.put(&gone, b"new".to_vec(), TTL).await.expect("put");
    assert_eq!(
        store.get(&gone).await,
        Ok(Some(TaskEntry {
            record: b"new".to_vec(),
            answers: vec![answer("b", b"2")],
            cancelled: false,
        }))
    );
}

/// Key `n` of the cap test; zero-padded so key order is arrival order.
fn key(n: usize) -> String {
    format!("k{n:04}")
}

/// A task holds `MAX_TASK_ANSWERS` answers: a call that crosses the cap
/// keeps the keys before it, and past it new keys are ignored (not
/// refused) while answered keys keep their first answer.
pub(crate) async fn answers_stop_at_the_cap<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let id = fresh_id();
    store.put(&id, b"r".to_vec(), TTL).await.expect("put");
    let first = MAX_TASK_ANSWERS - 10;
    store
        .answer(
            &id,
            (0..first)
                .map(|n| (key(n), n.to_string().into_bytes()))
                .collect(),
            TTL,
        )
        .await
        .expect("answer");
    // 30 keys, 10 of them fit.
    store
        .answer(
            &id,
            (first..first + 30)
                .map(|n| (key(n), n.to_string().into_bytes()))
                .collect(),
            TTL,
        )
        .await
        .expect("answer");
    store
        .answer(
            &id,
            vec![
                (key(MAX_TASK_ANSWERS + 100), b"late".to_vec()),
                (key(0), b"again".to_vec()),
            ],
            TTL,
        )
        .await
        .expect("a full task ignores new keys, it does not refuse them");
    let entry = fx
        .handle()
        .await
        .get(&id)
        .await
        .expect("reads")
        .expect("kept");
    assert_eq!(entry.answers.len(), MAX_TASK_ANSWERS);
    let want: Vec<_> = (0..MAX_TASK_ANSWERS)
        .map(|n| (key(n), n.to_string().into_bytes()))
        .collect();
    assert_eq!(entry.answers, want);
}

/// Writes through three handles meet in one entry, read alike from each.
pub(crate) async fn handles_see_each_others_writes<F: TaskFixture>() {
    let fx = F::start().await;
    let (owner, updater, canceller) = (fx.handle().await, fx.handle().await, fx.handle().await);
    let id = fresh_id();
    owner.put(&id, b"running".to_vec(), TTL).await.expect("put");
    updater
        .answer(&id, vec![answer("q1", b"yes")], TTL)
        .await
        .expect("answer");
    canceller.cancel(&id, TTL).await.expect("cancel");
    let want = TaskEntry {
        record: b"running".to_vec(),
        answers: vec![answer("q1", b"yes")],
        cancelled: true,
    };
    for store in [&owner, &updater, &canceller] {
        assert_eq!(store.get(&id).await, Ok(Some(want.clone())));
    }
    drop((owner, updater, canceller));
    assert_eq!(
        fx.handle().await.get(&id).await,
        Ok(Some(want)),
        "entries outlive every handle"
    );
}

/// Answers come back in arrival order, or sorted by key where the backend
/// says so.
pub(crate) async fn answers_come_back_in_the_documented_order<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let id = fresh_id();
    store.put(&id, b"r".to_vec(), TTL).await.expect("put");
    store
        .answer(&id, vec![answer("b", b"1"), answer("c", b"2")], TTL)
        .await
        .expect("answer");
    store
        .answer(&id, vec![answer("a", b"3")], TTL)
        .await
        .expect("answer");
    let got = store.get(&id).await.expect("reads").expect("kept").answers;
    let want = if F::SORTED_BY_KEY {
        vec![answer("a", b"3"), answer("b", b"1"), answer("c", b"2")]
    } else {
        vec![answer("b", b"1"), answer("c", b"2"), answer("a", b"3")]
    };
    assert_eq!(got, want);
}

/// Past a size bound the call is refused with `Full` and writes nothing.
pub(crate) async fn oversized_writes_are_refused_whole<F: TaskFixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let id = fresh_id();
    store.put(&id, b"small".to_vec(), TTL).await.expect("put");
    let over = store
        .put(&id, vec![1; MAX_TASK_RECORD_BYTES + 1], TTL)
        .await;
    assert!(matches!(over, Err(StoreError::Full(_))), "{over:?}");
    let long_id = "x".repeat(MAX_TASK_ID_BYTES + 1);
    for refused in [
        store.put(&long_id, b"r".to_vec(), TTL).await,
        store.cancel(&long_id, TTL).await,
        store.answer(&long_id, vec![answer("a", b"1")], TTL).await,
        store.get(&long_id).await.map(drop),
    ] {
        assert!(matches!(refused, Err(StoreError::Full(_))), "{refused:?}");
    }
    // Near the byte cap, then a call that would pass it: refused whole,
    // its small answer under a new key included.
    let most = MAX_TASK_ANSWERS_BYTES - 1024;
    store
        .answer(&id, vec![("big".into(), vec![7; most])], TTL)
        .await
        .expect("below the cap");
    let past = store
        .answer(
            &id,
            vec![answer("tiny", b"t"), ("more".into(), vec![8; 2048])],
            TTL,
        )
        .await;
    assert!(matches!(past, Err(StoreError::Full(_))), "{past:?}");
    // A repeated key adds no bytes, so it is no reason to refuse.
    store
        .answer(
            &id,
            vec![("big".into(), vec![9; 2048]), answer("fits", b"f")],
            TTL,
        )
        .await
        .expect("the answered key is ignored, the new one fits");
    let entry = store.get(&id).await.expect("reads").expect("kept");
    assert_eq!(entry.record, b"small");
    assert_eq!(
        entry
            .answers
            .iter()
            .map(|(k, v)| (k.as_str(), v.len()))
            .collect::<Vec<_>>(),
        vec![("big", most), ("fits", 1)]
    );
    assert!(entry.answers[0].1.iter().all(|&b| b == 7));
}

/// The suite, as one test per behaviour.
macro_rules! task_suite {
    ($fixture:ty $(, #[$attr:meta])*) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn the_first_answer_under_a_key_wins() {
            $crate::tasks_suite::the_first_answer_under_a_key_wins::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn no_record_is_none() {
            $crate::tasks_suite::no_record_is_none::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn put_replaces_the_record() {
            $crate::tasks_suite::put_replaces_the_record::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn cancel_sets_the_flag() {
            $crate::tasks_suite::cancel_sets_the_flag::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn entries_expire_after_their_ttl() {
            $crate::tasks_suite::entries_expire_after_their_ttl::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn answers_stop_at_the_cap() {
            $crate::tasks_suite::answers_stop_at_the_cap::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn handles_see_each_others_writes() {
            $crate::tasks_suite::handles_see_each_others_writes::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn answers_come_back_in_the_documented_order() {
            $crate::tasks_suite::answers_come_back_in_the_documented_order::<$fixture>().await;
        }
    };
}

/// The size bounds, for the backends of this crate (the memory store
/// applies none).
macro_rules! bounds_suite {
    ($fixture:ty $(, #[$attr:meta])*) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn oversized_writes_are_refused_whole() {
            $crate::tasks_suite::oversized_writes_are_refused_whole::<$fixture>().await;
        }
    };
}

pub(crate) use {bounds_suite, task_suite};
