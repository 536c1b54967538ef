//! Sending a request again after the server refused it as busy (-31003,
//! issue 52): a limit was reached and the request was not run, so sending
//! the same request again is safe whatever it does. Kept bounded: a few
//! retries, each after a backoff with full jitter, never past the call's
//! deadline, and never after anything of the request's answer arrived.

use std::time::Duration;

/// The most times one request is sent again after busy refusals; the
/// refusal after the last is the caller's, with
/// [`Error::is_busy`](crate::Error::is_busy).
pub const MAX_BUSY_RETRIES: u32 = 3;

/// The first backoff when the server names no time, doubled on each retry.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest one wait may be: a server asking for more is answered by
/// the caller, who knows whether the call is worth that long.
pub(crate) const MAX_BUSY_WAIT: Duration = Duration::from_secs(30);

/// How long to wait before retry `retry` (0 for the first): at least the
/// server's `retry_after`, plus a jitter drawn uniformly from a span that
/// doubles each retry (the server's time, or 100 ms) — "full jitter", so
/// clients refused together do not come back together. `draw` is the
/// random number the jitter is taken from.
pub(crate) fn backoff(retry: u32, retry_after: Option<Duration>, draw: u64) -> Duration {
    let floor = retry_after.unwrap_or(Duration::ZERO);
    let span = retry_after
        .filter(|d| !d.is_zero())
        .unwrap_or(FIRST_BACKOFF)
        .saturating_mul(1 << retry.min(16));
    let span_nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
    let jitter = Duration::from_nanos(draw % span_nanos.saturating_add(1).max(1));
    floor.saturating_add(jitter)
}

/// A random number for the jitter. Jitter needs no secret and no
/// cryptographic source, only that two clients (or two calls) draw
/// differently: std's `RandomState` is keyed from the OS once per thread
/// and anew for each value, which is that, with no RNG dependency
/// (STYLE.md keeps randomness that matters in tern-seal).
pub(crate) fn draw() -> u64 {
    use std::hash::BuildHasher as _;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_server_time_the_span_starts_at_100_ms_and_doubles() {
        let ms = Duration::from_millis;
        assert_eq!(backoff(0, None, 0), Duration::ZERO);
        assert!(backoff(0, None, u64::MAX) <= ms(100));
        assert_eq!(backoff(0, None, 100_000_000), ms(100));
        assert_eq!(backoff(1, None, 200_000_000), ms(200));
        assert_eq!(backoff(2, None, 400_000_000), ms(400));
        // The draw wraps inside the span: never past it.
        assert_eq!(backoff(1, None, 200_000_001), Duration::ZERO);
    }

    #[test]
    fn a_server_time_is_the_floor_and_the_span() {
        let s = Duration::from_secs;
        assert_eq!(backoff(0, Some(s(1)), 0), s(1));
        assert_eq!(backoff(0, Some(s(1)), 1_000_000_000), s(2));
        assert_eq!(backoff(2, Some(s(1)), 4_000_000_000), s(5));
        // Zero from the server: come back at once, with the default jitter.
        assert_eq!(
            backoff(0, Some(Duration::ZERO), 50_000_000),
            Duration::from_millis(50)
        );
    }

    #[test]
    fn draws_differ() {
        let a: std::collections::BTreeSet<u64> = (0..16).map(|_| draw()).collect();
        assert!(a.len() > 1, "{a:?}");
    }
}
