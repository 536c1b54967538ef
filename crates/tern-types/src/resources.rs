//! Resources (DIGEST §6.3).

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::content::Annotations;
use crate::meta::Icon;
use crate::mrtr::InputResponses;
use crate::pagination::Cursor;
use crate::result::{CacheScope, ResultType, de_ttl_ms};

/// A resource the server offers. Also the body of a `resource_link` content
/// block (`ContentBlock::ResourceLink`), which has the same fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons to render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A family of resources named by an RFC 6570 URI template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the template is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every matching resource, when they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons to render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The contents of a resource: text or a base64 blob. On the wire the two
/// are told apart by which of `text` and `blob` is present.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceContents {
    /// Contents with a `text` member.
    Text(TextResourceContents),
    /// Contents with a `blob` member.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The URI of the contents.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(t) => t.serialize(s),
            ResourceContents::Blob(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let blob = map.contains_key("blob");
        let text = map.contains_key("text");
        let value = Value::Object(map);
        match (text, blob) {
            (true, false) => TextResourceContents::deserialize(value)
                .map(ResourceContents::Text)
                .map_err(de::Error::custom),
            (false, true) => BlobResourceContents::deserialize(value)
                .map(ResourceContents::Blob)
                .map_err(de::Error::custom),
            (true, true) => Err(de::Error::custom(
                "resource contents have both `text` and `blob`",
            )),
            (false, false) => Err(de::Error::custom(
                "resource contents have neither `text` nor `blob`",
            )),
        }
    }
}

/// Text contents of a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The URI of what was read.
    pub uri: String,
    /// The MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Binary contents of a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The URI of what was read.
    pub uri: String,
    /// The MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64-encoded bytes.
    pub blob: String,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `resources/read`, including the MRTR retry fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// The resource to read.
    pub uri: String,
    /// Answers to the previous round's input requests (MRTR-C3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, echoed unchanged (MRTR-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// The complete result of `resources/read`. Cacheable (CACHE-S1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// What was read; never empty for an existing resource (RES-S3).
    pub contents: Vec<ResourceContents>,
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

/// The result of `resources/list`. Cacheable (CACHE-S1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// The resources on this page.
    pub resources: Vec<Resource>,
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

/// The result of `resources/templates/list`. Cacheable (CACHE-S1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
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
