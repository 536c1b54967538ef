//! The 2025-11-25 messages this revision removed, for serving and calling
//! peers of the older era during the migration (DIGEST §3.4, COMPAT-A2;
//! `shared/spec/2025-11-25`: lifecycle, utilities).
//!
//! A legacy session opens with `initialize`, in which the client states its
//! version, capabilities and identity once; the server answers with the
//! negotiated version and its own capabilities. The capability objects have
//! the same shape as this revision's (unknown members such as
//! `roots.listChanged` are kept), so [`ClientCapabilities`] serves both eras.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{ClientCapabilities, Implementation, LoggingLevel};

/// The legacy versions served and spoken, newest first (COMPAT-S1).
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The legacy version a client asking for `requested` gets: the same when
/// it is one of [`LEGACY_VERSIONS`], else the newest (lifecycle: version
/// negotiation; the client then decides whether it can go on).
pub fn negotiate_version(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LEGACY_VERSIONS[0])
}

/// Whether `version` names a legacy revision this crate knows.
pub fn is_legacy_version(version: &str) -> bool {
    LEGACY_VERSIONS.contains(&version)
}

/// Method names of the legacy era that this revision does not have.
pub mod methods {
    /// `initialize`: opens a session.
    pub const INITIALIZE: &str = "initialize";
    /// `notifications/initialized`: the client is ready.
    pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
    /// `ping`: either side checks the other is alive.
    pub const PING: &str = "ping";
    /// `logging/setLevel`: the session's log level.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// `resources/subscribe`: updates of one resource.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// `resources/unsubscribe`.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// `notifications/roots/list_changed`: the client's roots changed.
    pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// `notifications/elicitation/complete`: a URL-mode interaction ended.
    pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
}

/// `initialize` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The version the client asks for (its newest).
    pub protocol_version: String,
    /// What the client can do, for the whole session.
    pub capabilities: ClientCapabilities,
    /// The client's identity (display only).
    pub client_info: Implementation,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The `initialize` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The negotiated version.
    pub protocol_version: String,
    /// What the server offers, for the whole session.
    pub capabilities: Map<String, Value>,
    /// The server's identity.
    pub server_info: Implementation,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// `logging/setLevel` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The lowest level the client wants to receive.
    pub level: LoggingLevel,
}

/// `resources/subscribe` and `resources/unsubscribe` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeRequestParams {
    /// The resource.
    pub uri: String,
}

/// Which era a message belongs to (COMPAT-S1): decided per message, never
/// per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// This revision: stateless, everything in each request's `_meta`.
    Modern,
    /// 2025-11-25 and earlier: a session opened by `initialize`.
    Legacy,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_keeps_a_known_version_and_offers_the_newest_otherwise() {
        assert_eq!(negotiate_version("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate_version("2025-11-25"), "2025-11-25");
        assert_eq!(negotiate_version("2024-11-05"), "2025-11-25");
        assert_eq!(negotiate_version("2026-07-28"), "2025-11-25");
        assert_eq!(negotiate_version(""), "2025-11-25");
        assert!(is_legacy_version("2025-03-26"));
        assert!(!is_legacy_version("2026-07-28"));
    }
}
