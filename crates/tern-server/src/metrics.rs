//! Counters for what the peer is never told: why a state was refused and
//! which requests failed inside the server (SECURITY.md §3.5).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Refused states by reason and internal failures by kind. The reason goes
/// to logs and these counters, never to the peer.
#[derive(Debug, Default)]
pub struct Metrics {
    rejected: Mutex<BTreeMap<&'static str, u64>>,
    failed: Mutex<BTreeMap<&'static str, u64>>,
}

fn bump(m: &Mutex<BTreeMap<&'static str, u64>>, key: &'static str) {
    let mut m = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    *m.entry(key).or_default() += 1;
}

fn read(m: &Mutex<BTreeMap<&'static str, u64>>, key: &str) -> u64 {
    let m = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    m.get(key).copied().unwrap_or(0)
}

impl Metrics {
    pub(crate) fn reject(&self, reason: &'static str) {
        bump(&self.rejected, reason);
    }

    pub(crate) fn fail(&self, kind: &'static str) {
        bump(&self.failed, kind);
    }

    /// How many states were refused for `reason` (e.g. `"bad_tag"`).
    pub fn rejected(&self, reason: &str) -> u64 {
        read(&self.rejected, reason)
    }

    /// How many requests ended in an internal failure of `kind`: `"panic"`
    /// (a handler, extractor or the framework panicked) or `"internal"` (an
    /// error the peer saw only as -32603).
    pub fn failed(&self, kind: &str) -> u64 {
        read(&self.failed, kind)
    }
}
