//! Messages Tern builds validate against `schema.json`, and, since the
//! schema cannot tell result types apart, each is re-read through the Rust
//! type that `resultType` selects (DIGEST BASE-A3, A7).

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tern_types::{
    CacheScope, CallToolRequestParams, CallToolResult, ClientCapabilities, ContentBlock,
    CreateMessageRequestParams, DiscoverResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestParams, ElicitRequestUrlParams, ElicitResult, ElicitValue, ElicitationCapability,
    ElicitationSchema, EnumOption, ErrorObject, ErrorResponse, GetPromptResult, Implementation,
    InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponses,
    JsonRpcVersion, ListToolsResult, NumberSchema, NumberType, Outcome, PrimitiveSchemaDefinition,
    ProgressNotificationParams, ProgressToken, PromptMessage, ReadResourceResult, RequestId,
    ResourceContents, ResultResponse, ResultType, Role, SamplingContent, SamplingMessage,
    SamplingMessageContentBlock, ServerCapabilities, StringFormat, StringSchema,
    SubscriptionsListenResult, TextContent, TextResourceContents, TitledSingleSelectEnumSchema,
    Tool, ToolAnnotations, ToolChoice, ToolChoiceMode, ToolUseContent, ToolsCapability,
    UntitledEnumItems, UntitledMultiSelectEnumSchema, meta_keys, methods,
};

use super::support::{TypedNotification, TypedRequest, assert_valid, schema_errors};

fn to_json<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("serialises")
}

fn reparse<T: DeserializeOwned>(v: &Value) -> T {
    T::deserialize(v).expect("re-parses")
}

fn server_meta() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        meta_keys::SERVER_INFO.to_owned(),
        to_json(&Implementation::new("tern-test", "0.1.0")),
    );
    m
}

fn request_meta() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        meta_keys::PROTOCOL_VERSION.to_owned(),
        json!(tern_types::PROTOCOL_VERSION),
    );
    m.insert(
        meta_keys::CLIENT_CAPABILITIES.to_owned(),
        json!({"elicitation": {}, "sampling": {"tools": {}}, "roots": {}}),
    );
    m
}

fn response<R>(result: R) -> ResultResponse<R> {
    ResultResponse {
        jsonrpc: JsonRpcVersion,
        id: RequestId::Number(7),
        result,
    }
}

fn weather_tool() -> Tool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"unit": {"$anchor": "unit", "enum": ["c", "f"]}},
        "properties": {
            "city": {"type": "string", "x-mcp-header": "City"},
            "unit": {"$ref": "#unit"},
            "days": {"type": "integer", "minimum": 1},
        },
        "required": ["city"],
        "if": {"properties": {"days": {"minimum": 2}}},
        "then": {"required": ["unit"]},
        "else": {},
        "additionalProperties": false,
    });
    Tool {
        name: "get_weather".to_owned(),
        title: Some("Weather".to_owned()),
        description: Some("Current weather for a city".to_owned()),
        input_schema: schema.as_object().unwrap().clone(),
        output_schema: Some(
            json!({"type": "object", "properties": {"temp": {"type": "number"}}})
                .as_object()
                .unwrap()
                .clone(),
        ),
        annotations: Some(ToolAnnotations {
            read_only_hint: Some(true),
            open_world_hint: Some(true),
            ..ToolAnnotations::default()
        }),
        ..Tool::default()
    }
}

#[test]
fn complete_call_tool_result_with_is_error() {
    let mut r = CallToolResult::error(vec![ContentBlock::text("Invalid city: ''")]);
    r.structured_content = Some(json!(["any", "json", 1]));
    r.meta = Some(server_meta());
    let v = to_json(&r);
    assert_eq!(v["resultType"], "complete", "BASE-S10");
    assert_eq!(v["isError"], true);
    assert_valid("CallToolResult", &v);
    assert_valid("CallToolResultResponse", &to_json(&response(&r)));
    let back: Outcome<CallToolResult> = reparse(&v);
    assert_eq!(back, Outcome::Complete(r));
}

fn interim() -> InputRequiredResult {
    let mut properties = BTreeMap::new();
    properties.insert(
        "name".to_owned(),
        PrimitiveSchemaDefinition::String(StringSchema {
            title: Some("Name".to_owned()),
            min_length: Some(1),
            format: None,
            ..StringSchema::default()
        }),
    );
    properties.insert(
        "email".to_owned(),
        PrimitiveSchemaDefinition::String(StringSchema {
            format: Some(StringFormat::Email),
            ..StringSchema::default()
        }),
    );
    properties.insert(
        "age".to_owned(),
        PrimitiveSchemaDefinition::Number(NumberSchema {
            number_type: NumberType::Integer,
            title: None,
            description: None,
            minimum: Some(18.into()),
            maximum: None,
            default: None,
        }),
    );
    properties.insert(
        "color".to_owned(),
        PrimitiveSchemaDefinition::TitledSingleSelect(TitledSingleSelectEnumSchema {
            one_of: vec![EnumOption {
                value: "#f00".to_owned(),
                title: "Red".to_owned(),
            }],
            ..TitledSingleSelectEnumSchema::default()
        }),
    );
    properties.insert(
        "tags".to_owned(),
        PrimitiveSchemaDefinition::UntitledMultiSelect(UntitledMultiSelectEnumSchema {
            items: UntitledEnumItems {
                values: vec!["a".to_owned(), "b".to_owned()],
            },
            max_items: Some(2),
            ..UntitledMultiSelectEnumSchema::default()
        }),
    );
    let form = ElicitRequestParams::Form(ElicitRequestFormParams {
        mode: None,
        message: "Who are you?".to_owned(),
        requested_schema: ElicitationSchema {
            schema: None,
            properties,
            required: Some(vec!["name".to_owned()]),
        },
        meta: None,
    });
    let url = ElicitRequestParams::Url(ElicitRequestUrlParams {
        message: "Connect your account".to_owned(),
        url: "https://example.com/connect".to_owned(),
        meta: None,
    });
    let sampling = CreateMessageRequestParams {
        messages: vec![
            SamplingMessage {
                role: Role::User,
                content: SamplingContent::Single(SamplingMessageContentBlock::Text(
                    TextContent::new("Weather in Paris?"),
                )),
                meta: None,
            },
            SamplingMessage {
                role: Role::Assistant,
                content: SamplingContent::Multiple(vec![SamplingMessageContentBlock::ToolUse(
                    ToolUseContent {
                        id: "call_1".to_owned(),
                        name: "get_weather".to_owned(),
                        input: json!({"city": "Paris"}).as_object().unwrap().clone(),
                        meta: None,
                    },
                )]),
                meta: None,
            },
        ],
        max_tokens: 200,
        tools: Some(vec![weather_tool()]),
        tool_choice: Some(ToolChoice {
            mode: Some(ToolChoiceMode::Auto),
        }),
        ..CreateMessageRequestParams::default()
    };
    let mut requests = InputRequests::new();
    requests.insert("who", InputRequest::Elicitation(form));
    requests.insert("connect", InputRequest::Elicitation(url));
    requests.insert("paris", InputRequest::Sampling(sampling));
    requests.insert("roots", InputRequest::ListRoots(None));
    let mut r = InputRequiredResult::new(Some(requests), Some("c3RhdGU".to_owned()));
    r.meta = Some(server_meta());
    r
}

#[test]
fn input_required_result_with_elicitation_sampling_roots_and_state() {
    let r = interim();
    let v = to_json(&r);
    assert_eq!(v["resultType"], "input_required", "MRTR-S3");
    assert!(
        v.get("ttlMs").is_none() && v.get("cacheScope").is_none(),
        "MRTR-S12"
    );
    assert_eq!(v["inputRequests"]["roots"], json!({"method": "roots/list"}));
    assert_eq!(v["inputRequests"]["connect"]["params"]["mode"], "url");
    assert_valid("InputRequiredResult", &v);
    assert_valid("CallToolResultResponse", &to_json(&response(&r)));
    for (key, request) in r.input_requests.as_ref().unwrap().iter() {
        assert_valid("InputRequest", &to_json(request));
        assert!(methods::INPUT_REQUESTS.contains(&request.method()), "{key}");
    }
    let back: Outcome<CallToolResult> = reparse(&v);
    assert_eq!(back, Outcome::InputRequired(r));
}

#[test]
fn retry_request_with_input_responses_validates() {
    let mut content = BTreeMap::new();
    content.insert("name".to_owned(), ElicitValue::String("Alice".to_owned()));
    content.insert("age".to_owned(), ElicitValue::Number(30.into()));
    content.insert(
        "tags".to_owned(),
        ElicitValue::StringArray(vec!["a".to_owned()]),
    );
    let mut answers = InputResponses::new();
    answers.insert(
        "who",
        &InputResponse::Elicit(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        }),
    );
    answers.insert(
        "connect",
        &InputResponse::Elicit(ElicitResult::new(ElicitAction::Decline)),
    );
    let request = TypedRequest {
        jsonrpc: JsonRpcVersion,
        id: RequestId::Number(2),
        method: methods::TOOLS_CALL.to_owned(),
        params: CallToolRequestParams {
            meta: request_meta(),
            name: "get_weather".to_owned(),
            arguments: Some(json!({"city": "Paris"}).as_object().unwrap().clone()),
            input_responses: Some(answers),
            request_state: Some("c3RhdGU".to_owned()),
        },
    };
    let v = to_json(&request);
    assert_valid("CallToolRequest", &v);
    let back: TypedRequest<CallToolRequestParams> = reparse(&v);
    assert_eq!(back.params, request.params);
}

#[test]
fn discover_result() {
    let r = DiscoverResult {
        supported_versions: vec![tern_types::PROTOCOL_VERSION.to_owned()],
        capabilities: ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(true),
            }),
            ..ServerCapabilities::default()
        },
        instructions: Some("Use get_weather for forecasts.".to_owned()),
        ttl_ms: 60_000,
        cache_scope: CacheScope::Public,
        meta: Some(server_meta()),
        ..DiscoverResult::default()
    };
    let v = to_json(&r);
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["ttlMs"], 60_000);
    assert_eq!(v["cacheScope"], "public");
    assert_valid("DiscoverResult", &v);
    assert_valid("DiscoverResultResponse", &to_json(&response(&r)));
    assert_eq!(reparse::<DiscoverResult>(&v), r);
}

#[test]
fn list_tools_result_keeps_every_schema_keyword() {
    let r = ListToolsResult {
        tools: vec![weather_tool()],
        next_cursor: Some("page-2".into()),
        ttl_ms: 0,
        cache_scope: CacheScope::Private,
        ..ListToolsResult::default()
    };
    let v = to_json(&r);
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["ttlMs"], 0, "ttlMs is written even when 0 (CACHE-S1)");
    assert_eq!(v["cacheScope"], "private");
    assert_valid("ListToolsResult", &v);
    assert_valid("ListToolsResultResponse", &to_json(&response(&r)));
    let schema = &v["tools"][0]["inputSchema"];
    for key in [
        "$schema",
        "$defs",
        "if",
        "then",
        "else",
        "additionalProperties",
    ] {
        assert!(schema.get(key).is_some(), "{key} survives");
    }
    assert_eq!(schema["$defs"]["unit"]["$anchor"], "unit");
    assert_eq!(reparse::<ListToolsResult>(&v), r);
}

fn error_response(error: ErrorObject) -> ErrorResponse {
    ErrorResponse {
        jsonrpc: JsonRpcVersion,
        id: Some(RequestId::String("r-1".to_owned())),
        error,
    }
}

#[test]
fn header_mismatch_error() {
    let e = error_response(ErrorObject::header_mismatch(
        "Mcp-Name header does not match params.name",
    ));
    let v = to_json(&e);
    assert_eq!(v["error"]["code"], -32020);
    assert_valid("HeaderMismatchError", &v);
    assert_valid("JSONRPCErrorResponse", &v);
    assert_eq!(reparse::<ErrorResponse>(&v), e);
}

#[test]
fn missing_required_client_capability_error() {
    let required = ClientCapabilities {
        elicitation: Some(ElicitationCapability {
            url: Some(Map::new()),
            form: None,
        }),
        ..ClientCapabilities::default()
    };
    let e = error_response(ErrorObject::missing_required_client_capability(
        "This tool needs URL elicitation",
        required.clone(),
    ));
    let v = to_json(&e);
    assert_eq!(v["error"]["code"], -32021);
    assert_eq!(
        v["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"url": {}}}}),
        "an object of objects (META-S10)"
    );
    assert_valid("MissingRequiredClientCapabilityError", &v);
    let back = reparse::<ErrorResponse>(&v);
    assert_eq!(
        back.error
            .missing_required_client_capability_data()
            .unwrap()
            .required_capabilities,
        required
    );
}

#[test]
fn unsupported_protocol_version_error() {
    let e = error_response(ErrorObject::unsupported_protocol_version(
        vec![tern_types::PROTOCOL_VERSION.to_owned()],
        "v999.0.0",
    ));
    let v = to_json(&e);
    assert_eq!(v["error"]["code"], -32022);
    assert_valid("UnsupportedProtocolVersionError", &v);
    let data = reparse::<ErrorResponse>(&v)
        .error
        .unsupported_protocol_version_data()
        .unwrap();
    assert_eq!(data.requested, "v999.0.0");
    assert_eq!(
        data.supported,
        vec![tern_types::PROTOCOL_VERSION.to_owned()]
    );
}

#[test]
fn read_resource_result_with_cache_hints() {
    let r = ReadResourceResult {
        contents: vec![ResourceContents::Text(TextResourceContents {
            uri: "file:///project/README.md".to_owned(),
            mime_type: Some("text/markdown".to_owned()),
            text: "# Tern".to_owned(),
            meta: None,
        })],
        ttl_ms: 30_000,
        cache_scope: CacheScope::Private,
        meta: Some(server_meta()),
        ..ReadResourceResult::default()
    };
    let v = to_json(&r);
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["ttlMs"], 30_000);
    assert_eq!(v["cacheScope"], "private");
    assert_valid("ReadResourceResult", &v);
    assert_valid("ReadResourceResultResponse", &to_json(&response(&r)));
    let back: Outcome<ReadResourceResult> = reparse(&v);
    assert_eq!(back, Outcome::Complete(r));
}

#[test]
fn get_prompt_result() {
    let r = GetPromptResult {
        description: Some("Code review".to_owned()),
        messages: vec![
            PromptMessage {
                role: Role::User,
                content: ContentBlock::text("Review this code"),
            },
            PromptMessage {
                role: Role::Assistant,
                content: ContentBlock::ResourceLink(tern_types::Resource {
                    uri: "file:///src/main.rs".to_owned(),
                    name: "main.rs".to_owned(),
                    ..tern_types::Resource::default()
                }),
            },
        ],
        ..GetPromptResult::default()
    };
    let v = to_json(&r);
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["messages"][1]["content"]["type"], "resource_link");
    assert_valid("GetPromptResult", &v);
    assert_valid("GetPromptResultResponse", &to_json(&response(&r)));
    let back: Outcome<GetPromptResult> = reparse(&v);
    assert_eq!(back, Outcome::Complete(r));
}

#[test]
fn listen_result_and_progress_notification() {
    let r = SubscriptionsListenResult::new(&RequestId::String("listen-1".to_owned()));
    let v = to_json(&r);
    assert_eq!(v["_meta"][meta_keys::SUBSCRIPTION_ID], "listen-1");
    assert_valid("SubscriptionsListenResult", &v);

    let n = TypedNotification {
        jsonrpc: JsonRpcVersion,
        method: methods::NOTIFICATIONS_PROGRESS.to_owned(),
        params: Some(ProgressNotificationParams {
            progress_token: ProgressToken::Number(3),
            progress: serde_json::Number::from_f64(0.5).unwrap(),
            total: Some(1.into()),
            message: None,
            meta: None,
        }),
    };
    assert_valid("ProgressNotification", &to_json(&n));
}

#[test]
fn fractional_elicitation_numbers_are_accepted_though_the_schema_rejects_them() {
    // DIGEST §11 A6: follow schema.ts (any number); schema.json allows only
    // integers, so this is the documented exception to schema validation.
    let v = json!({"action": "accept", "content": {"weight": 72.5}});
    let e: ElicitResult = reparse(&v);
    assert_eq!(to_json(&e), v);
    assert!(!schema_errors("ElicitResult", &v).is_empty());
    assert_eq!(
        ResultType::parse("input_required"),
        ResultType::InputRequired
    );
}
