//! What a handler can ask: [`Need`], one question under a key, and the
//! combinators [`Ask::all`](super::Ask::all) evaluates in one round.

use std::marker::PhantomData;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_types::ClientCapabilities;

use super::digest::{TypedSchema, request_digest};
use super::parse::{
    Elicited, Root, Sampled, parse_form, parse_relayed, parse_roots, parse_sampling, parse_url,
};
use super::{Asked, InputKind, Round};
use crate::form::{ElicitForm, check_form_schema};

/// How a need is declared (ARCHITECTURE.md, "The handler API").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Required,
    Optional,
}

/// One thing a handler needs from the client, answered as `T`.
pub struct Need<T> {
    pub(super) key: String,
    pub(super) kind: InputKind,
    pub(super) request: Question,
    mode: Mode,
    /// The answer is used in the round it arrives and not carried into
    /// later states (a relayed question: its asker keeps its own state).
    transient: bool,
    parse: fn(&str, &Question, &Value) -> Result<T, McpError>,
    _t: PhantomData<fn() -> T>,
}

// By hand: a need is cloned whatever its answer type (a task's body asks
// the same needs again once the answers are in).
impl<T> Clone for Need<T> {
    fn clone(&self) -> Self {
        Need {
            key: self.key.clone(),
            kind: self.kind,
            request: self.request.clone(),
            mode: self.mode,
            transient: self.transient,
            parse: self.parse,
            _t: PhantomData,
        }
    }
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
#[derive(Clone)]
pub(super) enum Question {
    /// The request as it is sent.
    Built(Value),
    /// A request that never changes, with its digest worked out once.
    Fixed(&'static Fixed),
    /// A form-mode elicitation of a typed form's schema.
    TypedForm {
        message: String,
        typed: &'static TypedSchema,
    },
}

/// A [`Question::Fixed`] request.
pub(super) struct Fixed {
    request: Value,
    digest: [u8; 16],
}

impl Fixed {
    fn new(request: Value) -> Fixed {
        Fixed {
            digest: request_digest(&request).expect("a fixed question is two levels deep"),
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
    pub(super) fn into_value(self) -> Value {
        match self {
            Question::Built(v) => v,
            Question::Fixed(f) => f.request.clone(),
            Question::TypedForm { message, typed } => form_request(&message, typed.schema.clone()),
        }
    }

    /// The request, for the parsers of kinds other than forms, which are
    /// always built.
    pub(super) fn built(&self) -> &Value {
        match self {
            Question::Built(v) => v,
            Question::Fixed(f) => &f.request,
            Question::TypedForm { .. } => &UNBUILT,
        }
    }

    /// A form's requested schema.
    pub(super) fn schema(&self) -> &Value {
        match self {
            Question::Built(v) => &v["params"]["requestedSchema"],
            Question::Fixed(f) => &f.request["params"]["requestedSchema"],
            Question::TypedForm { typed, .. } => &typed.schema,
        }
    }

    /// The compiled validator of a typed form's schema; other forms use
    /// the validator cached for their schema.
    pub(super) fn validator(&self) -> Option<Arc<jsonschema::Validator>> {
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
    pub(super) fn digest(&self) -> Result<[u8; 16], McpError> {
        match self {
            Question::Built(v) => request_digest(v),
            Question::Fixed(f) => Ok(f.digest),
            Question::TypedForm { message, typed } => typed.request_digest(message),
        }
    }
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
pub(super) fn form_request(message: &str, schema: Value) -> Value {
    let mut params = Map::new();
    params.insert("mode".into(), Value::String("form".into()));
    params.insert("message".into(), Value::String(message.into()));
    params.insert("requestedSchema".into(), schema);
    input_request("elicitation/create", Value::Object(params))
}

/// An input key written once, as a constant, with the form it asks: a
/// typo in a key is then a compile error, and the answer's type comes
/// with the key (no turbofish). A client crate that answers this server's
/// questions can match on the same constant.
///
/// ```
/// use tern_server::{Elicited, ElicitForm, Error, FormKey, Ask, ToolResult};
///
/// #[derive(Debug, serde::Deserialize, ElicitForm)]
/// struct Approval {
///     /// Approve the deployment
///     approved: bool,
/// }
///
/// const APPROVAL: FormKey<Approval> = FormKey::new("approval");
///
/// async fn deploy(ask: Ask) -> Result<ToolResult, Error> {
///     let approval = ask.all(APPROVAL.ask("Deploy to production?"))?;
///     let Approval { approved } = approval.or_tool_error("the deployment")?;
///     Ok(ToolResult::text(if approved { "deployed" } else { "not approved" }))
/// }
/// # assert_eq!(APPROVAL.name(), "approval");
/// ```
pub struct FormKey<T> {
    name: &'static str,
    form: PhantomData<fn() -> T>,
}

impl<T> FormKey<T> {
    /// The key `name`, for a form of `T`.
    pub const fn new(name: &'static str) -> Self {
        FormKey {
            name,
            form: PhantomData,
        }
    }

    /// The key on the wire.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T: ElicitForm> FormKey<T> {
    /// The form of `T` under this key ([`Need::form`]).
    pub fn ask(&self, message: &str) -> Need<Elicited<T>> {
        Need::form::<T>(self.name, message)
    }
}

// By hand: derives would ask `T: Clone` and `T: Debug` of the form.
impl<T> Clone for FormKey<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for FormKey<T> {}

impl<T> std::fmt::Debug for FormKey<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FormKey").field(&self.name).finish()
    }
}

impl Need<()> {
    /// A typed form: form-mode elicitation with the schema derived from `T`.
    pub fn form<T: ElicitForm>(key: &str, message: &str) -> Need<Elicited<T>> {
        let request = Question::TypedForm {
            message: message.to_owned(),
            typed: T::__typed(),
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

    /// A yes-or-no question: a form of one required boolean, `confirm`.
    /// `Accepted(true)` is a yes and `Accepted(false)` a no the person
    /// submitted; decline and cancel stay what they are
    /// ([`Elicited::confirmed`] turns all four into a handler's answer).
    pub fn confirm(key: &str, message: &str) -> Need<Elicited<bool>> {
        static SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
            json!({"type": "object",
                "properties": {"confirm": {"type": "boolean", "title": "Confirm"}},
                "required": ["confirm"]})
        });
        let request = form_request(message, SCHEMA.clone());
        Need::build(key, InputKind::Form, request, parse_confirm)
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

/// A [`Need::confirm`] answer: the form's checks, then its one boolean
/// (present and a boolean, as the schema requires).
fn parse_confirm(
    key: &str,
    question: &Question,
    answer: &Value,
) -> Result<Elicited<bool>, McpError> {
    Ok(
        match parse_form::<Map<String, Value>>(key, question, answer)? {
            Elicited::Accepted(content) => {
                Elicited::Accepted(content.get("confirm").and_then(Value::as_bool) == Some(true))
            }
            Elicited::Declined => Elicited::Declined,
            Elicited::Cancelled => Elicited::Cancelled,
        },
    )
}

impl Need<Value> {
    /// A question asked elsewhere, relayed as it is
    /// ([`crate::relay::need`], which documents it).
    pub(crate) fn input(key: &str, request: Value) -> Result<Need<Value>, McpError> {
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

    /// The digest of this need's question: a question that cannot be
    /// digested cannot be pinned, so it is not asked (MRTR-S8).
    pub(super) fn digest(&self) -> Result<[u8; 16], McpError> {
        self.request
            .digest()
            .map_err(|e| McpError::Internal(format!("input {}: {e}", self.key)))
    }

    pub(super) fn check(&self) -> Result<(), McpError> {
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
        let rdig = self.digest()?;
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
        // MRTR-S8: an answer counts only for the exact question it answers.
        // A question under the same key that changed since the round that
        // asked it (a clock or a counter in its message) is a new question,
        // asked again until the ceiling; say why, or a flow that never
        // settles looks like the client's fault.
        if cx.verified && cx.responses.contains_key(&self.key) && cx.asked_before(&self.key) {
            tracing::warn!(
                key = %self.key,
                "the question under this key changed since the round that asked it: its answer does not count and it is asked again (ask the same question every round; put what changes in the result)"
            );
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

impl<T> Clone for Optional<T> {
    fn clone(&self) -> Self {
        Optional(self.0.clone())
    }
}

/// One of two needs of different kinds: the first whose kind the client
/// declared is asked; -32021 only when neither is (MRTR-S9 (a), (b)).
#[derive(Debug)]
pub struct OneOf<A, B>(pub Need<A>, pub Need<B>);

impl<A, B> Clone for OneOf<A, B> {
    fn clone(&self) -> Self {
        OneOf(self.0.clone(), self.1.clone())
    }
}

/// The answer to a [`OneOf`].
#[derive(Clone, Debug, PartialEq)]
pub enum Either<A, B> {
    /// The first need was asked and answered.
    First(A),
    /// The second need was asked and answered.
    Second(B),
}

/// Something [`Ask::all`](crate::Ask::all) can evaluate: a need, an optional need, a choice,
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
