//! Notification params (DIGEST §0.3, §6.7, §6.8, §6.9, §6.10).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use crate::jsonrpc::RequestId;
use crate::logging::LoggingLevel;

/// Params with nothing but an optional `_meta`: the `list_changed`
/// notifications (`NotificationParams` in the schema).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata; on a listen stream it carries
    /// `io.modelcontextprotocol/subscriptionId` (SUB-S4).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The token a request's `_meta.progressToken` names: a string or an
/// integer, with its JSON type kept (PROG-C1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::Number(n) => write!(f, "{n}"),
            ProgressToken::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for ProgressToken {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ProgressToken::Number(n) => s.serialize_i64(*n),
            ProgressToken::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ProgressToken;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ProgressToken, E> {
                Ok(ProgressToken::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ProgressToken, E> {
                i64::try_from(v)
                    .map(ProgressToken::Number)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ProgressToken, E> {
                Ok(ProgressToken::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<ProgressToken, E> {
                Ok(ProgressToken::String(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Params of `notifications/progress` (PROG-S2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification (PROG-S3). A JSON
    /// number kept as written (`50` stays an integer).
    pub progress: Number,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `notifications/cancelled` (CANC-C1, SUB-S9).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request being cancelled.
    pub request_id: RequestId,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `notifications/message`. **Deprecated** with logging (DIGEST
/// §6.9): sent only to a request that set `logLevel` (LOG-S2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageNotificationParams {
    /// The severity.
    pub level: LoggingLevel,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value. No secrets (LOG-S5).
    pub data: Value,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `notifications/resources/updated` (SUB-S7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The resource that changed (may be a sub-resource of the subscribed
    /// URI).
    pub uri: String,
    /// Notification metadata; carries the subscription id (SUB-S4).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}
