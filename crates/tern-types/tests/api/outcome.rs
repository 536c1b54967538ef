//! `Outcome<T>` reads `resultType` first (DIGEST BASE-A3).

use serde_json::json;
use tern_types::{CallToolResult, ContentBlock, Outcome, ReadResourceResult, ResultType};

#[test]
fn absent_result_type_reads_as_complete() {
    // BASE-C13: a server of an earlier revision sends no resultType.
    let v = json!({"content": [{"type": "text", "text": "hi"}]});
    let o: Outcome<CallToolResult> = serde_json::from_value(v).unwrap();
    let Outcome::Complete(r) = o else {
        panic!("expected Complete, got {o:?}")
    };
    assert_eq!(r.result_type, ResultType::Complete);
    assert_eq!(r.content, vec![ContentBlock::text("hi")]);
    // Written back with resultType (BASE-S10).
    assert_eq!(serde_json::to_value(&r).unwrap()["resultType"], "complete");
}

#[test]
fn complete_reads_as_complete() {
    let v = json!({"resultType": "complete", "content": []});
    let o: Outcome<CallToolResult> = serde_json::from_value(v).unwrap();
    assert!(matches!(o, Outcome::Complete(_)));
    assert_eq!(o.result_type(), ResultType::Complete);
}

#[test]
fn input_required_reads_as_input_required() {
    // A complete CallToolResult needs `content`; an interim result has none,
    // and an untagged enum would have no way to choose when it did.
    let v = json!({"resultType": "input_required", "requestState": "abc"});
    let o: Outcome<CallToolResult> = serde_json::from_value(v.clone()).unwrap();
    let Outcome::InputRequired(r) = &o else {
        panic!("expected InputRequired, got {o:?}")
    };
    assert_eq!(r.request_state.as_deref(), Some("abc"));
    assert_eq!(serde_json::to_value(&o).unwrap(), v);
}

#[test]
fn input_required_is_not_taken_for_a_result_with_no_required_fields() {
    // ReadResourceResult needs `contents`, but an interim result that also
    // carried one must still be routed by resultType alone.
    let v = json!({"resultType": "input_required", "contents": [], "requestState": "s"});
    let o: Outcome<ReadResourceResult> = serde_json::from_value(v).unwrap();
    assert!(matches!(o, Outcome::InputRequired(_)));
}

#[test]
fn unknown_result_type_is_an_error_naming_it() {
    // BASE-C12.
    let v = json!({"resultType": "bogus", "content": []});
    let err = serde_json::from_value::<Outcome<CallToolResult>>(v).unwrap_err();
    assert!(err.to_string().contains("bogus"), "{err}");
}

#[test]
fn non_string_result_type_is_an_error() {
    let v = json!({"resultType": 7, "content": []});
    assert!(serde_json::from_value::<Outcome<CallToolResult>>(v).is_err());
}

#[test]
fn a_malformed_complete_result_is_an_error() {
    let v = json!({"resultType": "complete"});
    let err = serde_json::from_value::<Outcome<CallToolResult>>(v).unwrap_err();
    assert!(err.to_string().contains("content"), "{err}");
}

#[test]
fn cache_hints_missing_from_an_older_server_read_as_zero_and_private() {
    // CACHE-C5, A18.
    let v = json!({"contents": []});
    let r: ReadResourceResult = serde_json::from_value(v).unwrap();
    assert_eq!(r.ttl_ms, 0);
    assert_eq!(r.cache_scope, tern_types::CacheScope::Private);
    let v = json!({"contents": [], "ttlMs": -5, "cacheScope": "public"});
    let r: ReadResourceResult = serde_json::from_value(v).unwrap();
    assert_eq!(r.ttl_ms, 0, "negative ttlMs reads as 0 (CACHE-C5)");
}
