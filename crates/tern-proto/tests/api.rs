//! The accept pipeline of DIGEST HTTP-A5, checked case by case.

use std::path::PathBuf;

use serde_json::{Value, json};
use tern_proto::accept::{Accepted, Envelope, accept, method_not_found};
use tern_proto::decode::{Limits, Message, decode, decode_message};
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
    let e = accept(req, None, h, &supported()).unwrap_err();
    (e.code(), e.http_status(), e)
}

#[test]
fn a_well_formed_request_is_accepted() {
    let a = accept(
        request("tools/list", json!({"_meta": meta()})),
        None,
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
    let a = accept(
        request("tools/list", json!({"_meta": m})),
        None,
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
    let a = accept(
        request("tools/call", json!({"_meta": meta(), "name": "héllo"})),
        None,
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
    let a = accept(
        request("tools/list", json!({"_meta": meta(), "requestState": "x"})),
        None,
        None,
        &supported(),
    )
    .unwrap();
    assert_eq!(resolve(a, None).unwrap_err().code(), ErrorCode(-32602));
    let a = accept(
        request(
            "tools/call",
            json!({"_meta": meta(), "name": "t", "requestState": "x"}),
        ),
        None,
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
    let a = accept(
        request("tools/list", json!({"_meta": m})),
        None,
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
    let e = accept(
        request("tools/unknown", json!({"_meta": meta()})),
        None,
        None,
        &supported(),
    )
    .unwrap();
    let err = resolve(e, None).unwrap_err();
    assert_eq!((err.code(), err.http_status()), (ErrorCode(-32601), 404));
    let e = accept(
        request("prompts/get", json!({"_meta": meta(), "name": "p"})),
        None,
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

/// What a body comes to through decoding and HTTP-A5 steps 6–12: the
/// accepted request, or the error and the id it would echo.
type Verdict = Result<Accepted, (Option<tern_types::RequestId>, McpError)>;

/// Decoded with `_meta` left in the params, then accepted.
fn through_the_tree(body: &[u8], h: Option<&McpHeaders>) -> Verdict {
    let msg = decode_message(body, &Limits::default()).map_err(|e| (e.id, e.error))?;
    let Message::Request(req) = msg else {
        return Err((None, McpError::InvalidRequest("not a request".into())));
    };
    let id = req.id.clone();
    accept(req, None, h, &supported())
        .and_then(|e| resolve(e, h))
        .map_err(|e| (Some(id), e))
}

/// Decoded with `_meta` read at decoding time, then accepted.
fn read_while_decoding(body: &[u8], h: Option<&McpHeaders>) -> (Verdict, bool) {
    let d = match decode(body, &Limits::default()) {
        Ok(d) => d,
        Err(e) => return (Err((e.id, e.error)), false),
    };
    let Message::Request(req) = d.message else {
        return (
            Err((None, McpError::InvalidRequest("not a request".into()))),
            false,
        );
    };
    let id = req.id.clone();
    let read = d.meta.is_some();
    if read {
        assert!(
            !req.params.as_ref().is_some_and(|p| p.contains_key("_meta")),
            "a read _meta is taken out of the params"
        );
    }
    let envelope = accept(req, d.meta, h, &supported());
    (
        envelope
            .and_then(|e| resolve(e, h))
            .map_err(|e| (Some(id), e)),
        read,
    )
}

#[test]
fn reading_meta_while_decoding_accepts_and_refuses_exactly_as_the_tree_does() {
    // SECURITY.md §3.4, §3.8: the `_meta` read through the per-thread cache
    // must give what parsing those bytes strictly and reading them gives,
    // error for error, id for id, on the first sight and on the next.
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut m = meta();
        edit(&mut m);
        m
    };
    let call = |meta: Value| {
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "deploy", "arguments": {"a": 1}, "_meta": meta}})
        .to_string()
    };
    // Raw text put first into an otherwise valid `_meta`, so only it
    // can make the request fail.
    let inject = |text: &str| {
        let version = r#""io.modelcontextprotocol/protocolVersion""#;
        call(meta()).replace(version, &format!("{text},{version}"))
    };
    // `_meta` is depth 3, so `n` arrays in it reach depth 3 + n.
    let nested = |n: usize| inject(&format!(r#""x":{}1{}"#, "[".repeat(n), "]".repeat(n)));
    let mut cases: Vec<(String, String, bool)> = vec![
        ("well formed".into(), call(meta()), true),
        (
            "trace context and an extension key".into(),
            call(with(&|m| {
                m["traceparent"] = json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
                m["com.example/x"] = json!({"k": [1, 2]});
            })),
            true,
        ),
        (
            "a progress token".into(),
            call(with(&|m| m["progressToken"] = json!("p-1"))),
            true,
        ),
        (
            "a log level".into(),
            call(with(&|m| {
                m["io.modelcontextprotocol/logLevel"] = json!("error");
            })),
            true,
        ),
        (
            "no version".into(),
            call(with(&|m| {
                m.as_object_mut()
                    .unwrap()
                    .remove("io.modelcontextprotocol/protocolVersion");
            })),
            false,
        ),
        (
            "a number for the version".into(),
            call(with(&|m| {
                m["io.modelcontextprotocol/protocolVersion"] = json!(2026);
            })),
            false,
        ),
        (
            "an unsupported version".into(),
            call(with(&|m| {
                m["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
            })),
            true,
        ),
        (
            "capabilities of the wrong shape".into(),
            call(with(&|m| {
                m["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": 5});
            })),
            false,
        ),
        (
            "an unknown log level".into(),
            call(with(&|m| {
                m["io.modelcontextprotocol/logLevel"] = json!("loud");
            })),
            false,
        ),
        (
            "a fractional progress token".into(),
            call(with(&|m| m["progressToken"] = json!(1.5))),
            false,
        ),
        ("_meta not an object".into(), call(json!([1])), false),
        (
            "_meta twice".into(),
            format!(
                r#"{{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{{"_meta":{m},"_meta":{m}}}}}"#,
                m = meta()
            ),
            false,
        ),
        (
            "a key twice inside _meta".into(),
            inject(r#""a":1,"a":2"#),
            false,
        ),
        ("_meta at the depth limit".into(), nested(61), true),
        ("_meta one past the depth limit".into(), nested(62), false),
        ("_meta nested far too deeply".into(), nested(200), false),
        (
            "a lone surrogate inside _meta".into(),
            inject(r#""a":"\ud800""#),
            false,
        ),
        (
            "a notification".into(),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"_meta": meta(), "requestId": 1}})
            .to_string(),
            false,
        ),
    ];
    // The message object's own members, each way a request can be off:
    // (name, the members before params, whether it is still read).
    let m = meta();
    for (name, members, read) in [
        (
            "a string id",
            r#""jsonrpc":"2.0","id":"a","method":"tools/list""#,
            true,
        ),
        (
            "members in another order",
            r#""method":"tools/list","id":1,"jsonrpc":"2.0""#,
            true,
        ),
        (
            "an extra member",
            r#""jsonrpc":"2.0","id":1,"method":"tools/list","x":[1]"#,
            false,
        ),
        (
            "the id twice",
            r#""jsonrpc":"2.0","id":1,"id":2,"method":"tools/list""#,
            false,
        ),
        (
            "the method twice",
            r#""jsonrpc":"2.0","id":1,"method":"a","method":"tools/list""#,
            false,
        ),
        (
            "jsonrpc 1.0",
            r#""jsonrpc":"1.0","id":1,"method":"tools/list""#,
            false,
        ),
        ("no jsonrpc", r#""id":1,"method":"tools/list""#, false),
        (
            "a null id",
            r#""jsonrpc":"2.0","id":null,"method":"tools/list""#,
            false,
        ),
        (
            "a fractional id",
            r#""jsonrpc":"2.0","id":1.5,"method":"tools/list""#,
            false,
        ),
        (
            "an id past i64",
            r#""jsonrpc":"2.0","id":18446744073709551615,"method":"tools/list""#,
            false,
        ),
        (
            "a numeric method",
            r#""jsonrpc":"2.0","id":1,"method":7"#,
            false,
        ),
        (
            "an escaped member name",
            r#""jsonrpc":"2.0","\u0069d":1,"method":"tools/list""#,
            true,
        ),
    ] {
        cases.push((
            name.into(),
            format!(r#"{{{members},"params":{{"_meta":{m}}}}}"#),
            read,
        ));
    }
    cases.push((
        "params twice".into(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{}},"params":{{"_meta":{m}}}}}"#),
        false,
    ));
    cases.push((
        "params an array".into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}"#.into(),
        false,
    ));
    cases.push((
        "a batch".into(),
        format!(r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{m}}}}}]"#),
        false,
    ));
    // Every request among the revision's examples.
    let examples =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/2026-07-28/examples");
    let mut dirs: Vec<_> = std::fs::read_dir(&examples)
        .unwrap_or_else(|e| panic!("read {}: {e}", examples.display()))
        .map(|d| d.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with("Request")
        })
        .collect();
    dirs.sort();
    for dir in &dirs {
        for file in std::fs::read_dir(dir).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            // Those a server accepts are read while decoding; the rest
            // (a server's own requests) must fail the same way.
            let accepted = through_the_tree(text.as_bytes(), None).is_ok();
            cases.push((path.display().to_string(), text, accepted));
        }
    }
    assert!(dirs.len() >= 10, "the examples hold requests: {dirs:?}");
    assert!(
        cases.iter().filter(|c| c.2).count() >= 15,
        "most of the examples are accepted"
    );
    for (name, body, read) in &cases {
        let body = body.as_bytes();
        let method: Option<String> = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v["method"].as_str().map(str::to_owned));
        let h = method.as_deref().map(headers);
        for h in [None, h.as_ref()] {
            let expected = through_the_tree(body, h);
            // Twice: parsed and read the first time, remembered the next.
            for sight in ["first", "second"] {
                let (got, was_read) = read_while_decoding(body, h);
                assert_eq!(got, expected, "{name}, {sight} sight, headers {h:?}");
                if *read {
                    assert!(was_read, "{name}: _meta read while decoding");
                }
            }
        }
    }
}

#[test]
fn a_read_meta_keeps_only_the_keys_it_did_not_read() {
    let mut m = meta();
    m["traceparent"] = json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    m["progressToken"] = json!(7);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": m}});
    let d = decode(body.to_string().as_bytes(), &Limits::default()).unwrap();
    let meta = d.meta.expect("read while decoding");
    assert_eq!(meta.protocol_version, "2026-07-28");
    assert_eq!(meta.progress_token, Some(json!(7)));
    assert_eq!(
        Value::Object(meta.raw),
        json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    );
}

mod fast_path {
    //! The fast path of decoding gives what the general path gives, for any
    //! bytes (STYLE.md: a cache proven equal to what it caches).

    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tern_proto::decode::{Limits, decode, decode_uncached};

    /// JSON values of the shapes `_meta` and params take, small and deep.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z0-9./-]{0,12}".prop_map(Value::from),
            Just(json!("2026-07-28")),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-zA-Z_/.]{0,10}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A `_meta` that usually reads, sometimes with one part wrong.
    fn meta() -> impl Strategy<Value = Value> {
        (value(), 0u8..8, any::<Option<u16>>()).prop_map(|(extra, broken, token)| {
            let mut m = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "p", "version": "1"},
                "x/extra": extra,
            });
            match broken {
                0 => m["io.modelcontextprotocol/protocolVersion"] = json!(1),
                1 => m["io.modelcontextprotocol/clientCapabilities"] = json!([]),
                2 => m["io.modelcontextprotocol/logLevel"] = json!("loud"),
                3 => m["io.modelcontextprotocol/logLevel"] = json!("info"),
                _ => {}
            }
            if let Some(t) = token {
                m["progressToken"] = json!(t);
            }
            m
        })
    }

    /// Request bodies, some with a member the fast path does not take, some
    /// cut short or with a duplicated `_meta`.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        (meta(), value(), 0u8..10, "[a-z/]{1,16}").prop_map(|(meta, args, shape, method)| {
            let msg = json!({"jsonrpc": "2.0", "id": 3, "method": method,
                             "params": {"name": "t", "arguments": args, "_meta": meta}});
            let mut text = msg.to_string();
            match shape {
                0 => text = text.replacen("\"jsonrpc\"", "\"extra\":1,\"jsonrpc\"", 1),
                1 => text.truncate(text.len() / 2),
                2 => text = text.replacen("\"_meta\":", "\"_meta\":{},\"_meta\":", 1),
                3 => text = text.replacen("\"id\":3", "\"id\":null", 1),
                _ => {}
            }
            text.into_bytes()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_fast_path_decodes_as_the_general_path_does(b in body(), depth in 3usize..12) {
            let limits = Limits { max_bytes: 1 << 20, max_depth: depth };
            // Twice: the second sight of a `_meta` comes from the cache.
            for _ in 0..2 {
                prop_assert_eq!(decode(&b, &limits), decode_uncached(&b, &limits));
            }
        }
    }
}
