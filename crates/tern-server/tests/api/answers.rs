//! Validating `inputResponses` (MRTR-E1..E4, MRTR-E-A2, SECURITY.md §3.8,
//! ELIC-S7, ELIC-S12).

use serde_json::{Value, json};
use tern_server::{Ask, Elicited, Error, Need, Server, ToolResult};

use super::support::*;

async fn profile(ask: Ask) -> Result<ToolResult, Error> {
    Ok(ToolResult::text(
        match ask.form::<Profile>("profile", "Who are you?")? {
            Elicited::Accepted(p) => format!("{} {:?} {:?}", p.name, p.age, p.color),
            Elicited::Declined => "declined".into(),
            Elicited::Cancelled => "cancelled".into(),
        },
    ))
}

async fn sample(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text("q", "2+2?", 10))?;
    Ok(ToolResult::text(format!("{} from {}", s.text(), s.model)))
}

async fn roots(ask: Ask) -> Result<ToolResult, Error> {
    let r = ask.all(Need::roots("roots"))?;
    Ok(ToolResult::text(
        r.iter()
            .map(|r| r.uri.as_str())
            .collect::<Vec<_>>()
            .join(","),
    ))
}

async fn round_one(h: &Harness, name: &str) -> (Value, Value) {
    let first = call(name, json!({}), all_caps());
    let r = result(&h.send(&first).await);
    assert_eq!(r["resultType"], "input_required");
    (first, r["requestState"].clone())
}

fn harness() -> Harness {
    Harness::new(
        Server::builder("t", "1")
            .tool("profile", "form", profile)
            .tool("sample", "sampling", sample)
            .tool("roots", "roots", roots),
    )
}

async fn answer(h: &Harness, name: &str, responses: Value) -> (u16, Value) {
    let (first, state) = round_one(h, name).await;
    h.send(&retry(&first, Some(&state), responses)).await
}

#[tokio::test]
async fn valid_form_content_is_typed_and_unknown_properties_dropped() {
    let h = harness();
    let reply = answer(
        &h,
        "profile",
        json!({"profile": accept(json!({"name": "Ada", "age": 36, "color": "blue", "shoe": 42}))}),
    )
    .await;
    assert_eq!(text(result(&reply)), "Ada Some(36) Some(Blue)");
}

#[tokio::test]
async fn accept_decline_and_cancel_are_three_outcomes() {
    // ELIC-S12, MRTR-E4; ELIC-A1: content with decline is discarded.
    let h = harness();
    let declined = answer(
        &h,
        "profile",
        json!({"profile": {"action": "decline", "content": {"name": 5}}}),
    )
    .await;
    assert_eq!(text(result(&declined)), "declined");
    let cancelled = answer(
        &h,
        "profile",
        json!({"profile": {"action": "cancel", "content": null}}),
    )
    .await;
    assert_eq!(text(result(&cancelled)), "cancelled");
}

#[tokio::test]
async fn content_that_violates_the_schema_is_invalid_params() {
    // MRTR-E-A2: never a complete result from a failed answer; data names
    // the key, the pointer and the rule.
    let h = harness();
    for (content, pointer, rule) in [
        (json!({"name": 12}), "/name", "type"),
        (json!({}), "", "required"),
        (
            json!({"name": "much too long a name"}),
            "/name",
            "maxLength",
        ),
        (json!({"name": "Ada", "age": 200}), "/age", "maximum"),
        (json!({"name": "Ada", "age": 1.5}), "/age", "type"),
        (json!({"name": "Ada", "color": "green"}), "/color", "enum"),
    ] {
        let reply = answer(&h, "profile", json!({"profile": accept(content.clone())})).await;
        let (code, e) = error(&reply);
        assert_eq!(code, -32602, "{content}");
        assert_eq!(
            e["data"],
            json!({"key": "profile", "pointer": pointer, "rule": rule}),
            "{content}"
        );
    }
}

#[tokio::test]
async fn malformed_answers_are_invalid_params_naming_the_key() {
    // MRTR-E1, MRTR-E-A2.
    let h = harness();
    for bad in [
        json!(12345),
        json!({"action": "maybe"}),
        json!({"content": {}}),
        json!({"action": "accept", "content": "x"}),
    ] {
        let (code, e) = error(&answer(&h, "profile", json!({"profile": bad.clone()})).await);
        assert_eq!(code, -32602, "{bad}");
        assert_eq!(e["data"]["key"], "profile", "{bad}");
    }
    for bad in [
        json!({"role": "user", "content": {"type": "text", "text": "4"}, "model": "m"}),
        json!({"role": "assistant", "content": {"type": "text", "text": "4"}}),
        json!({"role": "assistant", "content": {"type": "video"}, "model": "m"}),
    ] {
        assert_eq!(
            error(&answer(&h, "sample", json!({"q": bad.clone()})).await).0,
            -32602,
            "{bad}"
        );
    }
    for bad in [
        json!({"roots": [{"uri": "https://example.com"}]}),
        json!({"roots": "file:///x"}),
        json!([]),
    ] {
        assert_eq!(
            error(&answer(&h, "roots", json!({"roots": bad.clone()})).await).0,
            -32602,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn sampling_and_roots_answers_complete() {
    let h = harness();
    let s = answer(&h, "sample", json!({"q": {"role": "assistant", "content": [{"type": "text", "text": "4"}], "model": "m1", "stopReason": "endTurn"}})).await;
    assert_eq!(text(result(&s)), "4 from m1");
    let r = answer(
        &h,
        "roots",
        json!({"roots": {"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "FILE:///b"}]}}),
    )
    .await;
    assert_eq!(text(result(&r)), "file:///a,FILE:///b");
}

#[tokio::test]
async fn a_missing_answer_is_asked_again_and_unknown_keys_ignored() {
    // MRTR-E2, MRTR-E3.
    let h = harness();
    let reply = answer(
        &h,
        "profile",
        json!({"wrong_key": accept(json!({})), "other": 5}),
    )
    .await;
    let r = result(&reply);
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(
        r["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["profile"]
    );
}

#[tokio::test]
async fn input_responses_must_be_a_bounded_object() {
    // MRTR-E-A2, SECURITY.md §3.8.
    let h = harness();
    for bad in [Value::Null, json!([]), json!("x")] {
        let (first, state) = round_one(&h, "profile").await;
        let (code, _) = error(&h.send(&retry(&first, Some(&state), bad.clone())).await);
        assert_eq!(code, -32602, "{bad}");
    }
    let many: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("k{i}"), json!({}))).collect();
    let (code, _) = error(&answer(&h, "profile", Value::Object(many)).await);
    assert_eq!(code, -32602);
}
