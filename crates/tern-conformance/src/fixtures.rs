//! The conformance server's tools, prompts and resources (FIXTURES.md
//! Part 1, §1.2 and §1.3). Every multi round-trip fixture goes through the
//! Ask API like any handler; none reads `inputResponses` itself.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tern::proto::McpError;
use tern::server::{
    Args, Ask, Capabilities, Content, Either, ElicitForm, Elicited, Error, Log, Need, OneOf,
    Progress, PromptDef, PromptResult, RawArgs, ResourceDef, ResourceResult, Server, ServerBuilder,
    TemplateDef, ToolDef, ToolResult, UriParams,
};

/// A 1×1 transparent PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A 44-byte silent WAV header with no samples.
pub const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

/// The fixture forms. Their schemas accept the suite's canned answers
/// (`{"name":"Alice"}`, `{"ok":true}`, `{"color":"blue"}`,
/// `{"context":"test context"}`), so strict validation is safe (MRTR-E-A2).
#[derive(Debug, Deserialize, ElicitForm)]
struct NameForm {
    /// Your name
    name: String,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct OkForm {
    /// Confirm
    ok: bool,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct ColorForm {
    /// Favourite colour
    color: String,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct ContextForm {
    /// Context
    context: String,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct MessageForm {
    /// Your response
    response: String,
}

async fn simple_text() -> ToolResult {
    ToolResult::text("This is a simple text response for testing.")
}

async fn image() -> ToolResult {
    ToolResult::new([Content::image(PNG, "image/png")])
}

async fn audio() -> ToolResult {
    ToolResult::new([Content::audio(WAV, "audio/wav")])
}

async fn embedded() -> ToolResult {
    ToolResult::new([Content::embedded_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )])
}

async fn mixed() -> ToolResult {
    ToolResult::new([
        Content::text("Multiple content types test:"),
        Content::image(PNG, "image/png"),
        Content::embedded_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ])
}

async fn error_handling() -> Result<ToolResult, Error> {
    Err(Error::tool(
        "This tool intentionally returns an error for testing",
    ))
}

async fn with_progress(progress: Progress) -> ToolResult {
    for p in [0.0, 50.0, 100.0] {
        progress.notify(p, Some(100.0), Some("working")).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ToolResult::text("Progress test completed")
}

async fn with_logging(log: Log) -> ToolResult {
    for msg in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        log.info(json!(msg)).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ToolResult::text("Logging test completed")
}

async fn missing_capability(Capabilities(caps): Capabilities) -> Result<ToolResult, Error> {
    if !caps.sampling() {
        // META-S10: requiredCapabilities is an object of objects.
        let required = serde_json::from_value(json!({"sampling": {}}))
            .map_err(|e| McpError::Internal(e.to_string()))?;
        return Err(McpError::MissingCapability {
            required: Box::new(required),
            message: "This tool requires the sampling capability".into(),
        }
        .into());
    }
    Ok(ToolResult::text("The client declared sampling"))
}

async fn streaming_elicitation(ask: Ask) -> Result<ToolResult, Error> {
    let answer = ask.form::<MessageForm>("response", "Please provide a response")?;
    elicited_text(answer, |f| format!("Received: {}", f.response))
}

async fn logging_tool(log: Log) -> ToolResult {
    log.info(json!("this is only sent when the request opted in"))
        .await;
    ToolResult::text("Logging tool completed")
}

async fn dynamic() -> ToolResult {
    ToolResult::text("This tool was added at run time")
}

async fn trigger_tool_change(server: Server) -> Result<ToolResult, Error> {
    server
        .add_tool(ToolDef::new(
            "test_dynamic_tool",
            "A tool added at run time",
            dynamic,
        ))
        .map_err(|e| Error::tool(e.to_string()))?;
    Ok(ToolResult::text("Tool list changed"))
}

async fn dynamic_prompt() -> PromptResult {
    PromptResult::user_text("This prompt was added at run time")
}

async fn trigger_prompt_change(server: Server) -> Result<ToolResult, Error> {
    server
        .add_prompt(PromptDef::new(
            "test_dynamic_prompt",
            "A prompt added at run time",
            dynamic_prompt,
        ))
        .map_err(|e| Error::tool(e.to_string()))?;
    Ok(ToolResult::text("Prompt list changed"))
}

async fn echo_raw(RawArgs(args): RawArgs) -> ToolResult {
    ToolResult::text(format!("Received: {}", Value::Object(args)))
}

fn elicited_text<T>(
    answer: Elicited<T>,
    accepted: impl FnOnce(T) -> String,
) -> Result<ToolResult, Error> {
    match answer {
        Elicited::Accepted(v) => Ok(ToolResult::text(accepted(v))),
        Elicited::Declined => Err(Error::tool("The user declined")),
        Elicited::Cancelled => Err(Error::tool("The user cancelled")),
    }
}

async fn mrtr_elicitation(ask: Ask) -> Result<ToolResult, Error> {
    let answer = ask.form::<NameForm>("user_name", "What is your name?")?;
    elicited_text(answer, |f| format!("Hello, {}!", f.name))
}

async fn mrtr_sampling(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text(
        "capital_question",
        "What is the capital of France?",
        100,
    ))?;
    Ok(ToolResult::text(format!("The model said: {}", s.text())))
}

async fn mrtr_roots(ask: Ask) -> Result<ToolResult, Error> {
    let roots = ask.all(Need::roots("client_roots"))?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(ToolResult::text(format!("Roots: {}", uris.join(", "))))
}

async fn mrtr_request_state(ask: Ask) -> Result<ToolResult, Error> {
    let answer = ask.form::<OkForm>("confirm", "Please confirm")?;
    elicited_text(answer, |f| format!("state-ok: confirmed={}", f.ok))
}

async fn mrtr_multiple(ask: Ask) -> Result<ToolResult, Error> {
    let (name, greeting, roots) = ask.all((
        Need::form::<NameForm>("user_name", "What is your name?"),
        Need::sample_text("greeting", "Write a one-line greeting.", 50),
        Need::roots("client_roots"),
    ))?;
    let name = name
        .accepted()
        .map_or_else(|| "stranger".to_owned(), |f| f.name);
    Ok(ToolResult::text(format!(
        "{name}: {} ({} roots)",
        greeting.text(),
        roots.len()
    )))
}

async fn mrtr_multi_round(ask: Ask) -> Result<ToolResult, Error> {
    let Some(name) = ask
        .form::<NameForm>("step1", "What is your name?")?
        .accepted()
    else {
        return Err(Error::tool("No name given"));
    };
    let Some(color) = ask
        .form::<ColorForm>("step2", "What is your favourite colour?")?
        .accepted()
    else {
        return Err(Error::tool("No colour given"));
    };
    Ok(ToolResult::text(format!(
        "{} likes {}",
        name.name, color.color
    )))
}

async fn mrtr_capabilities(ask: Ask) -> Result<ToolResult, Error> {
    // Either kind will do: the client gets the one it declared (MRTR-S9 (a)).
    let answer = ask.all(OneOf(
        Need::form::<NameForm>("user_name", "What is your name?"),
        Need::sample_text("user_name_sample", "Suggest a name.", 50),
    ))?;
    Ok(ToolResult::text(match answer {
        Either::First(f) => format!("form: {:?}", f.accepted().map(|f| f.name)),
        Either::Second(s) => format!("sampling: {}", s.text()),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct SamplingArgs {
    /// The prompt to sample.
    prompt: String,
}

async fn legacy_sampling(ask: Ask, Args(a): Args<SamplingArgs>) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text("sample", &a.prompt, 100))?;
    Ok(ToolResult::text(s.text()))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ElicitationArgs {
    /// The message to show.
    message: String,
}

async fn legacy_elicitation(ask: Ask, Args(a): Args<ElicitationArgs>) -> Result<ToolResult, Error> {
    let schema = json!({"type": "object", "properties": {
        "username": {"type": "string", "description": "Your user name"},
        "email": {"type": "string", "format": "email", "description": "Your email address"}
    }, "required": ["username", "email"]});
    let answer = ask.all(Need::form_schema("elicitation", &a.message, schema))?;
    Ok(elicitation_completed(answer))
}

/// SEP-1034: a default for every primitive type.
async fn elicitation_defaults(ask: Ask) -> Result<ToolResult, Error> {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}
    }});
    let answer = ask.all(Need::form_schema("defaults", "Check these values", schema))?;
    Ok(elicitation_completed(answer))
}

/// SEP-1330: all five enum shapes.
async fn elicitation_enums(ask: Ask) -> Result<ToolResult, Error> {
    let schema = json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}}
    }});
    let answer = ask.all(Need::form_schema("enums", "Pick options", schema))?;
    Ok(elicitation_completed(answer))
}

fn elicitation_completed(answer: Elicited<serde_json::Map<String, Value>>) -> ToolResult {
    let (action, content) = match answer {
        Elicited::Accepted(m) => ("accept", Value::Object(m)),
        Elicited::Declined => ("decline", Value::Null),
        Elicited::Cancelled => ("cancel", Value::Null),
    };
    ToolResult::text(format!(
        "Elicitation completed: action={action}, content={content}"
    ))
}

async fn simple_prompt() -> PromptResult {
    PromptResult::user_text("This is a simple prompt for testing.")
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PromptArgs {
    arg1: String,
    arg2: String,
}

async fn prompt_with_args(Args(a): Args<PromptArgs>) -> PromptResult {
    PromptResult::user_text(format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        a.arg1, a.arg2
    ))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ResourcePromptArgs {
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

async fn prompt_with_resource(Args(a): Args<ResourcePromptArgs>) -> PromptResult {
    PromptResult::new()
        .user(Content::embedded_text(
            a.resource_uri,
            "text/plain",
            "Embedded resource content for testing.",
        ))
        .user(Content::text("Please process the embedded resource above."))
}

async fn prompt_with_image() -> PromptResult {
    PromptResult::new()
        .user(Content::image(PNG, "image/png"))
        .user(Content::text("Please analyze the image above."))
}

async fn mrtr_prompt(ask: Ask) -> Result<PromptResult, Error> {
    match ask.form::<ContextForm>("user_context", "What context should the prompt use?")? {
        Elicited::Accepted(c) => Ok(PromptResult::user_text(format!(
            "Use this context: {}",
            c.context
        ))),
        // "Declined", from Tern's registry of application codes (ERR-5).
        _ => Err(Error::application(
            tern::types::ErrorCode::DECLINED.0,
            "The user declined to give context",
        )),
    }
}

async fn static_text() -> ResourceResult {
    ResourceResult::text(
        "test://static-text",
        "text/plain",
        "This is the content of the static text resource.",
    )
}

async fn static_binary() -> ResourceResult {
    ResourceResult::blob("test://static-binary", "image/png", PNG)
}

async fn watched() -> ResourceResult {
    ResourceResult::text(
        "test://watched-resource",
        "text/plain",
        "Watched resource content.",
    )
}

async fn template(UriParams(vars): UriParams) -> ResourceResult {
    let id = vars.get("id").cloned().unwrap_or_default();
    let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
    ResourceResult::text(
        format!("test://template/{id}/data"),
        "application/json",
        body.to_string(),
    )
}

async fn complete(
    RawArgs(_): RawArgs,
    tern::server::Meta(_): tern::server::Meta,
) -> tern::server::Json<Value> {
    tern::server::Json(
        json!({"completion": {"values": ["test1", "test2", "test3"], "total": 3, "hasMore": false}}),
    )
}

fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// The conformance server with every fixture registered, tools in the
/// order they are listed.
pub fn server() -> ServerBuilder {
    let b = Server::builder("tern-conformance-server", env!("CARGO_PKG_VERSION"));
    let b = plain_tools(b);
    let b = schema_tools(b);
    let b = mrtr_tools(b);
    let b = legacy_tools(b);
    let b = prompts(b);
    resources(b).completion(complete)
}

/// The tools that answer at once: content kinds, errors, progress,
/// logging, list changes.
fn plain_tools(b: ServerBuilder) -> ServerBuilder {
    b
        // http-header-validation calls tools[0] with {}: it must succeed.
        .tool(
            "test_simple_text",
            "Returns a simple text response",
            simple_text,
        )
        .tool("test_image_content", "Returns an image", image)
        .tool("test_audio_content", "Returns an audio clip", audio)
        .tool(
            "test_embedded_resource",
            "Returns an embedded resource",
            embedded,
        )
        .tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            mixed,
        )
        .tool(
            "test_error_handling",
            "Always fails with a tool error",
            error_handling,
        )
        .tool(
            "test_tool_with_progress",
            "Reports progress three times",
            with_progress,
        )
        .tool(
            "test_tool_with_logging",
            "Logs three messages when asked to",
            with_logging,
        )
        .tool(
            "test_missing_capability",
            "Needs the sampling capability",
            missing_capability,
        )
        .tool(
            "test_streaming_elicitation",
            "Asks for input through MRTR",
            streaming_elicitation,
        )
        .tool("test_logging_tool", "Logs only on opt-in", logging_tool)
        .tool(
            "test_trigger_tool_change",
            "Adds a tool and notifies listeners",
            trigger_tool_change,
        )
        .tool(
            "test_trigger_prompt_change",
            "Adds a prompt and notifies listeners",
            trigger_prompt_change,
        )
}

/// The tools whose input schema is the point: JSON Schema 2020-12, an
/// `x-mcp-header` argument.
fn schema_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool_def(
        ToolDef::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            echo_raw,
        )
        .input_schema(schema_2020_12()),
    )
    .tool_def(
        ToolDef::new(
            "test_x_mcp_header",
            "Mirrors its region argument into a header",
            echo_raw,
        )
        .input_schema(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
        })),
    )
}

/// The tools that ask for input through `input_required` (MRTR).
fn mrtr_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        "test_input_required_result_elicitation",
        "Asks for a name (MRTR elicitation)",
        mrtr_elicitation,
    )
    .tool(
        "test_input_required_result_sampling",
        "Asks the model a question (MRTR sampling)",
        mrtr_sampling,
    )
    .tool(
        "test_input_required_result_list_roots",
        "Asks for the roots (MRTR roots)",
        mrtr_roots,
    )
    .tool(
        "test_input_required_result_request_state",
        "Asks for confirmation with state",
        mrtr_request_state,
    )
    .tool(
        "test_input_required_result_multiple_inputs",
        "Asks for three inputs at once",
        mrtr_multiple,
    )
    .tool(
        "test_input_required_result_multi_round",
        "Asks in two rounds",
        mrtr_multi_round,
    )
    .tool(
        "test_input_required_result_tampered_state",
        "Rejects tampered state",
        mrtr_request_state,
    )
    .tool(
        "test_input_required_result_capabilities",
        "Asks only through declared capabilities",
        mrtr_capabilities,
    )
}

/// The tools that ask through a 2025-11-25 session's requests, and the
/// elicitation forms of SEP-1034 and SEP-1330.
fn legacy_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool("test_sampling", "Samples the given prompt", legacy_sampling)
        .tool(
            "test_elicitation",
            "Elicits an answer to the given message",
            legacy_elicitation,
        )
        .tool(
            "test_elicitation_sep1034_defaults",
            "Elicits a form with a default for every primitive type",
            elicitation_defaults,
        )
        .tool(
            "test_elicitation_sep1330_enums",
            "Elicits a form with every enum shape",
            elicitation_enums,
        )
}

/// The prompts, one of them asking for input (MRTR on `prompts/get`).
fn prompts(b: ServerBuilder) -> ServerBuilder {
    b.prompt_def(PromptDef::new(
        "test_simple_prompt",
        "A simple prompt",
        simple_prompt,
    ))
    .prompt_def(
        PromptDef::new(
            "test_prompt_with_arguments",
            "A prompt with arguments",
            prompt_with_args,
        )
        .argument("arg1", "First argument", true)
        .argument("arg2", "Second argument", true),
    )
    .prompt_def(
        PromptDef::new(
            "test_prompt_with_embedded_resource",
            "A prompt with a resource",
            prompt_with_resource,
        )
        .argument("resourceUri", "The resource to embed", true),
    )
    .prompt_def(PromptDef::new(
        "test_prompt_with_image",
        "A prompt with an image",
        prompt_with_image,
    ))
    .prompt_def(PromptDef::new(
        "test_input_required_result_prompt",
        "Asks for context (MRTR on prompts/get)",
        mrtr_prompt,
    ))
}

/// The resources and the resource template.
fn resources(b: ServerBuilder) -> ServerBuilder {
    b.resource_def(
        ResourceDef::new("test://static-text", "Static text", static_text)
            .mime_type("text/plain")
            .description("A static text resource"),
    )
    .resource_def(
        ResourceDef::new("test://static-binary", "Static binary", static_binary)
            .mime_type("image/png"),
    )
    .resource_def(
        ResourceDef::new("test://watched-resource", "Watched resource", watched)
            .mime_type("text/plain"),
    )
    .template_def(
        TemplateDef::new("test://template/{id}/data", "Template data", template)
            .mime_type("application/json"),
    )
}
