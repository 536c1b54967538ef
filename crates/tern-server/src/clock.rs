//! The server's clock: the one place that reads time (STYLE.md, Habits).
//!
//! It has two halves. Wall seconds ([`Clock::now`]) are what a sealed state,
//! a replay marker or a task record carries, so that every instance of a
//! fleet reads them alike. The monotonic half ([`Clock::instant`]) is what
//! this process measures its own deadlines, leases and waits on; it is the
//! runtime's, so tokio's paused time drives it in tests and every sleep and
//! timeout agrees with it. Everything else takes `now` or an instant from
//! here: expiry and rotation are tested with a [`ManualClock`], and what
//! needs both halves to move together with a [`RuntimeClock`] under paused
//! time, instead of sleeps.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::time::Instant;

/// A source of Unix time in seconds and of monotonic instants.
pub trait Clock: Send + Sync + 'static {
    /// Seconds since the Unix epoch.
    fn now(&self) -> u64;

    /// The monotonic instant deadlines, leases and waits are measured on:
    /// the runtime's, which tokio's paused time drives in tests.
    fn instant(&self) -> Instant {
        runtime_instant()
    }
}

/// The runtime's monotonic time: the one read of it.
#[expect(clippy::disallowed_methods, reason = "the monotonic half's named home")]
fn runtime_instant() -> Instant {
    Instant::now()
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[expect(clippy::disallowed_methods, reason = "this is the clock's named home")]
    fn now(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(now)))
    }

    /// Moves the clock forward by `secs`.
    pub fn advance(&self, secs: u64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, now: u64) {
        self.0.store(now, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A clock whose wall seconds follow the runtime's monotonic time from a
/// starting second: under tokio's paused time, `tokio::time::advance` (or
/// a sleep) moves wall time, every deadline and every lease together, as
/// a real clock does. For tests of what reads both halves (a fleet's task
/// leases, a flow's lifetime across rounds).
#[derive(Clone, Debug)]
pub struct RuntimeClock {
    start: u64,
    at: Instant,
}

impl RuntimeClock {
    /// A clock standing at `start` seconds now, and moving with the runtime.
    pub fn starting_at(start: u64) -> Self {
        RuntimeClock {
            start,
            at: runtime_instant(),
        }
    }
}

impl Clock for RuntimeClock {
    fn now(&self) -> u64 {
        self.start + (runtime_instant() - self.at).as_secs()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Clock, RuntimeClock, SystemClock};

    /// One clock: under paused time, what moves the runtime moves a
    /// `RuntimeClock`'s wall seconds and every clock's monotonic half
    /// together, so a test moves one clock, not two in step.
    #[tokio::test(start_paused = true)]
    async fn paused_time_moves_both_halves_together() {
        let clock = RuntimeClock::starting_at(1_000);
        let (at, system_at) = (clock.instant(), SystemClock.instant());
        tokio::time::sleep(Duration::from_millis(90_500)).await;
        assert_eq!(clock.now(), 1_090);
        assert_eq!(clock.instant() - at, Duration::from_millis(90_500));
        assert_eq!(
            SystemClock.instant() - system_at,
            Duration::from_millis(90_500)
        );
    }
}
