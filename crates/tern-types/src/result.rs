//! `resultType`, [`Outcome`] and the cache hints shared by several results
//! (DIGEST §1.2, §6.5).

use std::fmt;

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::mrtr::InputRequiredResult;

/// What kind of result a response carries (DIGEST §1.2).
///
/// Unknown values are kept as [`ResultType::Other`] so that a reader can
/// reject them explicitly (BASE-C12) instead of failing to parse.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// A final result. Also what an absent `resultType` means (BASE-C13).
    #[default]
    Complete,
    /// An interim multi round-trip result (MRTR-S3).
    InputRequired,
    /// A value this revision does not define.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }

    /// Reads a wire string.
    pub fn parse(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(ResultType::parse(&s))
    }
}

/// Who may reuse a cached result (CACHE-8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data: any cache may serve it to anyone.
    Public,
    /// Reusable only within the same authorization context. The safe default
    /// (DIGEST §11 A19).
    #[default]
    Private,
}

/// The result of a method that may answer with an interim result
/// (`tools/call`, `prompts/get`, `resources/read`, MRTR-S1): either the
/// method's complete result or an [`InputRequiredResult`].
///
/// Deserialising reads `resultType` first, then parses the rest into the type
/// that value selects (BASE-A3): absent or `"complete"` gives `Complete`
/// (BASE-C13), `"input_required"` gives `InputRequired`, and anything else is
/// an error naming the value (BASE-C12). Serialising writes the inner result
/// as is.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<T> {
    /// A final result.
    Complete(T),
    /// An interim result asking for input or carrying state (MRTR-S3).
    InputRequired(InputRequiredResult),
}

impl<T> Outcome<T> {
    /// The `resultType` this outcome has on the wire.
    pub fn result_type(&self) -> ResultType {
        match self {
            Outcome::Complete(_) => ResultType::Complete,
            Outcome::InputRequired(_) => ResultType::InputRequired,
        }
    }

    /// The complete result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Outcome::Complete(t) => Some(t),
            Outcome::InputRequired(_) => None,
        }
    }

    /// The interim result, if this is one.
    pub fn input_required(self) -> Option<InputRequiredResult> {
        match self {
            Outcome::Complete(_) => None,
            Outcome::InputRequired(r) => Some(r),
        }
    }
}

impl<T: Serialize> Serialize for Outcome<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Complete(t) => t.serialize(s),
            Outcome::InputRequired(r) => r.serialize(s),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Outcome<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let kind = match map.get("resultType") {
            None => ResultType::Complete,
            Some(Value::String(s)) => ResultType::parse(s),
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "resultType must be a string, found {other}"
                )));
            }
        };
        let value = Value::Object(map);
        match kind {
            ResultType::Complete => T::deserialize(value)
                .map(Outcome::Complete)
                .map_err(de::Error::custom),
            ResultType::InputRequired => InputRequiredResult::deserialize(value)
                .map(Outcome::InputRequired)
                .map_err(de::Error::custom),
            ResultType::Other(s) => Err(de::Error::custom(format_args!(
                "unknown resultType {s:?} (BASE-C12)"
            ))),
        }
    }
}

/// Reads `ttlMs`: an integer; a negative value reads as 0 (CACHE-C5).
pub(crate) fn de_ttl_ms<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = i128::deserialize(d)?;
    Ok(u64::try_from(n.max(0)).unwrap_or(u64::MAX))
}
