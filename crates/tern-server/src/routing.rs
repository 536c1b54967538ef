//! From a flow request to its route: the target by name or URI, required
//! prompt arguments, and the `Mcp-Param-*` headers checked against the
//! arguments they mirror (HTTP-A5 steps 13 and 14).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tern_proto::accept::Accepted;
use tern_proto::headers::{decode_header_value, header_matches};
use tern_proto::{McpError, McpHeaders};
use tern_types::methods::FlowMethod;

use crate::registry::{Registry, ToolDef};
use crate::server::{Route, Server};

impl Server {
    /// Finds the handler for `a`, or the -32602 that names what is wrong.
    pub(crate) fn route(
        &self,
        a: &Accepted,
        flow: FlowMethod,
        headers: Option<&McpHeaders>,
        reg: &Registry,
    ) -> Result<Route, McpError> {
        let target = |field: &str| {
            a.params
                .get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| McpError::invalid_params(format!("params.{field} must be a string")))
        };
        let plain = |handler, limits| Route {
            handler,
            limits,
            uri_params: HashMap::new(),
            task: None,
        };
        match flow {
            FlowMethod::ToolsCall => {
                let name = target("name")?;
                let tool = reg
                    .tools
                    .iter()
                    .find(|t| t.name == name)
                    .ok_or_else(|| McpError::invalid_params(format!("Unknown tool: {name}")))?;
                let args = match a.params.get("arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(m)) => Some(m),
                    Some(_) => return Err(McpError::invalid_params("arguments must be an object")),
                };
                // HTTP-A5 step 13.
                if let Some(h) = headers {
                    check_param_headers(tool, args, h)?;
                }
                Ok(Route {
                    task: tool.task,
                    ..plain(tool.handler.clone(), tool.limits)
                })
            }
            FlowMethod::PromptsGet => {
                let name = target("name")?;
                let prompt =
                    reg.prompts.iter().find(|p| p.name == name).ok_or_else(|| {
                        McpError::invalid_params(format!("Unknown prompt: {name}"))
                    })?;
                let args = a.params.get("arguments").and_then(Value::as_object);
                // PROMPT-S2.
                for req in &prompt.required_args {
                    if !args.is_some_and(|m| m.get(req).is_some_and(Value::is_string)) {
                        return Err(McpError::invalid_params(format!(
                            "Missing required argument: {req}"
                        )));
                    }
                }
                Ok(plain(prompt.handler.clone(), prompt.limits))
            }
            FlowMethod::ResourcesRead => {
                let uri = target("uri")?;
                // RES-S2.
                let not_found = || McpError::InvalidParams {
                    message: format!("Resource not found: {uri}"),
                    data: Some(json!({"uri": uri})),
                };
                // The exact resource, else the first matching template. A
                // route with an owner (a relay's upstream, crate::relay) is
                // served only if no other owner's route matches too, so
                // every match is looked at; without owners the first one
                // decides.
                let mut exacts = reg.resources.iter().filter(|r| r.uri == uri);
                let exact = exacts.next();
                // Routes are named by owner and URI: a second exact route
                // is another owner's.
                let contested = |first: &Option<Arc<str>>, other: &Option<Arc<str>>| {
                    tracing::warn!(
                        uri,
                        first = first.as_deref().unwrap_or("-"),
                        other = other.as_deref().unwrap_or("-"),
                        "a resource read matches the routes of two owners; refused"
                    );
                    not_found()
                };
                if let (Some(first), Some(other)) = (exact, exacts.next()) {
                    return Err(contested(&first.owner, &other.owner));
                }
                let mut owner = exact.map(|r| &r.owner);
                let mut route = exact.map(|r| plain(r.handler.clone(), r.limits));
                if exact.is_some_and(|r| r.owner.is_none()) {
                    return route.ok_or_else(not_found);
                }
                for t in &reg.templates {
                    let Some(vars) = t.matches(uri) else {
                        continue;
                    };
                    match owner {
                        None => {
                            owner = Some(&t.owner);
                            route = Some(Route {
                                handler: t.handler.clone(),
                                limits: t.limits,
                                uri_params: vars,
                                task: None,
                            });
                            if t.owner.is_none() {
                                break;
                            }
                        }
                        Some(o) if *o != t.owner => return Err(contested(o, &t.owner)),
                        Some(_) => {}
                    }
                }
                route.ok_or_else(not_found)
            }
        }
    }
}

/// HTTP-XMH-S5: every annotated argument with a value needs its header,
/// equal after decoding; a header for a null or absent value is a mismatch
/// too (DIGEST §11 A14).
fn check_param_headers(
    tool: &ToolDef,
    args: Option<&Map<String, Value>>,
    h: &McpHeaders,
) -> Result<(), McpError> {
    let mismatch = |message: String| McpError::HeaderMismatch {
        message,
        supported: None,
    };
    for (header, path) in &tool.header_params {
        let value = path
            .split_first()
            .and_then(|(first, rest)| {
                let start = args?.get(first)?;
                rest.iter().try_fold(start, |v, seg| v.get(seg))
            })
            .filter(|x| !x.is_null());
        match (h.param(header), value) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{header} sent for an absent argument"
                )));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!("Mcp-Param-{header} header is required")));
            }
            (Some(raw), Some(body)) => {
                let decoded = decode_header_value(raw)
                    .map_err(|e| mismatch(format!("Mcp-Param-{header}: {e}")))?;
                if !header_matches(&decoded, body) {
                    return Err(mismatch(format!(
                        "Mcp-Param-{header} header does not match the argument"
                    )));
                }
            }
        }
    }
    Ok(())
}
