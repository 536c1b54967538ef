//! The distributed default: Redis `SET key 1 NX PX ttl` (SECURITY.md §3.9,
//! defaults).
//!
//! `SET … NX` is atomic on the server, so of any number of clients racing on
//! one key exactly one gets `OK`. The marker's TTL counts on the server's
//! clock, never the caller's.
//!
//! Stored results (SECURITY.md §3.9, idempotency-key pattern) are one more
//! key per use: `SET mrtr:v1:res:<hex> <owner ‖ result> PX ttl`, read back
//! with `GET`, both under the command timeout. The value is the 32-byte
//! owner fingerprint followed by the result bytes, so one round trip reads
//! both.

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, Value};
use tern_seal::{
    BoxFuture, ConsumeKey, Consumed, Durability, ReplayStore, StoreError, StoredResult,
    check_result_size,
};
use tokio::time::timeout;

/// Prefix of every marker key: `mrtr:v1:<hex key>` (SECURITY.md §3.9). The
/// version lets a future key derivation live beside this one.
pub const KEY_PREFIX: &str = "mrtr:v1:";

/// Prefix of every stored-result key: `mrtr:v1:res:<hex key>`. `res:` is not
/// hex, so a result key never collides with a marker key.
pub const RESULT_KEY_PREFIX: &str = "mrtr:v1:res:";

/// Bytes of the owner fingerprint at the start of a stored-result value.
const OWNER_LEN: usize = 32;

/// Default bound on one command, after which `consume` fails closed with
/// [`StoreError::Timeout`] (SECURITY.md §3.9: 250 ms).
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(250);

/// Default bound on establishing the connection in
/// [`RedisReplayStore::connect`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Settings of [`RedisReplayStore::connect`]; [`Default`] is the safe choice.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisOptions {
    /// Bound on each command. Too short refuses good requests when Redis is
    /// slow; too long holds them while it is down.
    pub command_timeout: Duration,
    /// Bound on connecting (and on the start-up policy check).
    pub connect_timeout: Duration,
    /// Skips the start-up check that the server runs with
    /// `maxmemory-policy noeviction`. Under any other policy Redis may evict
    /// live markers when memory runs short, and each evicted marker lets a
    /// replay through. Set it only when the check cannot run (a managed
    /// Redis that hides `CONFIG`) and the policy is known out of band.
    pub danger_skip_eviction_policy_check: bool,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            danger_skip_eviction_policy_check: false,
        }
    }
}

impl RedisOptions {
    /// Sets [`RedisOptions::command_timeout`].
    #[must_use]
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Sets [`RedisOptions::connect_timeout`].
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`RedisOptions::danger_skip_eviction_policy_check`]; read its
    /// warning first.
    #[must_use]
    pub fn danger_skip_eviction_policy_check(mut self, skip: bool) -> Self {
        self.danger_skip_eviction_policy_check = skip;
        self
    }
}

/// Why [`RedisReplayStore::connect`] refused: the process must not start with
/// this store (SECURITY.md §3.9, startup guards).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedisConnectError {
    /// The URL does not name a Redis server this client can reach (a
    /// `rediss://` URL needs TLS, which this build leaves out).
    #[error("invalid replay store url: {0}")]
    Url(String),
    /// The server could not be reached or did not answer in time.
    #[error(transparent)]
    Store(StoreError),
    /// The server may evict keys, and so live markers.
    #[error(
        "replay store redis runs with maxmemory-policy {policy}; it must be noeviction, or markers may be evicted and replays accepted"
    )]
    EvictionPolicy {
        /// The policy the server reported.
        policy: String,
    },
    /// The server would not say its eviction policy (`CONFIG` disabled or
    /// renamed).
    #[error("cannot check the replay store's maxmemory-policy: {0}")]
    PolicyUnknown(String),
}

/// A replay store shared by every instance on every host, through Redis
/// (SECURITY.md §3.9).
///
/// [`Durability::Shared`]. Markers survive a restart of Redis only with AOF
/// on, and replication is asynchronous, so a failover can drop the newest
/// markers; Redis stores expiries as absolute times, so a server clock jump
/// can end them early. Each of those lets a replay of the lost flows through:
/// run AOF, NTP and `noeviction`.
///
/// Commands go through one multiplexed [`ConnectionManager`], which
/// reconnects in the background. Clones share the connection.
///
/// The mistakes, priced: a replay wrongly accepted repeats an irreversible
/// effect, and here it can only come from a marker Redis lost (eviction, a
/// restart without AOF, a failover, a clock jump). A retry wrongly refused
/// costs one flow restart, so every doubt resolves that way: while Redis is
/// down, slow or out of memory, `consume` returns a [`StoreError`] and the
/// caller fails closed. After [`StoreError::Timeout`] the `SET` may still
/// have landed, so the next attempt may see `AlreadyUsed` (at most once).
///
/// It [keeps results](ReplayStore::keeps_results), with the markers' reach
/// and the same caveats: a result Redis loses only costs a refusal, but one
/// that must not be seen by others is guarded by the owner check of the
/// caller, not by Redis. While Redis is down, `get_result` fails; it never
/// answers "no result".
#[derive(Clone)]
pub struct RedisReplayStore {
    manager: ConnectionManager,
    command_timeout: Duration,
}

impl RedisReplayStore {
    /// Connects to `url` (`redis://host:port/db`) and checks that the server
    /// will not evict markers.
    ///
    /// # Errors
    ///
    /// [`RedisConnectError::EvictionPolicy`] unless the server runs with
    /// `maxmemory-policy noeviction` (or the check is skipped with
    /// [`RedisOptions::danger_skip_eviction_policy_check`]);
    /// [`RedisConnectError::Store`] when the server is unreachable.
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Self, RedisConnectError> {
        Ok(Self {
            manager: connect_manager(url, &options).await?,
            command_timeout: options.command_timeout,
        })
    }
}

/// Connects to `url` as every store in this crate does (the connect and
/// command timeouts of `options`, one retry) and, unless `options` skips
/// it, refuses a server that may evict keys.
pub(crate) async fn connect_manager(
    url: &str,
    options: &RedisOptions,
) -> Result<ConnectionManager, RedisConnectError> {
    let client = redis::Client::open(url).map_err(|e| RedisConnectError::Url(e.to_string()))?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_response_timeout(Some(options.command_timeout))
        .set_number_of_retries(1);
    let manager = timeout(
        options.connect_timeout,
        ConnectionManager::new_with_config(client, config),
    )
    .await
    .map_err(|_| RedisConnectError::Store(StoreError::Timeout("redis: connect timed out".into())))?
    .map_err(|e| RedisConnectError::Store(store_error(&e)))?;
    if !options.danger_skip_eviction_policy_check {
        check_eviction_policy(&manager, options.connect_timeout).await?;
    }
    Ok(manager)
}

/// Refuses a server that may evict live markers, or tasks (SECURITY.md
/// §3.9, startup guards; redis.io "Key eviction").
async fn check_eviction_policy(
    manager: &ConnectionManager,
    within: Duration,
) -> Result<(), RedisConnectError> {
    let mut conn = manager.clone();
    let reply: Vec<String> = timeout(
        within,
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory-policy")
            .query_async(&mut conn),
    )
    .await
    .map_err(|_| RedisConnectError::PolicyUnknown("CONFIG GET timed out".into()))?
    .map_err(|e| RedisConnectError::PolicyUnknown(e.to_string()))?;
    match reply.as_slice() {
        [name, policy] if name == "maxmemory-policy" => {
            if policy == "noeviction" {
                Ok(())
            } else {
                Err(RedisConnectError::EvictionPolicy {
                    policy: policy.clone(),
                })
            }
        }
        other => Err(RedisConnectError::PolicyUnknown(format!(
            "unexpected CONFIG GET reply {other:?}"
        ))),
    }
}

impl fmt::Debug for RedisReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayStore")
            .field("command_timeout", &self.command_timeout)
            .finish_non_exhaustive()
    }
}

impl ReplayStore for RedisReplayStore {
    fn consume(
        &self,
        key: ConsumeKey,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>> {
        Box::pin(async move {
            let mut conn = self.manager.clone();
            let mut cmd = redis::cmd("SET");
            cmd.arg(format!("{KEY_PREFIX}{}", key.to_hex()))
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(px(ttl));
            let reply = timeout(self.command_timeout, cmd.query_async::<Value>(&mut conn))
                .await
                .map_err(|_| StoreError::Timeout("redis: SET timed out".into()))?
                .map_err(|e| store_error(&e))?;
            match reply {
                Value::Okay => Ok(Consumed::FirstUse),
                Value::Nil => Ok(Consumed::AlreadyUsed),
                // Anything else is not a Redis that honours `SET NX`; never
                // read it as a first use.
                other => Err(StoreError::Unavailable(format!(
                    "redis: unexpected SET reply {other:?}"
                ))),
            }
        })
    }

    fn durability(&self) -> Durability {
        Durability::Shared
    }

    fn keeps_results(&self) -> bool {
        true
    }

    fn put_result(
        &self,
        key: ConsumeKey,
        owner: [u8; 32],
        result: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            check_result_size(&result)?;
            let mut value = Vec::with_capacity(OWNER_LEN + result.len());
            value.extend_from_slice(&owner);
            value.extend_from_slice(&result);
            let mut conn = self.manager.clone();
            let mut cmd = redis::cmd("SET");
            cmd.arg(result_key(&key)).arg(value).arg("PX").arg(px(ttl));
            let reply = timeout(self.command_timeout, cmd.query_async::<Value>(&mut conn))
                .await
                .map_err(|_| StoreError::Timeout("redis: SET result timed out".into()))?
                .map_err(|e| store_error(&e))?;
            match reply {
                Value::Okay => Ok(()),
                other => Err(StoreError::Unavailable(format!(
                    "redis: unexpected SET reply {other:?}"
                ))),
            }
        })
    }

    fn get_result(
        &self,
        key: ConsumeKey,
    ) -> BoxFuture<'_, Result<Option<StoredResult>, StoreError>> {
        Box::pin(async move {
            let mut conn = self.manager.clone();
            let mut cmd = redis::cmd("GET");
            cmd.arg(result_key(&key));
            let reply = timeout(self.command_timeout, cmd.query_async::<Value>(&mut conn))
                .await
                .map_err(|_| StoreError::Timeout("redis: GET result timed out".into()))?
                .map_err(|e| store_error(&e))?;
            match reply {
                Value::Nil => Ok(None),
                Value::BulkString(mut value) if value.len() >= OWNER_LEN => {
                    let result = value.split_off(OWNER_LEN);
                    let mut owner = [0; OWNER_LEN];
                    owner.copy_from_slice(&value);
                    Ok(Some(StoredResult { owner, result }))
                }
                // A value this store did not write: failing closed beats
                // handing a result to an owner it cannot name.
                other => Err(StoreError::Unavailable(format!(
                    "redis: unexpected GET reply for a result ({})",
                    describe(&other)
                ))),
            }
        })
    }
}

/// `mrtr:v1:res:<hex key>`.
fn result_key(key: &ConsumeKey) -> String {
    format!("{RESULT_KEY_PREFIX}{}", key.to_hex())
}

/// A reply's shape without its content: a stray value may be someone's
/// data, and errors end up in logs.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => format!("{} bytes", bytes.len()),
        Value::Int(_) => "an integer".into(),
        Value::SimpleString(_) | Value::Okay => "a status".into(),
        _ => "a value of another type".into(),
    }
}

/// Whole milliseconds for `PX`, rounded up so a marker never lives shorter
/// than asked, and at least 1 (Redis rejects `PX 0`).
pub(crate) fn px(ttl: Duration) -> u64 {
    let ms = ttl.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// Maps a Redis failure onto the contract: every one fails closed.
pub(crate) fn store_error(e: &RedisError) -> StoreError {
    if e.is_timeout() {
        StoreError::Timeout(format!("redis: {e}"))
    } else if e.code() == Some("OOM") {
        // `noeviction` at its memory limit refuses writes instead of
        // forgetting markers: exactly the failure it was chosen for.
        StoreError::Full(format!("redis: {e}"))
    } else {
        StoreError::Unavailable(format!("redis: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn px_rounds_up_and_is_never_zero() {
        assert_eq!(px(Duration::ZERO), 1);
        assert_eq!(px(Duration::from_micros(1500)), 2);
        assert_eq!(px(Duration::from_secs(690)), 690_000);
    }
}
