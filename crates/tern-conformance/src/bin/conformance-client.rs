//! `conformance-client [args…] URL` runs one client scenario of the official
//! suite against its mock server at `URL` (the last argument), chosen by
//! `MCP_CONFORMANCE_SCENARIO` (FIXTURES.md Part 2). Logs go to stderr; exit
//! status 0 on success.
#![expect(
    clippy::print_stderr,
    reason = "a command-line program reports to its user on stderr"
)]

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::{Map, Value, json};
use std::sync::Arc;
use tern::client::{
    BoxFuture, Client, EraPolicy, Error, InputContext, InputKinds, InputProvider, Refusal, Step,
};

use tern::http::oauth::{HeadlessAgent, OAuthOptions};
use tern::http::{HttpClientOptions, HttpTransport};
use tern::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestUrlParams, ElicitResult, ElicitValue, Implementation, InputResponse,
    InputResponses, ListRootsResult, PrimitiveSchemaDefinition, Role, Root, SamplingContent, Tool,
};

/// Answers everything a scenario may ask: forms get a plausible value per
/// field, URLs are accepted, sampling returns a fixed text, roots one
/// directory.
struct AutoProvider;

fn field_value(schema: &PrimitiveSchemaDefinition) -> ElicitValue {
    let v = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Some(d) = v.get("default")
        && let Ok(x) = serde_json::from_value::<ElicitValue>(d.clone())
    {
        return x;
    }
    if let Some(first) = v.get("enum").and_then(|e| e.get(0)).and_then(Value::as_str) {
        return ElicitValue::String(first.to_owned());
    }
    if let Some(first) = v
        .get("oneOf")
        .and_then(|e| e.get(0))
        .and_then(|o| o.get("const"))
        .and_then(Value::as_str)
    {
        return ElicitValue::String(first.to_owned());
    }
    match v.get("type").and_then(Value::as_str) {
        Some("boolean") => ElicitValue::Bool(true),
        Some("number" | "integer") => ElicitValue::Number(1.into()),
        Some("array") => ElicitValue::StringArray(Vec::new()),
        _ => ElicitValue::String("test".to_owned()),
    }
}

impl InputProvider for AutoProvider {
    fn kinds(&self) -> InputKinds {
        InputKinds::NONE
            .with_form()
            .with_url()
            .with_sampling()
            .with_roots()
    }

    fn elicit_form(
        &self,
        cx: InputContext,
        params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async move {
            eprintln!("elicitation {:?}: {}", cx.key, params.message);
            let content: BTreeMap<String, ElicitValue> = params
                .requested_schema
                .properties
                .iter()
                .map(|(k, s)| (k.clone(), field_value(s)))
                .collect();
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(content),
            })
        })
    }

    fn elicit_url(
        &self,
        _cx: InputContext,
        params: ElicitRequestUrlParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async move {
            eprintln!("URL elicitation (not opened): {}", params.url);
            Ok(ElicitResult::new(ElicitAction::Accept))
        })
    }

    fn sample(
        &self,
        _cx: InputContext,
        _params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, Refusal>> {
        Box::pin(async move {
            let content: SamplingContent =
                serde_json::from_value(json!({"type": "text", "text": "This is a test response"}))
                    .map_err(|e| Refusal::new(e.to_string()))?;
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content,
                model: "conformance-model".to_owned(),
                stop_reason: Some("endTurn".to_owned()),
                meta: None,
            })
        })
    }

    fn list_roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        Box::pin(async move {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///tmp/conformance".to_owned(),
                    name: Some("conformance".to_owned()),
                    meta: None,
                }],
            })
        })
    }
}

/// Arguments for a tool nobody told us about: a plausible value for each
/// property of its schema.
fn sample_arguments(tool: &Tool) -> Map<String, Value> {
    let mut args = Map::new();
    if let Some(Value::Object(props)) = tool.input_schema.get("properties") {
        for (name, schema) in props {
            let v = match schema.get("type").and_then(Value::as_str) {
                Some("integer") => json!(2),
                Some("number") => json!(3),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                _ => json!("us-west1"),
            };
            args.insert(name.clone(), v);
        }
    }
    args
}

async fn all_tools(client: &Client) -> Result<Vec<Tool>, Error> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = client.list_tools(cursor.as_deref()).await?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(c) if !c.0.is_empty() => cursor = Some(c.0),
            _ => return Ok(tools),
        }
    }
}

fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null)
}

async fn run(scenario: &str, client: &Client) -> Result<(), Error> {
    match scenario {
        "tools_call" => {
            let tools = all_tools(client).await?;
            let tool = tools
                .iter()
                .find(|t| t.name == "add_numbers")
                .or_else(|| tools.first());
            if let Some(tool) = tool {
                let args = json!({"a": 2, "b": 3});
                let r = client
                    .call_tool(&tool.name, args.as_object().cloned().unwrap_or_default())
                    .await?;
                eprintln!("{}: {:?}", tool.name, r.content);
            }
        }
        "request-metadata" => {
            client.discover().await?;
            client.list_tools(None).await?;
        }
        "sep-2322-client-request-state" => request_state(client).await?,
        "http-standard-headers" => {
            client.discover().await?;
            for tool in all_tools(client).await? {
                client
                    .call_tool(&tool.name, sample_arguments(&tool))
                    .await?;
            }
            for r in client.list_resources(None).await?.resources {
                client.read_resource(&r.uri).await?;
            }
            for p in client.list_prompts(None).await?.prompts {
                client.get_prompt(&p.name, None).await?;
            }
        }
        "http-custom-headers" => {
            all_tools(client).await?;
            let ctx = context();
            let calls = ctx
                .get("toolCalls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for call in calls {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = call
                    .get("arguments")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                client.call_tool(name, args).await?;
            }
        }
        // 2025-11-25 sessions (the client falls back from its probe,
        // COMPAT-C5/C8): the form defaults (SEP-1034) and SSE resumption.
        "elicitation-sep1034-client-defaults" | "sse-retry" => {
            for tool in all_tools(client).await? {
                client
                    .call_tool(&tool.name, sample_arguments(&tool))
                    .await?;
            }
        }
        "http-invalid-tool-headers" => {
            // Tools with invalid annotations never reach this list
            // (HTTP-XMH-C3); call every one that did.
            for tool in all_tools(client).await? {
                client
                    .call_tool(&tool.name, sample_arguments(&tool))
                    .await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let tools = all_tools(client).await?;
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| Value::Object(t.input_schema.clone()));
            if let Some(schema) = focal {
                let args = json!({"schema": schema});
                client
                    .call_tool(
                        "json_schema_echo",
                        args.as_object().cloned().unwrap_or_default(),
                    )
                    .await?;
            }
        }
        // FIXTURES.md 2.4: once signed in (the transport does it on the
        // first 401), list the tools and call each; a later 403 steps up.
        s if s.starts_with("auth/") => {
            for tool in all_tools(client).await? {
                client
                    .call_tool(&tool.name, sample_arguments(&tool))
                    .await?;
            }
        }
        // json-schema-ref-no-deref and anything unknown: list tools, call
        // nothing, never resolve a network $ref (SCHEMA-5).
        _ => {
            all_tools(client).await?;
        }
    }
    Ok(())
}

/// FIXTURES.md 2.2 `sep-2322-client-request-state`.
async fn request_state(client: &Client) -> Result<(), Error> {
    let empty = Map::new;
    let first = client
        .call_tool_once("test_mrtr_echo_state", empty())
        .await?;
    // An unrelated call in between carries nothing of the pending flow
    // (MRTR-C9).
    client.call_tool("test_mrtr_unrelated", empty()).await?;
    if let Step::Pending(pending) = first {
        let responses = answer(pending.input_requests().iter().map(|(k, _)| k));
        match client.resume(pending, responses).await? {
            Step::Complete(r) => eprintln!("echo_state: {:?}", r.content),
            Step::Pending(p) => {
                client.finish(p, &Default::default()).await?;
            }
            Step::Task(t) => {
                client.wait_task(t, &Default::default()).await?;
            }
        }
    }
    client.call_tool("test_mrtr_no_state", empty()).await?;
    client
        .call_tool("test_mrtr_no_result_type", empty())
        .await?;
    Ok(())
}

fn answer<'a>(keys: impl Iterator<Item = &'a str>) -> InputResponses {
    let mut responses = InputResponses::new();
    for k in keys {
        let accept = ElicitResult {
            action: ElicitAction::Accept,
            content: Some(BTreeMap::from([(
                "confirmed".to_owned(),
                ElicitValue::Bool(true),
            )])),
        };
        responses.insert(k, &InputResponse::Elicit(accept));
    }
    responses
}

/// The sign-in settings a scenario calls for (FIXTURES.md 2.4): credentials
/// from the context for `auth/pre-registration`, the suite's metadata
/// document URL as client id where the server supports it, and refresh
/// tokens wanted.
fn http_options(scenario: &str) -> HttpClientOptions {
    let mut options = HttpClientOptions::default();
    if !scenario.starts_with("auth/") {
        return options;
    }
    let Ok(agent) = HeadlessAgent::new("http://127.0.0.1:3333/callback") else {
        return options;
    };
    let mut oauth = OAuthOptions::new("tern-conformance-client", Arc::new(agent));
    let ctx = context();
    let field = |k: &str| ctx.get(k).and_then(Value::as_str).map(str::to_owned);
    oauth.registration.client_id = field("client_id");
    oauth.registration.client_secret = field("client_secret");
    oauth.registration.metadata_url =
        Some("https://conformance-test.local/client-metadata.json".to_owned());
    oauth.offline_access = true;
    options.oauth = Some(oauth);
    options
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("info")
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if let Ok(v) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        eprintln!("scenario {scenario:?} at protocol version {v}");
    }
    let transport = match HttpTransport::with_options(&url, http_options(&scenario)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let client = Client::builder(transport)
        .info(Implementation::new(
            "tern-conformance-client",
            env!("CARGO_PKG_VERSION"),
        ))
        .provider(AutoProvider)
        // Both revisions' scenarios: probe, then fall back (COMPAT-C5/C8).
        .era(EraPolicy::Auto)
        .build();
    let outcome = run(&scenario, &client).await;
    if let Err(e) = client.close().await {
        eprintln!("ending the session failed: {e}");
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scenario {scenario:?} failed: {e}");
            ExitCode::FAILURE
        }
    }
}
