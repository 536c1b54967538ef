//! Canonical JSON, so that a digest of request parameters survives a client
//! that re-serialises them (SECURITY.md §3.4, "Salient params, canonical
//! form").
//!
//! The form:
//!
//! - UTF-8, no whitespace, object keys sorted by code point;
//! - strings escaped one fixed way: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
//!   other control characters as `\u00xx`, everything else as itself; no
//!   Unicode normalisation;
//! - numbers with an integral value that fits in `i64` or `u64` printed as
//!   that integer, so `1`, `1.0` and `1e0` are one value and `1e2` is `100`;
//!   every other number as the shortest round-trip `f64` in exponent form
//!   (`1.5e-7`, `1e300`), which keeps the output short for any input;
//! - nesting deeper than [`MAX_DEPTH`] refused, and, from text, duplicate
//!   object keys refused, where `serde_json` would keep the last one.
//!
//! This is deliberately not RFC 8785: JCS maps integers above 2^53 that
//! differ by one to the same text, so a changed argument could go unnoticed
//! (SECURITY.md §3.2).

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest as _, Sha256};

/// Deepest nesting of arrays and objects accepted; a top-level `[]` or `{}`
/// has depth 1 (SECURITY.md §3.4).
pub const MAX_DEPTH: usize = 32;

/// Why a value has no canonical form.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CanonError {
    /// Arrays and objects nest deeper than [`MAX_DEPTH`].
    #[error("JSON nests deeper than {MAX_DEPTH}")]
    TooDeep,
    /// An object repeats a key.
    #[error("duplicate object key {0:?}")]
    DuplicateKey(String),
    /// The text is not JSON.
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The canonical bytes of `value`.
pub fn to_vec(value: &Value) -> Result<Vec<u8>, CanonError> {
    let mut out = Vec::new();
    write_value(&mut out, value, 0)?;
    Ok(out)
}

/// SHA-256 of the canonical bytes of `value`, the params digest bound into a
/// sealed state (SECURITY.md §3.4, `pdig`).
///
/// A [`Value`] has already lost any duplicate keys of the text it came from;
/// digest request text with [`digest_slice`] so that duplicates are refused.
pub fn digest(value: &Value) -> Result<[u8; 32], CanonError> {
    Ok(Sha256::digest(to_vec(value)?).into())
}

/// SHA-256 of the canonical bytes of the object made of `entries`, written
/// from the borrowed values: the request path digests its salient
/// parameters without building an object of copies first. Keys must be
/// distinct.
pub fn digest_entries(entries: &mut [(&str, &Value)]) -> Result<[u8; 32], CanonError> {
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(CanonError::DuplicateKey(w[0].0.to_owned()));
    }
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    write_entries(&mut out, entries.iter().copied(), 0)?;
    out.push(b'}');
    Ok(Sha256::digest(&out).into())
}

/// Appends `s` as a canonical JSON string to `out`, for a caller that
/// composes a canonical document around parts it keeps already encoded
/// (from [`to_vec`]).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    write_string(out, s);
}

/// SHA-256 of bytes that are canonical already (composed from [`to_vec`]
/// and [`write_str`]); equal to [`digest`] of the value they encode.
pub fn digest_canonical(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// SHA-256 of the canonical bytes of JSON text, refusing duplicate keys and
/// nesting deeper than [`MAX_DEPTH`] (SECURITY.md §3.4).
pub fn digest_slice(text: &[u8]) -> Result<[u8; 32], CanonError> {
    Ok(Sha256::digest(canonical_from_slice(text)?).into())
}

/// Parses JSON text, refusing duplicate keys and nesting deeper than
/// [`MAX_DEPTH`], and returns the value.
pub fn parse_strict(text: &[u8]) -> Result<Value, CanonError> {
    let violation = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(text);
    let parsed = StrictValue {
        depth: 0,
        violation: &violation,
    }
    .deserialize(&mut de)
    .and_then(|value| de.end().map(|()| value));
    match (parsed, violation.take()) {
        (_, Some(violation)) => Err(violation),
        (Ok(value), None) => Ok(value),
        (Err(e), None) => Err(CanonError::Json(e)),
    }
}

/// The canonical bytes of JSON text, refusing duplicate keys and nesting
/// deeper than [`MAX_DEPTH`] (SECURITY.md §3.4, §3.8).
pub fn canonical_from_slice(text: &[u8]) -> Result<Vec<u8>, CanonError> {
    to_vec(&parse_strict(text)?)
}

fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), CanonError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            check_depth(depth + 1)?;
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            check_depth(depth + 1)?;
            // `str` orders by UTF-8 bytes, which is code point order. `Map`'s
            // own order depends on whether some crate in the build enables
            // `preserve_order`, so it is checked, and sorted only when it
            // is not already in that order (the allocation-free common case).
            let in_order = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a < b);
            out.push(b'{');
            if in_order {
                write_entries(out, map.iter().map(|(k, v)| (k.as_str(), v)), depth)?;
            } else {
                let mut entries: Vec<(&str, &Value)> =
                    map.iter().map(|(k, v)| (k.as_str(), v)).collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                write_entries(out, entries.into_iter(), depth)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn write_entries<'a>(
    out: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a str, &'a Value)>,
    depth: usize,
) -> Result<(), CanonError> {
    for (i, (key, item)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(out, key);
        out.push(b':');
        write_value(out, item, depth + 1)?;
    }
    Ok(())
}

fn check_depth(depth: usize) -> Result<(), CanonError> {
    if depth > MAX_DEPTH {
        Err(CanonError::TooDeep)
    } else {
        Ok(())
    }
}

/// 2^63 and 2^64 as `f64`, both exact.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

fn write_number(out: &mut Vec<u8>, n: &Number) {
    use std::io::Write as _;
    // Writing into a `Vec` cannot fail.
    let _ = if let Some(u) = n.as_u64() {
        write!(out, "{u}")
    } else if let Some(i) = n.as_i64() {
        write!(out, "{i}")
    } else {
        // serde_json never holds NaN or infinities, so `as_f64` is total here.
        let f = n.as_f64().unwrap_or(0.0);
        if f.fract() == 0.0 && (0.0..TWO_POW_64).contains(&f) {
            // Exact: integral and within range.
            write!(out, "{}", f as u64)
        } else if f.fract() == 0.0 && (-TWO_POW_63..0.0).contains(&f) {
            write!(out, "{}", f as i64)
        } else {
            // `{:e}` is the shortest digit string that round-trips.
            write!(out, "{f:e}")
        }
    };
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Builds a [`Value`] like `serde_json` does, but records the first
/// duplicate key or over-deep nesting and stops there.
#[derive(Clone, Copy)]
struct StrictValue<'a> {
    /// Depth of the container being read; 0 at the top level.
    depth: usize,
    violation: &'a Cell<Option<CanonError>>,
}

impl StrictValue<'_> {
    fn fail<E: de::Error>(self, violation: CanonError) -> E {
        let message = violation.to_string();
        self.violation.set(Some(violation));
        E::custom(message)
    }

    fn nested<E: de::Error>(self) -> Result<Self, E> {
        let depth = self.depth + 1;
        if depth > MAX_DEPTH {
            return Err(self.fail(CanonError::TooDeep));
        }
        Ok(Self { depth, ..self })
    }
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(self.fail(CanonError::DuplicateKey(key)));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn canon(text: &str) -> String {
        String::from_utf8(canonical_from_slice(text.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn strings_escape_one_way() {
        assert_eq!(
            canon(r#""a\"b\\c\/d\u0001\u001f\n\t\b\f\r é\u00e9""#),
            "\"a\\\"b\\\\c/d\\u0001\\u001f\\n\\t\\b\\f\\r éé\""
        );
    }

    #[test]
    fn numbers_have_one_form() {
        assert_eq!(canon("-0.0"), "0");
        assert_eq!(canon("-1.0"), "-1");
        assert_eq!(canon("1e2"), "100");
        assert_eq!(canon("0.5"), "5e-1");
        assert_eq!(canon("1e300"), "1e300");
        assert_eq!(canon("18446744073709551615"), "18446744073709551615");
        assert_eq!(canon("-9223372036854775808"), "-9223372036854775808");
        assert_eq!(canon("1.8446744073709552e19"), "1.8446744073709552e19");
        assert_eq!(canon("-9.223372036854775808e18"), "-9223372036854775808");
    }

    #[test]
    fn value_and_text_entry_points_agree() {
        let v = json!({"z": [1.0, {"b": null, "a": true}], "a": "x"});
        assert_eq!(
            to_vec(&v).unwrap(),
            canonical_from_slice(br#"{"z":[1,{"a":true,"b":null}],"a":"x"}"#).unwrap()
        );
    }

    #[test]
    fn trailing_text_is_refused() {
        assert!(matches!(
            canonical_from_slice(b"{} {}"),
            Err(CanonError::Json(_))
        ));
    }
}
