//! The upstreams' tools, prompts, resources and templates as the proxy's
//! own routes: each entry listed as the upstream lists it (under its
//! prefixed name in a gateway), each route forwarding to its upstream.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tern_client::Client;
use tern_server::{
    Ask, BoxFuture, CallContext, Caller, Capabilities, Error, Flow, FromCall, IntoOutcome, Log,
    Meta, Outcome, Progress, PromptDef, RawArgs, ResourceDef, Resumed, RouteChanges, Server, Task,
    TaskSupport, TemplateDef, ToolDef, Uri, relay,
};
use tern_types::{
    CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
    meta_keys,
};

use crate::Shared;
use crate::relay::{Cont, Forward};
use crate::upstream::{Listed, Upstream};

/// The `_meta` key of a listed resource or template that names the
/// upstream it comes from (in a gateway).
pub const UPSTREAM_META: &str = "tern/upstream";

/// The most pages read of one list.
const MAX_PAGES: usize = 100;

/// The most entries of one list taken from one upstream; past it the rest
/// is left out, with a warning.
pub const MAX_LISTED: usize = 1_000;

/// The most bytes of one list's entries (as JSON) taken from one
/// upstream; past it the rest is left out, with a warning. With
/// [`MAX_LISTED`], what an upstream's catalog may cost the proxy.
pub const MAX_LISTED_BYTES: usize = 8 * 1024 * 1024;

/// Everything one upstream lists.
#[derive(Default)]
struct Lists {
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

/// Takes a page's entries while the list stays within [`MAX_LISTED`] and
/// [`MAX_LISTED_BYTES`] (`bytes` so far); false once it is full.
fn take_within<T: Serialize>(out: &mut Vec<T>, bytes: &mut usize, page: Vec<T>) -> bool {
    for entry in page {
        let size = tern_proto::finish::encoded_len(&entry);
        if out.len() == MAX_LISTED || *bytes + size > MAX_LISTED_BYTES {
            return false;
        }
        *bytes += size;
        out.push(entry);
    }
    true
}

/// Reads every page of one list, within its budgets; an upstream without
/// the feature lists nothing, but one that cannot be reached fails the
/// sync.
macro_rules! read_all {
    ($client:expr, $upstream:expr, $method:ident, $field:ident) => {{
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            match $client.$method(cursor.as_deref()).await {
                Ok(page) => {
                    if !take_within(&mut out, &mut bytes, page.$field) {
                        tracing::warn!(
                            upstream = %$upstream,
                            list = stringify!($field),
                            kept = out.len(),
                            max = MAX_LISTED,
                            max_bytes = MAX_LISTED_BYTES,
                            "an upstream lists more than the proxy takes; the rest is left out"
                        );
                        break;
                    }
                    cursor = page.next_cursor.map(|c| c.0);
                    if cursor.is_none() {
                        break;
                    }
                }
                // Not offered, or offered badly: nothing of this list.
                Err(e) if e.is_remote() || e.is_protocol() => {
                    if e.is_protocol() {
                        tracing::warn!(
                            upstream = %$upstream,
                            list = stringify!($field),
                            error = %e,
                            "an upstream list is malformed; it is left out"
                        );
                    }
                    break;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        out
    }};
}

/// Reads `upstream`'s four lists; its name goes on every warning.
async fn read(client: &Client, upstream: &str) -> Result<Lists, String> {
    Ok(Lists {
        tools: read_all!(client, upstream, list_tools, tools),
        prompts: read_all!(client, upstream, list_prompts, prompts),
        resources: read_all!(client, upstream, list_resources, resources),
        templates: read_all!(
            client,
            upstream,
            list_resource_templates,
            resource_templates
        ),
    })
}

fn entry<T: Serialize>(item: &T) -> Map<String, Value> {
    match serde_json::to_value(item) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Marks a resource entry with its upstream (in a gateway).
fn owned(mut entry: Map<String, Value>, up: &Upstream) -> Map<String, Value> {
    if up.prefixed {
        let meta = entry
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.insert(UPSTREAM_META.into(), json!(up.name));
        }
    }
    entry
}

/// What every route's handler takes from the call.
struct Taken {
    ask: Ask,
    caps: Capabilities,
    meta: Meta,
    progress: Progress,
    log: Log,
    caller: Caller,
    flow: Flow,
}

impl FromCall for Taken {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(Taken {
            ask: Ask::from_call(cx)?,
            caps: Capabilities::from_call(cx)?,
            meta: Meta::from_call(cx)?,
            progress: Progress::from_call(cx)?,
            log: Log::from_call(cx)?,
            caller: Caller::from_call(cx)?,
            flow: Flow::from_call(cx)?,
        })
    }
}

fn forward(up: &Arc<Upstream>, shared: &Arc<Shared>, t: Taken) -> Forward {
    let Taken {
        ask,
        caps,
        meta,
        progress,
        log,
        caller,
        flow,
    } = t;
    Forward {
        progress,
        log,
        caller: caller.0,
        round: flow.round,
        up: up.clone(),
        shared: shared.clone(),
        ask,
        caps: caps.0,
        traceparent: meta
            .0
            .raw
            .get(meta_keys::TRACEPARENT)
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

fn named(name: &str, args: Map<String, Value>) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("name".into(), json!(name));
    p.insert("arguments".into(), Value::Object(args));
    p
}

fn tool_route(up: &Arc<Upstream>, shared: &Arc<Shared>, tool: &Tool) -> ToolDef {
    let (u, s, inner) = (up.clone(), shared.clone(), tool.name.clone());
    let handler =
        move |RawArgs(args): RawArgs, Resumed(cont): Resumed<Cont>, t: Taken, task: Task| {
            let f = forward(&u, &s, t);
            let params = named(&inner, args);
            async move {
                // A client that takes tasks gets the proxy's own task for an
                // upstream task tool (crate::tasks); any other call is relayed
                // round by round.
                if cont.is_none() && task.background() {
                    return task.run(move |scope| f.run_task(params, scope));
                }
                f.run::<CallToolResult>(params, cont).await.into_outcome()
            }
        };
    let description = tool.description.clone().unwrap_or_default();
    let def = ToolDef::new(&up.outer_name(&tool.name), &description, handler).listing(entry(tool));
    let support = tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support.as_deref());
    match support {
        Some("optional") => def.task(TaskSupport::Optional),
        Some("required") => def.task(TaskSupport::Required),
        _ => def,
    }
}

fn prompt_route(up: &Arc<Upstream>, shared: &Arc<Shared>, prompt: &Prompt) -> PromptDef {
    let (u, s, inner) = (up.clone(), shared.clone(), prompt.name.clone());
    let handler = move |RawArgs(args): RawArgs, Resumed(cont): Resumed<Cont>, t: Taken| {
        let f = forward(&u, &s, t);
        let params = named(&inner, args);
        async move { f.run::<GetPromptResult>(params, cont).await }
    };
    let description = prompt.description.clone().unwrap_or_default();
    PromptDef::new(&up.outer_name(&prompt.name), &description, handler).listing(entry(prompt))
}

/// The handler of a resource or template route: the URI goes upstream as
/// the client sent it.
fn read_handler(
    up: &Arc<Upstream>,
    shared: &Arc<Shared>,
) -> impl Fn(Uri, Resumed<Cont>, Taken) -> BoxFuture<Result<Outcome, Error>>
+ Clone
+ Send
+ Sync
+ 'static {
    let (u, s) = (up.clone(), shared.clone());
    move |Uri(uri), Resumed(cont), t| {
        let f = forward(&u, &s, t);
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        Box::pin(async move { f.run::<ReadResourceResult>(params, cont).await })
    }
}

/// Lists `up` again and makes the server's routes match: new and changed
/// entries are added, tools and prompts that went away are removed.
pub(crate) async fn sync(
    server: &Server,
    up: &Arc<Upstream>,
    shared: &Arc<Shared>,
) -> Result<(), String> {
    let live = up.client().await.map_err(|e| e.to_string())?;
    let lists = match read(&live.client, &up.name).await {
        Ok(l) => l,
        Err(e) => {
            up.lost(&live).await;
            return Err(e);
        }
    };
    // One change of the routes for the whole list, not one per entry.
    server.change_routes(|routes| offer(routes, up, shared, &lists));
    up.synced();
    tracing::info!(
        upstream = %up.name,
        tools = lists.tools.len(),
        prompts = lists.prompts.len(),
        resources = lists.resources.len(),
        templates = lists.templates.len(),
        "upstream listed"
    );
    Ok(())
}

/// Offers everything `up` listed and withdraws what it no longer lists.
fn offer(routes: &mut RouteChanges<'_>, up: &Arc<Upstream>, shared: &Arc<Shared>, lists: &Lists) {
    let mut listed = Listed::default();
    let tools = &mut listed.tools;
    for tool in &lists.tools {
        let route = tool_route(up, shared, tool);
        tools.insert(route.name().to_owned());
        if let Err(e) = routes.add_tool(route) {
            tracing::warn!(upstream = %up.name, tool = %tool.name, error = %e, "tool not offered");
        }
    }
    let prompts = &mut listed.prompts;
    for prompt in &lists.prompts {
        prompts.insert(up.outer_name(&prompt.name));
        if let Err(e) = routes.add_prompt(prompt_route(up, shared, prompt)) {
            tracing::warn!(upstream = %up.name, prompt = %prompt.name, error = %e, "prompt not offered");
        }
    }
    for resource in &lists.resources {
        listed.resources.insert(resource.uri.clone());
        let route = ResourceDef::new(&resource.uri, &resource.name, read_handler(up, shared))
            .listing(owned(entry(resource), up));
        let route = relay::owned_resource(route, &up.name);
        if let Err(e) = routes.add_resource(route) {
            tracing::warn!(upstream = %up.name, uri = %resource.uri, error = %e, "resource not offered");
        }
    }
    for template in &lists.templates {
        listed.templates.insert(template.uri_template.clone());
        let route = TemplateDef::new(
            &template.uri_template,
            &template.name,
            read_handler(up, shared),
        )
        .listing(owned(entry(template), up));
        let route = relay::owned_template(route, &up.name);
        if let Err(e) = routes.add_resource_template(route) {
            tracing::warn!(upstream = %up.name, template = %template.uri_template, error = %e, "template not offered");
        }
    }
    up.replace_listed(routes, listed);
}
