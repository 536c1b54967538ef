//! The backends both benches measure, each on fresh storage.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tern_replay::{RedisOptions, RedisReplayStore, SqliteOptions, SqliteReplayStore, Synchronous};
use tern_seal::{ConsumeKey, MemoryReplayStore, ReplayStore};
use tokio::runtime::Runtime;

use crate::redis_server::{RedisServer, StartError};

/// The marker TTL of SECURITY.md §3.3's defaults: 600 + 30 + 60 s.
pub(crate) const TTL: Duration = Duration::from_secs(690);

/// A store under measurement, plus what keeps it alive.
pub(crate) struct Backend {
    pub(crate) name: &'static str,
    pub(crate) store: Box<dyn ReplayStore>,
    /// Markers' TTL for this backend.
    pub(crate) ttl: Duration,
    _server: Option<RedisServer>,
    dir: Option<PathBuf>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Every backend this machine can run; Redis is left out (with the reason)
/// when `redis-server` is missing.
pub(crate) fn backends(rt: &Runtime) -> (Vec<Backend>, Option<String>) {
    // Memory markers expire after 1 ms so millions of iterations stay under
    // the 100 000-marker bound; the measured path is the same insert.
    let mut all = vec![Backend {
        name: "memory",
        store: Box::new(MemoryReplayStore::new()),
        ttl: Duration::from_millis(1),
        _server: None,
        dir: None,
    }];
    for (name, sync) in [
        ("sqlite-full", Synchronous::Full),
        ("sqlite-normal", Synchronous::Normal),
    ] {
        // On the target dir's disk, not a tmpfs, so FULL pays for its fsync.
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("tern-replay-bench-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("bench dir is writable");
        let store = SqliteReplayStore::open(
            dir.join("replay.db"),
            SqliteOptions::default().synchronous(sync),
        )
        .expect("bench database opens");
        all.push(Backend {
            name,
            store: Box::new(store),
            ttl: TTL,
            _server: None,
            dir: Some(dir),
        });
    }
    let skipped = match RedisServer::start(&[]) {
        Ok(server) => {
            let store = rt
                .block_on(RedisReplayStore::connect(
                    &server.url(),
                    RedisOptions::default(),
                ))
                .expect("bench redis accepts connections");
            all.push(Backend {
                name: "redis",
                store: Box::new(store),
                ttl: TTL,
                _server: Some(server),
                dir: None,
            });
            None
        }
        Err(StartError::Missing) => Some("redis skipped: redis-server is not installed".into()),
        Err(StartError::NoAnswer(why)) => Some(format!("redis skipped: {why}")),
    };
    (all, skipped)
}

/// A key never consumed before in this process.
pub(crate) fn fresh_key() -> ConsumeKey {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    ConsumeKey::business("tern-replay/bench", &format!("{}-{n}", std::process::id()))
}

/// The runtime the async stores run on: one thread, like a request handler.
pub(crate) fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
