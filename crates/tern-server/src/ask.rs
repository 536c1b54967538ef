//! The Ask API: how a handler asks the client for input in a multi
//! round-trip request (DIGEST §4, ARCHITECTURE.md "The handler API").
//!
//! A handler re-runs from the top on every round (MRTR-S-A2). Each time it
//! declares what it needs; answers already given come back typed, and
//! everything still missing goes out in one `input_required` result. An
//! answer counts only when it arrives with a verified state from the round
//! that asked it, and only for the exact question asked (a digest of the
//! request travels in the state), so a client cannot answer a question that
//! was never asked (SECURITY.md §3.8).

use std::any::TypeId;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_types::ClientCapabilities;

use crate::form::{ElicitForm, check_form_schema};
use crate::outcome::{Error, Pending};

/// The kind of an input request, and so the capability it needs (MRTR-S8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// `elicitation/create` in form mode: needs `elicitation` (or
    /// `elicitation.form`).
    Form,
    /// `elicitation/create` in URL mode: needs `elicitation.url`.
    Url,
    /// `sampling/createMessage`: needs `sampling`.
    Sampling,
    /// `roots/list`: needs `roots`.
    Roots,
}

impl InputKind {
    pub(crate) fn code(self) -> u8 {
        match self {
            InputKind::Form => 1,
            InputKind::Url => 2,
            InputKind::Sampling => 3,
            InputKind::Roots => 4,
        }
    }

    /// Whether the client declared this kind in this request (ELIC-S3,
    /// MRTR-S8).
    pub fn declared(self, caps: &ClientCapabilities) -> bool {
        match self {
            InputKind::Form => caps.elicitation_form(),
            InputKind::Url => caps.elicitation_url(),
            InputKind::Sampling => caps.sampling(),
            InputKind::Roots => caps.roots(),
        }
    }

    /// The capability in `ClientCapabilities` shape, for
    /// `requiredCapabilities` (META-S10).
    pub(crate) fn capability(self) -> (&'static str, Value) {
        match self {
            InputKind::Form => ("elicitation", json!({"form": {}})),
            InputKind::Url => ("elicitation", json!({"url": {}})),
            InputKind::Sampling => ("sampling", json!({})),
            InputKind::Roots => ("roots", json!({})),
        }
    }
}

/// One input request issued in a round.
#[derive(Clone, Debug)]
pub(crate) struct Asked {
    pub(crate) key: String,
    pub(crate) kind: InputKind,
    pub(crate) request: Value,
    pub(crate) rdig: [u8; 16],
}

impl Asked {
    /// What the next round expects an answer to.
    pub(crate) fn expect(&self) -> Expect {
        Expect {
            key: self.key.clone(),
            kind: self.kind.code(),
            rdig: self.rdig,
        }
    }
}

/// An input key the previous round asked, as its state records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Expect {
    pub(crate) key: String,
    pub(crate) kind: u8,
    pub(crate) rdig: [u8; 16],
}

/// An answer accepted in an earlier round, carried in the state (MRTR-E3).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Done {
    pub(crate) key: String,
    pub(crate) rdig: [u8; 16],
    /// The answer's JSON text.
    pub(crate) answer: Vec<u8>,
}

/// [`request_digest`] of a form request, `{"method": "elicitation/create",
/// "params": {"mode": "form", "message": message, "requestedSchema":
/// schema}}`, from the schema's canonical bytes; the keys are written in
/// canonical order.
fn form_request_digest(message: &str, schema: &[u8]) -> [u8; 16] {
    use tern_seal::canonical::{digest_canonical, write_str};
    let mut out = Vec::with_capacity(96 + message.len() + schema.len());
    out.extend_from_slice(br#"{"method":"elicitation/create","params":{"message":"#);
    write_str(&mut out, message);
    out.extend_from_slice(br#","mode":"form","requestedSchema":"#);
    out.extend_from_slice(schema);
    out.extend_from_slice(b"}}");
    first_half(&digest_canonical(&out))
}

pub(crate) fn request_digest(request: &Value) -> [u8; 16] {
    first_half(&tern_seal::canonical::digest(request).unwrap_or([0; 32]))
}

/// A request digest is the first half of the SHA-256.
fn first_half(full: &[u8; 32]) -> [u8; 16] {
    let mut out = [0; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// What the framework knows about the answers of this round.
#[derive(Debug, Default)]
pub(crate) struct AskContext {
    pub(crate) caps: ClientCapabilities,
    /// Whether a state from an earlier round was opened and verified.
    pub(crate) verified: bool,
    pub(crate) expect: Vec<Expect>,
    pub(crate) done: Vec<Done>,
    /// `inputResponses`, read only when `verified`.
    pub(crate) responses: Map<String, Value>,
    /// The keys (and request digests) of `responses` accepted during this
    /// run, carried into the next state. Their text is written only if a
    /// next state is sealed: most runs complete.
    pub(crate) accepted: Mutex<Vec<(String, [u8; 16])>>,
}

impl AskContext {
    fn find_done(&self, key: &str, rdig: &[u8; 16]) -> Option<Value> {
        self.done
            .iter()
            .find(|d| d.key == key && d.rdig == *rdig)
            .and_then(|d| serde_json::from_slice(&d.answer).ok())
    }

    fn expected(&self, key: &str, kind: InputKind, rdig: &[u8; 16]) -> bool {
        self.expect
            .iter()
            .any(|e| e.key == key && e.kind == kind.code() && e.rdig == *rdig)
    }

    fn asked_before(&self, key: &str) -> bool {
        self.expect.iter().any(|e| e.key == key)
    }

    /// Records that `responses[key]` was accepted.
    fn accept(&self, key: &str, rdig: [u8; 16]) {
        if let Ok(mut a) = self.accepted.lock() {
            a.retain(|(k, _)| k != key);
            a.push((key.to_owned(), rdig));
        }
    }

    /// The answers to carry into the next round, less those of keys asked
    /// again in it (a re-asked key drops its old answer).
    pub(crate) fn carried_except(&self, asked: &[Asked]) -> Vec<Done> {
        self.carried()
            .into_iter()
            .filter(|d| !asked.iter().any(|r| r.key == d.key))
            .collect()
    }

    /// The answers to carry into the next state: earlier ones, replaced by
    /// any accepted again in this run.
    pub(crate) fn carried(&self) -> Vec<Done> {
        let accepted: Vec<Done> = self
            .accepted
            .lock()
            .map(|a| {
                a.iter()
                    .filter_map(|(key, rdig)| {
                        let answer = self.responses.get(key)?;
                        Some(Done {
                            key: key.clone(),
                            rdig: *rdig,
                            answer: serde_json::to_vec(answer).ok()?,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut out: Vec<Done> = self
            .done
            .iter()
            .filter(|d| !accepted.iter().any(|a| a.key == d.key))
            .cloned()
            .collect();
        out.extend(accepted);
        out
    }
}

/// The handle a handler asks through. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Ask {
    pub(crate) cx: Arc<AskContext>,
}

impl Ask {
    /// Asks for everything in `needs` in one round: a single need, or a
    /// tuple of needs. Returns the answers when all required ones are in;
    /// otherwise [`Error::Input`] with every missing request of the round,
    /// or -32021 when a required kind was not declared (MRTR-S9).
    pub fn all<N: NeedSet>(&self, needs: N) -> Result<N::Output, Error> {
        let mut round = Round {
            cx: &self.cx,
            missing: Vec::new(),
            undeclared: Vec::new(),
        };
        let out = needs.evaluate(&mut round)?;
        round.finish()?;
        out.ok_or_else(|| Error::Protocol(McpError::Internal("an answer went missing".into())))
    }

    /// Asks for one typed form (form-mode elicitation).
    pub fn form<T: ElicitForm>(&self, key: &str, message: &str) -> Result<Elicited<T>, Error> {
        self.all(Need::form::<T>(key, message))
    }

    /// Asks `need` again whatever was answered before: for a URL-mode
    /// interaction whose out-of-band step has not finished (ELIC-10), or to
    /// re-ask after an answer the handler cannot use (MRTR-S10). The round
    /// ceiling bounds how often this can happen.
    pub fn again<T>(&self, need: Need<T>) -> Error {
        self.again_all(vec![need])
    }

    /// Asks every need in `needs` as a new round, whatever was answered
    /// before: a proxy passing on its upstream's round, which may repeat a
    /// question already answered (a URL interaction still open).
    pub fn again_all<T>(&self, needs: Vec<Need<T>>) -> Error {
        let mut round = Round {
            cx: &self.cx,
            missing: Vec::new(),
            undeclared: Vec::new(),
        };
        for need in needs {
            if let Err(e) = need.check() {
                return Error::Protocol(e);
            }
            if need.kind.declared(&self.cx.caps) {
                let rdig = need.request.digest();
                round.missing.push(Asked {
                    key: need.key,
                    kind: need.kind,
                    request: need.request.into_value(),
                    rdig,
                });
            } else {
                round.undeclared.push(need.kind);
            }
        }
        match round.finish() {
            Err(e) => e,
            Ok(()) => Error::Protocol(McpError::Internal("nothing to ask".into())),
        }
    }

    /// The client's capabilities for this request.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.cx.caps
    }
}

/// Collects the evaluation of one round's needs.
pub struct Round<'a> {
    cx: &'a AskContext,
    missing: Vec<Asked>,
    undeclared: Vec<InputKind>,
}

impl Round<'_> {
    fn finish(self) -> Result<(), Error> {
        if !self.undeclared.is_empty() {
            let mut required = Map::new();
            let mut names = Vec::new();
            for k in &self.undeclared {
                let (cap, v) = k.capability();
                names.push(cap);
                match (required.get_mut(cap), v) {
                    (Some(Value::Object(have)), Value::Object(more)) => have.extend(more),
                    (_, v) => {
                        required.insert(cap.to_owned(), v);
                    }
                }
            }
            names.dedup();
            let required = serde_json::from_value(Value::Object(required))
                .map_err(|e| McpError::Internal(e.to_string()))?;
            return Err(Error::Protocol(McpError::MissingCapability {
                required: Box::new(required),
                message: format!(
                    "This request needs the client capability: {}",
                    names.join(", ")
                ),
            }));
        }
        if !self.missing.is_empty() {
            return Err(Error::Input(Pending {
                requests: self.missing,
                continuation: None,
            }));
        }
        Ok(())
    }
}

/// How a need is declared (ARCHITECTURE.md, "The handler API").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Required,
    Optional,
}

/// One thing a handler needs from the client, answered as `T`.
pub struct Need<T> {
    key: String,
    kind: InputKind,
    request: Question,
    mode: Mode,
    /// The answer is used in the round it arrives and not carried into
    /// later states (a relayed question: its asker keeps its own state).
    transient: bool,
    parse: fn(&str, &Question, &Value) -> Result<T, McpError>,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Need<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Need")
            .field("key", &self.key)
            .field("kind", &self.kind)
            .finish()
    }
}

/// A need's input request. A typed form's is built only when it is asked:
/// in the round that answers it only its digest and schema are needed, and
/// building it copied the schema on every round.
enum Question {
    /// The request as it is sent.
    Built(Value),
    /// A request that never changes, with its digest worked out once.
    Fixed(&'static Fixed),
    /// A form-mode elicitation of a typed form's schema.
    TypedForm {
        message: String,
        typed: Arc<TypedSchema>,
    },
}

/// A [`Question::Fixed`] request.
struct Fixed {
    request: Value,
    digest: [u8; 16],
}

impl Fixed {
    fn new(request: Value) -> Fixed {
        Fixed {
            digest: request_digest(&request),
            request,
        }
    }
}

/// What [`Question::built`] lends for a question not built yet. Only the
/// form parser sees a typed form, and it reads [`Question::schema`].
static UNBUILT: Value = Value::Null;

impl From<Value> for Question {
    fn from(request: Value) -> Self {
        Question::Built(request)
    }
}

impl Question {
    /// The request to send.
    fn into_value(self) -> Value {
        match self {
            Question::Built(v) => v,
            Question::Fixed(f) => f.request.clone(),
            Question::TypedForm { message, typed } => form_request(&message, typed.schema.clone()),
        }
    }

    /// The request, for the parsers of kinds other than forms, which are
    /// always built.
    fn built(&self) -> &Value {
        match self {
            Question::Built(v) => v,
            Question::Fixed(f) => &f.request,
            Question::TypedForm { .. } => &UNBUILT,
        }
    }

    /// A form's requested schema.
    fn schema(&self) -> &Value {
        match self {
            Question::Built(v) => &v["params"]["requestedSchema"],
            Question::Fixed(f) => &f.request["params"]["requestedSchema"],
            Question::TypedForm { typed, .. } => &typed.schema,
        }
    }

    /// The compiled validator of a typed form's schema; other forms use
    /// the validator cached for their schema.
    fn validator(&self) -> Option<Arc<jsonschema::Validator>> {
        match self {
            Question::Built(_) | Question::Fixed(_) => None,
            Question::TypedForm { typed, .. } => typed.validator.clone(),
        }
    }

    /// The form schema passed [`check_form_schema`] already (a typed
    /// form's, once per type).
    fn checked(&self) -> bool {
        match self {
            Question::Built(_) | Question::Fixed(_) => false,
            Question::TypedForm { typed, .. } => typed.valid,
        }
    }

    /// The digest of the request as it is sent ([`request_digest`]).
    fn digest(&self) -> [u8; 16] {
        match self {
            Question::Built(v) => request_digest(v),
            Question::Fixed(f) => f.digest,
            Question::TypedForm { message, typed } => match typed.canonical.as_deref() {
                Some(schema) => typed_form_digest(typed, message, schema),
                None => request_digest(&form_request(message, typed.schema.clone())),
            },
        }
    }
}

/// [`form_request_digest`] of a typed form, remembered per thread by type
/// and message: a form is usually asked with the same few messages, and
/// the digest hashes the whole request, schema included, on every round.
fn typed_form_digest(typed: &Arc<TypedSchema>, message: &str, schema: &[u8]) -> [u8; 16] {
    /// Messages per form type: enough for a form's usual messages, few
    /// enough to stay small when messages are built from arguments.
    const KEEP: usize = 256;
    /// Digests by message, per form type.
    type Digests = HashMap<usize, HashMap<Box<str>, [u8; 16]>>;
    thread_local! {
        static DIGESTS: std::cell::RefCell<Digests> = std::cell::RefCell::default();
    }
    // The schema's `Arc` lives as long as the process (the per-type cache
    // keeps it), so its address names the type.
    let id = Arc::as_ptr(typed) as usize;
    DIGESTS.with_borrow_mut(|digests| {
        let known = digests.entry(id).or_default();
        if let Some(d) = known.get(message) {
            return *d;
        }
        if known.len() >= KEEP {
            known.clear();
        }
        let d = form_request_digest(message, schema);
        known.insert(message.into(), d);
        d
    })
}

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
fn parse_form<T: DeserializeOwned>(
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

fn parse_url(key: &str, _question: &Question, answer: &Value) -> Result<Elicited<()>, McpError> {
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

fn parse_sampling(key: &str, question: &Question, answer: &Value) -> Result<Sampled, McpError> {
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

fn parse_roots(key: &str, _question: &Question, answer: &Value) -> Result<Vec<Root>, McpError> {
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

/// A typed form's schema and whether it passed [`check_form_schema`].
struct TypedSchema {
    schema: Value,
    valid: bool,
    /// The schema's canonical bytes, so each request's digest does not
    /// walk the schema again.
    canonical: Option<Vec<u8>>,
    /// The compiled validator of accepted answers.
    validator: Option<Arc<jsonschema::Validator>>,
}

/// Builds and checks `T`'s schema once per type: it is the same on every
/// request ([`ElicitForm::requested_schema`]), and building and walking it
/// was a measurable part of every round.
fn typed_schema<T: ElicitForm>() -> Arc<TypedSchema> {
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<TypedSchema>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(RwLock::default);
    let id = TypeId::of::<T>();
    if let Some(t) = cache
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
    {
        return t.clone();
    }
    let schema = T::requested_schema();
    let valid = check_form_schema(&schema).is_ok();
    let canonical = tern_seal::canonical::to_vec(&schema).ok();
    let validator = crate::form::compile(&schema).ok();
    let typed = Arc::new(TypedSchema {
        schema,
        valid,
        canonical,
        validator,
    });
    cache
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(id)
        .or_insert(typed)
        .clone()
}

/// An input request, `{"method": method, "params": params}`. Built by
/// moving the parts in: `json!` would copy an embedded value through its
/// serializer, and a form's schema is embedded on every round.
fn input_request(method: &str, params: Value) -> Value {
    let mut request = Map::new();
    request.insert("method".into(), Value::String(method.into()));
    request.insert("params".into(), params);
    Value::Object(request)
}

/// A form-mode elicitation request.
fn form_request(message: &str, schema: Value) -> Value {
    let mut params = Map::new();
    params.insert("mode".into(), Value::String("form".into()));
    params.insert("message".into(), Value::String(message.into()));
    params.insert("requestedSchema".into(), schema);
    input_request("elicitation/create", Value::Object(params))
}

impl Need<()> {
    /// A typed form: form-mode elicitation with the schema derived from `T`.
    pub fn form<T: ElicitForm>(key: &str, message: &str) -> Need<Elicited<T>> {
        let request = Question::TypedForm {
            message: message.to_owned(),
            typed: typed_schema::<T>(),
        };
        Need::build(key, InputKind::Form, request, parse_form::<T>)
    }

    /// A form whose schema is built at run time; the answer is the accepted
    /// content as a JSON object. The schema must be a flat form schema.
    pub fn form_schema(
        key: &str,
        message: &str,
        schema: Value,
    ) -> Need<Elicited<Map<String, Value>>> {
        let request = form_request(message, schema);
        Need::build(
            key,
            InputKind::Form,
            request,
            parse_form::<Map<String, Value>>,
        )
    }

    /// An out-of-band interaction at `url` (URL-mode elicitation). Accept
    /// means the person agreed to open it, not that it is finished (ELIC-10).
    pub fn url(key: &str, message: &str, url: &str) -> Need<Elicited<()>> {
        let request = json!({"method": "elicitation/create", "params": {
            "mode": "url", "message": message, "url": url}});
        Need::build(key, InputKind::Url, request, parse_url)
    }

    /// A model sample (`sampling/createMessage`, deprecated feature) with the
    /// given params (`messages`, `maxTokens`, …).
    pub fn sampling(key: &str, params: Value) -> Need<Sampled> {
        let request = input_request("sampling/createMessage", params);
        Need::build(key, InputKind::Sampling, request, parse_sampling)
    }

    /// A one-message text sample with a token limit.
    pub fn sample_text(key: &str, text: &str, max_tokens: u32) -> Need<Sampled> {
        Need::sampling(
            key,
            json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens}),
        )
    }

    /// The client's roots (`roots/list`, deprecated feature).
    pub fn roots(key: &str) -> Need<Vec<Root>> {
        // The same request every time: its digest is not hashed per round.
        static ROOTS: std::sync::LazyLock<Fixed> =
            std::sync::LazyLock::new(|| Fixed::new(json!({"method": "roots/list", "params": {}})));
        Need::build(key, InputKind::Roots, Question::Fixed(&ROOTS), parse_roots)
    }
}

impl Need<Value> {
    /// A question asked elsewhere, relayed as it is (a proxy's upstream
    /// asked it): `request` is an input request (`method` and `params`),
    /// whose kind follows from its method and mode. The answer comes back
    /// as the client sent it, after the same checks a typed need applies
    /// (the kind's shape, a form's schema, accept/decline/cancel); it is
    /// not carried into later states, since the asker keeps its own.
    pub fn input(key: &str, request: Value) -> Result<Need<Value>, McpError> {
        let method = request.get("method").and_then(Value::as_str);
        let kind = match method {
            Some("elicitation/create") => {
                if request["params"]["mode"] == "url" {
                    InputKind::Url
                } else {
                    InputKind::Form
                }
            }
            Some("sampling/createMessage") => InputKind::Sampling,
            Some("roots/list") => InputKind::Roots,
            other => {
                return Err(McpError::Internal(format!(
                    "input {key}: {other:?} is not an input request method"
                )));
            }
        };
        let mut need = Need::build(key, kind, request, parse_relayed);
        need.transient = true;
        Ok(need)
    }
}

/// Checks a relayed answer as its kind's typed need would and hands it back
/// as sent (a form's content reduced to what its schema allows).
fn parse_relayed(key: &str, question: &Question, answer: &Value) -> Result<Value, McpError> {
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

impl<T> Need<T> {
    fn build(
        key: &str,
        kind: InputKind,
        request: impl Into<Question>,
        parse: fn(&str, &Question, &Value) -> Result<T, McpError>,
    ) -> Need<T> {
        Need {
            key: key.to_owned(),
            kind,
            request: request.into(),
            mode: Mode::Required,
            transient: false,
            parse,
            _t: PhantomData,
        }
    }

    /// Makes this need optional: skipped when the client did not declare its
    /// kind, and `None` when the client left it unanswered after being asked
    /// once (MRTR-S9 (c)).
    pub fn optional(mut self) -> Optional<T> {
        self.mode = Mode::Optional;
        Optional(self)
    }

    /// The key this need is asked under.
    pub fn key(&self) -> &str {
        &self.key
    }

    fn check(&self) -> Result<(), McpError> {
        if self.kind == InputKind::Form && !self.request.checked() {
            check_form_schema(self.request.schema())
                .map_err(|e| McpError::Internal(format!("input {}: {e}", self.key)))?;
        }
        Ok(())
    }

    /// Evaluates against this round's answers: the answer, or `None` after
    /// recording it as missing or undeclared.
    fn eval(self, round: &mut Round<'_>) -> Result<Option<T>, McpError> {
        self.check()?;
        let cx = round.cx;
        let rdig = self.request.digest();
        if !self.kind.declared(&cx.caps) {
            if self.mode == Mode::Required {
                round.undeclared.push(self.kind);
            }
            return Ok(None);
        }
        // A fresh answer to the question asked last round wins over one
        // carried from earlier rounds (a re-asked URL interaction).
        if cx.verified
            && cx.expected(&self.key, self.kind, &rdig)
            && let Some(answer) = cx.responses.get(&self.key)
        {
            let parsed = (self.parse)(&self.key, &self.request, answer)?;
            if !self.transient {
                cx.accept(&self.key, rdig);
            }
            return Ok(Some(parsed));
        }
        if let Some(answer) = cx.find_done(&self.key, &rdig) {
            return (self.parse)(&self.key, &self.request, &answer).map(Some);
        }
        if self.mode == Mode::Optional && cx.asked_before(&self.key) {
            return Ok(None);
        }
        // Moved, not copied: the need ends here.
        round.missing.push(Asked {
            key: self.key,
            kind: self.kind,
            request: self.request.into_value(),
            rdig,
        });
        Ok(None)
    }

    fn declared(&self, caps: &ClientCapabilities) -> bool {
        self.kind.declared(caps)
    }
}

/// An optional need; its answer is an `Option`.
#[derive(Debug)]
pub struct Optional<T>(Need<T>);

/// One of two needs of different kinds: the first whose kind the client
/// declared is asked; -32021 only when neither is (MRTR-S9 (a), (b)).
#[derive(Debug)]
pub struct OneOf<A, B>(pub Need<A>, pub Need<B>);

/// The answer to a [`OneOf`].
#[derive(Clone, Debug, PartialEq)]
pub enum Either<A, B> {
    /// The first need was asked and answered.
    First(A),
    /// The second need was asked and answered.
    Second(B),
}

/// Something [`Ask::all`] can evaluate: a need, an optional need, a choice,
/// or a tuple of those.
pub trait NeedSet {
    /// The answers.
    type Output;
    #[doc(hidden)]
    fn evaluate(self, round: &mut Round<'_>) -> Result<Option<Self::Output>, McpError>;
}

impl<T> NeedSet for Need<T> {
    type Output = T;
    fn evaluate(self, round: &mut Round<'_>) -> Result<Option<T>, McpError> {
        self.eval(round)
    }
}

impl<T> NeedSet for Optional<T> {
    type Output = Option<T>;
    fn evaluate(self, round: &mut Round<'_>) -> Result<Option<Option<T>>, McpError> {
        Ok(Some(self.0.eval(round)?))
    }
}

impl<A, B> NeedSet for OneOf<A, B> {
    type Output = Either<A, B>;
    fn evaluate(self, round: &mut Round<'_>) -> Result<Option<Either<A, B>>, McpError> {
        if self.0.declared(&round.cx.caps) || !self.1.declared(&round.cx.caps) {
            Ok(self.0.eval(round)?.map(Either::First))
        } else {
            Ok(self.1.eval(round)?.map(Either::Second))
        }
    }
}

/// A round whose needs are known only at run time (all required): the
/// answers in the same order.
impl<T> NeedSet for Vec<Need<T>> {
    type Output = Vec<T>;
    fn evaluate(self, round: &mut Round<'_>) -> Result<Option<Vec<T>>, McpError> {
        let mut out = Vec::with_capacity(self.len());
        let mut complete = true;
        for need in self {
            match need.eval(round)? {
                Some(v) => out.push(v),
                None => complete = false,
            }
        }
        Ok(complete.then_some(out))
    }
}

macro_rules! tuple_need_set {
    ($($name:ident),+) => {
        impl<$($name: NeedSet),+> NeedSet for ($($name,)+) {
            type Output = ($($name::Output,)+);
            #[allow(non_snake_case, reason = "the type parameters name the tuple slots")]
            fn evaluate(self, round: &mut Round<'_>) -> Result<Option<Self::Output>, McpError> {
                let ($($name,)+) = self;
                $(let $name = $name.evaluate(round)?;)+
                Ok((|| Some(($($name?,)+)))())
            }
        }
    };
}

tuple_need_set!(A);
tuple_need_set!(A, B);
tuple_need_set!(A, B, C);
tuple_need_set!(A, B, C, D);
tuple_need_set!(A, B, C, D, E);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_form_digest_is_that_of_its_request() {
        // States sealed before and after the shortcut agree, and so do the
        // instances of a fleet (MRTR-S8: an answer is bound to its question).
        let schema = json!({"type": "object", "properties": {
            "approved": {"type": "boolean", "description": "Approve \"it\"?\n"},
            "n": {"type": "integer", "minimum": 1.0}}, "required": ["approved"]});
        let canonical = tern_seal::canonical::to_vec(&schema).unwrap();
        for message in [
            "Approve deployment to prod?",
            "",
            "quote \" back\\slash \u{1} é 𝄞\t",
        ] {
            let request = json!({"method": "elicitation/create", "params": {
                "mode": "form", "message": message, "requestedSchema": schema}});
            assert_eq!(
                form_request_digest(message, &canonical),
                request_digest(&request),
                "{message:?}"
            );
        }
    }

    #[derive(serde::Deserialize)]
    struct Approval {
        #[expect(dead_code, reason = "only the schema is used")]
        approved: bool,
    }

    impl ElicitForm for Approval {
        fn requested_schema() -> Value {
            json!({"type": "object", "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"]})
        }
    }

    #[test]
    fn a_remembered_typed_form_digest_is_still_that_of_its_request() {
        // MRTR-S8: the digest a need carries is its request's, whether
        // computed now or remembered from an earlier round; another message
        // is another question.
        let digest = |message: &str| Need::form::<Approval>("k", message).request.digest();
        let sent = |message: &str| {
            let need = Need::form::<Approval>("k", message);
            request_digest(&need.request.into_value())
        };
        for message in ["Approve?", "Approve deployment to prod?", "Approve?"] {
            assert_eq!(digest(message), sent(message), "{message:?}");
            assert_eq!(digest(message), digest(message), "{message:?}");
        }
        assert_ne!(digest("Approve?"), digest("Approve deployment to prod?"));
    }

    #[test]
    fn a_fixed_request_carries_the_digest_of_the_request_sent() {
        // MRTR-S8: the roots request's digest is worked out once.
        let need = Need::roots("r");
        let digest = need.request.digest();
        let sent = need.request.into_value();
        assert_eq!(sent, json!({"method": "roots/list", "params": {}}));
        assert_eq!(digest, request_digest(&sent));
    }
}
