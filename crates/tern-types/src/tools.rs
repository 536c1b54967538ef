//! Tools (DIGEST §6.1).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::ContentBlock;
use crate::meta::Icon;
use crate::mrtr::InputResponses;
use crate::pagination::Cursor;
use crate::result::{CacheScope, ResultType, de_ttl_ms};

/// A tool the server offers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The programmatic name, unique within the server (TOOL-6).
    pub name: String,
    /// A display name; takes precedence over `annotations.title`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does. The conformance suite wants one on every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons to render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// The JSON Schema of the arguments: an object schema, kept raw so every
    /// 2020-12 keyword survives (`$schema`, `$defs`, `$anchor`,
    /// `if`/`then`/`else`, …; TOOL-4, MIG-16).
    pub input_schema: Map<String, Value>,
    /// The JSON Schema of `structuredContent`, kept raw (TOOL-S7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Behaviour hints; untrusted unless the server is (TOOL-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// How the tool runs (the tasks extension's `taskSupport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// How a tool runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether a call may or must run as a task (the tasks extension):
    /// `forbidden`, `optional` or `required`; absent means forbidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
}

/// Hints about a tool's behaviour. All are advisory (TOOL-C5); the defaults
/// named below apply when a hint is absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (default true; meaningful only when not
    /// read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect
    /// (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Params of `tools/call`, including the MRTR retry fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// The tool to call.
    pub name: String,
    /// The arguments, checked against the tool's `inputSchema` by the server
    /// (failures are `isError` results, TOOL-S11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Answers to the previous round's input requests (MRTR-C3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, echoed unchanged (MRTR-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// The complete result of `tools/call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result: any JSON value, conforming to the tool's
    /// `outputSchema` when it has one (TOOL-S7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed; absent means false. Argument validation
    /// failures are reported here, not as JSON-RPC errors (TOOL-S11, A5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata (`io.modelcontextprotocol/serverInfo`, META-S12).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A successful result with this content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..CallToolResult::default()
        }
    }

    /// A tool execution error (`isError: true`) with this content.
    pub fn error(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            is_error: Some(true),
            ..CallToolResult::default()
        }
    }

    /// Whether the tool reported an error (`isError` absent means false).
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}

/// The result of `tools/list`. Cacheable (CACHE-S1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// The tools on this page, in a deterministic order (TOOL-S3).
    pub tools: Vec<Tool>,
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
