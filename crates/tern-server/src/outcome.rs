//! What a handler returns: a complete result, a request for input, or an
//! error (ARCHITECTURE.md, "A call on the server", step 5).

use serde::Serialize;
use serde_json::{Map, Value};
use tern_proto::McpError;

use crate::ask::Asked;
use crate::content::{PromptResult, ResourceResult, ToolResult};

/// The outcome of one run of a handler.
#[derive(Debug)]
#[non_exhaustive]
pub enum Outcome {
    /// A final result (its fields; `resultType` and `_meta` are stamped
    /// later).
    Complete(Map<String, Value>),
    /// The handler needs input from the client or another round.
    InputRequired(Pending),
    /// A tool execution error: `isError: true` on `tools/call` (TOOL-S11),
    /// -32603 on the other methods.
    ToolError(String),
    /// A protocol or application error.
    Error(McpError),
    /// The rest of the call runs as a task ([`crate::Task::run`]).
    Task(crate::tasks::TaskBody),
}

/// Input still missing after a handler's run: everything it asked for that
/// the client has not answered yet, and the continuation to seal with the
/// next state.
#[derive(Debug, Default)]
pub struct Pending {
    pub(crate) requests: Vec<Asked>,
    pub(crate) continuation: Option<Vec<u8>>,
    /// Why [`Pending::with_continuation`] could not serialise its value:
    /// the round then fails with -32603 instead of sealing no continuation.
    pub(crate) unserialisable: Option<String>,
}

impl Pending {
    /// A state-only round: no input requests, just a new `requestState`
    /// (for load shedding or polling an out-of-band step, MRTR-S10). The
    /// client may retry at once.
    pub fn state_only() -> Self {
        Pending::default()
    }

    /// Seals `value` into the next state; [`crate::Resumed`] hands it back in
    /// the next round. Capped at 4 KiB once encoded (SECURITY.md §3.4).
    /// A value that does not serialise (a map with non-string keys, a
    /// failing `Serialize`) fails the round with -32603, its reason logged.
    pub fn with_continuation<T: Serialize>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.continuation = Some(bytes),
            Err(e) => self.unserialisable = Some(e.to_string()),
        }
        self
    }

    /// The keys of the input requests this round asks for.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.requests.iter().map(|a| a.key.as_str())
    }
}

/// The one error type a handler (and the authorization hook) returns:
/// input to ask for, an error for the peer, or a tool error. `?` converts
/// the first two from [`Pending`] and [`McpError`], and the helpers of
/// [`crate::Elicited`] produce the refusals a person's decline or cancel
/// calls for, so a handler rarely names `McpError` itself.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// More input is needed: becomes an `input_required` result.
    Input(Pending),
    /// A JSON-RPC error for the peer.
    Protocol(McpError),
    /// A tool execution error with an explanation for the model.
    Tool(String),
}

impl Error {
    /// A tool execution error (TOOL-S11).
    pub fn tool(message: impl Into<String>) -> Self {
        Error::Tool(message.into())
    }

    /// An application error with a code outside the reserved range (ERR-5),
    /// for example "the person declined".
    pub fn application(code: i64, message: impl Into<String>) -> Self {
        Error::Protocol(McpError::application(code, message, None))
    }

    /// Invalid arguments the schema could not catch (-32602): the message
    /// goes to the peer.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Error::Protocol(McpError::invalid_params(message))
    }

    /// An unexpected failure (-32603): the message goes to the server's log
    /// only, the peer sees "Internal error" and an id naming the log line
    /// (SECURITY.md §3.5).
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Protocol(McpError::Internal(message.into()))
    }
}

impl From<Error> for McpError {
    /// The wire error for a refusal outside a handler's round (the
    /// authorization hook): a tool error or a request for input cannot be
    /// answered there, so they become -32603 with the reason logged.
    fn from(e: Error) -> Self {
        match e {
            Error::Protocol(e) => e,
            Error::Tool(m) => McpError::Internal(format!("a tool error outside a tool call: {m}")),
            Error::Input(_) => {
                McpError::Internal("input asked for outside a handler's round".into())
            }
        }
    }
}

impl From<Pending> for Error {
    fn from(p: Pending) -> Self {
        Error::Input(p)
    }
}

impl From<McpError> for Error {
    fn from(e: McpError) -> Self {
        Error::Protocol(e)
    }
}

/// Anything a handler may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a Tern handler",
    note = "return a ToolResult, PromptResult, ResourceResult, String, Json<T>, or a Result of those with tern_server::Error"
)]
pub trait IntoOutcome {
    /// Converts into an outcome.
    fn into_outcome(self) -> Outcome;
}

impl IntoOutcome for Outcome {
    fn into_outcome(self) -> Outcome {
        self
    }
}

impl IntoOutcome for ToolResult {
    fn into_outcome(self) -> Outcome {
        Outcome::Complete(self.into_map())
    }
}

impl IntoOutcome for PromptResult {
    fn into_outcome(self) -> Outcome {
        Outcome::Complete(self.into_map())
    }
}

impl IntoOutcome for ResourceResult {
    fn into_outcome(self) -> Outcome {
        Outcome::Complete(self.into_map())
    }
}

/// A plain string from a tool is one text block.
impl IntoOutcome for String {
    fn into_outcome(self) -> Outcome {
        ToolResult::text(self).into_outcome()
    }
}

impl IntoOutcome for Pending {
    fn into_outcome(self) -> Outcome {
        Outcome::InputRequired(self)
    }
}

impl IntoOutcome for McpError {
    fn into_outcome(self) -> Outcome {
        Outcome::Error(self)
    }
}

impl IntoOutcome for Error {
    fn into_outcome(self) -> Outcome {
        match self {
            Error::Input(p) => Outcome::InputRequired(p),
            Error::Protocol(e) => Outcome::Error(e),
            Error::Tool(m) => Outcome::ToolError(m),
        }
    }
}

impl<T: IntoOutcome, E: IntoOutcome> IntoOutcome for Result<T, E> {
    fn into_outcome(self) -> Outcome {
        match self {
            Ok(t) => t.into_outcome(),
            Err(e) => e.into_outcome(),
        }
    }
}

/// Any serialisable value as the result object (for example a typed
/// `tern_types` result). It must serialise to a JSON object.
#[derive(Clone, Debug)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoOutcome for Json<T> {
    fn into_outcome(self) -> Outcome {
        match serde_json::to_value(self.0) {
            Ok(Value::Object(mut m)) => {
                // The framework stamps resultType; a typed result may carry
                // its own, which is kept only if it says complete.
                if m.get("resultType").and_then(Value::as_str) != Some("complete") {
                    m.remove("resultType");
                }
                Outcome::Complete(m)
            }
            Ok(_) => Outcome::Error(McpError::Internal("a result must be a JSON object".into())),
            Err(e) => Outcome::Error(McpError::Internal(format!("result did not serialise: {e}"))),
        }
    }
}
