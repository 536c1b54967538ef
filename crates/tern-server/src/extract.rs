//! Extractors: what a handler can ask for in its arguments (STYLE.md,
//! axum). Each reads from the request's [`CallContext`]; a failure is a
//! rejection that becomes the request's outcome.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tern_proto::accept::RequestMeta;
use tern_proto::{McpError, Principal};
use tern_types::methods::Method;
use tern_types::{ClientCapabilities, ErrorCode, RequestId};

use crate::ask::Ask;
use crate::notify::{Log, Progress, Sink};
use crate::outcome::Outcome;
use crate::server::Server;

/// Everything known about one request while its handler runs.
#[derive(Debug)]
pub struct CallContext {
    pub(crate) server: Server,
    pub(crate) id: RequestId,
    pub(crate) method: Method,
    pub(crate) params: Map<String, Value>,
    pub(crate) meta: Box<RequestMeta>,
    pub(crate) principal: Principal,
    pub(crate) ask: Ask,
    pub(crate) continuation: Option<Vec<u8>>,
    pub(crate) sink: Sink,
    pub(crate) uri_params: HashMap<String, String>,
    pub(crate) round: u8,
    pub(crate) flow_id: [u8; 16],
    /// Whether a task body this run returns becomes a task: a task route's
    /// call from a request that declared the extension.
    pub(crate) as_task: bool,
}

impl CallContext {
    /// The request id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The method, e.g. `tools/call`.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The raw params, without `_meta` (the [`Meta`] extractor has it).
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }
}

/// Something a handler can take as an argument.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a Tern handler argument",
    note = "extractors include Args<T>, RawArgs, Ask, Resumed<T>, Meta, Capabilities, Caller, Progress, Log, Uri, UriParams, State<S> and Flow"
)]
pub trait FromCall: Sized {
    /// Extracts the value, or rejects the request with an outcome.
    fn from_call(cx: &CallContext) -> Result<Self, Outcome>;

    /// The tool input schema this extractor implies, if any.
    fn input_schema() -> Option<Value> {
        None
    }

    /// The application state this extractor reads, if any: its type and
    /// name, so a server missing it is refused when it is built.
    fn state_type() -> Option<(std::any::TypeId, &'static str)> {
        None
    }
}

/// Typed tool or prompt arguments, with the tool's `inputSchema` derived
/// from `T` (schemars).
///
/// On `tools/call` arguments that do not fit `T` are a tool execution error
/// (`isError: true`, TOOL-S11), not a protocol error; on `prompts/get` they
/// are -32602 (PROMPT-S2). Missing `arguments` read as `{}`.
#[derive(Clone, Debug)]
pub struct Args<T>(pub T);

impl<T: DeserializeOwned + JsonSchema> FromCall for Args<T> {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        // Read in place: the arguments are not copied to be deserialized.
        let empty = Value::Object(Map::new());
        let args = cx.params.get("arguments").unwrap_or(&empty);
        T::deserialize(args).map(Args).map_err(|e| {
            if cx.method == Method::ToolsCall {
                Outcome::ToolError(format!("Invalid arguments: {e}"))
            } else {
                Outcome::Error(McpError::invalid_params(format!("Invalid arguments: {e}")))
            }
        })
    }

    fn input_schema() -> Option<Value> {
        let mut schema = serde_json::to_value(schemars::schema_for!(T)).ok()?;
        if let Value::Object(m) = &mut schema {
            // TOOL-4: the root is an object schema. Titles add nothing on the
            // wire; the tool has its own name.
            m.remove("title");
            m.entry("type").or_insert_with(|| Value::from("object"));
        }
        Some(schema)
    }
}

/// The tool or prompt arguments as raw JSON (`{}` when absent), for tools
/// registered with a hand-written schema.
#[derive(Clone, Debug)]
pub struct RawArgs(pub Map<String, Value>);

impl FromCall for RawArgs {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        match cx.params.get("arguments") {
            None | Some(Value::Null) => Ok(RawArgs(Map::new())),
            Some(Value::Object(m)) => Ok(RawArgs(m.clone())),
            Some(_) => Err(Outcome::Error(McpError::invalid_params(
                "arguments must be an object",
            ))),
        }
    }
}

impl FromCall for Ask {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(cx.ask.clone())
    }
}

/// The continuation the handler sealed in the previous round with
/// [`crate::Pending::with_continuation`]; `None` in the first round. It
/// comes only from a verified state (STYLE.md: a proof type).
#[derive(Clone, Debug)]
pub struct Resumed<T>(pub Option<T>);

impl<T: DeserializeOwned> FromCall for Resumed<T> {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        match &cx.continuation {
            None => Ok(Resumed(None)),
            Some(bytes) => serde_json::from_slice(bytes)
                .map(|v| Resumed(Some(v)))
                .map_err(|e| {
                    Outcome::Error(McpError::Internal(format!(
                        "continuation does not decode: {e}"
                    )))
                }),
        }
    }
}

/// The request's parsed `_meta`.
#[derive(Clone, Debug)]
pub struct Meta(pub RequestMeta);

impl FromCall for Meta {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Meta(RequestMeta::clone(&cx.meta)))
    }
}

/// The client's capabilities for this request (META-S9).
#[derive(Clone, Debug)]
pub struct Capabilities(pub ClientCapabilities);

impl FromCall for Capabilities {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Capabilities(cx.meta.client_capabilities.clone()))
    }
}

/// Who sent the request (SECURITY.md §3.6).
#[derive(Clone, Debug)]
pub struct Caller(pub Principal);

impl FromCall for Caller {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Caller(cx.principal.clone()))
    }
}

/// The caller, who must be authenticated: an anonymous request is refused
/// before the handler runs (SECURITY.md §3.6: with no authentication,
/// binding adds nothing across users, so a handler that needs to know who
/// asks says so).
#[derive(Clone, Debug)]
pub struct Authenticated(pub Principal);

impl FromCall for Authenticated {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        if cx.principal.is_authenticated() {
            Ok(Authenticated(cx.principal.clone()))
        } else {
            Err(Outcome::Error(McpError::application(
                ErrorCode::AUTHENTICATION_REQUIRED.0,
                "This operation needs an authenticated caller",
                None,
            )))
        }
    }
}

impl FromCall for Progress {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Progress {
            sink: cx.sink.clone(),
            token: cx.meta.progress_token.clone(),
        })
    }
}

impl FromCall for Log {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Log {
            sink: cx.sink.clone(),
            level: cx.meta.log_level,
        })
    }
}

impl FromCall for Server {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(cx.server.clone())
    }
}

/// The `uri` of a `resources/read` request.
#[derive(Clone, Debug)]
pub struct Uri(pub String);

impl FromCall for Uri {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Uri(cx
            .params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()))
    }
}

/// The variables a resource template matched, e.g. `{id}`.
#[derive(Clone, Debug)]
pub struct UriParams(pub HashMap<String, String>);

impl FromCall for UriParams {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(UriParams(cx.uri_params.clone()))
    }
}

/// Application state given to [`crate::ServerBuilder::state`], one value
/// per type: a handler may take several (`State<Db>`, `State<Mailer>`). A
/// handler taking a type the builder was not given is refused when the
/// server is built.
#[derive(Clone, Debug)]
pub struct State<S>(pub Arc<S>);

impl<S: Any + Send + Sync> FromCall for State<S> {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        cx.server.app_state::<S>().map(State).ok_or_else(|| {
            // Only a route added after the build can get here.
            Outcome::Error(McpError::Internal(format!(
                "no application state of type {}",
                std::any::type_name::<S>()
            )))
        })
    }

    fn state_type() -> Option<(std::any::TypeId, &'static str)> {
        Some((std::any::TypeId::of::<S>(), std::any::type_name::<S>()))
    }
}

/// Where this request stands in its flow: the round (0 for a first call)
/// and the flow id that stays the same across rounds (ELIC-S15).
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    /// 0 on a first call; n after n input rounds.
    pub round: u8,
    /// Constant across the rounds of one logical request.
    pub id: [u8; 16],
}

impl FromCall for Flow {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Flow {
            round: cx.round,
            id: cx.flow_id,
        })
    }
}
