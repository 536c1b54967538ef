//! `RedisReplayStore` against a real `redis-server` that each test starts on
//! a free loopback port: the suite with 32 connections, restart of the
//! client, the eviction-policy guard, the stored-result encoding, and
//! failing closed for markers and results alike (SECURITY.md §3.9).
//!
//! Without `redis-server` these tests are compiled as ignored, so the runner
//! lists them as skipped; with `CI` set they run and fail (see `build.rs`).

use std::time::Duration;

use tern_replay::{
    KEY_PREFIX, RESULT_KEY_PREFIX, RedisConnectError, RedisOptions, RedisReplayStore,
};
use tern_seal::{Consumed, Durability, ReplayStore, StoreError};

use crate::redis_server::{BINARY, RedisServer, StartError, free_port};
use crate::suite::{ALICE, Fixture, TTL};
use crate::util::fresh_key;

/// Starts a server with `extra` arguments; a server that cannot start fails
/// the test.
pub(crate) fn server(extra: &[&str]) -> RedisServer {
    match RedisServer::start(extra) {
        Ok(server) => server,
        Err(StartError::Missing) => {
            panic!("`{BINARY}` is not installed: install it (.ci/run does)")
        }
        Err(StartError::NoAnswer(why)) => panic!("`{BINARY}` did not start: {why}"),
    }
}

async fn connect(url: &str) -> RedisReplayStore {
    RedisReplayStore::connect(url, RedisOptions::default())
        .await
        .expect("the test server accepts connections")
}

/// One server; each handle is a connection of its own.
pub(crate) struct Redis {
    server: RedisServer,
}

impl Fixture for Redis {
    type Store = RedisReplayStore;

    async fn start() -> Self {
        Self {
            server: server(&[]),
        }
    }

    async fn handle(&self) -> RedisReplayStore {
        connect(&self.server.url()).await
    }
}

crate::suite::replay_suite!(Redis, #[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]);
crate::suite::restart_suite!(Redis, #[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]);

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn markers_are_prefixed_keys_with_the_marker_ttl() {
    let server = server(&[]);
    let store = connect(&server.url()).await;
    assert_eq!(store.durability(), Durability::Shared);
    let key = fresh_key();
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::FirstUse));
    let client = redis::Client::open(server.url()).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connects");
    let pttl: i64 = redis::cmd("PTTL")
        .arg(format!("{KEY_PREFIX}{}", key.to_hex()))
        .query_async(&mut conn)
        .await
        .expect("PTTL");
    let ttl_ms = i64::try_from(TTL.as_millis()).expect("small");
    assert!(
        pttl > ttl_ms - 5_000 && pttl <= ttl_ms,
        "PTTL {pttl} for a {ttl_ms} ms marker"
    );
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_server_that_may_evict_is_refused_unless_danger_is_chosen() {
    let server = server(&["--maxmemory-policy", "allkeys-lru"]);
    let refused = RedisReplayStore::connect(&server.url(), RedisOptions::default()).await;
    assert_eq!(
        refused.err(),
        Some(RedisConnectError::EvictionPolicy {
            policy: "allkeys-lru".into()
        })
    );
    let options = RedisOptions::default().danger_skip_eviction_policy_check(true);
    let store = RedisReplayStore::connect(&server.url(), options)
        .await
        .expect("the operator took the risk");
    assert_eq!(
        store.consume(fresh_key(), TTL).await,
        Ok(Consumed::FirstUse)
    );
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_server_that_hides_its_policy_is_refused() {
    let server = server(&["--rename-command", "CONFIG", ""]);
    let refused = RedisReplayStore::connect(&server.url(), RedisOptions::default()).await;
    assert!(
        matches!(refused, Err(RedisConnectError::PolicyUnknown(_))),
        "{refused:?}"
    );
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn nothing_listening_fails_closed_at_connect() {
    let port = free_port().expect("a free port");
    let url = format!("redis://127.0.0.1:{port}/");
    let refused = RedisReplayStore::connect(&url, RedisOptions::default()).await;
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
async fn a_server_gone_after_connect_fails_closed_at_consume() {
    let mut server = server(&[]);
    let store = connect(&server.url()).await;
    assert_eq!(
        store.consume(fresh_key(), TTL).await,
        Ok(Consumed::FirstUse)
    );
    server.kill();
    for _ in 0..3 {
        let answer = store.consume(fresh_key(), TTL).await;
        assert!(
            matches!(
                answer,
                Err(StoreError::Unavailable(_) | StoreError::Timeout(_))
            ),
            "{answer:?}"
        );
    }
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_full_server_fails_closed_with_full() {
    let server = server(&[]);
    let store = connect(&server.url()).await;
    let client = redis::Client::open(server.url()).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connects");
    // Below what the server already uses, so `noeviction` refuses writes.
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET");
    let answer = store.consume(fresh_key(), TTL).await;
    assert!(matches!(answer, Err(StoreError::Full(_))), "{answer:?}");
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_slow_server_times_out() {
    let server = server(&["--enable-debug-command", "local"]);
    let options = RedisOptions::default().command_timeout(Duration::from_millis(100));
    let store = RedisReplayStore::connect(&server.url(), options)
        .await
        .expect("connects");
    let sleeper = stall(&server).await;
    let answer = store.consume(fresh_key(), TTL).await;
    assert!(matches!(answer, Err(StoreError::Timeout(_))), "{answer:?}");
    sleeper.await.expect("sleeper finishes");
}

/// Blocks the single-threaded test server for 0.5 s (DEBUG SLEEP, which
/// needs `--enable-debug-command local`); the handle ends with the sleep.
pub(crate) async fn stall(server: &RedisServer) -> tokio::task::JoinHandle<()> {
    let mut conn = raw(server).await;
    let sleeper = tokio::spawn(async move {
        let _: redis::RedisResult<()> = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg("0.5")
            .query_async(&mut conn)
            .await;
    });
    // Until the server has taken the command.
    tokio::time::sleep(Duration::from_millis(50)).await;
    sleeper
}

/// A raw connection to the test server, behind the store's back.
pub(crate) async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connects")
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn results_are_owner_then_bytes_under_a_prefixed_key_with_their_ttl() {
    let server = server(&[]);
    let store = connect(&server.url()).await;
    let key = fresh_key();
    store
        .put_result(key, ALICE, b"answer".to_vec(), TTL)
        .await
        .expect("stored");
    let mut conn = raw(&server).await;
    let name = format!("{RESULT_KEY_PREFIX}{}", key.to_hex());
    let value: Vec<u8> = redis::cmd("GET")
        .arg(&name)
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(value, [&ALICE[..], b"answer"].concat());
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&name)
        .query_async(&mut conn)
        .await
        .expect("PTTL");
    let ttl_ms = i64::try_from(TTL.as_millis()).expect("small");
    assert!(
        pttl > ttl_ms - 5_000 && pttl <= ttl_ms,
        "PTTL {pttl} for a {ttl_ms} ms result"
    );
    // The result key is not the marker key: storing a result consumes
    // nothing.
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::FirstUse));
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_value_too_short_to_hold_an_owner_fails_closed() {
    let server = server(&[]);
    let store = connect(&server.url()).await;
    let key = fresh_key();
    let mut conn = raw(&server).await;
    let () = redis::cmd("SET")
        .arg(format!("{RESULT_KEY_PREFIX}{}", key.to_hex()))
        .arg(vec![0xA1_u8; 31])
        .query_async(&mut conn)
        .await
        .expect("SET");
    let answer = store.get_result(key).await;
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{answer:?}"
    );
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_server_gone_after_connect_fails_closed_for_results() {
    let mut server = server(&[]);
    let store = connect(&server.url()).await;
    let key = fresh_key();
    store
        .put_result(key, ALICE, b"kept".to_vec(), TTL)
        .await
        .expect("stored");
    server.kill();
    for _ in 0..3 {
        // Down is an error, never `Ok(None)`: "no result" would read as
        // "still running" and hide the outage.
        let read = store.get_result(key).await;
        assert!(
            matches!(
                read,
                Err(StoreError::Unavailable(_) | StoreError::Timeout(_))
            ),
            "{read:?}"
        );
        let write = store
            .put_result(fresh_key(), ALICE, b"lost".to_vec(), TTL)
            .await;
        assert!(
            matches!(
                write,
                Err(StoreError::Unavailable(_) | StoreError::Timeout(_))
            ),
            "{write:?}"
        );
    }
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_full_server_refuses_results_with_full() {
    let server = server(&[]);
    let store = connect(&server.url()).await;
    let kept = fresh_key();
    store
        .put_result(kept, ALICE, b"kept".to_vec(), TTL)
        .await
        .expect("stored");
    let mut conn = raw(&server).await;
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET");
    let answer = store
        .put_result(fresh_key(), ALICE, b"no room".to_vec(), TTL)
        .await;
    assert!(matches!(answer, Err(StoreError::Full(_))), "{answer:?}");
    // Reads still work at the limit: `noeviction` refuses writes only.
    assert!(store.get_result(kept).await.expect("reads").is_some());
}

#[tokio::test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
async fn a_slow_server_times_out_for_results() {
    let server = server(&["--enable-debug-command", "local"]);
    let options = RedisOptions::default().command_timeout(Duration::from_millis(100));
    let store = RedisReplayStore::connect(&server.url(), options)
        .await
        .expect("connects");
    let sleeper = stall(&server).await;
    let read = store.get_result(fresh_key()).await;
    assert!(matches!(read, Err(StoreError::Timeout(_))), "{read:?}");
    let write = store
        .put_result(fresh_key(), ALICE, b"late".to_vec(), TTL)
        .await;
    assert!(matches!(write, Err(StoreError::Timeout(_))), "{write:?}");
    sleeper.await.expect("sleeper finishes");
}
