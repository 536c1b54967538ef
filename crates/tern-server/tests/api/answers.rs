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

async fn launch(ask: Ask) -> Result<ToolResult, Error> {
    ask.confirm("go", "Launch?")?.confirmed("the launch")?;
    Ok(ToolResult::text("launched"))
}

async fn named(ask: Ask) -> Result<ToolResult, Error> {
    let p = ask
        .form::<Profile>("profile", "Who are you?")?
        .or_tool_error("the profile")?;
    Ok(ToolResult::text(p.name))
}

/// The profile's key, written once.
const PROFILE: tern_server::FormKey<Profile> = tern_server::FormKey::new("who");

async fn keyed(ask: Ask) -> Result<ToolResult, Error> {
    let p = ask
        .all(PROFILE.ask("Who are you?"))?
        .or_tool_error("the profile")?;
    Ok(ToolResult::text(format!("{} ({:?})", p.name, p.color)))
}

static LAUNCHES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Asks a question that changes on every run: a counter in its message.
async fn counting(ask: Ask) -> Result<ToolResult, Error> {
    let n = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ask.confirm("go", &format!("Launch #{n}?"))?
        .confirmed("the launch")?;
    Ok(ToolResult::text("launched"))
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
            .tool("roots", "roots", roots)
            .tool("launch", "confirm", launch)
            .tool("named", "form or a tool error", named)
            .tool("counting", "a question that changes", counting)
            .tool("keyed", "a form under a typed key", keyed),
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
async fn a_root_that_climbs_or_names_another_host_never_reaches_the_handler() {
    // SECURITY.md §3.8, ROOT-1: an absolute local path, no `.`/`..`
    // segment (spelt out or percent-encoded), host empty or localhost.
    let h = harness();
    for (uri, why) in [
        ("file:///tmp/ws/../../etc", "has a . or .. segment"),
        ("file:///tmp/%2e%2e/etc", "has a . or .. segment"),
        ("file:///tmp/%2E%2e/etc", "has a . or .. segment"),
        ("file:///tmp/./ws", "has a . or .. segment"),
        ("file:///tmp/..", "has a . or .. segment"),
        (
            "file://attacker.example/share",
            "names a host other than localhost",
        ),
        (
            "file://127.0.0.1/share",
            "names a host other than localhost",
        ),
        ("file:///tmp/a%2fb", "encodes a path separator or NUL"),
        ("file:///tmp/a%5cb", "encodes a path separator or NUL"),
        ("file:///tmp/a%00", "encodes a path separator or NUL"),
        ("file:///tmp/a%zz", "has a malformed percent-encoding"),
        ("file:///tmp/a%2", "has a malformed percent-encoding"),
        ("file://", "has no absolute path"),
        ("file://localhost", "has no absolute path"),
        ("file:///tmp/x?y=1", "has a query or fragment"),
        ("file:tmp/x", "is not a file:// URI"),
    ] {
        let roots = json!({"roots": [{"uri": "file:///ok"}, {"uri": uri}]});
        let (code, e) = error(&answer(&h, "roots", json!({"roots": roots})).await);
        assert_eq!(code, -32602, "{uri}");
        assert_eq!(e["data"]["key"], "roots", "{uri}");
        assert_eq!(
            e["message"],
            format!("inputResponses.roots: root {uri:?} {why}"),
            "{uri}"
        );
    }
    // Local paths in any of their spellings still pass.
    let ok = json!({"roots": [
        {"uri": "file:///tmp/ws"}, {"uri": "FILE://LOCALHOST/tmp/ws"},
        {"uri": "file:///C:/Users/me"}, {"uri": "file:///tmp/a%20b/..x/.y"}]});
    let r = answer(&h, "roots", json!({"roots": ok})).await;
    assert_eq!(
        text(result(&r)),
        "file:///tmp/ws,FILE://LOCALHOST/tmp/ws,file:///C:/Users/me,file:///tmp/a%20b/..x/.y"
    );
}

#[tokio::test]
async fn every_sampling_content_block_is_checked_against_its_type() {
    // SECURITY.md §3.8: a block has every field its schema type requires.
    let h = harness();
    for (block, why) in [
        (
            json!({"type": "image"}),
            "content block 0: missing field `data`",
        ),
        (
            json!({"type": "image", "data": "aGk="}),
            "content block 0: missing field `mimeType`",
        ),
        (
            json!({"type": "image", "data": "not base64!", "mimeType": "image/png"}),
            "content block 0: data is not base64",
        ),
        (
            json!({"type": "audio", "mimeType": "audio/wav"}),
            "content block 0: missing field `data`",
        ),
        (
            json!({"type": "text"}),
            "content block 0: missing field `text`",
        ),
        (
            json!({"type": "text", "text": 4}),
            "content block 0: invalid type: integer `4`, expected a string",
        ),
        (
            json!({"type": "video"}),
            "content block 0: unknown variant `video`, expected one of `text`, `image`, `audio`, `tool_use`, `tool_result`",
        ),
    ] {
        let answer_ = json!({"role": "assistant", "content": block.clone(), "model": "m"});
        let (code, e) = error(&answer(&h, "sample", json!({"q": answer_})).await);
        assert_eq!(code, -32602, "{block}");
        assert_eq!(e["data"]["key"], "q", "{block}");
        assert_eq!(e["message"], format!("inputResponses.q: {why}"), "{block}");
    }
    // The second block of an array is named by its index.
    let two = json!({"role": "assistant", "model": "m", "content": [
        {"type": "text", "text": "4"}, {"type": "image", "mimeType": "image/png"}]});
    let (_, e) = error(&answer(&h, "sample", json!({"q": two})).await);
    assert_eq!(
        e["message"],
        "inputResponses.q: content block 1: missing field `data`"
    );
    let media = json!({"role": "assistant", "model": "m", "content": [
        {"type": "text", "text": "4"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "audio", "data": "", "mimeType": "audio/wav"}]});
    let r = answer(&h, "sample", json!({"q": media})).await;
    assert_eq!(text(result(&r)), "4 from m");
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

/// The tool error text of a complete result.
fn tool_error(reply: &(u16, Value)) -> String {
    let r = result(reply);
    assert_eq!(r["isError"], true, "{r}");
    text(r)
}

#[tokio::test]
async fn a_confirmation_is_a_form_of_one_boolean_with_four_outcomes() {
    let h = harness();
    let first = call("launch", json!({}), all_caps());
    let r = result(&h.send(&first).await);
    assert_eq!(
        r["inputRequests"]["go"],
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Launch?",
            "requestedSchema": {"type": "object",
                "properties": {"confirm": {"type": "boolean", "title": "Confirm"}},
                "required": ["confirm"]}}})
    );
    let yes = answer(
        &h,
        "launch",
        json!({"go": accept(json!({"confirm": true}))}),
    )
    .await;
    assert_eq!(text(result(&yes)), "launched");
    let no = answer(
        &h,
        "launch",
        json!({"go": accept(json!({"confirm": false}))}),
    )
    .await;
    assert_eq!(tool_error(&no), "the launch was not confirmed");
    let declined = answer(&h, "launch", json!({"go": {"action": "decline"}})).await;
    assert_eq!(tool_error(&declined), "the launch was declined");
    let cancelled = answer(&h, "launch", json!({"go": {"action": "cancel"}})).await;
    assert_eq!(tool_error(&cancelled), "the launch was cancelled");
    // The schema holds: an accept without the boolean is refused, naming
    // the key (MRTR-E-A2).
    let (code, e) = error(&answer(&h, "launch", json!({"go": accept(json!({}))})).await);
    assert_eq!(code, -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("go"), "{e}");
}

#[tokio::test]
async fn or_tool_error_keeps_decline_and_cancel_apart() {
    let h = harness();
    let ok = answer(
        &h,
        "named",
        json!({"profile": accept(json!({"name": "Ada"}))}),
    )
    .await;
    assert_eq!(text(result(&ok)), "Ada");
    let declined = answer(&h, "named", json!({"profile": {"action": "decline"}})).await;
    assert_eq!(tool_error(&declined), "the profile was declined");
    let cancelled = answer(&h, "named", json!({"profile": {"action": "cancel"}})).await;
    assert_eq!(tool_error(&cancelled), "the profile was cancelled");
}

#[tokio::test]
async fn a_question_that_changes_between_rounds_is_asked_again_and_said_why() {
    // MRTR-S8: the answer to "Launch #0?" does not count for "Launch #1?".
    let (logs, _guard) = tern_testkit::logs::Captured::start();
    let h = harness();
    let (first, state) = round_one(&h, "counting").await;
    let asked = |r: &Value| r["inputRequests"]["go"]["params"]["message"].clone();
    let again = result(
        &h.send(&retry(
            &first,
            Some(&state),
            json!({"go": accept(json!({"confirm": true}))}),
        ))
        .await,
    );
    assert_eq!(again["resultType"], "input_required", "{again}");
    let n: u32 = asked(&again).as_str().unwrap()[8..]
        .trim_end_matches('?')
        .parse()
        .unwrap();
    assert!(n >= 1, "{again}");
    let line = logs.line("changed since the round that asked it");
    assert!(line.contains("WARN") && line.contains("key=go"), "{line}");
}

#[tokio::test]
async fn a_typed_key_asks_its_form_and_types_its_answer() {
    let h = harness();
    let (first, state) = round_one(&h, "keyed").await;
    let asked = result(&h.send(&first).await);
    let keys: Vec<&String> = asked["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, [PROFILE.name()]);
    assert_eq!(
        asked["inputRequests"]["who"]["params"]["requestedSchema"]["required"],
        json!(["name"])
    );
    let reply = h
        .send(&retry(
            &first,
            Some(&state),
            json!({"who": accept(json!({"name": "Ada", "color": "red"}))}),
        ))
        .await;
    assert_eq!(text(result(&reply)), "Ada (Some(Red))");
    assert_eq!(format!("{PROFILE:?}"), "FormKey(\"who\")");
}
