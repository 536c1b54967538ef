//! The single-use contract and the in-memory backend (SECURITY.md §3.9).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::future::{Future, ready};
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};

use crate::envelope::length_prefixed;
use crate::hex::Hex;

/// A boxed, sendable future: keeps [`ReplayStore`] dyn-compatible without
/// tying it to an async runtime.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Default bound of [`MemoryReplayStore`]: live markers held before it
/// fails closed (SECURITY.md §3.9, defaults).
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;

/// Largest result [`ReplayStore::put_result`] accepts, in bytes (64 KiB).
///
/// A stored result is a replayable answer, not a blob store: the cap keeps
/// one handler from filling a shared store, and keeps a Redis value or
/// SQLite row small enough to read under the command timeout. Bigger
/// results are refused with [`StoreError::Full`].
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// Default bound of [`MemoryReplayStore`] on the bytes of live results
/// (64 MiB, 1 024 results at [`MAX_RESULT_BYTES`]). Markers are bounded by
/// count; results also need a byte bound, or 100 000 results of 64 KiB
/// would be 6.4 GiB of process memory.
pub const DEFAULT_MEMORY_RESULT_BUDGET: usize = 64 * 1024 * 1024;

/// The error of the default [`ReplayStore::put_result`] and
/// [`ReplayStore::get_result`].
const NO_RESULTS: &str = "this store keeps no results";

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
///
/// # Stored results (the idempotency-key pattern)
///
/// `consume` alone gives at-most-once: a client whose answer was lost can
/// only restart the flow. A store that [keeps results](Self::keeps_results)
/// also lets a handler give exactly-once *answers* (SECURITY.md §3.9: "store
/// the result under the consume key and return it to the same principal on
/// replay", the IETF Idempotency-Key pattern):
///
/// 1. `consume(key)`; on `FirstUse`, run the effect.
/// 2. After the effect, [`put_result`](Self::put_result)`(key, owner,
///    bytes, ttl)`, where `owner` is the fingerprint of the principal that
///    ran it.
/// 3. On `AlreadyUsed`, [`get_result`](Self::get_result)`(key)`. If a
///    result is there **and its `owner` equals the caller's fingerprint**,
///    answer with it; the effect is not repeated.
/// 4. Otherwise answer the uniform refusal, exactly as without results.
///
/// The store never checks the owner; the caller does, in step 3. Another
/// principal replaying the state must not learn the result, nor even that
/// one exists: it gets the same refusal as for a missing result.
///
/// A missing result while the key is consumed means the first use is still
/// running, or its result was lost (the effect failed, `put_result` failed,
/// the process died between effect and write, or the result expired). The
/// caller cannot tell these apart, so it refuses: at-most-once is kept, and
/// the worst case is the flow restart that `consume` alone would cost. A
/// failed `put_result` is therefore never a reason to undo or repeat the
/// effect.
///
/// Pass as `ttl` the marker TTL less the time since the consume, so the
/// result never outlives its marker: once a business key's marker expires
/// and the key is consumed again, a replay of the new use must not find the
/// old use's result.
///
/// Results are capped at [`MAX_RESULT_BYTES`]; a bigger one is refused with
/// [`StoreError::Full`]. A later `put_result` under the same key replaces
/// the earlier one (only the `FirstUse` winner writes, so there is one
/// writer per use).
///
/// The three result methods have defaults, for stores that keep no results:
/// `keeps_results` is `false` and the other two fail with
/// [`StoreError::Unavailable`], so a caller that asked for results anyway
/// falls back to at-most-once. A store that forwards to another store (a
/// wrapper) must forward these too, or it silently keeps none.
pub trait ReplayStore: Send + Sync + 'static {
    /// Records `key` unless it is already recorded, and says which.
    fn consume(
        &self,
        key: ConsumeKey,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>>;

    /// How far the markers reach: used by startup guards (SECURITY.md §3.9).
    fn durability(&self) -> Durability;

    /// Whether [`put_result`](Self::put_result) and
    /// [`get_result`](Self::get_result) work, so a server can refuse at
    /// startup a handler that needs stored results on a store without them.
    fn keeps_results(&self) -> bool {
        false
    }

    /// Stores the result of the effect guarded by `key`, for `owner` (the
    /// principal's fingerprint), for at least `ttl` on the store's clock.
    ///
    /// Called after the effect, by the `FirstUse` winner only. Replaces any
    /// earlier result under `key`. Fails with [`StoreError::Full`] when
    /// `result` exceeds [`MAX_RESULT_BYTES`] or the store is at its bound.
    fn put_result(
        &self,
        key: ConsumeKey,
        owner: [u8; 32],
        result: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = (key, owner, result, ttl);
        Box::pin(ready(Err(StoreError::Unavailable(NO_RESULTS.into()))))
    }

    /// The live result stored under `key`, or `None` when there is none
    /// (never stored, lost, or expired).
    ///
    /// The caller must compare [`StoredResult::owner`] with its principal's
    /// fingerprint before using the result. A store that cannot answer
    /// returns an error, never `Ok(None)`, so an outage is not mistaken for
    /// "still running".
    fn get_result(
        &self,
        key: ConsumeKey,
    ) -> BoxFuture<'_, Result<Option<StoredResult>, StoreError>> {
        let _ = key;
        Box::pin(ready(Err(StoreError::Unavailable(NO_RESULTS.into()))))
    }
}

/// A result kept under a consume key by [`ReplayStore::put_result`]
/// (SECURITY.md §3.9, idempotency-key pattern).
///
/// `Debug` shows the result's length, not its bytes: results may carry
/// whatever the handler returned, and debug output ends up in logs.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredResult {
    /// Fingerprint of the principal whose request ran the effect. Only that
    /// principal may be answered with `result`; the caller checks.
    pub owner: [u8; 32],
    /// The handler's answer, as it serialised it; at most
    /// [`MAX_RESULT_BYTES`].
    pub result: Vec<u8>,
}

impl fmt::Debug for StoredResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredResult")
            .field("owner", &Hex(&self.owner))
            .field("result_len", &self.result.len())
            .finish()
    }
}

/// Refuses a result above [`MAX_RESULT_BYTES`], for every backend alike.
/// Public so backends in other crates apply the same cap with the same
/// error.
pub fn check_result_size(result: &[u8]) -> Result<(), StoreError> {
    if result.len() > MAX_RESULT_BYTES {
        return Err(StoreError::Full(format!(
            "result of {} bytes exceeds the {MAX_RESULT_BYTES}-byte cap",
            result.len()
        )));
    }
    Ok(())
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
        Hex(&self.0).to_string()
    }
}

impl fmt::Debug for ConsumeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConsumeKey({})", Hex(&self.0))
    }
}

/// A bounded in-process store, for stdio and tests: markers live in a
/// `Mutex<HashMap>` with expiries on the store's own monotonic clock.
///
/// [`Durability::Volatile`]: safe only with an ephemeral key ring, which
/// dies with the process (SECURITY.md §3.9). When the bound is reached and
/// no marker has expired, `consume` fails closed with [`StoreError::Full`]
/// instead of forgetting a live marker.
///
/// It [keeps results](ReplayStore::keeps_results), bounded the same way: at
/// most `capacity` results and [`DEFAULT_MEMORY_RESULT_BUDGET`] bytes of
/// them (see [`MemoryReplayStore::with_result_budget`]); past either bound,
/// with nothing expired, `put_result` fails with [`StoreError::Full`]. A
/// lost result only costs the client a restart, but a live one is never
/// dropped to make room: that would turn a replayable answer into a refusal
/// at random.
pub struct MemoryReplayStore {
    inner: Mutex<State>,
    capacity: usize,
    result_budget: usize,
}

/// Markers and results under one lock, so a store is one critical section.
struct State {
    markers: Markers,
    results: Results,
}

#[derive(Default)]
struct Markers {
    /// Key to expiry; `None` when `now + ttl` overflows the clock.
    live: HashMap<ConsumeKey, Option<Instant>>,
    expiries: Expiries,
}

#[derive(Default)]
struct Results {
    /// Key to expiry (`None`: beyond the clock) and the result.
    live: HashMap<ConsumeKey, (Option<Instant>, StoredResult)>,
    /// Sum of the `result` lengths held, for the byte budget.
    bytes: usize,
    expiries: Expiries,
}

/// Every expiry given out, soonest first, so dropping what has lapsed
/// visits only that: a store kept full at a steady rate, where one entry
/// lapses for each that arrives, would otherwise scan every entry on every
/// insert. An entry whose key was given another expiry since (a result
/// replaced) is stale and skipped when it comes up; once stale entries
/// outnumber the live, the heap is rebuilt from the live ones, so it stays
/// within twice the store's bound at a cost of O(1) per insert, amortized.
#[derive(Default)]
struct Expiries(BinaryHeap<Reverse<(Instant, ConsumeKey)>>);

impl Expiries {
    /// Queues `key`'s expiry; `live` are the entries held after it, with
    /// their expiries, from which the heap is rebuilt when it must be.
    fn push<'a>(
        &mut self,
        at: Option<Instant>,
        key: ConsumeKey,
        live: impl ExactSizeIterator<Item = (&'a ConsumeKey, Option<Instant>)>,
    ) {
        let Some(at) = at else { return };
        self.0.push(Reverse((at, key)));
        if self.0.len() > 2 * live.len() + 16 {
            self.0 = live
                .filter_map(|(k, at)| at.map(|at| Reverse((at, *k))))
                .collect();
        }
    }

    /// Pops each entry lapsed at `now`, giving its key and expiry to
    /// `lapsed`.
    fn pop_lapsed(&mut self, now: Instant, mut lapsed: impl FnMut(ConsumeKey, Instant)) {
        while let Some(&Reverse((at, key))) = self.0.peek() {
            if now < at {
                break;
            }
            self.0.pop();
            lapsed(key, at);
        }
    }
}

impl MemoryReplayStore {
    /// A store bounded to [`DEFAULT_MEMORY_CAPACITY`] live markers.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_CAPACITY)
    }

    /// A store bounded to `capacity` live markers (and as many results).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(State {
                markers: Markers::default(),
                results: Results::default(),
            }),
            capacity,
            result_budget: DEFAULT_MEMORY_RESULT_BUDGET,
        }
    }

    /// Bounds the bytes of live results to `bytes` instead of
    /// [`DEFAULT_MEMORY_RESULT_BUDGET`]. Each result still obeys
    /// [`MAX_RESULT_BYTES`].
    #[must_use]
    pub fn with_result_budget(mut self, bytes: usize) -> Self {
        self.result_budget = bytes;
        self
    }

    /// Markers held, live or expired but not yet purged.
    pub fn len(&self) -> usize {
        self.lock().markers.live.len()
    }

    /// Whether no marker is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Results held, live or expired but not yet purged.
    pub fn results_len(&self) -> usize {
        self.lock().results.live.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // No code path panics while holding the lock with the maps half
        // updated, so a poisoned state is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn consume_now(&self, key: ConsumeKey, ttl: Duration) -> Result<Consumed, StoreError> {
        let now = clock();
        let expiry = now.checked_add(ttl);
        let mut state = self.lock();
        let markers = &mut state.markers;
        markers.purge(now);
        if markers.live.contains_key(&key) {
            return Ok(Consumed::AlreadyUsed);
        }
        if markers.live.len() >= self.capacity {
            return Err(StoreError::Full(format!(
                "{} live markers and none expired",
                self.capacity
            )));
        }
        markers.live.insert(key, expiry);
        let live = markers.live.iter().map(|(k, at)| (k, *at));
        markers.expiries.push(expiry, key, live);
        Ok(Consumed::FirstUse)
    }

    fn put_result_now(
        &self,
        key: ConsumeKey,
        owner: [u8; 32],
        result: Vec<u8>,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        check_result_size(&result)?;
        let now = clock();
        let expiry = now.checked_add(ttl);
        let mut state = self.lock();
        let results = &mut state.results;
        results.purge(now);
        if !results.has_room(key, result.len(), self.capacity, self.result_budget) {
            return Err(StoreError::Full(format!(
                "{} results or {} bytes of them live and none expired",
                self.capacity, self.result_budget
            )));
        }
        results.bytes += result.len();
        if let Some((_, old)) = results
            .live
            .insert(key, (expiry, StoredResult { owner, result }))
        {
            results.bytes -= old.result.len();
        }
        let live = results.live.iter().map(|(k, (at, _))| (k, *at));
        results.expiries.push(expiry, key, live);
        Ok(())
    }

    fn get_result_now(&self, key: ConsumeKey) -> Option<StoredResult> {
        let now = clock();
        let state = self.lock();
        match state.results.live.get(&key) {
            Some((at, stored)) if at.is_none_or(|at| now < at) => Some(stored.clone()),
            _ => None,
        }
    }
}

/// The store's own monotonic clock.
pub(crate) fn clock() -> Instant {
    #[expect(
        clippy::disallowed_methods,
        reason = "the replay store counts marker TTLs on its own clock (SECURITY.md §3.9)"
    )]
    Instant::now()
}

impl Markers {
    /// Drops expired markers, unless none can have expired yet.
    /// Drops the markers lapsed at `now`.
    fn purge(&mut self, now: Instant) {
        let live = &mut self.live;
        self.expiries.pop_lapsed(now, |key, at| {
            if live.get(&key) == Some(&Some(at)) {
                live.remove(&key);
            }
        });
    }
}

impl Results {
    /// Whether a result of `len` bytes fits under `key`, counting the room
    /// the entry it would replace frees.
    fn has_room(&self, key: ConsumeKey, len: usize, capacity: usize, budget: usize) -> bool {
        let (others, other_bytes) = match self.live.get(&key) {
            Some((_, old)) => (self.live.len() - 1, self.bytes - old.result.len()),
            None => (self.live.len(), self.bytes),
        };
        others < capacity && other_bytes.saturating_add(len) <= budget
    }

    /// Drops the results lapsed at `now`.
    fn purge(&mut self, now: Instant) {
        let (live, bytes) = (&mut self.live, &mut self.bytes);
        self.expiries.pop_lapsed(now, |key, at| {
            if live.get(&key).is_some_and(|(held, _)| *held == Some(at))
                && let Some((_, gone)) = live.remove(&key)
            {
                *bytes -= gone.result.len();
            }
        });
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
            .field("results_len", &self.results_len())
            .field("result_budget", &self.result_budget)
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
        Box::pin(ready(self.put_result_now(key, owner, result, ttl)))
    }

    fn get_result(
        &self,
        key: ConsumeKey,
    ) -> BoxFuture<'_, Result<Option<StoredResult>, StoreError>> {
        Box::pin(ready(Ok(self.get_result_now(key))))
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
