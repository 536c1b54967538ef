//! Weak master secrets are refused and secrets are never printed
//! (SECURITY.md §3.3).

use tern_seal::{MasterSecret, SecretError};

#[test]
fn short_secrets_are_refused() {
    let bytes: Vec<u8> = (0..31).collect();
    assert_eq!(
        MasterSecret::from_bytes(&bytes).unwrap_err(),
        SecretError::TooShort { len: 31 }
    );
    assert!(MasterSecret::from_bytes(&[]).is_err());
}

#[test]
fn all_zero_secrets_are_refused() {
    assert_eq!(
        MasterSecret::from_bytes(&[0; 64]).unwrap_err(),
        SecretError::AllZero
    );
}

#[test]
fn secrets_with_fewer_than_16_distinct_bytes_are_refused() {
    let fifteen: Vec<u8> = (0..64).map(|i| i % 15).collect();
    assert_eq!(
        MasterSecret::from_bytes(&fifteen).unwrap_err(),
        SecretError::TooFewDistinct { distinct: 15 }
    );
    assert!(MasterSecret::from_bytes(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").is_err());
    let sixteen: Vec<u8> = (0..32).map(|i| i % 16).collect();
    assert!(MasterSecret::from_bytes(&sixteen).is_ok());
}

#[test]
fn base64url_secrets_are_decoded_strictly() {
    let good = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    assert!(MasterSecret::from_base64url(good).is_ok());
    for bad in [
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        " AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+f",
    ] {
        assert_eq!(
            MasterSecret::from_base64url(bad).unwrap_err(),
            SecretError::Encoding,
            "{bad:?}"
        );
    }
    // Valid base64url, weak content.
    assert!(matches!(
        MasterSecret::from_base64url("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        Err(SecretError::AllZero)
    ));
}

#[test]
fn generated_secrets_are_strong_and_distinct() {
    let a = MasterSecret::generate().unwrap();
    let b = MasterSecret::generate().unwrap();
    assert_ne!(*a.to_base64url(), *b.to_base64url());
    assert!(MasterSecret::from_base64url(&a.to_base64url()).is_ok());
}

#[test]
fn debug_never_prints_the_secret() {
    let secret = crate::util::secret(1);
    assert_eq!(format!("{secret:?}"), "MasterSecret(..)");
    let spec = crate::util::spec(1, tern_seal::KeyRole::Active, None);
    assert!(!format!("{spec:?}").contains(&*secret.to_base64url()));
}
