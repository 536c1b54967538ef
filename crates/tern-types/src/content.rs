//! Content blocks and annotations (DIGEST §6.1, §6.3).
//!
//! The block structs carry no `type` member of their own: the enum that
//! holds them ([`ContentBlock`], or `SamplingMessageContentBlock` for
//! sampling) writes and reads the tag, so a block can never be mislabelled.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::resources::{Resource, ResourceContents};

/// The sender or recipient of a message, and the audience of an annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (human side).
    User,
    /// The model.
    Assistant,
}

/// Hints on how a client should use or show an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the object was last modified, as an ISO 8601 string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A unit of content in tool results, prompt messages and tool results of
/// sampling, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `"text"`: plain text.
    Text(TextContent),
    /// `"image"`: a base64-encoded image.
    Image(ImageContent),
    /// `"audio"`: base64-encoded audio.
    Audio(AudioContent),
    /// `"resource_link"`: a link to a resource the client may read.
    ResourceLink(Resource),
    /// `"resource"`: the contents of a resource, embedded.
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block with no annotations.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }
}

/// Text content (`type: "text"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl TextContent {
    /// Text with no annotations and no `_meta`.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// Image content (`type: "image"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// The base64-encoded image data.
    pub data: String,
    /// The image's MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Audio content (`type: "audio"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// The base64-encoded audio data.
    pub data: String,
    /// The audio's MIME type, e.g. `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A resource's contents embedded in a message (`type: "resource"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents: text or blob.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}
