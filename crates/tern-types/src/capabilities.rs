//! Client and server capabilities (DIGEST §2.2, §3.2).
//!
//! Capability objects are open: unknown members are kept, never rejected
//! (the conformance suite still sends `roots.listChanged`).

use serde::{Deserialize, Serialize};

use serde_json::{Map, Value};

/// What a client can do for one request, declared in its `_meta`
/// (META-C6). `{}` means nothing optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Non-standard experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// The client can answer `roots/list` input requests (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client can answer `sampling/createMessage` input requests
    /// (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client can answer `elicitation/create` input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Extensions the client supports, by identifier (EXT-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
}

impl ClientCapabilities {
    /// Whether form-mode elicitation is declared: `elicitation.form`, or an
    /// `elicitation` object naming no mode at all (ELIC-S3).
    pub fn elicitation_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    /// Whether URL-mode elicitation is declared (`elicitation.url`).
    pub fn elicitation_url(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// Whether sampling is declared.
    pub fn sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether sampling with `tools`/`toolChoice` is declared (SAMP-S2).
    pub fn sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether roots are declared.
    pub fn roots(&self) -> bool {
        self.roots.is_some()
    }

    /// Whether the extension `id` is declared, with any settings object
    /// (EXT-1).
    pub fn extension(&self, id: &str) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|e| e.get(id).is_some_and(Value::is_object))
    }
}

/// The `roots` client capability. It has no members in this revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RootsCapability {
    /// Members this revision does not define (e.g. the removed `listChanged`).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The `sampling` client capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Support for `includeContext` other than `"none"` (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Map<String, Value>>,
    /// Support for `tools` and `toolChoice` in sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Map<String, Value>>,
}

/// The `elicitation` client capability. `{}` means form mode only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Map<String, Value>>,
    /// URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Map<String, Value>>,
}

/// What a server offers (DIGEST §3.2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Non-standard experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// The server may send log notifications (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Map<String, Value>>,
    /// The server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Map<String, Value>>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Extensions the server supports, by identifier (EXT-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
}

/// The `tools` server capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// The server sends `notifications/tools/list_changed` on listen streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The `prompts` server capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// The server sends `notifications/prompts/list_changed` on listen
    /// streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The `resources` server capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server honours `resourceSubscriptions` on listen streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}
