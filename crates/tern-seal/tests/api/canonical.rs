//! Canonical JSON for params digests (SECURITY.md §3.4).

use serde_json::json;
use tern_seal::canonical::{self, CanonError, MAX_DEPTH};

fn canon(text: &str) -> String {
    String::from_utf8(canonical::canonical_from_slice(text.as_bytes()).unwrap()).unwrap()
}

fn digest(text: &str) -> [u8; 32] {
    canonical::digest(&serde_json::from_str(text).unwrap()).unwrap()
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn key_order_is_irrelevant() {
    assert_eq!(
        canon(r#"{"b":1,"a":{"d":2,"c":3}}"#),
        r#"{"a":{"c":3,"d":2},"b":1}"#
    );
    assert_eq!(digest(r#"{"b":1,"a":2}"#), digest(r#"{"a":2,"b":1}"#));
    // Code point order, not UTF-16 order: U+FF5E sorts before U+1F600.
    assert_eq!(
        canon("{\"\u{1F600}\":1,\"\u{FF5E}\":2}"),
        "{\"\u{FF5E}\":2,\"\u{1F600}\":1}"
    );
}

#[test]
fn whitespace_is_irrelevant() {
    assert_eq!(canon(" { \"a\" : [ 1 , 2 ] } \n"), r#"{"a":[1,2]}"#);
}

#[test]
fn one_and_one_point_zero_are_equal() {
    assert_eq!(digest("1"), digest("1.0"));
    assert_eq!(digest(r#"{"n":1}"#), digest(r#"{"n":1.0}"#));
    assert_eq!(digest("-3"), digest("-3.0"));
}

#[test]
fn exponent_forms_of_integers_are_equal() {
    assert_eq!(digest("1e2"), digest("100"));
    assert_eq!(canon("1E2"), "100");
    assert_eq!(canon("12.5e1"), "125");
}

#[test]
fn integers_above_2_pow_53_stay_distinct() {
    assert_ne!(digest("9007199254740993"), digest("9007199254740992"));
    assert_eq!(canon("9007199254740993"), "9007199254740993");
    assert_eq!(canon("-9007199254740993"), "-9007199254740993");
}

#[test]
fn non_integers_use_shortest_round_trip() {
    assert_eq!(canon("0.1"), "1e-1");
    assert_eq!(canon("1.5"), "1.5e0");
    assert_eq!(canon("1e300"), "1e300");
    assert_eq!(canon("-2.5e-8"), "-2.5e-8");
    // Beyond f64: serde_json refuses rather than saturating to infinity.
    assert!(canonical::canonical_from_slice(b"1e400").is_err());
}

#[test]
fn duplicate_keys_are_rejected() {
    assert!(matches!(
        canonical::canonical_from_slice(br#"{"a":1,"a":2}"#),
        Err(CanonError::DuplicateKey(k)) if k == "a"
    ));
    assert!(matches!(
        canonical::canonical_from_slice(br#"{"x":[{"b":1,"b":1}]}"#),
        Err(CanonError::DuplicateKey(_))
    ));
    // Escapes are resolved before comparing.
    assert!(matches!(
        canonical::canonical_from_slice(br#"{"a":1,"\u0061":2}"#),
        Err(CanonError::DuplicateKey(_))
    ));
}

#[test]
fn depth_32_is_accepted_and_33_rejected() {
    assert_eq!(MAX_DEPTH, 32);
    assert!(canonical::canonical_from_slice(nested(32).as_bytes()).is_ok());
    assert!(matches!(
        canonical::canonical_from_slice(nested(33).as_bytes()),
        Err(CanonError::TooDeep)
    ));
    let deep_object = format!("{}1{}", r#"{"a":"#.repeat(33), "}".repeat(33));
    assert!(matches!(
        canonical::canonical_from_slice(deep_object.as_bytes()),
        Err(CanonError::TooDeep)
    ));
    // The value entry point applies the same limit.
    let value: serde_json::Value = serde_json::from_str(&nested(33)).unwrap();
    assert!(matches!(
        canonical::to_vec(&value),
        Err(CanonError::TooDeep)
    ));
    let value: serde_json::Value = serde_json::from_str(&nested(32)).unwrap();
    assert!(canonical::to_vec(&value).is_ok());
}

#[test]
fn unicode_is_not_normalised() {
    // "é" precomposed (U+00E9) and decomposed (U+0065 U+0301).
    assert_ne!(digest("\"\u{e9}\""), digest("\"e\u{301}\""));
    assert_eq!(canon(r#""\u00e9""#), "\"\u{e9}\"");
}

#[test]
fn strings_are_escaped_one_way() {
    assert_eq!(canon(r#""\/""#), r#""/""#);
    assert_eq!(canon(r#""\u000A""#), r#""\n""#);
    assert_eq!(canon(r#""\u001F""#), r#""\u001f""#);
    assert_eq!(digest(r#""\u0041""#), digest(r#""A""#));
}

#[test]
fn invalid_json_is_rejected() {
    for bad in ["", "{", "[1,]", "{\"a\":1} x", "NaN", "\"\\ud800\""] {
        assert!(
            matches!(
                canonical::canonical_from_slice(bad.as_bytes()),
                Err(CanonError::Json(_))
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn the_value_and_text_forms_agree() {
    let value = json!({"name": "refund", "arguments": {"amount": 12.5, "ids": [3, 1, 2]}});
    assert_eq!(
        canonical::to_vec(&value).unwrap(),
        canonical::canonical_from_slice(
            br#"{"arguments":{"ids":[3,1,2],"amount":1.25e1},"name":"refund"}"#
        )
        .unwrap()
    );
}

#[test]
fn text_and_value_digests_agree() {
    let text = br#"{"b":[1.0,"x"],"a":null}"#;
    let value: serde_json::Value = serde_json::from_slice(text).unwrap();
    assert_eq!(
        canonical::digest_slice(text).unwrap(),
        canonical::digest(&value).unwrap()
    );
    assert!(matches!(
        canonical::digest_slice(br#"{"a":1,"a":1}"#),
        Err(CanonError::DuplicateKey(_))
    ));
}
