//! The budget of requests running at once, per principal and in all
//! ([`crate::config::RequestLimits`]): a client that keeps requests open (a
//! listen stream, a slow tool, a flood of connections) holds at most its
//! share, and never another principal's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use tern_proto::Principal;

use crate::config::RequestLimits;

/// Requests running now.
#[derive(Debug, Default)]
pub(crate) struct Running {
    total: AtomicUsize,
    /// Identified principals only: without authentication everyone is the
    /// one anonymous principal, bounded by the total alone.
    by_principal: Mutex<HashMap<Principal, usize>>,
}

/// Which budget refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    Principal,
    Total,
}

impl Full {
    pub(crate) fn limit(self) -> &'static str {
        match self {
            Full::Principal => "requests_per_principal",
            Full::Total => "requests",
        }
    }
}

/// One running request's place, given back on drop however it ends.
#[derive(Debug)]
pub(crate) struct Place<'a> {
    running: &'a Running,
    principal: Option<Principal>,
}

impl Running {
    /// Takes a place for a request of `principal`, or says which budget is
    /// spent.
    pub(crate) fn enter(
        &self,
        principal: &Principal,
        limits: &RequestLimits,
    ) -> Result<Place<'_>, Full> {
        if self.total.fetch_add(1, Ordering::AcqRel) >= limits.max_running {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return Err(Full::Total);
        }
        let mut place = Place {
            running: self,
            principal: None,
        };
        if *principal != Principal::Anonymous {
            let mut by = self
                .by_principal
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let n = by.entry(principal.clone()).or_default();
            if *n >= limits.max_running_per_principal {
                // Dropping `place` gives the total back.
                return Err(Full::Principal);
            }
            *n += 1;
            place.principal = Some(principal.clone());
        }
        Ok(place)
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.principal.take() {
            let mut by = self
                .running
                .by_principal
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = by.get_mut(&p) {
                *n -= 1;
                if *n == 0 {
                    by.remove(&p);
                }
            }
        }
        self.running.total.fetch_sub(1, Ordering::AcqRel);
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
}
