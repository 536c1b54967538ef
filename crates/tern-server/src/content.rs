//! Builders for the content a handler returns: tool results, prompt
//! messages, resource contents (DIGEST §6.1–§6.3).

use serde_json::{Map, Value, json};

/// One content block (`text`, `image`, `audio`, `resource_link`,
/// `resource`).
#[derive(Clone, Debug, PartialEq)]
pub struct Content(pub(crate) Value);

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content(json!({"type": "text", "text": text.into()}))
    }

    /// An image block: base64 `data` and its MIME type.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content(json!({"type": "image", "data": base64.into(), "mimeType": mime_type.into()}))
    }

    /// An audio block: base64 `data` and its MIME type.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content(json!({"type": "audio", "data": base64.into(), "mimeType": mime_type.into()}))
    }

    /// An embedded text resource.
    pub fn embedded_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content(json!({"type": "resource", "resource": {
            "uri": uri.into(), "mimeType": mime_type.into(), "text": text.into()}}))
    }

    /// A link to a resource the client may read.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content(json!({"type": "resource_link", "uri": uri.into(), "name": name.into()}))
    }

    /// A block given as raw JSON, for shapes the builders do not cover.
    pub fn raw(value: Value) -> Self {
        Content(value)
    }

    /// The JSON of this block.
    pub fn into_value(self) -> Value {
        self.0
    }
}

/// The result of `tools/call` (`CallToolResult`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResult {
    content: Vec<Value>,
    structured: Option<Value>,
    is_error: bool,
}

impl ToolResult {
    /// A successful result with these blocks.
    pub fn new(content: impl IntoIterator<Item = Content>) -> Self {
        ToolResult {
            content: content.into_iter().map(|c| c.0).collect(),
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult::new([Content::text(text)])
    }

    /// An execution error: `isError: true` with an explanation the model can
    /// read (TOOL-S11). Not a JSON-RPC error.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::text(message)
        }
    }

    /// Adds `structuredContent` and, as TOOL-S9 recommends, its JSON text.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.content
            .push(json!({"type": "text", "text": value.to_string()}));
        self.structured = Some(value);
        self
    }

    /// Whether this is an execution error.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    pub(crate) fn into_map(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("content".into(), Value::Array(self.content));
        if let Some(s) = self.structured {
            m.insert("structuredContent".into(), s);
        }
        if self.is_error {
            m.insert("isError".into(), Value::Bool(true));
        }
        m
    }
}

/// The result of `prompts/get` (`GetPromptResult`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromptResult {
    description: Option<String>,
    messages: Vec<Value>,
}

impl PromptResult {
    /// An empty prompt result.
    pub fn new() -> Self {
        Self::default()
    }

    /// A prompt with one user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        PromptResult::new().user(Content::text(text))
    }

    /// Adds a user message.
    #[must_use]
    pub fn user(mut self, content: Content) -> Self {
        self.messages
            .push(json!({"role": "user", "content": content.0}));
        self
    }

    /// Adds an assistant message.
    #[must_use]
    pub fn assistant(mut self, content: Content) -> Self {
        self.messages
            .push(json!({"role": "assistant", "content": content.0}));
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    pub(crate) fn into_map(self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(d) = self.description {
            m.insert("description".into(), Value::String(d));
        }
        m.insert("messages".into(), Value::Array(self.messages));
        m
    }
}

/// The contents of `resources/read` (`ReadResourceResult`). The framework
/// adds the cache hints (CACHE-S1).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceResult {
    contents: Vec<Value>,
}

impl ResourceResult {
    /// One text content of the resource read: its `uri` is the one the
    /// client asked for, filled in by the server (a handler need not
    /// restate its route's URI).
    pub fn read_text(mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceResult {
            contents: vec![json!({"mimeType": mime_type.into(), "text": text.into()})],
        }
    }

    /// One binary content of the resource read, base64-encoded (its `uri`
    /// filled in as for [`read_text`](Self::read_text)).
    pub fn read_blob(mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        ResourceResult {
            contents: vec![json!({"mimeType": mime_type.into(), "blob": base64.into()})],
        }
    }

    /// One text content.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        ResourceResult::default().and_text(uri, mime_type, text)
    }

    /// One binary content, base64-encoded.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        ResourceResult {
            contents: vec![
                json!({"uri": uri.into(), "mimeType": mime_type.into(), "blob": base64.into()}),
            ],
        }
    }

    /// Adds a text content (a directory may have several).
    #[must_use]
    pub fn and_text(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.contents
            .push(json!({"uri": uri.into(), "mimeType": mime_type.into(), "text": text.into()}));
        self
    }

    pub(crate) fn into_map(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("contents".into(), Value::Array(self.contents));
        m
    }
}

/// Gives each content of a `resources/read` result without a `uri` the
/// one read ([`ResourceResult::read_text`]).
pub(crate) fn fill_read_uri(result: &mut Map<String, Value>, uri: &str) {
    if let Some(Value::Array(contents)) = result.get_mut("contents") {
        for c in contents.iter_mut().filter_map(Value::as_object_mut) {
            c.entry("uri").or_insert_with(|| Value::from(uri));
        }
    }
}
