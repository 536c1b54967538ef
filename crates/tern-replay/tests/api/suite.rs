//! The suite every backend passes: the contract of `ReplayStore`
//! (SECURITY.md §3.9), run against real stores.

use std::sync::Arc;
use std::time::Duration;

use tern_seal::{Consumed, ReplayStore};
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

    /// Sets the backend up, or `None` when the test is to be skipped (the
    /// fixture says why).
    async fn start() -> Option<Self>;

    /// A new handle on the same markers: a new connection where the backend
    /// has them. Dropping every handle and taking a new one is a restart.
    async fn handle(&self) -> Self::Store;
}

/// A key is used once; every later consume is refused, on any handle.
pub(crate) async fn first_use_then_replay<F: Fixture>() {
    let Some(fx) = F::start().await else { return };
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
    let Some(fx) = F::start().await else { return };
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
    let Some(fx) = F::start().await else { return };
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
    let Some(fx) = F::start().await else { return };
    let key = fresh_key();
    let before = fx.handle().await;
    assert_eq!(before.consume(key, TTL).await, Ok(Consumed::FirstUse));
    drop(before);
    let after = fx.handle().await;
    assert_eq!(after.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
}

/// The suite, minus restart survival, as one test per behaviour.
macro_rules! replay_suite {
    ($fixture:ty) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn first_use_then_replay() {
            $crate::suite::first_use_then_replay::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_race_has_exactly_one_winner() {
            $crate::suite::a_race_has_exactly_one_winner::<$fixture>().await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn an_expired_marker_counts_as_first_use() {
            $crate::suite::an_expired_marker_counts_as_first_use::<$fixture>().await;
        }
    };
}

/// Restart survival, for the backends that promise it.
macro_rules! restart_suite {
    ($fixture:ty) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn markers_survive_a_restart() {
            $crate::suite::markers_survive_a_restart::<$fixture>().await;
        }
    };
}

pub(crate) use {replay_suite, restart_suite};
