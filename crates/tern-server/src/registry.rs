//! What a server offers: tools, prompts, resources and templates, each with
//! its definition and handler (DIGEST §6).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use tern_types::methods::Method;

use crate::handler::{ErasedHandler, Handler, erase};
use crate::tasks::TaskSupport;
use crate::uri_template::{Part, expression_end, read_expression, template_parts};

/// Per-route limits for multi round-trip flows (the lower of the route's
/// and the server's round ceiling applies; SECURITY.md, "Budgets").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteLimits {
    /// The most input rounds this route may ask for.
    pub max_rounds: Option<u8>,
    /// The lifetime of a state this route issues.
    pub state_ttl: Option<Duration>,
    /// The route ends in an irreversible effect guarded by
    /// [`crate::SingleUse`] (SECURITY.md §3.9): every state this route
    /// issues opens at most once (a replayed or forked round is refused with
    /// the uniform -32602), and the server refuses to start with a replay
    /// store that forgets across restarts.
    pub single_use: bool,
    /// Single use, and the final result is kept under the flow's key: a
    /// replay of the last round by the same principal gets the same result
    /// again instead of an error, and the effect does not run twice (the
    /// idempotency-key pattern, SECURITY.md §3.9).
    pub idempotent: bool,
}

/// A tool: its `tools/list` entry and how it runs.
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) name: String,
    pub(crate) entry: Map<String, Value>,
    pub(crate) handler: Arc<dyn ErasedHandler>,
    pub(crate) limits: RouteLimits,
    /// `(header name, property path)` for every `x-mcp-header` annotation
    /// (HTTP-XMH-S5).
    pub(crate) header_params: Vec<(String, Vec<String>)>,
    /// Whether the tool runs as a task (the tasks extension).
    pub(crate) task: Option<TaskSupport>,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// A tool named `name` (TOOL-6: 1–128 of `A-Za-z0-9_-.`) described by
    /// `description` (always given: the conformance suite requires one).
    /// Its input schema comes from the handler's `Args<T>`, or is
    /// `{"type":"object"}`.
    pub fn new<H: Handler<A>, A: 'static>(name: &str, description: &str, handler: H) -> Self {
        let schema = handler
            .input_schema()
            .unwrap_or_else(|| json!({"type": "object", "additionalProperties": false}));
        let mut entry = Map::new();
        entry.insert("name".into(), Value::from(name));
        entry.insert("description".into(), Value::from(description));
        entry.insert("inputSchema".into(), schema.clone());
        ToolDef {
            name: name.to_owned(),
            entry,
            handler: erase(handler),
            limits: RouteLimits::default(),
            header_params: header_params(&schema),
            task: None,
        }
    }

    /// Runs the tool as a task (the tasks extension): its handler takes
    /// [`Task`](crate::Task) and hands its long part to
    /// [`Task::run`](crate::Task::run). Listed as `execution.taskSupport`;
    /// the server then offers `tasks/get`, `tasks/update` and
    /// `tasks/cancel` and declares the extension in `server/discover`.
    #[must_use]
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.task = Some(support);
        self.entry
            .insert("execution".into(), json!({"taskSupport": support.as_str()}));
        self
    }

    /// Replaces the input schema with a hand-written one, kept exactly as
    /// given (TOOL-4).
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.header_params = header_params(&schema);
        self.entry.insert("inputSchema".into(), schema);
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.entry.insert("outputSchema".into(), schema);
        self
    }

    /// Sets the display title.
    #[must_use]
    pub fn title(mut self, title: &str) -> Self {
        self.entry.insert("title".into(), Value::from(title));
        self
    }

    /// Sets the annotations (`readOnlyHint`, `destructiveHint`, …).
    #[must_use]
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.entry.insert("annotations".into(), annotations);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lists the tool with `entry` as given (a proxied tool keeps its
    /// upstream's description, schemas, annotations and `_meta`); only the
    /// name is this tool's own.
    #[must_use]
    pub fn listing(mut self, mut entry: Map<String, Value>) -> Self {
        entry.insert("name".into(), Value::from(self.name.as_str()));
        self.header_params = entry
            .get("inputSchema")
            .map(header_params)
            .unwrap_or_default();
        self.entry = entry;
        self
    }
}

/// `single_use()` and `idempotent()` for every kind of route, so a prompt
/// or resource that ends in an irreversible effect is declared the same way
/// as a tool, and the startup guards see it.
macro_rules! route_flags {
    ($($def:ident),+) => {$(
        impl $def {
            /// Sets this route's limits.
            #[must_use]
            pub fn limits(mut self, limits: RouteLimits) -> Self {
                self.limits = limits;
                self
            }

            /// Marks the route single-use (see [`RouteLimits::single_use`]).
            #[must_use]
            pub fn single_use(mut self) -> Self {
                self.limits.single_use = true;
                self
            }

            /// Makes the route single-use with its final result kept for
            /// replays (see [`RouteLimits::idempotent`]).
            #[must_use]
            pub fn idempotent(mut self) -> Self {
                self.limits.single_use = true;
                self.limits.idempotent = true;
                self
            }
        }
    )+};
}

route_flags!(ToolDef, PromptDef, ResourceDef, TemplateDef);

/// Finds `x-mcp-header` annotations reachable through `properties` only
/// (HTTP-XMH-2).
fn header_params(schema: &Value) -> Vec<(String, Vec<String>)> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (name, p) in props {
            path.push(name.clone());
            if let Some(h) = p.get("x-mcp-header").and_then(Value::as_str) {
                out.push((h.to_owned(), path.clone()));
            }
            walk(p, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out
}

/// A prompt: its `prompts/list` entry and how it runs.
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) name: String,
    pub(crate) entry: Map<String, Value>,
    pub(crate) required_args: Vec<String>,
    pub(crate) handler: Arc<dyn ErasedHandler>,
    pub(crate) limits: RouteLimits,
}

impl std::fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PromptDef {
    /// A prompt with a description (always given, see [`ToolDef::new`]).
    /// Its arguments come from the handler's `Args<T>` as a tool's schema
    /// does: one per property of `T`, described by its doc comment,
    /// required unless it is an `Option` or has a default.
    pub fn new<H: Handler<A>, A: 'static>(name: &str, description: &str, handler: H) -> Self {
        let mut entry = Map::new();
        entry.insert("name".into(), Value::from(name));
        entry.insert("description".into(), Value::from(description));
        let schema = handler.input_schema();
        let mut def = PromptDef {
            name: name.to_owned(),
            entry,
            required_args: Vec::new(),
            handler: erase(handler),
            limits: RouteLimits::default(),
        };
        let derived = schema.as_ref().map(prompt_arguments).unwrap_or_default();
        for (arg, description, required) in derived {
            def = def.argument(&arg, &description, required);
        }
        def
    }

    /// Declares an argument, or redeclares one `new` derived. Missing
    /// required arguments are -32602 (PROMPT-S2).
    #[must_use]
    pub fn argument(mut self, name: &str, description: &str, required: bool) -> Self {
        let args = self
            .entry
            .entry("arguments")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = args {
            let declared = json!({"name": name, "description": description, "required": required});
            // In place, so a redeclared argument keeps its position.
            match a
                .iter_mut()
                .find(|d| d.get("name").and_then(Value::as_str) == Some(name))
            {
                Some(d) => *d = declared,
                None => a.push(declared),
            }
        }
        self.required_args.retain(|r| r != name);
        if required {
            self.required_args.push(name.to_owned());
        }
        self
    }

    /// Lists the prompt with `entry` as given (see [`ToolDef::listing`]);
    /// its required arguments are those `entry` marks required.
    #[must_use]
    pub fn listing(mut self, mut entry: Map<String, Value>) -> Self {
        entry.insert("name".into(), Value::from(self.name.as_str()));
        self.required_args = entry
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|a| a.get("required") == Some(&Value::Bool(true)))
            .filter_map(|a| a.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        self.entry = entry;
        self
    }
}

/// A prompt's arguments from its `Args<T>` schema: name, description
/// (the property's, else its title), required.
fn prompt_arguments(schema: &Value) -> Vec<(String, String, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, p)| {
            let described = p
                .get("description")
                .or_else(|| p.get("title"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            (
                name.clone(),
                described.to_owned(),
                required.contains(&name.as_str()),
            )
        })
        .collect()
}

/// A concrete resource: its `resources/list` entry and how it is read.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) uri: String,
    pub(crate) entry: Map<String, Value>,
    pub(crate) handler: Arc<dyn ErasedHandler>,
    pub(crate) limits: RouteLimits,
    pub(crate) owner: Option<Arc<str>>,
}

/// What names a resource or template route among the others: its owner
/// (set through [`crate::relay::owned_resource`] and
/// [`crate::relay::owned_template`]; `None` for every other route) and its
/// URI or template.
pub(crate) type RouteKey = (Option<Arc<str>>, String);

/// What resources and templates share: the listing's common fields and
/// the route's name, `$own` being the one field of the listing that is the
/// route's own.
macro_rules! read_route {
    ($ty:ident, $field:ident, $own:literal) => {
        impl $ty {
            pub(crate) fn key(&self) -> RouteKey {
                (self.owner.clone(), self.$field.clone())
            }

            /// Sets the description.
            #[must_use]
            pub fn description(mut self, d: &str) -> Self {
                self.entry.insert("description".into(), Value::from(d));
                self
            }

            /// Sets the MIME type.
            #[must_use]
            pub fn mime_type(mut self, m: &str) -> Self {
                self.entry.insert("mimeType".into(), Value::from(m));
                self
            }

            #[doc = concat!("Lists the route with `entry` as given (see [`ToolDef::listing`]); only `", $own, "` is its own.")]
            #[must_use]
            pub fn listing(mut self, mut entry: Map<String, Value>) -> Self {
                entry.insert($own.into(), Value::from(self.$field.as_str()));
                self.entry = entry;
                self
            }

        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field(stringify!($field), &self.$field)
                    .finish_non_exhaustive()
            }
        }
    };
}

read_route!(ResourceDef, uri, "uri");
read_route!(TemplateDef, template, "uriTemplate");

impl ResourceDef {
    /// A resource at `uri` with a display `name`.
    pub fn new<H: Handler<A>, A: 'static>(uri: &str, name: &str, handler: H) -> Self {
        let mut entry = Map::new();
        entry.insert("uri".into(), Value::from(uri));
        entry.insert("name".into(), Value::from(name));
        ResourceDef {
            uri: uri.to_owned(),
            entry,
            handler: erase(handler),
            limits: RouteLimits::default(),
            owner: None,
        }
    }
}

/// A resource template (RFC 6570, levels 1 to 3) and how its resources are
/// read.
#[derive(Clone)]
pub struct TemplateDef {
    pub(crate) template: String,
    pub(crate) entry: Map<String, Value>,
    pub(crate) handler: Arc<dyn ErasedHandler>,
    pub(crate) limits: RouteLimits,
    pub(crate) owner: Option<Arc<str>>,
}

impl TemplateDef {
    /// A template such as `test://template/{id}/data`.
    pub fn new<H: Handler<A>, A: 'static>(uri_template: &str, name: &str, handler: H) -> Self {
        let mut entry = Map::new();
        entry.insert("uriTemplate".into(), Value::from(uri_template));
        entry.insert("name".into(), Value::from(name));
        TemplateDef {
            template: uri_template.to_owned(),
            entry,
            handler: erase(handler),
            limits: RouteLimits::default(),
            owner: None,
        }
    }

    /// Matches `uri`, returning the variables (RFC 6570 levels 1 to 3,
    /// read in reverse). `{x}` matches one or more characters up to the
    /// next literal and never spans `/`, `?` or `#`; `{+x}` and `{#x}` may
    /// span `/`; `{/x}`, `{.x}` and `{;x}` are one segment, label or
    /// parameter each; `{?x,y}` and `{&x}` read `name=value` pairs, in any
    /// order, and may be absent. Modifiers (`*`, `:n`) are accepted and
    /// read as plain values. Values are returned as sent, not decoded.
    pub(crate) fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let parts = template_parts(&self.template)?;
        let mut vars = HashMap::new();
        let mut rest = uri;
        for (i, part) in parts.iter().enumerate() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit)?,
                Part::Expr { op, names } => {
                    let stop = expression_end(rest, *op, parts.get(i + 1))?;
                    let (text, after) = rest.split_at(stop);
                    read_expression(*op, names, text, &mut vars)?;
                    rest = after;
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

/// The current set of routes. Replaced whole on change, so readers hold a
/// consistent snapshot (TOOL-S3: stable order).
#[derive(Clone, Default)]
pub(crate) struct Registry {
    pub(crate) tools: Vec<ToolDef>,
    pub(crate) prompts: Vec<PromptDef>,
    pub(crate) resources: Vec<ResourceDef>,
    pub(crate) templates: Vec<TemplateDef>,
    pub(crate) completion: Option<Arc<dyn ErasedHandler>>,
}

/// What `handler` (the route `kind` `name`) takes as `State<S>` that
/// `given` does not hold, said for the developer.
pub(crate) fn state_missing(
    kind: &str,
    name: &str,
    handler: &Arc<dyn ErasedHandler>,
    given: &crate::server::AppState,
) -> Option<String> {
    let (_, type_name) = handler
        .states()
        .into_iter()
        .find(|(id, _)| !given.contains_key(id))?;
    Some(format!(
        "{kind} {name} takes State<{type_name}>, but the server was given no such state: add .state(...) to the builder"
    ))
}

impl Registry {
    /// The first route whose handler takes a `State<S>` that `given` does
    /// not hold, said for the developer.
    pub(crate) fn missing_state(&self, given: &crate::server::AppState) -> Option<String> {
        let routes = self
            .tools
            .iter()
            .map(|t| ("tool", t.name.as_str(), &t.handler))
            .chain(
                self.prompts
                    .iter()
                    .map(|p| ("prompt", p.name.as_str(), &p.handler)),
            )
            .chain(
                self.resources
                    .iter()
                    .map(|r| ("resource", r.uri.as_str(), &r.handler)),
            )
            .chain(
                self.templates
                    .iter()
                    .map(|t| ("resource template", t.template.as_str(), &t.handler)),
            )
            .chain(self.completion.iter().map(|h| ("completion", "handler", h)));
        routes
            .into_iter()
            .find_map(|(kind, name, handler)| state_missing(kind, name, handler, given))
    }

    /// Whether `method` is served here: a list or read method only with
    /// something registered to list or read (HTTP-A5 step 11).
    pub(crate) fn offers(&self, method: Method) -> bool {
        match method {
            Method::ServerDiscover | Method::SubscriptionsListen => true,
            Method::ToolsList | Method::ToolsCall => !self.tools.is_empty(),
            Method::PromptsList | Method::PromptsGet => !self.prompts.is_empty(),
            Method::ResourcesList | Method::ResourcesTemplatesList | Method::ResourcesRead => {
                self.has_resources()
            }
            Method::CompletionComplete => self.completion.is_some(),
            m if m.is_task() => self.has_tasks(),
            _ => false,
        }
    }

    /// Whether a tool runs as a task, so the tasks extension is offered.
    pub(crate) fn has_tasks(&self) -> bool {
        self.tools.iter().any(|t| t.task.is_some())
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    /// The limits of every route, for the startup guards.
    pub(crate) fn limits(&self) -> Vec<RouteLimits> {
        let tools = self.tools.iter().map(|t| t.limits);
        let prompts = self.prompts.iter().map(|p| p.limits);
        let resources = self.resources.iter().map(|r| r.limits);
        let templates = self.templates.iter().map(|t| t.limits);
        tools
            .chain(prompts)
            .chain(resources)
            .chain(templates)
            .collect()
    }

    pub(crate) fn add_tool(&mut self, def: ToolDef) {
        self.tools.retain(|t| t.name != def.name);
        self.tools.push(def);
    }

    pub(crate) fn add_prompt(&mut self, def: PromptDef) {
        self.prompts.retain(|p| p.name != def.name);
        self.prompts.push(def);
    }

    // A resource or template route is named by its owner and its URI (or
    // template): two owners listing one URI keep a route each, and routing
    // refuses the URI rather than give it to the later (RES-S2).
    pub(crate) fn add_resource(&mut self, def: ResourceDef) {
        self.resources.retain(|r| r.key() != def.key());
        self.resources.push(def);
    }

    pub(crate) fn add_template(&mut self, def: TemplateDef) {
        self.templates.retain(|t| t.key() != def.key());
        self.templates.push(def);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn h() -> String {
        String::new()
    }

    #[test]
    fn templates_match_level_one_variables() {
        let t = TemplateDef::new("test://template/{id}/data", "t", h);
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/123/other").is_none());
        let t = TemplateDef::new("file:///{path}", "f", h);
        assert_eq!(t.matches("file:///x.txt").unwrap()["path"], "x.txt");
    }

    #[test]
    fn templates_match_operators_of_levels_two_and_three() {
        type Case<'a> = (&'a str, &'a str, Option<&'a [(&'a str, &'a str)]>);
        let cases: &[Case<'_>] = &[
            // Reserved expansion spans `/`; a simple one does not.
            (
                "file:///{+path}",
                "file:///a/b/c.txt",
                Some(&[("path", "a/b/c.txt")]),
            ),
            ("file:///{path}", "file:///a/b", None),
            (
                "file:///{+path}",
                "file:///a?b#c",
                Some(&[("path", "a?b#c")]),
            ),
            // Path segments and labels, one per name.
            (
                "repo://{owner}{/name,branch}",
                "repo://tern/core/main",
                Some(&[("branch", "main"), ("name", "core"), ("owner", "tern")]),
            ),
            ("repo://x{/name}", "repo://x/a/b", None),
            (
                "doc://{name}{.ext}",
                "doc://readme.md",
                Some(&[("ext", "md"), ("name", "readme")]),
            ),
            // Queries: any order, optional, only the named variables.
            (
                "search://items{?q,limit}",
                "search://items?limit=5&q=tern",
                Some(&[("limit", "5"), ("q", "tern")]),
            ),
            ("search://items{?q,limit}", "search://items", Some(&[])),
            ("search://items{?q}", "search://items?other=1", None),
            (
                "search://{kind}{?q}",
                "search://docs?q=a",
                Some(&[("kind", "docs"), ("q", "a")]),
            ),
            // Fragment and path parameters.
            (
                "page://x{#section}",
                "page://x#intro",
                Some(&[("section", "intro")]),
            ),
            (
                "map://{;lat,long}",
                "map://;lat=1;long=2",
                Some(&[("lat", "1"), ("long", "2")]),
            ),
            // Several names in one simple expression; modifiers read plainly.
            ("pt://{x,y}", "pt://1,2", Some(&[("x", "1"), ("y", "2")])),
            ("pt://{x:3}", "pt://abc", Some(&[("x", "abc")])),
            // A malformed template matches nothing.
            ("bad://{x", "bad://{x", None),
            ("bad://{}", "bad://a", None),
        ];
        for (template, uri, want) in cases {
            let got = TemplateDef::new(template, "t", h).matches(uri).map(|v| {
                let mut v: Vec<(String, String)> = v.into_iter().collect();
                v.sort();
                v
            });
            let want = want.map(|w| {
                w.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, want, "{template} against {uri}");
        }
    }

    #[test]
    fn header_annotations_are_found_through_properties_only() {
        let s = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"id": {"type": "integer", "x-mcp-header": "Id"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Nope"}}
        }});
        let mut found = header_params(&s);
        found.sort();
        assert_eq!(
            found,
            vec![
                ("Id".to_owned(), vec!["nested".to_owned(), "id".to_owned()]),
                ("Region".to_owned(), vec!["region".to_owned()]),
            ]
        );
    }
}
