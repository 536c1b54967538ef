//! The 2025-11-25 messages a dual-era peer exchanges, checked against that
//! revision's `schema.json` (COMPAT-A2).

use serde_json::{Value, json};
use tern_types::Implementation;
use tern_types::legacy::{
    InitializeRequestParams, InitializeResult, SetLevelRequestParams, SubscribeRequestParams,
    negotiate_version,
};

use super::support::assert_legacy_valid;

#[test]
fn an_sdk_client_s_initialize_parses_with_its_capabilities() {
    // What a 2025-11-25 SDK client sends: roots.listChanged, elicitation
    // modes, sampling, and an unknown capability.
    let params = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "roots": {"listChanged": true},
            "sampling": {},
            "elicitation": {"form": {}, "url": {}},
            "tasks": {"requests": {}}
        },
        "clientInfo": {"name": "sdk-client", "version": "1.32.0"}
    });
    assert_legacy_valid(
        "InitializeRequest",
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}),
    );
    let p: InitializeRequestParams = serde_json::from_value(params).unwrap();
    assert_eq!(p.protocol_version, "2025-11-25");
    assert!(p.capabilities.roots() && p.capabilities.sampling());
    assert!(p.capabilities.elicitation_form() && p.capabilities.elicitation_url());
    assert_eq!(p.client_info.name, "sdk-client");
    // An empty elicitation object means form mode (2025-11-25 elicitation).
    let bare: InitializeRequestParams = serde_json::from_value(json!({
        "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "c", "version": "1"}}))
    .unwrap();
    assert!(bare.capabilities.elicitation_form() && !bare.capabilities.elicitation_url());
}

#[test]
fn the_initialize_result_validates_against_the_legacy_schema() {
    let result = InitializeResult {
        protocol_version: negotiate_version("2024-11-05").to_owned(),
        capabilities: serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {}
        }))
        .unwrap(),
        server_info: Implementation::new("tern", "0.1.0"),
        instructions: Some("Use deploy to ship.".into()),
        meta: None,
    };
    let v = serde_json::to_value(&result).unwrap();
    assert_eq!(v["protocolVersion"], "2025-11-25");
    assert_legacy_valid("InitializeResult", &v);
    assert_legacy_valid(
        "JSONRPCResponse",
        &json!({"jsonrpc": "2.0", "id": 0, "result": v}),
    );
}

#[test]
fn set_level_and_subscribe_params_round_trip() {
    let level: SetLevelRequestParams = serde_json::from_value(json!({"level": "warning"})).unwrap();
    assert_legacy_valid(
        "SetLevelRequest",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
                "params": serde_json::to_value(&level).unwrap()}),
    );
    assert!(serde_json::from_value::<SetLevelRequestParams>(json!({"level": "loud"})).is_err());
    let sub: SubscribeRequestParams =
        serde_json::from_value(json!({"uri": "test://watched-resource"})).unwrap();
    assert_legacy_valid(
        "SubscribeRequest",
        &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                "params": serde_json::to_value(&sub).unwrap()}),
    );
    assert_eq!(
        serde_json::to_value(&sub).unwrap(),
        json!({"uri": "test://watched-resource"})
    );
    let _: Value = serde_json::to_value(level).unwrap();
}
