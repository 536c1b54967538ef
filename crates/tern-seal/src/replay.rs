//! The single-use contract and the in-memory backend (SECURITY.md §3.9).

use std::collections::HashMap;
use std::fmt;
use std::future::{Future, ready};
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};

use crate::envelope::length_prefixed;

/// A boxed, sendable future: keeps [`ReplayStore`] dyn-compatible without
/// tying it to an async runtime.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Default bound of [`MemoryReplayStore`]: live markers held before it
/// fails closed (SECURITY.md §3.9, defaults).
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;

/// Domain tags of [`ConsumeKey`]'s two derivations.
const FLOW_TAG: &[u8] = b"tern-seal/consume/flow/v1";
const BUSINESS_TAG: &[u8] = b"tern-seal/consume/business/v1";

/// An atomic insert-if-absent that makes an irreversible effect happen at
/// most once (SECURITY.md §3.9, MRTR-SEC4).
///
/// Sealing limits replay to a token's lifetime but cannot make a token
/// single use: any copy of it opens. So before an irreversible effect, the
/// caller consumes a key derived from the flow (or from a business key such
/// as a redemption code) and goes ahead only on [`Consumed::FirstUse`].
///
/// The two ways to be wrong are not priced alike:
///
/// - **A replay wrongly accepted** (answering `FirstUse` for a key already
///   consumed) repeats the effect: a second payment, a second deletion. This
///   must never happen while the marker's TTL runs, so a store that loses
///   markers (eviction, a restart of a volatile store, a failover that drops
///   writes) is unsafe for the keys it lost.
/// - **A retry wrongly refused** (answering `AlreadyUsed`, or an error, for a
///   key never consumed) costs one flow: the client restarts it. That is
///   cheap, so every doubt resolves this way. An unreachable, slow or full
///   store returns [`StoreError`] and the caller fails closed, with no
///   effect and no fallback to another store.
///
/// Contract for implementations:
///
/// - `consume` is atomic per key: of any number of concurrent calls with one
///   key, across every process sharing the store, exactly one sees
///   `FirstUse`.
/// - A marker lives at least `ttl`, counted on the store's own clock. The
///   caller passes a constant (maximum state TTL plus skew plus margin),
///   never a token's expiry, so clock differences cannot shorten it.
/// - [`ReplayStore::durability`] tells the truth, so startup guards can
///   refuse a store too weak for the deployment.
pub trait ReplayStore: Send + Sync + 'static {
    /// Records `key` unless it is already recorded, and says which.
    fn consume(
        &self,
        key: ConsumeKey,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>>;

    /// How far the markers reach: used by startup guards (SECURITY.md §3.9).
    fn durability(&self) -> Durability;
}

/// The answer of [`ReplayStore::consume`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Consumed {
    /// This call recorded the key: go ahead with the effect.
    FirstUse,
    /// The key was already recorded: do not repeat the effect.
    AlreadyUsed,
}

/// What survives and who shares a store's markers (SECURITY.md §3.9,
/// startup guards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Durability {
    /// Lost on restart and private to one process: only safe with an
    /// ephemeral key ring, which dies with the same process.
    Volatile,
    /// Survives restarts and is shared by processes on one host.
    LocalDurable,
    /// Shared by every instance on every host.
    Shared,
}

/// Why a store could not answer. Every variant means: fail closed, no
/// effect, and the key is not consumed, so retrying later is allowed
/// (SECURITY.md §3.5, `store_unavailable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached.
    #[error("replay store unavailable: {0}")]
    Unavailable(String),
    /// The store did not answer in time. The write may have landed, so the
    /// next attempt may see `AlreadyUsed` (at most once).
    #[error("replay store timed out: {0}")]
    Timeout(String),
    /// The store is at its bound and nothing has expired.
    #[error("replay store full: {0}")]
    Full(String),
}

/// The key a single-use effect is recorded under: a domain-separated
/// SHA-256, never derived from token text, so re-encoding a token cannot
/// yield a fresh key (SECURITY.md §3.9).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConsumeKey([u8; 32]);

impl ConsumeKey {
    /// `H(flow_id ‖ label)`: one key per effect of a flow, constant across its
    /// rounds, so a forked flow can commit only once.
    pub fn for_flow(flow_id: &[u8; 16], label: &str) -> Self {
        let mut h = Sha256::new();
        length_prefixed(&mut h, FLOW_TAG);
        length_prefixed(&mut h, flow_id);
        length_prefixed(&mut h, label.as_bytes());
        Self(h.finalize().into())
    }

    /// A key from the business itself, such as a redemption code, so the
    /// effect happens once whichever flow carries it.
    pub fn business(namespace: &str, key: &str) -> Self {
        let mut h = Sha256::new();
        length_prefixed(&mut h, BUSINESS_TAG);
        length_prefixed(&mut h, namespace.as_bytes());
        length_prefixed(&mut h, key.as_bytes());
        Self(h.finalize().into())
    }

    /// The 32 bytes, for stores that keep binary keys.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, for stores that keep text keys (`mrtr:v1:<hex>`).
    pub fn to_hex(&self) -> String {
        use fmt::Write as _;
        let mut s = String::with_capacity(64);
        for b in &self.0 {
            // Writing into a `String` cannot fail.
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

impl fmt::Debug for ConsumeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConsumeKey({})", self.to_hex())
    }
}

/// A bounded in-process store, for stdio and tests: markers live in a
/// `Mutex<HashMap>` with expiries on the store's own monotonic clock.
///
/// [`Durability::Volatile`]: safe only with an ephemeral key ring, which
/// dies with the process (SECURITY.md §3.9). When the bound is reached and
/// no marker has expired, `consume` fails closed with [`StoreError::Full`]
/// instead of forgetting a live marker.
pub struct MemoryReplayStore {
    inner: Mutex<Markers>,
    capacity: usize,
}

struct Markers {
    /// Key to expiry; `None` when `now + ttl` overflows the clock.
    live: HashMap<ConsumeKey, Option<Instant>>,
    /// No marker expires before this, so a full store need not scan
    /// before then. `None` when unknown or nothing can expire.
    earliest: Option<Instant>,
}

impl MemoryReplayStore {
    /// A store bounded to [`DEFAULT_MEMORY_CAPACITY`] live markers.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_CAPACITY)
    }

    /// A store bounded to `capacity` live markers.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Markers {
                live: HashMap::new(),
                earliest: None,
            }),
            capacity,
        }
    }

    /// Markers held, live or expired but not yet purged.
    pub fn len(&self) -> usize {
        self.lock().live.len()
    }

    /// Whether no marker is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Markers> {
        // No code path panics while holding the lock with the map half
        // updated, so a poisoned map is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn consume_now(&self, key: ConsumeKey, ttl: Duration) -> Result<Consumed, StoreError> {
        #[expect(
            clippy::disallowed_methods,
            reason = "the replay store counts marker TTLs on its own clock (SECURITY.md §3.9)"
        )]
        let now = Instant::now();
        let expiry = now.checked_add(ttl);
        let mut markers = self.lock();
        if let Some(existing) = markers.live.get(&key) {
            if existing.is_none_or(|at| now < at) {
                return Ok(Consumed::AlreadyUsed);
            }
        } else if markers.live.len() >= self.capacity {
            markers.purge(now);
            if markers.live.len() >= self.capacity {
                return Err(StoreError::Full(format!(
                    "{} live markers and none expired",
                    self.capacity
                )));
            }
        }
        markers.live.insert(key, expiry);
        if let Some(at) = expiry {
            markers.earliest = Some(markers.earliest.map_or(at, |e| e.min(at)));
        }
        Ok(Consumed::FirstUse)
    }
}

impl Markers {
    /// Drops expired markers, unless none can have expired yet.
    fn purge(&mut self, now: Instant) {
        if self.earliest.is_none_or(|e| now < e) {
            return;
        }
        self.live.retain(|_, at| at.is_none_or(|at| now < at));
        self.earliest = self.live.values().flatten().min().copied();
    }
}

impl Default for MemoryReplayStore {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryReplayStore")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl ReplayStore for MemoryReplayStore {
    fn consume(
        &self,
        key: ConsumeKey,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>> {
        Box::pin(ready(self.consume_now(key, ttl)))
    }

    fn durability(&self) -> Durability {
        Durability::Volatile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_domain_separated() {
        let flow = [7u8; 16];
        assert_ne!(
            ConsumeKey::for_flow(&flow, "pay"),
            ConsumeKey::for_flow(&flow, "refund")
        );
        assert_ne!(
            ConsumeKey::business("a", "bc"),
            ConsumeKey::business("ab", "c")
        );
        assert_eq!(ConsumeKey::for_flow(&flow, "pay").to_hex().len(), 64);
    }

    #[test]
    fn a_full_store_with_nothing_expirable_does_not_scan() {
        let store = MemoryReplayStore::with_capacity(1);
        let long = Duration::from_secs(3600);
        assert_eq!(
            store.consume_now(ConsumeKey::business("t", "a"), long),
            Ok(Consumed::FirstUse)
        );
        assert!(matches!(
            store.consume_now(ConsumeKey::business("t", "b"), long),
            Err(StoreError::Full(_))
        ));
        assert_eq!(
            store.consume_now(ConsumeKey::business("t", "a"), long),
            Ok(Consumed::AlreadyUsed)
        );
    }
}
