//! Kid lookup, roles and ring validation (SECURITY.md §3.3).

use tern_seal::{KeyRing, KeyRingError, KeyRole, OpenError, OpenPolicy};

use crate::util::{RID, T0, binding, claims, ring, spec};

fn open(ring: &KeyRing, token: &str, now: u64) -> Result<u8, OpenError> {
    ring.open_at::<u8>(RID, token, &binding(), now, &OpenPolicy::default())
        .map(|o| *o.body())
}

#[test]
fn seals_with_the_active_key_only() {
    let ring = KeyRing::new(vec![
        spec(1, KeyRole::VerifyOnly, None),
        spec(2, KeyRole::Active, None),
        spec(3, KeyRole::Retired, None),
    ])
    .unwrap();
    assert_eq!(ring.active_kid(), 2);
    let token = ring.seal_at(RID, &claims(1u8)).unwrap();
    let opened = ring
        .open_at::<u8>(RID, &token, &binding(), T0, &OpenPolicy::default())
        .unwrap();
    assert_eq!(opened.kid(), 2);
    assert_eq!(ring.kids(), vec![1, 2, 3]);
    assert_eq!(ring.role(3), Some(KeyRole::Retired));
    assert_eq!(ring.role(4), None);
}

#[test]
fn a_verify_only_key_opens_until_verify_until_and_not_after() {
    let old = ring(1).seal_at(RID, &claims(1u8)).unwrap();
    let until = T0 + 100;
    let rotated = KeyRing::new(vec![
        spec(1, KeyRole::VerifyOnly, Some(until)),
        spec(2, KeyRole::Active, None),
    ])
    .unwrap();
    assert_eq!(open(&rotated, &old, T0), Ok(1));
    assert_eq!(open(&rotated, &old, until), Ok(1));
    assert_eq!(
        open(&rotated, &old, until + 1),
        Err(OpenError::KeyExpired {
            kid: 1,
            verify_until: until
        })
    );
}

#[test]
fn a_published_key_opens_before_it_seals() {
    // Rotation step 1: instance B already has kid 2 as VerifyOnly while
    // instance A has activated it.
    let a = KeyRing::new(vec![
        spec(1, KeyRole::VerifyOnly, Some(T0 + 690)),
        spec(2, KeyRole::Active, None),
    ])
    .unwrap();
    let b = KeyRing::new(vec![
        spec(1, KeyRole::Active, None),
        spec(2, KeyRole::VerifyOnly, None),
    ])
    .unwrap();
    let token = a.seal_at(RID, &claims(1u8)).unwrap();
    assert_eq!(open(&b, &token, T0), Ok(1));
}

#[test]
fn a_retired_key_is_rejected() {
    let old = ring(1).seal_at(RID, &claims(1u8)).unwrap();
    let ring = KeyRing::new(vec![
        spec(1, KeyRole::Retired, None),
        spec(2, KeyRole::Active, None),
    ])
    .unwrap();
    assert_eq!(open(&ring, &old, T0), Err(OpenError::KeyRetired { kid: 1 }));
}

#[test]
fn an_unknown_kid_is_rejected() {
    let token = ring(7).seal_at(RID, &claims(1u8)).unwrap();
    assert_eq!(
        open(&ring(8), &token, T0),
        Err(OpenError::UnknownKey { kid: 7 })
    );
}

#[test]
fn ephemeral_rings_do_not_open_each_others_tokens() {
    let a = KeyRing::ephemeral().unwrap();
    let b = KeyRing::ephemeral().unwrap();
    let token = a.seal_at(RID, &claims(1u8)).unwrap();
    assert_eq!(open(&a, &token, T0), Ok(1));
    assert!(open(&b, &token, T0).is_err());
}

#[test]
fn invalid_rings_are_refused() {
    assert_eq!(
        KeyRing::new(vec![
            spec(1, KeyRole::Active, None),
            spec(1, KeyRole::VerifyOnly, None)
        ])
        .unwrap_err(),
        KeyRingError::DuplicateKid { kid: 1 }
    );
    assert_eq!(
        KeyRing::new(vec![spec(1, KeyRole::VerifyOnly, None)]).unwrap_err(),
        KeyRingError::NoActiveKey
    );
    assert_eq!(KeyRing::new(vec![]).unwrap_err(), KeyRingError::NoActiveKey);
    assert_eq!(
        KeyRing::new(vec![
            spec(1, KeyRole::Active, None),
            spec(2, KeyRole::Active, None)
        ])
        .unwrap_err(),
        KeyRingError::SeveralActiveKeys {
            first: 1,
            second: 2
        }
    );
}

#[test]
fn debug_shows_roles_not_keys() {
    let ring = KeyRing::new(vec![
        spec(1, KeyRole::VerifyOnly, Some(5)),
        spec(2, KeyRole::Active, None),
    ])
    .unwrap();
    assert_eq!(
        format!("{ring:?}"),
        "{1: (VerifyOnly, Some(5)), 2: (Active, None)}"
    );
}
