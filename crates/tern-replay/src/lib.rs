//! Replay-store backends that do I/O.
//!
//! [`tern_seal::ReplayStore`] is the contract: an atomic insert-if-absent that
//! answers *first use* or *already used*. This crate holds the backends that
//! talk to a database, and the startup guards that refuse a store too weak
//! for the deployment (SECURITY.md §3.9):
//!
//! - [`SqliteReplayStore`]: the embedded default for one host. WAL mode,
//!   `synchronous=FULL`, a file with mode 0600; it survives restarts and is
//!   shared by every process on the host.
//! - [`RedisReplayStore`]: shared by many instances, through
//!   `SET mrtr:v1:<hex> 1 NX PX <ttl>`; refuses a server that may evict keys.
//! - [`check_deployment`]: the startup guards.
//!
//! Both backends also keep handler results under the consume key
//! ([`tern_seal::ReplayStore::put_result`], SECURITY.md §3.9's
//! idempotency-key pattern), so a replay by the same principal can be
//! answered with the first use's result instead of a refusal.
//!
//! The same two backends hold a fleet's shared task directory
//! ([`tern_seal::TaskStore`]): [`SqliteTaskStore`] (tables `tern_tasks` and
//! `tern_task_answers`, in the replay store's file or another) and
//! [`RedisTaskStore`] (keys `tern:task:v1:{<id>}`, `…:ans`, `…:cancel`),
//! with the same settings, file mode, eviction check and fail-closed errors,
//! and values bounded by [`MAX_TASK_RECORD_BYTES`],
//! [`MAX_TASK_ANSWER_KEY_BYTES`] and [`MAX_TASK_ANSWERS_BYTES`].
//!
//! A wrongly accepted replay repeats an irreversible effect (a second
//! payment); a wrongly refused retry only makes a client restart its flow.
//! So both backends fail closed: a store that is down, slow or full returns
//! a [`tern_seal::StoreError`], never [`tern_seal::Consumed::FirstUse`], and
//! there is no fallback to another store.
//!
//! ```no_run
//! use std::time::Duration;
//! use tern_replay::{SqliteOptions, SqliteReplayStore};
//! use tern_seal::{ConsumeKey, Consumed, ReplayStore};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = SqliteReplayStore::open("/var/lib/tern/replay.db", SqliteOptions::default())?;
//! // The marker TTL is a constant: longest state TTL + skew + margin.
//! let ttl = Duration::from_secs(600 + 30 + 60);
//! let key = ConsumeKey::for_flow(&[7; 16], "pay");
//! if store.consume(key, ttl).await? == Consumed::FirstUse {
//!     // The irreversible effect goes here, at most once.
//! }
//! # Ok(())
//! # }
//! ```

// Each backend is a feature of its own: a build for one host need not
// compile a Redis client, nor a fleet's an embedded SQLite.
#[cfg(feature = "redis")]
mod redis_store;
#[cfg(feature = "redis")]
mod redis_tasks;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_tasks;
#[cfg(any(feature = "sqlite", feature = "redis"))]
mod tasks;

// The public surface, one name per type.
// The startup guards live beside the store contract, so the server
// framework applies the same ones without depending on these backends.
#[cfg(feature = "redis")]
pub use redis_store::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, KEY_PREFIX, RESULT_KEY_PREFIX,
    RedisConnectError, RedisOptions, RedisReplayStore,
};
#[cfg(feature = "redis")]
pub use redis_tasks::{RedisTaskStore, TASK_KEY_PREFIX};
#[cfg(feature = "sqlite")]
pub use sqlite::{
    DEFAULT_BUSY_TIMEOUT, DEFAULT_PURGE_INTERVAL, DEFAULT_PURGE_SKEW, DEFAULT_WAL_AUTOCHECKPOINT,
    SqliteOpenError, SqliteOptions, SqliteReplayStore, Synchronous,
};
#[cfg(feature = "sqlite")]
pub use sqlite_tasks::SqliteTaskStore;
#[cfg(any(feature = "sqlite", feature = "redis"))]
pub use tasks::{MAX_TASK_ANSWER_KEY_BYTES, MAX_TASK_ANSWERS_BYTES, MAX_TASK_RECORD_BYTES};
pub use tern_seal::{Deployment, GuardError, check_deployment};
