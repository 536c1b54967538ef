//! The suite every backend passes: the contract of `ReplayStore`
//! (SECURITY.md §3.9), markers and stored results, run against real stores.

use std::sync::Arc;
use std::time::Duration;

use tern_seal::{Consumed, MAX_RESULT_BYTES, ReplayStore, StoreError, StoredResult};
use tokio::sync::Barrier;

use crate::util::fresh_key;

/// A marker TTL long enough to outlive any test.
pub(crate) const TTL: Duration = Duration::from_secs(600);

/// Contenders in the race, each on its own handle.
pub(crate) const RACERS: usize = 32;

/// Keys raced on, one after the other.
const RACE_ROUNDS: usize = 8;

/// One backend under test: a store plus whatever keeps it alive.
pub(crate) trait Fixture: Sized {
    /// The handle type.
    type Store: ReplayStore;

    /// Sets the backend up; a backend that cannot start fails the test (a
    /// backend that may be missing is compiled as ignored instead: see
    /// `build.rs`).
    async fn start() -> Self;

    /// A new handle on the same markers: a new connection where the backend
    /// has them. Dropping every handle and taking a new one is a restart.
    async fn handle(&self) -> Self::Store;
}

/// A key is used once; every later consume is refused, on any handle.
pub(crate) async fn first_use_then_replay<F: Fixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let key = fresh_key();
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::FirstUse));
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
    let other = fx.handle().await;
    assert_eq!(other.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
    assert_eq!(
        other.consume(fresh_key(), TTL).await,
        Ok(Consumed::FirstUse),
        "a marker must not block other keys"
    );
}

/// Of 32 handles consuming one key at once, exactly one wins; the others
/// are refused, not failed.
pub(crate) async fn a_race_has_exactly_one_winner<F: Fixture>() {
    let fx = F::start().await;
    let mut stores = Vec::with_capacity(RACERS);
    for _ in 0..RACERS {
        stores.push(Arc::new(fx.handle().await));
    }
    for round in 0..RACE_ROUNDS {
        let key = fresh_key();
        let barrier = Arc::new(Barrier::new(RACERS));
        let tasks: Vec<_> = stores
            .iter()
            .map(|store| {
                let store = Arc::clone(store);
                let barrier = Arc::clone(&barrier);
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.consume(key, TTL).await
                })
            })
            .collect();
        let mut first = 0;
        let mut already = 0;
        for task in tasks {
            match task.await.expect("racer did not panic") {
                Ok(Consumed::FirstUse) => first += 1,
                Ok(Consumed::AlreadyUsed) => already += 1,
                Err(e) => panic!("round {round}: a racer failed: {e}"),
            }
        }
        assert_eq!(
            (first, already),
            (1, RACERS - 1),
            "round {round}: exactly one winner"
        );
    }
}

/// After its TTL a marker no longer blocks the key: the store promises "at
/// least `ttl`", and a key reused later (a business key) must work again.
pub(crate) async fn an_expired_marker_counts_as_first_use<F: Fixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let key = fresh_key();
    let short = Duration::from_millis(100);
    assert_eq!(store.consume(key, short).await, Ok(Consumed::FirstUse));
    assert_eq!(store.consume(key, short).await, Ok(Consumed::AlreadyUsed));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::FirstUse));
    assert_eq!(
        store.consume(key, TTL).await,
        Ok(Consumed::AlreadyUsed),
        "the revived marker takes the new TTL"
    );
}

/// A marker outlives every handle: a new store on the same backing data
/// refuses the replay.
pub(crate) async fn markers_survive_a_restart<F: Fixture>() {
    let fx = F::start().await;
    let key = fresh_key();
    let before = fx.handle().await;
    assert_eq!(before.consume(key, TTL).await, Ok(Consumed::FirstUse));
    drop(before);
    let after = fx.handle().await;
    assert_eq!(after.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
}

/// Owner fingerprints of two principals.
pub(crate) const ALICE: [u8; 32] = [0xA1; 32];
pub(crate) const BOB: [u8; 32] = [0xB0; 32];

/// Bytes that catch truncation at a NUL, text decoding, and off-by-one
/// splits of the owner prefix: every byte value, twice.
pub(crate) fn binary_result() -> Vec<u8> {
    (0..=255u8).chain((0..=255u8).rev()).collect()
}

/// A result put after the effect is read back exactly, owner and bytes, on
/// any handle; a later put under the key replaces it (SECURITY.md §3.9,
/// idempotency-key pattern).
pub(crate) async fn a_result_is_read_back_exactly<F: Fixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    assert!(store.keeps_results());
    let key = fresh_key();
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::FirstUse));
    store
        .put_result(key, ALICE, binary_result(), TTL)
        .await
        .expect("stored");
    let expected = StoredResult {
        owner: ALICE,
        result: binary_result(),
    };
    assert_eq!(store.get_result(key).await, Ok(Some(expected.clone())));
    let other = fx.handle().await;
    assert_eq!(other.get_result(key).await, Ok(Some(expected)));
    // Empty and exactly-at-cap results are results too.
    let empty = fresh_key();
    store
        .put_result(empty, BOB, Vec::new(), TTL)
        .await
        .expect("stored");
    assert_eq!(
        other.get_result(empty).await,
        Ok(Some(StoredResult {
            owner: BOB,
            result: Vec::new()
        }))
    );
    let full = fresh_key();
    let big = vec![0x5A; MAX_RESULT_BYTES];
    store
        .put_result(full, BOB, big.clone(), TTL)
        .await
        .expect("a result of exactly the cap is kept");
    assert_eq!(
        other.get_result(full).await.map(|r| r.map(|r| r.result)),
        Ok(Some(big))
    );
    // Replacing: the newer result, owner included, wins.
    store
        .put_result(key, BOB, b"second".to_vec(), TTL)
        .await
        .expect("replaced");
    assert_eq!(
        other.get_result(key).await,
        Ok(Some(StoredResult {
            owner: BOB,
            result: b"second".to_vec()
        }))
    );
}

/// No result under a key is `None`, consumed or not: the caller answers the
/// uniform refusal.
pub(crate) async fn an_unknown_result_is_none<F: Fixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    assert_eq!(store.get_result(fresh_key()).await, Ok(None));
    let consumed = fresh_key();
    assert_eq!(store.consume(consumed, TTL).await, Ok(Consumed::FirstUse));
    assert_eq!(
        store.get_result(consumed).await,
        Ok(None),
        "a consumed key without a result: still running, or lost"
    );
    // Another key's result is not this key's.
    let written = fresh_key();
    store
        .put_result(written, ALICE, b"mine".to_vec(), TTL)
        .await
        .expect("stored");
    assert_eq!(store.get_result(consumed).await, Ok(None));
}

/// After its TTL a result is gone, even before any purge.
pub(crate) async fn an_expired_result_is_none<F: Fixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let key = fresh_key();
    store
        .put_result(
            key,
            ALICE,
            b"soon gone".to_vec(),
            Duration::from_millis(100),
        )
        .await
        .expect("stored");
    assert!(store.get_result(key).await.expect("answers").is_some());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.get_result(key).await, Ok(None));
    assert_eq!(fx.handle().await.get_result(key).await, Ok(None));
}

/// A result over the cap is refused with `Full`, and nothing is kept: not
/// even a truncated copy, and not a replacement of the earlier result.
pub(crate) async fn an_over_cap_result_is_refused<F: Fixture>() {
    let fx = F::start().await;
    let store = fx.handle().await;
    let key = fresh_key();
    let answer = store
        .put_result(key, ALICE, vec![1; MAX_RESULT_BYTES + 1], TTL)
        .await;
    assert!(matches!(answer, Err(StoreError::Full(_))), "{answer:?}");
    assert_eq!(store.get_result(key).await, Ok(None));
    store
        .put_result(key, ALICE, b"small".to_vec(), TTL)
        .await
        .expect("stored");
    let answer = store
        .put_result(key, BOB, vec![2; MAX_RESULT_BYTES + 1], TTL)
        .await;
    assert!(matches!(answer, Err(StoreError::Full(_))), "{answer:?}");
    assert_eq!(
        store.get_result(key).await,
        Ok(Some(StoredResult {
            owner: ALICE,
            result: b"small".to_vec()
        }))
    );
}

/// A result outlives every handle, like its marker.
pub(crate) async fn results_survive_a_restart<F: Fixture>() {
    let fx = F::start().await;
    let key = fresh_key();
    let before = fx.handle().await;
    assert_eq!(before.consume(key, TTL).await, Ok(Consumed::FirstUse));
    before
        .put_result(key, ALICE, binary_result(), TTL)
        .await
        .expect("stored");
    drop(before);
    let after = fx.handle().await;
    assert_eq!(after.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
    assert_eq!(
        after.get_result(key).await,
        Ok(Some(StoredResult {
            owner: ALICE,
            result: binary_result()
        }))
    );
}

/// The suite, minus restart survival, as one test per behaviour.
macro_rules! replay_suite {
    ($fixture:ty $(, #[$attr:meta])*) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn first_use_then_replay() {
            $crate::suite::first_use_then_replay::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn a_race_has_exactly_one_winner() {
            $crate::suite::a_race_has_exactly_one_winner::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn an_expired_marker_counts_as_first_use() {
            $crate::suite::an_expired_marker_counts_as_first_use::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn a_result_is_read_back_exactly() {
            $crate::suite::a_result_is_read_back_exactly::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn an_unknown_result_is_none() {
            $crate::suite::an_unknown_result_is_none::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn an_expired_result_is_none() {
            $crate::suite::an_expired_result_is_none::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn an_over_cap_result_is_refused() {
            $crate::suite::an_over_cap_result_is_refused::<$fixture>().await;
        }
    };
}

/// Restart survival, for the backends that promise it.
macro_rules! restart_suite {
    ($fixture:ty $(, #[$attr:meta])*) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn markers_survive_a_restart() {
            $crate::suite::markers_survive_a_restart::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn results_survive_a_restart() {
            $crate::suite::results_survive_a_restart::<$fixture>().await;
        }
    };
}

pub(crate) use {replay_suite, restart_suite};
