//! Shared test helpers for the Tern crates (dev-only): request builders
//! ([`request`]), transports that need no sockets ([`transport`]) and input
//! providers with fixed answers ([`provider`]), and captured log lines
//! ([`logs`]). One copy of each, so every
//! crate's tests exercise the same doubles.

pub mod logs;
pub mod provider;
pub mod redis;
pub mod request;
pub mod transport;

/// The runtime's monotonic time, for a test that measures how long the
/// code under test waited (under paused time, what the runtime moved).
#[expect(
    clippy::disallowed_methods,
    reason = "tests read the runtime's paused time"
)]
pub fn runtime_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}
