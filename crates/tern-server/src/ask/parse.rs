//! The answers' checks: one parser per kind of question, the same whichever
//! way the answer came (SECURITY.md §3.8; ELIC-S12, MRTR-E4: accept,
//! decline and cancel are three outcomes).

use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tern_proto::McpError;

use super::need::Question;

/// The answer to a form or URL elicitation: accept, decline and cancel are
/// three different outcomes (ELIC-S12, MRTR-E4).
#[derive(Clone, Debug, PartialEq)]
pub enum Elicited<T> {
    /// The person submitted (form) or consented to open the URL (URL mode;
    /// consent, not completion: ELIC-10).
    Accepted(T),
    /// The person explicitly said no.
    Declined,
    /// The person dismissed the request without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The accepted value, if any.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accepted(t) => Some(t),
            _ => None,
        }
    }

    /// The accepted value, or the tool error that ends the call when the
    /// person said no or dismissed the question: `"{what} was declined"`,
    /// `"{what} was cancelled"`. The two stay apart in the wording, as
    /// they are on the wire (ELIC-S12).
    ///
    /// ```
    /// # use tern_server::{Ask, ElicitForm, Error, ToolResult};
    /// # #[derive(serde::Deserialize, ElicitForm)]
    /// # struct Stay { /// Nights
    /// #     nights: u8 }
    /// async fn book(ask: Ask) -> Result<ToolResult, Error> {
    ///     let stay = ask.form::<Stay>("stay", "How many nights?")?.or_tool_error("the booking")?;
    ///     Ok(ToolResult::text(format!("{} night(s)", stay.nights)))
    /// }
    /// ```
    pub fn or_tool_error(self, what: &str) -> Result<T, crate::Error> {
        match self {
            Elicited::Accepted(t) => Ok(t),
            Elicited::Declined => Err(crate::Error::tool(format!("{what} was declined"))),
            Elicited::Cancelled => Err(crate::Error::tool(format!("{what} was cancelled"))),
        }
    }
}

impl Elicited<bool> {
    /// `Ok(())` for a yes to a [`Need::confirm`](crate::Need::confirm)
    /// question; otherwise the tool error that ends the call: `"{what} was
    /// not confirmed"` for a submitted no, and the wording of
    /// [`Elicited::or_tool_error`] for a decline or a cancel.
    pub fn confirmed(self, what: &str) -> Result<(), crate::Error> {
        if self.or_tool_error(what)? {
            Ok(())
        } else {
            Err(crate::Error::tool(format!("{what} was not confirmed")))
        }
    }
}

/// A sampled message (`CreateMessageResult`), checked as SECURITY.md §3.8
/// asks. The text is untrusted: it may carry prompt injection.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    /// The model that produced it.
    pub model: String,
    /// One content block or an array of them, as sent.
    pub content: Value,
    /// Why sampling stopped, when given.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// The text of the content's text blocks, joined.
    pub fn text(&self) -> String {
        let blocks: Vec<&Value> = match &self.content {
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A filesystem root the client exposes (deprecated feature).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    pub name: Option<String>,
}

fn malformed(key: &str, what: impl std::fmt::Display) -> McpError {
    McpError::InvalidParams {
        message: format!("inputResponses.{key}: {what}"),
        data: Some(json!({"key": key})),
    }
}

fn parse_action(key: &str, answer: &Value) -> Result<&'static str, McpError> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => Ok("accept"),
        Some("decline") => Ok("decline"),
        Some("cancel") => Ok("cancel"),
        Some(other) => Err(malformed(key, format!("unknown action {other:?}"))),
        None => Err(malformed(key, "an elicitation answer needs an action")),
    }
}

/// A form answer: accepted content validated against the asked schema
/// (by a typed form's own validator, else the one cached for the schema),
/// or decline or cancel.
pub(super) fn parse_form<T: DeserializeOwned>(
    key: &str,
    question: &Question,
    answer: &Value,
) -> Result<Elicited<T>, McpError> {
    if !answer.is_object() {
        return Err(malformed(key, "an elicitation answer must be an object"));
    }
    match parse_action(key, answer)? {
        "accept" => {
            let content = answer.get("content").unwrap_or(&Value::Null);
            let kept =
                crate::form::validate_with(key, question.schema(), content, question.validator())?;
            serde_json::from_value(Value::Object(kept))
                .map(Elicited::Accepted)
                .map_err(|e| malformed(key, e))
        }
        // ELIC-A1: content with decline or cancel is discarded.
        "decline" => Ok(Elicited::Declined),
        _ => Ok(Elicited::Cancelled),
    }
}

pub(super) fn parse_url(
    key: &str,
    _question: &Question,
    answer: &Value,
) -> Result<Elicited<()>, McpError> {
    if !answer.is_object() {
        return Err(malformed(key, "an elicitation answer must be an object"));
    }
    Ok(match parse_action(key, answer)? {
        "accept" => Elicited::Accepted(()),
        "decline" => Elicited::Declined,
        _ => Elicited::Cancelled,
    })
}

/// What the sampling request that asked allows in its answer (SECURITY.md
/// §3.8: an answer must fit its question).
struct SamplingAsk<'a> {
    /// The names of the tools offered, if any were.
    tools: Option<Vec<&'a str>>,
    /// `toolChoice.mode` was `"none"`: no tool may be used this turn.
    no_tool_use: bool,
}

impl<'a> SamplingAsk<'a> {
    fn of(request: &'a Value) -> Self {
        let params = &request["params"];
        let tools = params.get("tools").and_then(Value::as_array).map(|t| {
            t.iter()
                .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                .collect()
        });
        let no_tool_use = params["toolChoice"]["mode"].as_str() == Some("none");
        SamplingAsk { tools, no_tool_use }
    }

    /// Whether a `tool_use` naming `name` answers this request.
    fn allows_tool(&self, name: &str) -> bool {
        !self.no_tool_use && self.tools.as_ref().is_some_and(|t| t.contains(&name))
    }
}

/// What one content block of a sampling answer is, once checked.
#[derive(PartialEq)]
enum SamplingBlock {
    ToolUse,
    Other,
}

impl SamplingBlock {
    /// Checks block `i` against its schema type (SECURITY.md §3.8: every
    /// field a type requires, of its type; media as base64) and against
    /// what the request allowed.
    fn check(key: &str, i: usize, b: &Value, asked: &SamplingAsk<'_>) -> Result<Self, McpError> {
        use base64::Engine as _;
        use tern_types::SamplingMessageContentBlock as Block;
        let block =
            Block::deserialize(b).map_err(|e| malformed(key, format!("content block {i}: {e}")))?;
        let base64 = |data: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|_| malformed(key, format!("content block {i}: data is not base64")))
        };
        match block {
            Block::Text(_) => Ok(SamplingBlock::Other),
            Block::Image(m) => base64(&m.data).map(|_| SamplingBlock::Other),
            Block::Audio(m) => base64(&m.data).map(|_| SamplingBlock::Other),
            // SAMP-4, SAMP-S2: a tool call answers only a request that
            // offered that tool and did not forbid tool use.
            Block::ToolUse(t) if asked.allows_tool(&t.name) => Ok(SamplingBlock::ToolUse),
            Block::ToolUse(t) => Err(malformed(
                key,
                format!("tool_use of {:?}, which the request did not offer", t.name),
            )),
            // SAMP-3: tool results come from the user, never the model.
            Block::ToolResult(_) => Err(malformed(
                key,
                "an assistant reply cannot carry tool_result",
            )),
        }
    }
}

pub(super) fn parse_sampling(
    key: &str,
    question: &Question,
    answer: &Value,
) -> Result<Sampled, McpError> {
    let request = question.built();
    let obj = answer
        .as_object()
        .ok_or_else(|| malformed(key, "a sampling answer must be an object"))?;
    if obj.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(malformed(key, "role must be \"assistant\""));
    }
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(key, "model must be a string"))?;
    let content = obj
        .get("content")
        .ok_or_else(|| malformed(key, "content is required"))?;
    let blocks: Vec<&Value> = match content {
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    if blocks.is_empty() {
        return Err(malformed(key, "content has no blocks"));
    }
    let asked = SamplingAsk::of(request);
    let mut tool_uses = 0;
    for (i, b) in blocks.into_iter().enumerate() {
        if SamplingBlock::check(key, i, b, &asked)? == SamplingBlock::ToolUse {
            tool_uses += 1;
        }
    }
    let stop_reason = match obj.get("stopReason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(malformed(key, "stopReason must be a string")),
    };
    // A model that stopped to use a tool names one it was offered.
    if stop_reason.as_deref() == Some("toolUse") && tool_uses == 0 {
        return Err(malformed(
            key,
            "stopReason \"toolUse\" without a tool_use block",
        ));
    }
    Ok(Sampled {
        model: model.to_owned(),
        content: content.clone(),
        stop_reason,
    })
}

/// At most this many roots are read (SECURITY.md §3.8).
const MAX_ROOTS: usize = 1000;

pub(super) fn parse_roots(
    key: &str,
    _question: &Question,
    answer: &Value,
) -> Result<Vec<Root>, McpError> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(key, "a roots answer needs a roots array"))?;
    if roots.len() > MAX_ROOTS {
        return Err(malformed(key, "too many roots"));
    }
    roots
        .iter()
        .map(|r| {
            let uri = r
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(key, "a root needs a uri"))?;
            check_root_uri(uri).map_err(|why| malformed(key, format!("root {uri:?} {why}")))?;
            let name = match r.get("name") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(malformed(key, "a root name must be a string")),
            };
            Ok(Root {
                uri: uri.to_owned(),
                name,
            })
        })
        .collect()
}

/// ROOT-1, SECURITY.md §3.8: a root is a `file://` URI of an absolute
/// local path, bounded, in URI characters only (RFC 3986: anything else is
/// percent-encoded), so a peer's string is never sliced inside a character
/// or shown with control codes. The host is empty or `localhost` (RFC 8089:
/// another host names a remote share), and no segment is `.` or `..`,
/// spelt out or percent-encoded, nor encodes a separator or NUL: a root
/// must not climb out of the directory it names.
fn check_root_uri(uri: &str) -> Result<(), &'static str> {
    if uri.len() > 4096 {
        return Err("is longer than 4096 bytes");
    }
    if let Some(c) = uri.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(if c.is_ascii() {
            "has a space or control character"
        } else {
            "has a non-ASCII character (percent-encode it)"
        });
    }
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Err("is not a URI");
    };
    let Some(authority_path) = rest.strip_prefix("//") else {
        return Err("is not a file:// URI");
    };
    if !scheme.eq_ignore_ascii_case("file") {
        return Err("is not a file:// URI");
    }
    if authority_path.contains(['?', '#']) {
        return Err("has a query or fragment");
    }
    let Some(slash) = authority_path.find('/') else {
        return Err("has no absolute path");
    };
    let (host, path) = authority_path.split_at(slash);
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return Err("names a host other than localhost");
    }
    for segment in path.split('/') {
        let decoded = decode_segment(segment).ok_or("has a malformed percent-encoding")?;
        if decoded == b"." || decoded == b".." {
            return Err("has a . or .. segment");
        }
        if decoded.iter().any(|b| matches!(b, b'/' | b'\\' | 0)) {
            return Err("encodes a path separator or NUL");
        }
    }
    Ok(())
}

/// A path segment with its percent-encoding undone, or `None` when a `%`
/// is not followed by two hex digits.
fn decode_segment(segment: &str) -> Option<Vec<u8>> {
    let bytes = segment.as_bytes();
    let well_formed = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    well_formed.then(|| percent_encoding::percent_decode(bytes).collect())
}

/// Checks a relayed answer as its kind's typed need would and hands it back
/// as sent (a form's content reduced to what its schema allows).
pub(super) fn parse_relayed(
    key: &str,
    question: &Question,
    answer: &Value,
) -> Result<Value, McpError> {
    let request = question.built();
    match request.get("method").and_then(Value::as_str) {
        Some("elicitation/create") if request["params"]["mode"] == "url" => {
            parse_url(key, question, answer)?;
            Ok(answer.clone())
        }
        Some("elicitation/create") => {
            match parse_form::<Map<String, Value>>(key, question, answer)? {
                Elicited::Accepted(content) => {
                    let mut answer = Map::new();
                    answer.insert("action".into(), Value::String("accept".into()));
                    answer.insert("content".into(), Value::Object(content));
                    Ok(Value::Object(answer))
                }
                Elicited::Declined => Ok(json!({"action": "decline"})),
                Elicited::Cancelled => Ok(json!({"action": "cancel"})),
            }
        }
        Some("sampling/createMessage") => {
            parse_sampling(key, question, answer)?;
            Ok(answer.clone())
        }
        _ => {
            parse_roots(key, question, answer)?;
            Ok(answer.clone())
        }
    }
}
