//! The accept pipeline of DIGEST HTTP-A5, checked case by case.

use serde_json::{Value, json};
use tern_proto::accept::{Accepted, Envelope, accept_request, method_not_found};
use tern_proto::{McpError, McpHeaders};
use tern_types::methods::Method;
use tern_types::{ErrorCode, Request};

fn supported() -> Vec<String> {
    vec!["2026-07-28".to_owned()]
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": {"listChanged": true}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    })
}

fn request(method: &str, params: Value) -> Request {
    serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .unwrap()
}

fn headers(method: &str) -> McpHeaders {
    McpHeaders {
        protocol_version: Some("2026-07-28".into()),
        method: Some(method.into()),
        ..McpHeaders::default()
    }
}

/// Every method is offered.
fn resolve(e: Envelope, h: Option<&McpHeaders>) -> Result<Accepted, McpError> {
    e.resolve(h, |_| true, &supported())
}

fn reject(req: Request, h: Option<&McpHeaders>) -> (ErrorCode, u16, McpError) {
    let e = accept_request(req, h, &supported()).unwrap_err();
    (e.code(), e.http_status(), e)
}

#[test]
fn a_well_formed_request_is_accepted() {
    let a = accept_request(
        request("tools/list", json!({"_meta": meta()})),
        Some(&headers("tools/list")),
        &supported(),
    )
    .unwrap();
    assert_eq!(a.method_name(), "tools/list");
    let a = resolve(a, Some(&headers("tools/list"))).unwrap();
    assert_eq!(a.method, Method::ToolsList);
    assert!(a.meta.client_capabilities.sampling());
    assert!(!a.meta.client_capabilities.elicitation_form());
    assert_eq!(a.meta.client_info.unwrap().name, "t");
}

#[test]
fn missing_version_header_is_header_mismatch() {
    // HTTP-A5 step 6, COMPAT-S4.
    let mut h = headers("tools/list");
    h.protocol_version = None;
    let (code, status, _) = reject(request("tools/list", json!({"_meta": meta()})), Some(&h));
    assert_eq!((code, status), (ErrorCode(-32020), 400));
}

#[test]
fn missing_meta_keys_are_invalid_params_with_400() {
    // META-S7 and its conformance line: header present and valid.
    let h = headers("tools/list");
    let mut no_version = meta();
    no_version
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/protocolVersion");
    let mut no_caps = meta();
    no_caps
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    for params in [
        json!({}),
        json!({"_meta": no_version}),
        json!({"_meta": no_caps}),
        json!({"_meta": 5}),
    ] {
        let (code, status, _) = reject(request("tools/list", params.clone()), Some(&h));
        assert_eq!((code, status), (ErrorCode(-32602), 400), "{params}");
    }
    // BASE-9: no params at all.
    let req: Request =
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).unwrap();
    assert_eq!(reject(req, None).0, ErrorCode(-32602));
}

#[test]
fn client_info_is_optional() {
    // META-S7 conformance: a _meta without clientInfo is served.
    let mut m = meta();
    m.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let a = accept_request(
        request("tools/list", json!({"_meta": m})),
        Some(&headers("tools/list")),
        &supported(),
    )
    .unwrap();
    assert!(a.meta().client_info.is_none());
}

#[test]
fn version_checks_compare_before_support() {
    // DIGEST §11 A2: header 2026-07-28 with v999 in _meta is -32020, both
    // v999 is -32022 with requested and supported.
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let (code, ..) = reject(
        request("server/discover", json!({"_meta": m.clone()})),
        Some(&headers("server/discover")),
    );
    assert_eq!(code, ErrorCode(-32020));
    let mut h = headers("server/discover");
    h.protocol_version = Some("v999.0.0".into());
    let (code, status, e) = reject(
        request("server/discover", json!({"_meta": m.clone()})),
        Some(&h),
    );
    assert_eq!((code, status), (ErrorCode(-32022), 400));
    assert_eq!(
        e.to_error_object().data,
        Some(json!({"supported": ["2026-07-28"], "requested": "v999.0.0"}))
    );
    // stdio: no header step, straight to -32022 (VER-S2).
    assert_eq!(
        reject(request("server/discover", json!({"_meta": m})), None).0,
        ErrorCode(-32022)
    );
}

#[test]
fn mcp_method_header_must_match_exactly() {
    // HTTP-S11: missing, different, or differing in case.
    for bad in [None, Some("prompts/list"), Some("TOOLS/LIST")] {
        let mut h = headers("tools/list");
        h.method = bad.map(str::to_owned);
        let (code, status, _) = reject(request("tools/list", json!({"_meta": meta()})), Some(&h));
        assert_eq!((code, status), (ErrorCode(-32020), 400), "{bad:?}");
    }
}

#[test]
fn mcp_name_header_is_checked_after_decoding() {
    let h = headers("tools/call");
    let a = accept_request(
        request("tools/call", json!({"_meta": meta(), "name": "héllo"})),
        Some(&h),
        &supported(),
    )
    .unwrap();
    let with = |name: Option<&str>| McpHeaders {
        name: name.map(str::to_owned),
        ..h.clone()
    };
    assert!(resolve(a.clone(), Some(&with(Some("=?base64?aMOpbGxv?=")))).is_ok());
    for bad in [None, Some("hello"), Some("=?base64?aMOpbGxv?")] {
        let e = resolve(a.clone(), Some(&with(bad))).unwrap_err();
        assert_eq!(
            (e.code(), e.http_status()),
            (ErrorCode(-32020), 400),
            "{bad:?}"
        );
    }
    // No header layer on stdio.
    assert!(resolve(a, None).is_ok());
}

#[test]
fn mrtr_fields_only_on_the_three_methods() {
    // MRTR-S-A3.
    let a = accept_request(
        request("tools/list", json!({"_meta": meta(), "requestState": "x"})),
        None,
        &supported(),
    )
    .unwrap();
    assert_eq!(resolve(a, None).unwrap_err().code(), ErrorCode(-32602));
    let a = accept_request(
        request(
            "tools/call",
            json!({"_meta": meta(), "name": "t", "requestState": "x"}),
        ),
        None,
        &supported(),
    )
    .unwrap();
    assert!(resolve(a, None).is_ok());
}

#[test]
fn bad_log_level_and_progress_token_are_invalid_params() {
    // LOG-S4, PROG-C1.
    let mut m = meta();
    m["io.modelcontextprotocol/logLevel"] = json!("loud");
    assert_eq!(
        reject(request("tools/list", json!({"_meta": m})), None).0,
        ErrorCode(-32602)
    );
    let mut m = meta();
    m["progressToken"] = json!(1.5);
    assert_eq!(
        reject(request("tools/list", json!({"_meta": m})), None).0,
        ErrorCode(-32602)
    );
    let mut m = meta();
    m["io.modelcontextprotocol/logLevel"] = json!("warning");
    let a = accept_request(
        request("tools/list", json!({"_meta": m})),
        None,
        &supported(),
    )
    .unwrap();
    assert_eq!(a.meta().log_level, Some(3));
}

#[test]
fn initialize_errors_name_the_supported_versions() {
    // COMPAT-S-A1: legacy-shaped initialize over HTTP fails at step 6 with
    // -32020 and data.supported; on stdio with -32602.
    let legacy = request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    let mut h = headers("initialize");
    h.protocol_version = None;
    let (code, status, e) = reject(legacy.clone(), Some(&h));
    assert_eq!((code, status), (ErrorCode(-32020), 400));
    let obj = e.to_error_object();
    assert!(obj.message.contains("2026-07-28"), "{}", obj.message);
    assert_eq!(obj.data, Some(json!({"supported": ["2026-07-28"]})));
    let (code, _, e) = reject(legacy, None);
    assert_eq!(code, ErrorCode(-32602));
    assert_eq!(
        e.to_error_object().data,
        Some(json!({"supported": ["2026-07-28"]}))
    );
    // Modern-shaped initialize is an unknown method: -32601 / 404.
    let e = method_not_found("initialize", &supported());
    assert_eq!((e.code(), e.http_status()), (ErrorCode(-32601), 404));
    assert!(e.to_error_object().message.contains("2026-07-28"));
}

#[test]
fn an_unknown_or_unoffered_method_is_method_not_found() {
    // HTTP-A5 step 11 comes after the envelope steps and before step 12.
    let e = accept_request(
        request("tools/unknown", json!({"_meta": meta()})),
        None,
        &supported(),
    )
    .unwrap();
    let err = resolve(e, None).unwrap_err();
    assert_eq!((err.code(), err.http_status()), (ErrorCode(-32601), 404));
    let e = accept_request(
        request("prompts/get", json!({"_meta": meta(), "name": "p"})),
        Some(&headers("prompts/get")),
        &supported(),
    )
    .unwrap();
    // Not offered: -32601 even though Mcp-Name is missing (step 11 first).
    let err = e
        .resolve(
            Some(&headers("prompts/get")),
            |m| m != Method::PromptsGet,
            &supported(),
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode(-32601));
}
