//! The server's accept rules for one request, in the order of DIGEST
//! HTTP-A5. The steps are typed so none can be skipped or reordered:
//! [`accept`] (steps 6–10) gives an [`Envelope`], and only
//! [`Envelope::resolve`] (step 11, the method exists here; step 12,
//! `Mcp-Name`; the MRTR field gate) gives the [`Accepted`] request a server
//! dispatches. The server does the rest (steps 13 and 14).

use serde::Deserialize as _;
use serde_json::{Map, Value};
use tern_types::methods::{FlowMethod, Method};
use tern_types::{ClientCapabilities, Implementation, Request, RequestId, meta_keys};

use crate::contract::McpHeaders;
use crate::error::McpError;
use crate::headers::decode_header_value;

/// The log levels of this revision, lowest first (DIGEST §6.9).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The reserved `_meta` of a request, parsed and checked (META-C6, META-S7).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMeta {
    /// The protocol version of this request.
    pub protocol_version: String,
    /// What the client can do for this request, and nothing more (META-S9).
    pub client_capabilities: ClientCapabilities,
    /// The client's self-declared identity (META-11: display only).
    pub client_info: Option<Implementation>,
    /// The opted-in log level, an index into [`LOG_LEVELS`] (LOG-S2).
    pub log_level: Option<usize>,
    /// The progress token, a string or an integer (PROG-C1).
    pub progress_token: Option<Value>,
    /// The rest of `_meta`: trace context and extension keys. The keys
    /// read into the fields above are not repeated here.
    pub raw: Map<String, Value>,
}

impl RequestMeta {
    /// The `_meta` object this was read from, rebuilt (its keys in their
    /// wire names; the values as read).
    pub fn into_map(self) -> Map<String, Value> {
        let mut m = self.raw;
        m.insert(
            meta_keys::PROTOCOL_VERSION.into(),
            Value::String(self.protocol_version),
        );
        m.insert(
            meta_keys::CLIENT_CAPABILITIES.into(),
            serde_json::to_value(self.client_capabilities).unwrap_or_default(),
        );
        if let Some(info) = self.client_info {
            m.insert(
                meta_keys::CLIENT_INFO.into(),
                serde_json::to_value(info).unwrap_or_default(),
            );
        }
        if let Some(level) = self.log_level.and_then(|i| LOG_LEVELS.get(i)) {
            m.insert(meta_keys::LOG_LEVEL.into(), Value::from(*level));
        }
        if let Some(token) = self.progress_token {
            m.insert(meta_keys::PROGRESS_TOKEN.into(), token);
        }
        m
    }
}

/// A request whose envelope passed HTTP-A5 steps 6–10; whether this server
/// has its method is not known yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    id: RequestId,
    method: String,
    params: Map<String, Value>,
    meta: Box<RequestMeta>,
}

/// A request that passed every accept step up to the handler: the method
/// is one this server offers, `Mcp-Name` agrees with the body, and MRTR
/// fields appear only where a retry is possible. Only
/// [`Envelope::resolve`] makes one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Accepted {
    /// The request id, echoed by the response.
    pub id: RequestId,
    /// The method.
    pub method: Method,
    /// The params without `_meta`, which is in [`RequestMeta::raw`].
    pub params: Map<String, Value>,
    /// The parsed `_meta`. Boxed: an accepted request moves through
    /// several futures, each copied whole into its box.
    pub meta: Box<RequestMeta>,
}

impl Accepted {
    /// The multi round-trip method this is, if it is one.
    pub fn flow(&self) -> Option<FlowMethod> {
        self.method.flow()
    }
}

impl Envelope {
    /// A request inside a legacy session (COMPAT-S1): the session, not the
    /// request, carries the version, capabilities and identity the
    /// `initialize` handshake fixed, so they come in as `meta`; the request's
    /// own `_meta` keeps only its progress token and extension keys.
    pub fn in_session(req: Request, mut meta: RequestMeta) -> Envelope {
        let mut params = req.params.unwrap_or_default();
        // Moved out only when it is an object; anything else is left for
        // the method's own checks to refuse.
        if matches!(params.get("_meta"), Some(Value::Object(_)))
            && let Some(Value::Object(mut own)) = params.remove("_meta")
        {
            // Lenient: a session's requests were never refused for it.
            meta.progress_token = progress_token(&own).unwrap_or(None);
            own.retain(|k, _| !READ_KEYS.contains(&k.as_str()));
            meta.raw = own;
        }
        Envelope {
            id: req.id,
            method: req.method,
            params,
            meta: Box::new(meta),
        }
    }

    /// The request id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The method as sent.
    pub fn method_name(&self) -> &str {
        &self.method
    }

    /// The parsed `_meta`.
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// HTTP-A5 step 11 (the method exists and `offered` says this server
    /// has it, else -32601), step 12 (`Mcp-Name` agrees with the target)
    /// and the MRTR field gate (MRTR-S-A3, DIGEST §11 A10).
    pub fn resolve(
        self,
        headers: Option<&McpHeaders>,
        offered: impl FnOnce(Method) -> bool,
        supported: &[String],
    ) -> Result<Accepted, McpError> {
        let method = match Method::parse(&self.method) {
            Some(m) if offered(m) => m,
            _ => return Err(method_not_found(&self.method, supported)),
        };
        let accepted = Accepted {
            id: self.id,
            method,
            params: self.params,
            meta: self.meta,
        };
        check_name_header(&accepted, headers)?;
        check_mrtr_fields(&accepted)?;
        Ok(accepted)
    }
}

/// Checks a request's envelope: the `MCP-Protocol-Version` header (HTTP
/// only), `_meta`, the version, the capabilities and `Mcp-Method`, first
/// failure wins (HTTP-A5 steps 6–10; DIGEST §11 A2).
///
/// `meta` is the request's `_meta` when decoding already read it out of
/// its params ([`crate::decode::Decoded::meta`]); otherwise it is read
/// here, with the same checks in the same order and the same errors.
/// `headers` is `None` on stdio, where the header steps do not apply.
/// Errors answering `initialize` name the supported versions (COMPAT-S2).
pub fn accept(
    req: Request,
    meta: Option<Box<RequestMeta>>,
    headers: Option<&McpHeaders>,
    supported: &[String],
) -> Result<Envelope, McpError> {
    let is_initialize = req.method == "initialize";
    check_envelope(req, meta, headers, supported).map_err(|e| {
        if is_initialize {
            for_initialize(e, supported)
        } else {
            e
        }
    })
}

fn check_envelope(
    req: Request,
    read: Option<Box<RequestMeta>>,
    headers: Option<&McpHeaders>,
    supported: &[String],
) -> Result<Envelope, McpError> {
    let header_version = match headers {
        Some(h) => match h.protocol_version.as_deref() {
            Some(v) => Some(v),
            // Step 6, first half: COMPAT-S4 for a modern-only server.
            None => {
                return Err(McpError::HeaderMismatch {
                    message: "MCP-Protocol-Version header is required".into(),
                    supported: Some(supported.to_vec()),
                });
            }
        },
        None => None,
    };
    let mut params = req.params.unwrap_or_default();
    let read = match read {
        Some(meta) => Ok(meta),
        // Moved out, not copied: what is left of it lives on in
        // `RequestMeta::raw`.
        None => match params.remove("_meta") {
            Some(Value::Object(meta)) => read_meta(meta).map(Box::new),
            None => return Err(McpError::missing_meta("params._meta is required")),
            Some(_) => {
                return Err(McpError::missing_meta("params._meta must be an object"));
            }
        },
    };
    // Step 6, second half: the version, before anything else of `_meta`.
    let version = match &read {
        Ok(meta) => meta.protocol_version.as_str(),
        Err(MetaError::Version(e)) => return Err(e.clone()),
        Err(MetaError::After { version, .. }) => version.as_str(),
    };
    // Step 7.
    if let Some(h) = header_version
        && h != version
    {
        return Err(McpError::HeaderMismatch {
            message: format!(
                "MCP-Protocol-Version header value '{h}' does not match body value '{version}'"
            ),
            supported: Some(supported.to_vec()),
        });
    }
    // Step 8.
    if !supported.iter().any(|s| s == version) {
        return Err(McpError::UnsupportedVersion {
            requested: version.to_owned(),
            supported: supported.to_vec(),
        });
    }
    // Step 9 and the rest of `_meta`.
    let meta = read.map_err(|e| match e {
        MetaError::Version(e) | MetaError::After { error: e, .. } => e,
    })?;
    // Step 10.
    if let Some(h) = headers {
        match h.method.as_deref() {
            None => {
                return Err(McpError::HeaderMismatch {
                    message: "Mcp-Method header is required".into(),
                    supported: None,
                });
            }
            Some(m) if m != req.method => {
                return Err(McpError::HeaderMismatch {
                    message: format!(
                        "Mcp-Method header value '{m}' does not match body value '{}'",
                        req.method
                    ),
                    supported: None,
                });
            }
            Some(_) => {}
        }
    }
    Ok(Envelope {
        id: req.id,
        method: req.method,
        params,
        meta,
    })
}

/// Why a `_meta` object did not read.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaError {
    /// The protocol version is missing or not a string (HTTP-A5 step 6).
    Version(McpError),
    /// The version read, something after it did not (step 9 on).
    After {
        /// The version it gave, for steps 7 and 8, which come first.
        version: String,
        /// The error to answer with once those steps pass.
        error: McpError,
    },
}

/// The keys of `_meta` that [`read_meta`] reads into [`RequestMeta`]'s
/// fields and so leaves out of [`RequestMeta::raw`].
const READ_KEYS: [&str; 5] = [
    meta_keys::PROTOCOL_VERSION,
    meta_keys::CLIENT_CAPABILITIES,
    meta_keys::CLIENT_INFO,
    meta_keys::LOG_LEVEL,
    meta_keys::PROGRESS_TOKEN,
];

/// Reads a request's `_meta` object into a [`RequestMeta`] (META-C6,
/// META-S7, LOG-S4, PROG-C1), without the header and version checks that
/// [`accept`] adds; the keys it reads are left out of `raw`.
pub fn read_meta(mut meta: Map<String, Value>) -> Result<RequestMeta, MetaError> {
    let version = match meta.get(meta_keys::PROTOCOL_VERSION) {
        Some(Value::String(v)) => v.clone(),
        Some(_) => {
            return Err(MetaError::Version(McpError::missing_meta(format!(
                "{} must be a string",
                meta_keys::PROTOCOL_VERSION
            ))));
        }
        None => {
            return Err(MetaError::Version(McpError::missing_meta(format!(
                "_meta[\"{}\"] is required",
                meta_keys::PROTOCOL_VERSION
            ))));
        }
    };
    let rest = read_rest(&meta);
    let (client_capabilities, client_info, log_level, progress_token) = match rest {
        Ok(r) => r,
        Err(error) => return Err(MetaError::After { version, error }),
    };
    meta.retain(|k, _| !READ_KEYS.contains(&k.as_str()));
    Ok(RequestMeta {
        protocol_version: version,
        client_capabilities,
        client_info,
        log_level,
        progress_token,
        raw: meta,
    })
}

type Rest = (
    ClientCapabilities,
    Option<Implementation>,
    Option<usize>,
    Option<Value>,
);

/// Step 9 (the capabilities), then the identity, the log level and the
/// progress token.
fn read_rest(meta: &Map<String, Value>) -> Result<Rest, McpError> {
    let client_capabilities = match meta.get(meta_keys::CLIENT_CAPABILITIES) {
        Some(v @ Value::Object(_)) => ClientCapabilities::deserialize(v).map_err(|e| {
            McpError::missing_meta(format!(
                "{} is malformed: {e}",
                meta_keys::CLIENT_CAPABILITIES
            ))
        })?,
        Some(_) => {
            return Err(McpError::missing_meta(format!(
                "{} must be an object",
                meta_keys::CLIENT_CAPABILITIES
            )));
        }
        None => {
            return Err(McpError::missing_meta(format!(
                "_meta[\"{}\"] is required",
                meta_keys::CLIENT_CAPABILITIES
            )));
        }
    };
    let client_info = match meta.get(meta_keys::CLIENT_INFO) {
        None => None,
        Some(v) => Some(Implementation::deserialize(v).map_err(|e| {
            McpError::missing_meta(format!("{} is malformed: {e}", meta_keys::CLIENT_INFO))
        })?),
    };
    let log_level = match meta.get(meta_keys::LOG_LEVEL) {
        None => None,
        Some(Value::String(l)) => match LOG_LEVELS.iter().position(|x| x == l) {
            Some(i) => Some(i),
            // LOG-S4.
            None => return Err(McpError::invalid_params(format!("Unknown log level: {l}"))),
        },
        Some(_) => return Err(McpError::invalid_params("logLevel must be a string")),
    };
    Ok((
        client_capabilities,
        client_info,
        log_level,
        progress_token(meta)?,
    ))
}

/// The progress token, a string or an integer (PROG-C1).
fn progress_token(meta: &Map<String, Value>) -> Result<Option<Value>, McpError> {
    match meta.get(meta_keys::PROGRESS_TOKEN) {
        None => Ok(None),
        Some(v @ Value::String(_)) => Ok(Some(v.clone())),
        Some(v @ Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Some(v.clone())),
        Some(_) => Err(McpError::invalid_params(
            "progressToken must be a string or an integer",
        )),
    }
}

/// Checks `Mcp-Name` against `params.name`, `params.uri` or
/// `params.taskId` for the methods that name a target (HTTP-A5 step 12,
/// HTTP-S11; the tasks extension's routing header).
fn check_name_header(accepted: &Accepted, headers: Option<&McpHeaders>) -> Result<(), McpError> {
    let (Some(headers), Some(field)) = (headers, accepted.method.target_field()) else {
        return Ok(());
    };
    let body = accepted.params.get(field).and_then(Value::as_str);
    let mismatch = |message: String| McpError::HeaderMismatch {
        message,
        supported: None,
    };
    let Some(raw) = headers.name.as_deref() else {
        return Err(mismatch("Mcp-Name header is required".into()));
    };
    let decoded = decode_header_value(raw).map_err(|e| mismatch(format!("Mcp-Name: {e}")))?;
    match body {
        Some(b) if b == decoded => Ok(()),
        Some(b) => Err(mismatch(format!(
            "Mcp-Name header value '{decoded}' does not match body value '{b}'"
        ))),
        // The params are malformed; step 14 reports that.
        None => Ok(()),
    }
}

/// Refuses `inputResponses` and `requestState` on methods that cannot be
/// retried (MRTR-S-A3, DIGEST §11 A10).
fn check_mrtr_fields(accepted: &Accepted) -> Result<(), McpError> {
    if accepted.method.may_require_input() {
        return Ok(());
    }
    for field in ["inputResponses", "requestState"] {
        // A task's answers arrive on `tasks/update` (the tasks extension),
        // without a state.
        if field == "inputResponses" && accepted.method == Method::TasksUpdate {
            continue;
        }
        if accepted.params.contains_key(field) {
            return Err(McpError::invalid_params(format!(
                "{field} is only allowed on tools/call, prompts/get and resources/read"
            )));
        }
    }
    Ok(())
}

fn for_initialize(e: McpError, supported: &[String]) -> McpError {
    let versions = supported.join(", ");
    let note = format!("This server supports MCP {versions} only");
    match e {
        McpError::HeaderMismatch { message, .. } => McpError::HeaderMismatch {
            message: format!("{message}. {note}"),
            supported: Some(supported.to_vec()),
        },
        // Still the 400 of a missing `_meta` (DIGEST status summary), with
        // the versions served.
        McpError::MissingMeta { message, .. } => McpError::MissingMeta {
            message: format!("{message}. {note}"),
            supported: Some(supported.to_vec()),
        },
        other => other,
    }
}

/// The error for an unknown method; `initialize` gets the supported versions
/// (COMPAT-S-A1).
pub fn method_not_found(method: &str, supported: &[String]) -> McpError {
    McpError::MethodNotFound {
        method: if method == "initialize" {
            format!(
                "initialize. This server supports MCP {} only",
                supported.join(", ")
            )
        } else {
            method.to_owned()
        },
        supported: (method == "initialize").then(|| supported.to_vec()),
    }
}
