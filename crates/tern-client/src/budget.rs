//! The budget of one call (MRTR-C-A3, SECURITY.md "`tern call` and
//! tern-client"): one per call, however many requests the call sends.
//!
//! A call's rounds are counted here and nowhere else. The call's first
//! request is round 1; each retry after an `input_required` result, each
//! request a 2025-11-25 server sends for input, and each time a legacy call
//! is sent again after a `-32042` starts the next. A legacy server may do
//! both, asking on the call's stream and then answering `input_required`;
//! were each request given a budget of its own, every retry would refill
//! it, and a ceiling of 10 rounds would let through 10 times 9 answers.

use crate::Error;

/// The most requests other than for input (`ping`, methods this client
/// does not serve) a 2025-11-25 server may send during one call. Each is
/// answered at once; past this many the call ends as a protocol violation,
/// so a flood of them cannot keep a call busy.
pub const MAX_OTHER_SERVER_REQUESTS: u32 = 100;

/// What one call has used: its rounds and the server's requests that are
/// not for input; and when it must be over, so that a busy refusal is
/// sent again only within it.
pub(crate) struct Budget {
    max_rounds: u32,
    round: u32,
    other: u32,
    deadline: Option<tokio::time::Instant>,
}

impl Budget {
    /// A call about to send its first request, with at most `max_rounds`
    /// rounds.
    pub(crate) fn new(max_rounds: u32) -> Self {
        Budget::resuming(max_rounds, 1)
    }

    /// A call that reached `round` already: a [`PendingCall`] picked up
    /// again, which carries its round for this (MRTR-C-A3 holds across
    /// processes too).
    ///
    /// [`PendingCall`]: crate::PendingCall
    pub(crate) fn resuming(max_rounds: u32, round: u32) -> Self {
        Budget {
            max_rounds,
            round,
            other: 0,
            deadline: None,
        }
    }

    /// The same budget for a call that must be over within `deadline`
    /// from now (the flow timeout the call runs under).
    pub(crate) fn until(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = crate::transport::instant().checked_add(deadline);
        self
    }

    /// When the call must be over, if it has a deadline.
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.deadline
    }

    /// The round the call is in.
    pub(crate) fn round(&self) -> u32 {
        self.round
    }

    /// Starts the next round, when the ceiling allows one.
    fn advance(&mut self) -> bool {
        if self.round >= self.max_rounds {
            return false;
        }
        self.round += 1;
        true
    }

    /// Starts the round of a retry after an interim result, or refuses it
    /// past the ceiling.
    pub(crate) fn retry(&mut self) -> Result<(), Error> {
        if self.advance() {
            Ok(())
        } else {
            Err(Error::round_limit(format!(
                "the flow needs more than {} rounds",
                self.max_rounds
            )))
        }
    }

    /// Starts the next round for a request of the server's (`what`) during
    /// `method`, or refuses it past the ceiling, with the words a retry
    /// past it gets and what would have started the round. Returns the
    /// round that asked (the one being answered).
    pub(crate) fn next_round(&mut self, method: &str, what: &str) -> Result<u32, Error> {
        if self.advance() {
            return Ok(self.round - 1);
        }
        Err(Error::round_limit(format!(
            "the flow needs more than {} rounds: the server's {what} during {method} would start round {}",
            self.max_rounds,
            self.round + 1
        )))
    }

    /// Counts one request of the server's that is not for input.
    pub(crate) fn other(&mut self, method: &str, what: &str) -> Result<(), Error> {
        self.other += 1;
        if self.other > MAX_OTHER_SERVER_REQUESTS {
            return Err(Error::protocol(format!(
                "the server sent more than {MAX_OTHER_SERVER_REQUESTS} requests other than for input during {method} (the last: {what})"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_allows_the_rounds_a_modern_flow_would_take() {
        // A modern flow of at most 3 rounds answers rounds 1 and 2.
        let mut b = Budget::new(3);
        assert_eq!(b.next_round("tools/call", "roots/list request").unwrap(), 1);
        assert_eq!(b.next_round("tools/call", "roots/list request").unwrap(), 2);
        let e = b
            .next_round("tools/call", "roots/list request")
            .unwrap_err();
        assert!(e.is_round_limit());
        assert_eq!(
            e.to_string(),
            "round limit: the flow needs more than 3 rounds: the server's roots/list request during tools/call would start round 4"
        );
        let mut b = Budget::new(1);
        for _ in 0..MAX_OTHER_SERVER_REQUESTS {
            b.other("tools/call", "ping request").unwrap();
        }
        assert!(
            b.other("tools/call", "ping request")
                .unwrap_err()
                .is_protocol()
        );
    }

    #[test]
    fn retries_and_the_server_s_requests_draw_on_one_budget() {
        let mut b = Budget::new(4);
        assert_eq!(b.next_round("tools/call", "roots/list request").unwrap(), 1);
        b.retry().unwrap();
        assert_eq!(b.round(), 3);
        assert_eq!(b.next_round("tools/call", "roots/list request").unwrap(), 3);
        assert_eq!(
            b.retry().unwrap_err().to_string(),
            "round limit: the flow needs more than 4 rounds"
        );
        let mut b = Budget::resuming(4, 4);
        assert!(b.retry().unwrap_err().is_round_limit());
        assert_eq!(b.round(), 4);
    }
}
