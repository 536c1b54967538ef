//! `RedisTaskStore` against a real `redis-server` that each test starts on
//! a free loopback port: the task suite with a connection per handle, then
//! what only Redis has: the key layout and its shared expiry, the
//! eviction-policy guard, and failing closed, in time, when the server is
//! missing, gone, slow, full or holds what this store did not write.
//!
//! Without `redis-server` these tests are compiled as ignored, so the runner
//! lists them as skipped; with `CI` set they run and fail (see `build.rs`).

use std::time::Duration;

use tern_replay::{RedisConnectError, RedisOptions, RedisTaskStore, TASK_KEY_PREFIX};
use tern_seal::{Durability, StoreError, TaskEntry, TaskStore};

use crate::redis_backend::{raw, server, stall};
use crate::redis_server::{RedisServer, free_port};
use crate::tasks_suite::{TTL, TaskFixture, answer, fresh_id};

/// Generous enough for the suite's 16 MiB of answers on a loaded machine;
/// the timeout tests below set their own.
const SUITE_TIMEOUT: Duration = Duration::from_secs(5);

/// One server; each handle is a connection of its own.
pub(crate) struct Redis {
    server: RedisServer,
}

impl TaskFixture for Redis {
    type Store = RedisTaskStore;
    const SORTED_BY_KEY: bool = true;

    async fn start() -> Self {
        Self {
            server: server(&[]),
        }
    }

    async fn handle(&self) -> RedisTaskStore {
        let options = RedisOptions::default().command_timeout(SUITE_TIMEOUT);
        RedisTaskStore::connect(&self.server.url(), options)
            .await
            .expect("the test server accepts connections")
    }
}

crate::tasks_suite::task_suite!(Redis, #[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]);
crate::tasks_suite::bounds_suite!(Redis, #[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]);

async fn connect(server: &RedisServer) -> RedisTaskStore {
    RedisTaskStore::connect(&server.url(), RedisOptions::default())
        .await
        .expect("the test server accepts connections")
}

async fn pttl(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(key)
        .query_async(conn)
        .await
        .expect("PTTL")
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).expect("small")
}

/// Awaits `call`, failing the test if it hangs: the default command
/// timeout is 250 ms, and 2 s allows for a loaded machine.
async fn in_time<T>(call: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(2), call)
        .await
        .expect("answered within the command timeout, not hung")
}

/// Store errors that mean "down", as opposed to a wrong answer.
fn is_down<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::Unavailable(_) | StoreError::Timeout(_)))
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn task_keys_are_the_documented_layout_with_one_expiry() {
    let server = server(&[]);
    let store = connect(&server).await;
    assert_eq!(store.durability(), Durability::Shared);
    let id = fresh_id();
    let record = format!("{TASK_KEY_PREFIX}{{{id}}}");
    let answers = format!("{record}:ans");
    let cancel = format!("{record}:cancel");
    let mut conn = raw(&server).await;
    store
        .answer(&id, vec![answer("q", b"a")], TTL)
        .await
        .expect("answer");
    assert_eq!(pttl(&mut conn, &record).await, -2, "no record yet");
    store.put(&id, b"rec".to_vec(), TTL).await.expect("put");
    store.cancel(&id, TTL).await.expect("cancel");
    let got: Vec<u8> = redis::cmd("GET")
        .arg(&record)
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(got, b"rec");
    let got: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(&answers)
        .query_async(&mut conn)
        .await
        .expect("HGETALL");
    assert_eq!(got, vec![answer("q", b"a")]);
    let got: String = redis::cmd("GET")
        .arg(&cancel)
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(got, "1");
    for key in [&record, &answers, &cancel] {
        let left = pttl(&mut conn, key).await;
        assert!(
            left > ms(TTL) - 5_000 && left <= ms(TTL),
            "PTTL {left} of {key} for a {} ms task",
            ms(TTL)
        );
    }
    // A longer TTL on one part extends them all; a shorter one shortens
    // none.
    store
        .answer(&id, vec![answer("r", b"b")], TTL * 2)
        .await
        .expect("answer");
    store
        .cancel(&id, Duration::from_secs(1))
        .await
        .expect("cancel");
    store
        .put(&id, b"rec2".to_vec(), Duration::from_secs(1))
        .await
        .expect("put");
    for key in [&record, &answers, &cancel] {
        let left = pttl(&mut conn, key).await;
        assert!(
            left > ms(TTL * 2) - 5_000 && left <= ms(TTL * 2),
            "PTTL {left} of {key} after a {} ms write",
            ms(TTL * 2)
        );
    }
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_server_that_may_evict_is_refused_for_tasks_unless_danger_is_chosen() {
    let server = server(&["--maxmemory-policy", "allkeys-lru"]);
    let refused = RedisTaskStore::connect(&server.url(), RedisOptions::default()).await;
    assert_eq!(
        refused.err(),
        Some(RedisConnectError::EvictionPolicy {
            policy: "allkeys-lru".into()
        })
    );
    let options = RedisOptions::default().danger_skip_eviction_policy_check(true);
    let store = RedisTaskStore::connect(&server.url(), options)
        .await
        .expect("the operator took the risk");
    let id = fresh_id();
    store.put(&id, b"r".to_vec(), TTL).await.expect("put");
    assert!(store.get(&id).await.expect("reads").is_some());
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn nothing_listening_fails_closed_at_connect_in_time() {
    let port = free_port().expect("a free port");
    let url = format!("redis://127.0.0.1:{port}/");
    let options = RedisOptions::default().connect_timeout(Duration::from_millis(500));
    let refused = tokio::time::timeout(
        Duration::from_secs(2),
        RedisTaskStore::connect(&url, options),
    )
    .await
    .expect("refused within the connect timeout, not hung");
    assert!(
        matches!(
            refused,
            Err(RedisConnectError::Store(
                StoreError::Unavailable(_) | StoreError::Timeout(_)
            ))
        ),
        "{refused:?}"
    );
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_server_gone_after_connect_fails_every_call_closed_in_time() {
    let mut server = server(&[]);
    let store = connect(&server).await;
    let id = fresh_id();
    store.put(&id, b"r".to_vec(), TTL).await.expect("put");
    server.kill();
    for _ in 0..2 {
        // Down is an error, never `Ok(None)`: "no such task" would hide
        // the outage.
        let read = in_time(store.get(&id)).await;
        assert!(is_down(&read), "{read:?}");
        let put = in_time(store.put(&id, b"r2".to_vec(), TTL)).await;
        assert!(is_down(&put), "{put:?}");
        let answered = in_time(store.answer(&id, vec![answer("a", b"1")], TTL)).await;
        assert!(is_down(&answered), "{answered:?}");
        let cancelled = in_time(store.cancel(&id, TTL)).await;
        assert!(is_down(&cancelled), "{cancelled:?}");
    }
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_slow_server_times_out_task_calls() {
    let server = server(&["--enable-debug-command", "local"]);
    let options = RedisOptions::default().command_timeout(Duration::from_millis(100));
    let store = RedisTaskStore::connect(&server.url(), options)
        .await
        .expect("connects");
    let sleeper = stall(&server).await;
    let read = store.get(&fresh_id()).await;
    assert!(matches!(read, Err(StoreError::Timeout(_))), "{read:?}");
    let write = store.put(&fresh_id(), b"late".to_vec(), TTL).await;
    assert!(matches!(write, Err(StoreError::Timeout(_))), "{write:?}");
    sleeper.await.expect("sleeper finishes");
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_full_server_refuses_task_writes_with_full_but_reads() {
    let server = server(&[]);
    let store = connect(&server).await;
    let kept = fresh_id();
    store.put(&kept, b"kept".to_vec(), TTL).await.expect("put");
    let mut conn = raw(&server).await;
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET");
    let id = fresh_id();
    for write in [
        store.put(&id, b"no room".to_vec(), TTL).await,
        store.answer(&id, vec![answer("a", b"1")], TTL).await,
        store.cancel(&id, TTL).await,
    ] {
        assert!(matches!(write, Err(StoreError::Full(_))), "{write:?}");
    }
    assert_eq!(
        store.get(&kept).await,
        Ok(Some(TaskEntry {
            record: b"kept".to_vec(),
            answers: Vec::new(),
            cancelled: false,
        }))
    );
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn values_this_store_did_not_write_fail_closed() {
    let server = server(&[]);
    let store = connect(&server).await;
    let mut conn = raw(&server).await;
    // A record key of the wrong type.
    let wrong_type = fresh_id();
    let () = redis::cmd("HSET")
        .arg(format!("{TASK_KEY_PREFIX}{{{wrong_type}}}"))
        .arg("f")
        .arg("v")
        .query_async(&mut conn)
        .await
        .expect("HSET");
    let read = store.get(&wrong_type).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    // An answer key that is not text.
    let bad_key = fresh_id();
    store.put(&bad_key, b"r".to_vec(), TTL).await.expect("put");
    let () = redis::cmd("HSET")
        .arg(format!("{TASK_KEY_PREFIX}{{{bad_key}}}:ans"))
        .arg(&[0xFF_u8, 0xFE][..])
        .arg("v")
        .query_async(&mut conn)
        .await
        .expect("HSET");
    let read = store.get(&bad_key).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
}
