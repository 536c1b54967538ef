//! `resultType` and the cache hints shared by several results (DIGEST §1.2,
//! §6.5).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
