//! `subscriptions/listen` (DIGEST §6.10).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::RequestId;
use crate::meta::meta_keys;
use crate::result::ResultType;

/// Which notifications a listen stream carries. An omitted field or `false`
/// means "not wanted".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// URIs whose `notifications/resources/updated` are wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
}

/// Params of `subscriptions/listen`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// What the client wants to hear about. Required.
    pub notifications: SubscriptionFilter,
}

/// Params of `notifications/subscriptions/acknowledged`, the first message of
/// a listen stream (SUB-S2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The subset of the request's filter the server will honour.
    pub notifications: SubscriptionFilter,
    /// Notification metadata; carries
    /// `io.modelcontextprotocol/subscriptionId` (SUB-S4).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The result of `subscriptions/listen`, sent only when the server ends the
/// stream gracefully (SUB-S9).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata. Required here: it carries
    /// `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
}

impl SubscriptionsListenResult {
    /// The graceful end of the listen request with this id; the id keeps its
    /// JSON type (META-S13).
    pub fn new(subscription_id: &RequestId) -> Self {
        let mut meta = Map::new();
        meta.insert(
            meta_keys::SUBSCRIPTION_ID.to_owned(),
            match subscription_id {
                RequestId::Number(n) => Value::from(*n),
                RequestId::String(s) => Value::from(s.as_str()),
            },
        );
        SubscriptionsListenResult {
            result_type: ResultType::Complete,
            meta,
        }
    }
}
