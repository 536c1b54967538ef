//! The strict JSON reader every message goes through (DIGEST §1.1, BASE-A2,
//! SECURITY.md §3.4, §3.8).
//!
//! serde_json keeps the last of two duplicate object keys and recurses up to
//! 128 levels. Neither is acceptable for input whose digest binds a state:
//! `{"a":1,"a":2}` must not mean one thing to the digest and another to the
//! handler. So messages are read through a visitor that rejects duplicate
//! keys and nesting past a limit while it builds the value.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

use crate::error::McpError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LimitHit {
    Duplicate,
    Depth,
}

/// Parses JSON text into a [`Value`], rejecting duplicate keys and nesting
/// deeper than `max_depth`.
///
/// Malformed JSON, trailing characters, invalid UTF-8 and non-finite numbers
/// are -32700; duplicate keys and excess depth are -32602 (the text is JSON,
/// the parameters are not acceptable).
pub fn parse_value(bytes: &[u8], max_depth: usize) -> Result<Value, McpError> {
    let hit = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // Our own depth limit replaces serde_json's; it is lower, so the stack
    // stays bounded.
    let parsed = StrictSeed {
        depth: 0,
        max_depth,
        hit: &hit,
        place: Place::Any,
        meta: None,
    }
    .deserialize(&mut de);
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            return Err(match hit.get() {
                Some(LimitHit::Duplicate) => McpError::invalid_params("Duplicate object key"),
                Some(LimitHit::Depth) => McpError::invalid_params("JSON nested too deeply"),
                None => McpError::Parse(parse_detail(&e)),
            });
        }
    };
    de.end().map_err(|e| McpError::Parse(parse_detail(&e)))?;
    Ok(value)
}

fn parse_detail(e: &serde_json::Error) -> String {
    // Line and column help a person fix a hand-written request; the rest of
    // serde_json's text is stable enough to show.
    e.to_string()
}

/// Where a value sits, as far as locating `params._meta` goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The message's `params`.
    Params,
    /// Anywhere else.
    Any,
}

#[derive(Clone, Copy)]
pub(crate) struct StrictSeed<'h, 'de> {
    pub(crate) depth: usize,
    pub(crate) max_depth: usize,
    pub(crate) hit: &'h Cell<Option<LimitHit>>,
    pub(crate) place: Place,
    /// Where `params._meta`'s text goes, unparsed, when the fast path reads
    /// the message ([`super::fast`]); `None` parses it like any value.
    pub(crate) meta: Option<&'h Cell<Option<&'de str>>>,
}

impl StrictSeed<'_, '_> {
    pub(crate) fn deeper<E: de::Error>(&self) -> Result<Self, E> {
        if self.depth + 1 > self.max_depth {
            self.hit.set(Some(LimitHit::Depth));
            return Err(E::custom("nesting too deep"));
        }
        Ok(StrictSeed {
            depth: self.depth + 1,
            place: Place::Any,
            ..*self
        })
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_, 'de> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_, 'de> {
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
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.deeper()?;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.deeper()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let seed = match (self.place, key.as_str(), self.meta) {
                (Place::Params, "_meta", Some(at)) => {
                    if at.get().is_some() {
                        self.hit.set(Some(LimitHit::Duplicate));
                        return Err(de::Error::custom("duplicate key"));
                    }
                    // Checked (depth, duplicates) when it is parsed, unless
                    // these exact bytes already were.
                    let text: &'de RawValue = map.next_value()?;
                    at.set(Some(text.get()));
                    continue;
                }
                _ => inner,
            };
            // One search of the map per key, not a lookup then an insert.
            match out.entry(key) {
                serde_json::map::Entry::Occupied(_) => {
                    self.hit.set(Some(LimitHit::Duplicate));
                    return Err(de::Error::custom("duplicate key"));
                }
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(seed)?);
                }
            }
        }
        Ok(Value::Object(out))
    }
}
