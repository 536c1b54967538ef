//! Budgets held per principal and in all: the requests running at once
//! ([`crate::config::RequestLimits`]), and what a transport counts the same
//! way (the bytes of request bodies being received over HTTP). A client
//! that keeps requests open (a listen stream, a slow tool, a flood of
//! connections) holds at most its share, and never another principal's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use tern_proto::{McpError, Principal};

use crate::config::RequestLimits;

/// Amounts held at once, per principal and in all, each given back when
/// its [`Share`] drops. Identified principals only are counted apart:
/// without authentication everyone is the one anonymous principal, bounded
/// by the total alone.
#[derive(Debug, Default)]
pub struct Shares {
    total: AtomicUsize,
    by_principal: Mutex<HashMap<Principal, usize>>,
}

/// The most one principal and all together may hold of some [`Shares`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareLimits {
    /// What one identified principal may hold.
    pub per_principal: usize,
    /// What all principals together may hold.
    pub total: usize,
}

/// Which budget refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// The principal's own.
    Principal,
    /// Everyone's together.
    Total,
}

/// A principal's holding of some [`Shares`], given back on drop however
/// the work it pays for ends.
#[derive(Debug)]
pub struct Share<'a> {
    shares: &'a Shares,
    principal: Option<Principal>,
    amount: usize,
}

impl Shares {
    /// Takes `amount` for `principal`, or says which budget is spent
    /// (nothing is taken then).
    pub fn take(
        &self,
        principal: &Principal,
        amount: usize,
        limits: ShareLimits,
    ) -> Result<Share<'_>, Full> {
        let mut share = Share {
            shares: self,
            principal: (*principal != Principal::Anonymous).then(|| principal.clone()),
            amount: 0,
        };
        share.grow(amount, limits)?;
        Ok(share)
    }
}

impl Share<'_> {
    /// Adds `more` to this holding, within the same limits; refused, the
    /// holding stays as it was.
    pub fn grow(&mut self, more: usize, limits: ShareLimits) -> Result<(), Full> {
        if more == 0 {
            return Ok(());
        }
        let total = &self.shares.total;
        if total.fetch_add(more, Ordering::AcqRel) + more > limits.total {
            total.fetch_sub(more, Ordering::AcqRel);
            return Err(Full::Total);
        }
        if let Some(p) = &self.principal {
            let mut by = self.shares.lock();
            let n = by.entry(p.clone()).or_default();
            if *n + more > limits.per_principal {
                if *n == 0 {
                    by.remove(p);
                }
                drop(by);
                total.fetch_sub(more, Ordering::AcqRel);
                return Err(Full::Principal);
            }
            *n += more;
        }
        self.amount += more;
        Ok(())
    }
}

impl Shares {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Principal, usize>> {
        self.by_principal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        if self.amount == 0 {
            return;
        }
        if let Some(p) = self.principal.take() {
            let mut by = self.shares.lock();
            if let Some(n) = by.get_mut(&p) {
                *n -= self.amount;
                if *n == 0 {
                    by.remove(&p);
                }
            }
        }
        self.shares.total.fetch_sub(self.amount, Ordering::AcqRel);
    }
}

/// Requests running now: one unit of [`Shares`] each.
pub(crate) type Running = Shares;

/// One running request's place.
pub(crate) type Place<'a> = Share<'a>;

impl Full {
    /// The request budget's name in `tern_limit_reached_total{limit}`.
    pub(crate) fn limit(self) -> &'static str {
        match self {
            Full::Principal => "requests_per_principal",
            Full::Total => "requests",
        }
    }

    /// The busy refusal of a request past the budget (-31003, HTTP 429),
    /// naming it. A full server frees places as its requests end, so a
    /// second is offered as the time to come back; a principal's own share
    /// frees only when its own requests end, which it knows better.
    pub(crate) fn refusal(self) -> McpError {
        match self {
            Full::Principal => McpError::busy(
                self.limit(),
                "too many requests running for this client; wait for one to end",
                None,
            ),
            Full::Total => McpError::busy(
                self.limit(),
                "the server has as many requests running as it takes; try again shortly",
                Some(RETRY_SHORTLY),
            ),
        }
    }
}

/// The time to come back offered with a busy refusal of a whole server's
/// budget, whose places free as any request ends.
pub const RETRY_SHORTLY: std::time::Duration = std::time::Duration::from_secs(1);

impl Running {
    /// Takes a place for a request of `principal`, or says which budget is
    /// spent.
    pub(crate) fn enter(
        &self,
        principal: &Principal,
        limits: &RequestLimits,
    ) -> Result<Place<'_>, Full> {
        let limits = ShareLimits {
            per_principal: limits.max_running_per_principal,
            total: limits.max_running,
        };
        self.take(principal, 1, limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(id: &str) -> Principal {
        Principal::Static {
            secret_id: id.into(),
        }
    }

    #[test]
    fn places_are_counted_per_principal_and_in_all_and_given_back() {
        let running = Running::default();
        let limits = RequestLimits {
            max_running_per_principal: 2,
            max_running: 3,
        };
        let a1 = running.enter(&who("a"), &limits).unwrap();
        let _a2 = running.enter(&who("a"), &limits).unwrap();
        assert_eq!(
            running.enter(&who("a"), &limits).unwrap_err(),
            Full::Principal
        );
        let _b = running.enter(&who("b"), &limits).unwrap();
        assert_eq!(
            running.enter(&Principal::Anonymous, &limits).unwrap_err(),
            Full::Total
        );
        drop(a1);
        let _anon = running.enter(&Principal::Anonymous, &limits).unwrap();
        assert_eq!(running.total.load(Ordering::SeqCst), 3);
        assert_eq!(
            running.by_principal.lock().unwrap().get(&who("a")),
            Some(&1)
        );
    }

    #[test]
    fn a_share_grows_within_both_limits_and_gives_all_back() {
        let shares = Shares::default();
        let limits = ShareLimits {
            per_principal: 10,
            total: 15,
        };
        let mut a = shares.take(&who("a"), 4, limits).unwrap();
        a.grow(6, limits).unwrap();
        assert_eq!(a.grow(1, limits).unwrap_err(), Full::Principal);
        let mut b = shares.take(&who("b"), 0, limits).unwrap();
        b.grow(5, limits).unwrap();
        assert_eq!(b.grow(1, limits).unwrap_err(), Full::Total);
        assert_eq!(shares.total.load(Ordering::SeqCst), 15);
        drop(a);
        assert_eq!(shares.total.load(Ordering::SeqCst), 5);
        assert!(shares.by_principal.lock().unwrap().get(&who("a")).is_none());
        drop(b);
        assert_eq!(shares.total.load(Ordering::SeqCst), 0);
        assert!(shares.by_principal.lock().unwrap().is_empty());
    }
}
