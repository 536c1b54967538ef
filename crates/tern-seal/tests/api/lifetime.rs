//! Lifetime checks at their exact edges (SECURITY.md §3.5, step 5; MRTR-SEC3).

use tern_seal::{Claims, OpenError, OpenPolicy};

use crate::util::{RID, T0, TTL, binding, claims, ring};

fn open_at(token: &str, now: u64, policy: &OpenPolicy) -> Result<u8, OpenError> {
    ring(1)
        .open_at::<u8>(RID, token, &binding(), now, policy)
        .map(|o| *o.body())
}

#[test]
fn accepted_until_expiry_plus_skew_and_rejected_one_second_later() {
    let policy = OpenPolicy::default();
    let token = ring(1).seal_at(RID, &claims(1u8)).unwrap();
    let edge = T0 + TTL + policy.skew_secs;
    assert_eq!(open_at(&token, edge, &policy), Ok(1));
    assert_eq!(
        open_at(&token, edge + 1, &policy),
        Err(OpenError::Expired {
            expires_at: T0 + TTL,
            now: edge + 1
        })
    );
}

#[test]
fn skew_is_a_policy() {
    let strict = OpenPolicy {
        skew_secs: 0,
        ..OpenPolicy::default()
    };
    let token = ring(1).seal_at(RID, &claims(1u8)).unwrap();
    assert_eq!(open_at(&token, T0 + TTL, &strict), Ok(1));
    assert!(matches!(
        open_at(&token, T0 + TTL + 1, &strict),
        Err(OpenError::Expired { .. })
    ));
}

#[test]
fn accepted_from_issue_minus_skew_and_rejected_one_second_earlier() {
    let policy = OpenPolicy::default();
    let token = ring(1).seal_at(RID, &claims(1u8)).unwrap();
    let edge = T0 - policy.skew_secs;
    assert_eq!(open_at(&token, edge, &policy), Ok(1));
    assert_eq!(
        open_at(&token, edge - 1, &policy),
        Err(OpenError::NotYetValid {
            issued_at: T0,
            now: edge - 1
        })
    );
}

#[test]
fn lifetimes_longer_than_the_maximum_are_rejected() {
    let policy = OpenPolicy::default();
    let ring = ring(1);
    let at_max = Claims {
        expires_at: T0 + policy.max_ttl_secs,
        ..claims(1u8)
    };
    let over = Claims {
        expires_at: T0 + policy.max_ttl_secs + 1,
        ..claims(1u8)
    };
    let at_max = ring.seal_at(RID, &at_max).unwrap();
    let over = ring.seal_at(RID, &over).unwrap();
    assert_eq!(open_at(&at_max, T0, &policy), Ok(1));
    assert_eq!(
        open_at(&over, T0, &policy),
        Err(OpenError::TtlTooLong {
            ttl: policy.max_ttl_secs + 1
        })
    );
}

#[test]
fn claims_that_expire_before_issue_are_not_sealed() {
    let inverted = Claims {
        expires_at: T0 - 1,
        ..claims(1u8)
    };
    assert!(matches!(
        ring(1).seal_at(RID, &inverted),
        Err(tern_seal::SealError::ExpiresBeforeIssued { .. })
    ));
}

#[test]
fn extreme_times_do_not_overflow() {
    let policy = OpenPolicy {
        skew_secs: u64::MAX,
        max_ttl_secs: u64::MAX,
    };
    let forever = Claims {
        issued_at: 0,
        expires_at: u64::MAX,
        ..claims(1u8)
    };
    let token = ring(1).seal_at(RID, &forever).unwrap();
    assert_eq!(open_at(&token, u64::MAX, &policy), Ok(1));
    assert_eq!(open_at(&token, 0, &policy), Ok(1));
}
