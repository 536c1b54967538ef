//! The startup guards of SECURITY.md §3.9: deployments whose replay store
//! cannot keep its promise refuse to start, instead of accepting replays
//! later.
//!
//! Refusing to start costs an operator a configuration change; starting
//! wrongly costs repeated irreversible effects that nobody sees until they
//! happen. The Redis eviction-policy guard needs the server, so it runs in
//! tern-replay's `RedisReplayStore::connect`.

use std::time::Duration;

use crate::replay::Durability;

/// What a deployment declares about itself, for [`check_deployment`].
///
/// Every field is required on purpose: a new guard needs a new fact, and
/// callers should have to supply it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployment {
    /// The key ring outlives the process (a key file or master secret), so
    /// states sealed before a restart still open after it.
    pub persistent_keys: bool,
    /// At least one handler is single use (`once`), so `consume` guards an
    /// irreversible effect.
    pub single_use_routes: bool,
    /// How many instances serve the same states (processes or hosts behind
    /// one key ring).
    pub instances: u32,
    /// The replay store's [`ReplayStore::durability`](crate::ReplayStore::durability).
    pub store: Durability,
    /// The TTL passed to every `consume`.
    pub marker_ttl: Duration,
    /// The longest lifetime of a sealed state.
    pub max_state_ttl: Duration,
    /// The clock skew tolerated when opening a state.
    pub skew: Duration,
}

/// A deployment that would accept replays; the process must not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// After a restart, states sealed before it still open but the volatile
    /// store has forgotten their markers, so a single-use flow could commit
    /// again.
    #[error(
        "single-use routes with a persistent key ring need a durable replay store; a volatile one forgets markers on restart"
    )]
    VolatileStoreWithPersistentKeys,
    /// Each instance would keep its own markers, so a replay sent to another
    /// instance would be accepted.
    #[error(
        "{instances} instances need a shared replay store; a {store:?} one lets each instance accept the same flow once"
    )]
    UnsharedStore {
        /// The declared instance count.
        instances: u32,
        /// The store's durability.
        store: Durability,
    },
    /// A marker could expire while the state it guards still opens, and the
    /// replay would then be accepted.
    #[error(
        "replay marker TTL {marker_ttl:?} is shorter than the longest state TTL plus skew ({needed:?})"
    )]
    MarkerTtlTooShort {
        /// The configured marker TTL.
        marker_ttl: Duration,
        /// The least TTL that outlives every state.
        needed: Duration,
    },
}

/// Refuses a deployment whose replay store cannot keep single use
/// (SECURITY.md §3.9, startup guards). Call it once at startup and exit on
/// an error.
///
/// The checks, in order: a persistent key ring with a volatile store when a
/// route is single use; more than one instance with a store that is not
/// shared; a marker TTL shorter than the longest state TTL plus skew. The
/// last two apply whether or not a route is single use today, as §3.9 lists
/// them, so adding a `once` handler later cannot silently weaken them.
pub fn check_deployment(d: &Deployment) -> Result<(), GuardError> {
    if d.single_use_routes && d.persistent_keys && d.store == Durability::Volatile {
        return Err(GuardError::VolatileStoreWithPersistentKeys);
    }
    if d.instances > 1 && d.store != Durability::Shared {
        return Err(GuardError::UnsharedStore {
            instances: d.instances,
            store: d.store,
        });
    }
    let needed = d.max_state_ttl.saturating_add(d.skew);
    if d.marker_ttl < needed {
        return Err(GuardError::MarkerTtlTooShort {
            marker_ttl: d.marker_ttl,
            needed,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SECURITY.md §3.3 defaults: 600 s states, 30 s skew, 60 s margin.
    fn single_host() -> Deployment {
        Deployment {
            persistent_keys: true,
            single_use_routes: true,
            instances: 1,
            store: Durability::LocalDurable,
            marker_ttl: Duration::from_secs(690),
            max_state_ttl: Duration::from_secs(600),
            skew: Duration::from_secs(30),
        }
    }

    #[test]
    fn a_sound_single_host_deployment_starts() {
        assert_eq!(check_deployment(&single_host()), Ok(()));
    }

    #[test]
    fn persistent_keys_with_a_volatile_store_are_refused_when_a_route_is_single_use() {
        let d = Deployment {
            store: Durability::Volatile,
            ..single_host()
        };
        assert_eq!(
            check_deployment(&d),
            Err(GuardError::VolatileStoreWithPersistentKeys)
        );
    }

    #[test]
    fn a_volatile_store_is_fine_without_single_use_routes_or_with_ephemeral_keys() {
        let no_once = Deployment {
            store: Durability::Volatile,
            single_use_routes: false,
            ..single_host()
        };
        assert_eq!(check_deployment(&no_once), Ok(()));
        // stdio: the key dies with the process, and so do its states.
        let stdio = Deployment {
            store: Durability::Volatile,
            persistent_keys: false,
            ..single_host()
        };
        assert_eq!(check_deployment(&stdio), Ok(()));
    }

    #[test]
    fn several_instances_need_a_shared_store() {
        for store in [Durability::Volatile, Durability::LocalDurable] {
            let d = Deployment {
                instances: 3,
                store,
                persistent_keys: false,
                ..single_host()
            };
            assert_eq!(
                check_deployment(&d),
                Err(GuardError::UnsharedStore {
                    instances: 3,
                    store
                })
            );
        }
        let shared = Deployment {
            instances: 3,
            store: Durability::Shared,
            ..single_host()
        };
        assert_eq!(check_deployment(&shared), Ok(()));
    }

    #[test]
    fn a_marker_ttl_shorter_than_state_ttl_plus_skew_is_refused() {
        let d = Deployment {
            marker_ttl: Duration::from_secs(629),
            ..single_host()
        };
        assert_eq!(
            check_deployment(&d),
            Err(GuardError::MarkerTtlTooShort {
                marker_ttl: Duration::from_secs(629),
                needed: Duration::from_secs(630),
            })
        );
        let exact = Deployment {
            marker_ttl: Duration::from_secs(630),
            ..single_host()
        };
        assert_eq!(check_deployment(&exact), Ok(()));
    }

    #[test]
    fn an_absurd_state_ttl_saturates_instead_of_overflowing() {
        let d = Deployment {
            max_state_ttl: Duration::MAX,
            marker_ttl: Duration::MAX,
            ..single_host()
        };
        assert_eq!(check_deployment(&d), Ok(()));
    }
}
