//! The 8 192-character cap, on both sides (SECURITY.md §3.1, size limits).

use tern_seal::{MAX_TOKEN_CHARS, OpenError, OpenPolicy, SealError};

use crate::util::{RID, T0, binding, claims, ring};

#[test]
fn oversize_tokens_are_rejected_before_decoding() {
    let ring = ring(1);
    let policy = OpenPolicy::default();
    // Not even base64url: only a length check can produce TooLong.
    let garbage = "!".repeat(MAX_TOKEN_CHARS + 1);
    let result = ring.open_at::<u8>(RID, &garbage, &binding(), T0, &policy);
    assert_eq!(result.unwrap_err(), OpenError::TooLong);
    let garbage = "!".repeat(MAX_TOKEN_CHARS);
    let result = ring.open_at::<u8>(RID, &garbage, &binding(), T0, &policy);
    assert_eq!(result.unwrap_err(), OpenError::Malformed);
}

#[test]
fn sealing_refuses_rather_than_truncates_and_the_cap_is_exact() {
    let ring = ring(1);
    let mut largest = None;
    for n in 6000..6200 {
        match ring.seal_at(RID, &claims(vec![0xa5u8; n])) {
            Ok(token) => largest = Some((n, token)),
            Err(SealError::TooLarge { chars }) => {
                assert!(chars > MAX_TOKEN_CHARS);
                break;
            }
            Err(other) => panic!("{other}"),
        }
    }
    let (n, token) = largest.unwrap();
    assert!(token.len() <= MAX_TOKEN_CHARS && token.len() > MAX_TOKEN_CHARS - 4);
    let opened = ring
        .open_at::<Vec<u8>>(RID, &token, &binding(), T0, &OpenPolicy::default())
        .unwrap();
    assert_eq!(opened.body().len(), n);
    assert!(matches!(
        ring.seal_at(RID, &claims(vec![0u8; 100_000])),
        Err(SealError::TooLarge { .. })
    ));
}
