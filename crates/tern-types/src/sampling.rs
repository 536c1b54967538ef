//! Sampling: asking the client's model (DIGEST §5.2). **Deprecated** in this
//! revision: call LLM provider APIs directly instead (MIG-27). Still served
//! through MRTR (`sampling/createMessage` input requests).

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::content::{AudioContent, ContentBlock, ImageContent, Role, TextContent};
use crate::tools::Tool;

/// Params of a `sampling/createMessage` input request (deprecated feature).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Advisory model selection preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may change or drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP context to include. Values other than `none` are
    /// deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature; the client may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The most tokens to generate; the client must respect it.
    pub max_tokens: u64,
    /// Stop sequences; the client may ignore them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata; the client may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tools the model may call; needs `sampling.tools` (SAMP-S2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use the tools; needs `sampling.tools` (SAMP-S2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Which MCP context the client should add to a sampling prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// No context. The default, and the only value not deprecated.
    #[default]
    None,
    /// Context from this server. **Deprecated** (MIG-27); needs
    /// `sampling.context`.
    ThisServer,
    /// Context from every connected server. **Deprecated** (MIG-27); needs
    /// `sampling.context`.
    AllServers,
}

/// Whether and how the model may call tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// Absent means `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
}

/// The mode of a [`ToolChoice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call tools.
    None,
}

/// Advisory preferences for the model the client picks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, evaluated in order as substrings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
}

/// A model name hint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelHint {
    /// A (part of a) model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One message of a sampling conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// One block or several.
    pub content: SamplingContent,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The `content` of a sampling message or result: one block, or an array.
/// Which one it was is kept, so messages round-trip.
#[derive(Clone, Debug, PartialEq)]
pub enum SamplingContent {
    /// A single block (a JSON object).
    Single(SamplingMessageContentBlock),
    /// Several blocks (a JSON array).
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever form they came in.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Single(b) => b.serialize(s),
            SamplingContent::Multiple(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            v @ Value::Array(_) => Vec::<SamplingMessageContentBlock>::deserialize(v)
                .map(SamplingContent::Multiple)
                .map_err(de::Error::custom),
            v @ Value::Object(_) => SamplingMessageContentBlock::deserialize(v)
                .map(SamplingContent::Single)
                .map_err(de::Error::custom),
            other => Err(de::Error::custom(format_args!(
                "sampling content must be a block or an array of blocks, found {other}"
            ))),
        }
    }
}

/// A block of sampling content, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SamplingMessageContentBlock {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"`.
    Audio(AudioContent),
    /// `"tool_use"`: the model calls a tool.
    ToolUse(ToolUseContent),
    /// `"tool_result"`: the result of a tool call (SAMP-3, SAMP-4).
    ToolResult(ToolResultContent),
}

/// A tool call by the model (`type: "tool_use"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// The call id, echoed by the matching `tool_result`.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    pub input: Map<String, Value>,
    /// Extension metadata; keep it when replaying.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The result of a tool call (`type: "tool_result"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The `id` of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result: any JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed; absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Extension metadata; keep it when replaying.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The answer to a `sampling/createMessage` input request (deprecated
/// feature). Not a `Result`: it has no `resultType` and travels only in
/// `inputResponses`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who produced the content (normally the assistant).
    pub role: Role,
    /// One block or several.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped: `endTurn`, `stopSequence`, `maxTokens`,
    /// `toolUse`, or another string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}
