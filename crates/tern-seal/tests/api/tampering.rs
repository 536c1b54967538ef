//! Any change to a token, its resource id or its binding is rejected
//! (SECURITY.md §3.1, §3.5 steps 1–5; MRTR-SEC1, MRTR-SEC2).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use tern_seal::{Binding, KeyRing, KeyRole, KeySpec, OpenError, OpenPolicy};

use crate::util::{RID, T0, binding, claims, ring, secret};

fn fixture() -> (KeyRing, String, Vec<u8>) {
    let ring = ring(0x0102_0304);
    let token = ring.seal_at(RID, &claims(("state", [9u8; 32]))).unwrap();
    let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
    (ring, token, raw)
}

fn open_raw(ring: &KeyRing, raw: &[u8]) -> Result<(), OpenError> {
    let token = URL_SAFE_NO_PAD.encode(raw);
    ring.open_at::<(String, [u8; 32])>(RID, &token, &binding(), T0, &OpenPolicy::default())
        .map(drop)
}

#[test]
fn every_single_bit_flip_is_rejected() {
    let (ring, _, raw) = fixture();
    assert_eq!(open_raw(&ring, &raw), Ok(()));
    for bit in 0..raw.len() * 8 {
        let mut flipped = raw.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let err = open_raw(&ring, &flipped).unwrap_err();
        let expected = match bit / 8 {
            0 => OpenError::BadVersion(raw[0] ^ (1 << (bit % 8))),
            1..=4 => OpenError::UnknownKey {
                kid: u32::from_be_bytes([flipped[1], flipped[2], flipped[3], flipped[4]]),
            },
            _ => OpenError::Tag,
        };
        assert_eq!(err, expected, "bit {bit}");
    }
}

#[test]
fn every_truncation_is_rejected() {
    let (ring, token, raw) = fixture();
    for len in 0..raw.len() {
        assert!(open_raw(&ring, &raw[..len]).is_err(), "{len} bytes");
    }
    for len in 0..token.len() {
        let cut = &token[..len];
        let result =
            ring.open_at::<(String, [u8; 32])>(RID, cut, &binding(), T0, &OpenPolicy::default());
        assert!(result.is_err(), "{len} chars");
    }
}

proptest! {
    #[test]
    fn any_extension_is_rejected(tail in proptest::collection::vec(any::<u8>(), 1..64)) {
        let (ring, _, mut raw) = fixture();
        raw.extend_from_slice(&tail);
        prop_assert_eq!(open_raw(&ring, &raw), Err(OpenError::Tag));
    }

    #[test]
    fn any_other_binding_is_rejected(other in any::<[u8; 32]>()) {
        prop_assume!(other != binding().0);
        let (ring, token, _) = fixture();
        let result = ring.open_at::<(String, [u8; 32])>(
            RID, &token, &Binding(other), T0, &OpenPolicy::default());
        prop_assert_eq!(result.unwrap_err(), OpenError::Binding);
    }

    #[test]
    fn any_other_resource_id_is_rejected(rid in any::<String>()) {
        prop_assume!(rid != RID);
        let (ring, token, _) = fixture();
        let result = ring.open_at::<(String, [u8; 32])>(
            &rid, &token, &binding(), T0, &OpenPolicy::default());
        prop_assert_eq!(result.unwrap_err(), OpenError::Tag);
    }
}

#[test]
fn a_binding_differing_in_one_bit_is_rejected() {
    let (ring, token, _) = fixture();
    for bit in 0..256 {
        let mut other = binding();
        other.0[bit / 8] ^= 1 << (bit % 8);
        let result =
            ring.open_at::<(String, [u8; 32])>(RID, &token, &other, T0, &OpenPolicy::default());
        assert_eq!(result.unwrap_err(), OpenError::Binding, "bit {bit}");
    }
}

#[test]
fn only_the_same_secret_and_kid_open_it() {
    let (_, token, _) = fixture();
    // Another instance deriving from the same secret opens it; the same kid
    // under another secret fails the tag, with no trial of other keys.
    let other = ring(0x0102_0304);
    let same_kid_other_secret = KeyRing::new(vec![KeySpec {
        kid: 0x0102_0304,
        secret: secret(200),
        role: KeyRole::Active,
        verify_until: None,
    }])
    .unwrap();
    let policy = OpenPolicy::default();
    assert!(
        other
            .open_at::<(String, [u8; 32])>(RID, &token, &binding(), T0, &policy)
            .is_ok()
    );
    assert_eq!(
        same_kid_other_secret
            .open_at::<(String, [u8; 32])>(RID, &token, &binding(), T0, &policy)
            .unwrap_err(),
        OpenError::Tag
    );
}

#[test]
fn text_that_is_not_strict_base64url_is_malformed() {
    let (ring, token, _) = fixture();
    let policy = OpenPolicy::default();
    let open = |t: &str| ring.open_at::<(String, [u8; 32])>(RID, t, &binding(), T0, &policy);
    assert_eq!(open("").unwrap_err(), OpenError::Malformed);
    assert_eq!(
        open(&format!("{token}=")).unwrap_err(),
        OpenError::Malformed
    );
    assert_eq!(
        open(&format!("{token}==")).unwrap_err(),
        OpenError::Malformed
    );
    assert_eq!(
        open(&format!(" {token}")).unwrap_err(),
        OpenError::Malformed
    );
    assert_eq!(
        open(&format!("{token}\n")).unwrap_err(),
        OpenError::Malformed
    );
    let (a, b) = token.split_at(10);
    assert_eq!(open(&format!("{a} {b}")).unwrap_err(), OpenError::Malformed);
    // The standard alphabet's `+` and `/` are not base64url.
    assert_eq!(open(&format!("{a}+{b}")).unwrap_err(), OpenError::Malformed);
}

#[test]
fn non_canonical_trailing_bits_are_malformed() {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let ring = ring(1);
    let policy = OpenPolicy::default();
    let mut checked = 0;
    // Payload lengths that leave 1 or 2 bytes in the last group have unused
    // low bits in the last character; setting one must be refused.
    for n in 0..3 {
        let token = ring.seal_at(RID, &claims(vec![0u8; n])).unwrap();
        if token.len().is_multiple_of(4) {
            continue;
        }
        let last = *token.as_bytes().last().unwrap();
        let value = ALPHABET.iter().position(|&c| c == last).unwrap();
        assert_eq!(value & 1, 0, "canonical encodings leave unused bits zero");
        let mut bad = token.clone().into_bytes();
        *bad.last_mut().unwrap() = ALPHABET[value | 1];
        let bad = String::from_utf8(bad).unwrap();
        let result = ring.open_at::<Vec<u8>>(RID, &bad, &binding(), T0, &policy);
        assert_eq!(result.unwrap_err(), OpenError::Malformed);
        checked += 1;
    }
    assert_eq!(checked, 2);
}

#[test]
fn other_versions_are_rejected() {
    let (ring, _, raw) = fixture();
    for version in [0x00, 0x02, 0x80, 0xff] {
        let mut other = raw.clone();
        other[0] = version;
        assert_eq!(open_raw(&ring, &other), Err(OpenError::BadVersion(version)));
    }
}

#[test]
fn trailing_plaintext_bytes_are_rejected() {
    // A (u32, u8) body read as a u32 leaves one byte over: strict decoding
    // refuses it where `postcard::from_bytes` would not (SECURITY.md §3.1).
    let ring = ring(1);
    let token = ring.seal_at(RID, &claims((5u32, 1u8))).unwrap();
    let result = ring.open_at::<u32>(RID, &token, &binding(), T0, &OpenPolicy::default());
    assert_eq!(result.unwrap_err(), OpenError::Payload);
}

#[test]
fn a_payload_of_another_type_is_rejected() {
    let ring = ring(1);
    let token = ring.seal_at(RID, &claims(2u8)).unwrap();
    let result = ring.open_at::<bool>(RID, &token, &binding(), T0, &OpenPolicy::default());
    assert_eq!(result.unwrap_err(), OpenError::Payload);
}

#[test]
fn every_reason_is_a_stable_label() {
    assert_eq!(OpenError::Tag.reason(), "bad_tag");
    assert_eq!(OpenError::Binding.reason(), "binding_mismatch");
    assert_eq!(OpenError::UnknownKey { kid: 3 }.reason(), "unknown_key");
}
