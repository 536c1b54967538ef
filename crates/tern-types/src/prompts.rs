//! Prompts (DIGEST §6.2).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::{ContentBlock, Role};
use crate::meta::Icon;
use crate::mrtr::InputResponses;
use crate::pagination::Cursor;
use crate::result::{CacheScope, ResultType, de_ttl_ms};

/// A prompt template the server offers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides. The conformance suite wants one on every
    /// prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments the template takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons to render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One argument of a prompt template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// The argument name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given (absent means false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
}

/// Params of `prompts/get`, including the MRTR retry fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// The prompt to get.
    pub name: String,
    /// Template arguments, all strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Answers to the previous round's input requests (MRTR-C3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, echoed unchanged (MRTR-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// The complete result of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// A description of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt's messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The result of `prompts/list`. Cacheable (CACHE-S1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
    /// Present when there are more pages (PAGE-C1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Freshness in milliseconds. Always written; missing or negative reads
    /// as 0 (CACHE-C5).
    #[serde(default, deserialize_with = "de_ttl_ms")]
    pub ttl_ms: u64,
    /// Who may reuse the result. Always written; missing reads as private
    /// (A18).
    #[serde(default)]
    pub cache_scope: CacheScope,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}
