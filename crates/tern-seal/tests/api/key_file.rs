//! The fleet key file and its three rotation steps (SECURITY.md §3.3).

use tern_seal::{DEFAULT_GRACE_SECS, KeyFile, KeyFileError, KeyRole, OpenError, OpenPolicy};

use crate::util::{RID, T0, binding, claims};

fn open(file: &KeyFile, token: &str, now: u64) -> Result<u8, OpenError> {
    file.key_ring()
        .unwrap()
        .open_at::<u8>(RID, token, &binding(), now, &OpenPolicy::default())
        .map(|o| *o.body())
}

fn roles(file: &KeyFile) -> Vec<(u32, KeyRole, Option<u64>)> {
    file.keys
        .iter()
        .map(|k| (k.kid, k.role, k.verify_until))
        .collect()
}

#[test]
fn rotation_publish_activate_retire() {
    let mut file = KeyFile::generate(RID).unwrap();
    assert_eq!(roles(&file), vec![(1, KeyRole::Active, None)]);
    let old = file.key_ring().unwrap().seal_at(RID, &claims(1u8)).unwrap();

    // Step 1: publish.
    let kid = file.add_key().unwrap();
    assert_eq!(kid, 2);
    assert_eq!(
        roles(&file),
        vec![(1, KeyRole::Active, None), (2, KeyRole::VerifyOnly, None)]
    );
    assert_eq!(file.key_ring().unwrap().active_kid(), 1);

    // Step 2: activate; the old key verifies for the grace period.
    file.activate(2, T0, DEFAULT_GRACE_SECS).unwrap();
    let until = T0 + DEFAULT_GRACE_SECS;
    assert_eq!(
        roles(&file),
        vec![
            (1, KeyRole::VerifyOnly, Some(until)),
            (2, KeyRole::Active, None)
        ]
    );
    let new = file.key_ring().unwrap().seal_at(RID, &claims(2u8)).unwrap();
    assert_eq!(open(&file, &old, T0 + 10), Ok(1));
    assert_eq!(open(&file, &new, T0 + 10), Ok(2));

    // Step 3: retire.
    file.retire(1).unwrap();
    assert_eq!(
        open(&file, &old, T0 + 10),
        Err(OpenError::KeyRetired { kid: 1 })
    );
    assert_eq!(open(&file, &new, T0 + 10), Ok(2));
    // Retired kids are never reused.
    assert_eq!(file.add_key().unwrap(), 3);
}

#[test]
fn the_default_grace_is_ttl_plus_skew_plus_margin() {
    assert_eq!(DEFAULT_GRACE_SECS, 690);
}

#[test]
fn activating_the_active_key_changes_nothing() {
    let mut file = KeyFile::generate(RID).unwrap();
    file.activate(1, T0, 10).unwrap();
    assert_eq!(roles(&file), vec![(1, KeyRole::Active, None)]);
}

#[test]
fn invalid_steps_are_refused() {
    let mut file = KeyFile::generate(RID).unwrap();
    assert!(matches!(
        file.retire(1),
        Err(KeyFileError::RetiringActiveKey { kid: 1 })
    ));
    assert!(matches!(
        file.activate(9, T0, 10),
        Err(KeyFileError::UnknownKid { kid: 9 })
    ));
    assert!(matches!(
        file.retire(9),
        Err(KeyFileError::UnknownKid { kid: 9 })
    ));
    let kid = file.add_key().unwrap();
    file.retire(kid).unwrap();
    assert!(matches!(
        file.activate(kid, T0, 10),
        Err(KeyFileError::ActivatingRetiredKey { .. })
    ));
}

#[test]
fn json_round_trips_and_rings_agree() {
    let mut file = KeyFile::generate(RID).unwrap();
    file.add_key().unwrap();
    file.activate(2, T0, 60).unwrap();
    let json = file.to_json().unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["resource_id"], RID);
    assert_eq!(value["keys"][0]["role"], "verify_only");
    assert_eq!(value["keys"][0]["verify_until"], T0 + 60);
    assert_eq!(value["keys"][1]["role"], "active");
    assert!(value["keys"][1].get("verify_until").is_none());
    assert_eq!(value["keys"][1]["secret"].as_str().unwrap().len(), 43);

    let again = KeyFile::from_json(&json).unwrap();
    let token = file.key_ring().unwrap().seal_at(RID, &claims(5u8)).unwrap();
    assert_eq!(open(&again, &token, T0), Ok(5));
    assert!(!format!("{again:?}").contains(value["keys"][1]["secret"].as_str().unwrap()));
}

#[test]
fn invalid_files_are_refused() {
    let secret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    let parse =
        |keys: &str| KeyFile::from_json(&format!(r#"{{"resource_id":"r","keys":[{keys}]}}"#));
    assert!(
        parse(&format!(
            r#"{{"kid":1,"secret":"{secret}","role":"active"}}"#
        ))
        .is_ok()
    );
    // Weak secret.
    assert!(matches!(
        parse(
            r#"{"kid":1,"secret":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","role":"active"}"#
        ),
        Err(KeyFileError::Json(_))
    ));
    // Unknown role, unknown field.
    assert!(
        parse(&format!(
            r#"{{"kid":1,"secret":"{secret}","role":"primary"}}"#
        ))
        .is_err()
    );
    assert!(
        parse(&format!(
            r#"{{"kid":1,"secret":"{secret}","role":"active","x":1}}"#
        ))
        .is_err()
    );
    // No active key; two active keys; duplicate kids.
    assert!(matches!(
        parse(&format!(
            r#"{{"kid":1,"secret":"{secret}","role":"verify_only"}}"#
        )),
        Err(KeyFileError::KeyRing(_))
    ));
    assert!(matches!(
        parse(&format!(
            r#"{{"kid":1,"secret":"{secret}","role":"active"}},{{"kid":2,"secret":"{secret}","role":"active"}}"#
        )),
        Err(KeyFileError::KeyRing(_))
    ));
    assert!(matches!(
        parse(&format!(
            r#"{{"kid":1,"secret":"{secret}","role":"active"}},{{"kid":1,"secret":"{secret}","role":"retired"}}"#
        )),
        Err(KeyFileError::KeyRing(_))
    ));
}
