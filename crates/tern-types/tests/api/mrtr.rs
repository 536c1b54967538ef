//! Input requests and responses (DIGEST §4.2, §4.6).

use serde::Deserialize as _;
use serde_json::json;
use tern_types::{
    CallToolRequestParams, ElicitAction, ElicitRequestParams, ElicitResult, ElicitValue,
    InputRequest, InputResponse, InputResponses, methods,
};

#[test]
fn roots_list_without_params_and_with_an_id() {
    // A25: an `id` is tolerated and dropped; params are optional.
    let r: InputRequest =
        serde_json::from_value(json!({"id": "x", "method": "roots/list"})).unwrap();
    assert_eq!(r, InputRequest::ListRoots(None));
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"method": "roots/list"})
    );
}

#[test]
fn unknown_input_request_method_is_an_error_naming_it() {
    let err = serde_json::from_value::<InputRequest>(json!({"method": "ping", "params": {}}))
        .unwrap_err();
    assert!(err.to_string().contains("ping"), "{err}");
}

#[test]
fn elicitation_mode_absent_means_form_and_is_kept_absent() {
    let v = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
    let p: ElicitRequestParams = serde_json::from_value(v.clone()).unwrap();
    let ElicitRequestParams::Form(f) = &p else {
        panic!("expected form")
    };
    assert!(f.mode.is_none());
    assert_eq!(serde_json::to_value(&p).unwrap(), v);
}

#[test]
fn unknown_elicitation_mode_is_an_error() {
    let v = json!({"mode": "telepathy", "message": "m"});
    assert!(serde_json::from_value::<ElicitRequestParams>(v).is_err());
}

#[test]
fn unasked_entries_are_kept_raw_and_do_not_fail_the_params() {
    // MRTR-E2: extra entries are ignored; only asked-for keys are parsed.
    let v = json!({
        "_meta": {},
        "name": "t",
        "inputResponses": {
            "user_name": {"action": "accept", "content": {"name": "Alice"}},
            "junk": 12345,
        },
    });
    let p: CallToolRequestParams = serde_json::from_value(v).unwrap();
    let responses = p.input_responses.unwrap();
    let asked = InputRequest::Elicitation(ElicitRequestParams::Url(Default::default()));
    let answer = responses.parse_for("user_name", &asked).unwrap().unwrap();
    let InputResponse::Elicit(e) = answer else {
        panic!("expected an elicitation answer")
    };
    assert_eq!(e.action, ElicitAction::Accept);
    assert_eq!(
        e.content.unwrap()["name"],
        ElicitValue::String("Alice".to_owned())
    );
    // A malformed answer to an asked key is an error for that key
    // (MRTR-E-A2), and a missing key is `None`.
    assert!(responses.parse_for("junk", &asked).unwrap().is_err());
    assert!(responses.parse_for("missing", &asked).is_none());
}

#[test]
fn decline_with_null_content_parses() {
    // ELIC-A1.
    let e: ElicitResult =
        serde_json::from_value(json!({"action": "decline", "content": null})).unwrap();
    assert_eq!(e, ElicitResult::new(ElicitAction::Decline));
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"action": "decline"})
    );
}

#[test]
fn elicitation_values_of_every_kind() {
    let v = json!({"action": "accept", "content": {
        "s": "x", "i": 30, "f": 1.5, "b": true, "m": ["a", "b"]
    }});
    let e: ElicitResult = serde_json::from_value(v.clone()).unwrap();
    let c = e.content.as_ref().unwrap();
    assert!(matches!(c["f"], ElicitValue::Number(ref n) if n.as_f64() == Some(1.5)));
    assert!(matches!(c["m"], ElicitValue::StringArray(ref a) if a.len() == 2));
    assert_eq!(serde_json::to_value(&e).unwrap(), v);
    let bad = json!({"action": "accept", "content": {"o": {"nested": 1}}});
    assert!(serde_json::from_value::<ElicitResult>(bad).is_err());
}

#[test]
fn input_responses_built_in_code() {
    let mut r = InputResponses::new();
    r.insert(
        "k",
        &InputResponse::Elicit(ElicitResult::new(ElicitAction::Cancel)),
    );
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"k": {"action": "cancel"}})
    );
    assert_eq!(methods::INPUT_REQUESTS.len(), 3);
}

#[test]
fn an_input_request_reads_alike_in_either_order_from_bytes_or_a_value() {
    // Method first is read in place; params first are held until the
    // method is known. Either way, from text or from a value, the same
    // request, and extra members are ignored.
    let params = json!({"message": "Deploy?", "requestedSchema": {"type": "object",
        "properties": {"ok": {"type": "boolean"}}}});
    let expected = InputRequest::Elicitation(serde_json::from_value(params.clone()).unwrap());
    let method_first =
        format!(r#"{{"method":"elicitation/create","params":{params},"x":[1,{{"y":2}}]}}"#);
    let params_first = format!(r#"{{"x":null,"params":{params},"method":"elicitation/create"}}"#);
    for text in [&method_first, &params_first] {
        let from_text: InputRequest = serde_json::from_str(text).unwrap();
        assert_eq!(from_text, expected, "{text}");
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let from_value: InputRequest = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(from_value, expected, "{text}");
        let from_ref = InputRequest::deserialize(&value).unwrap();
        assert_eq!(from_ref, expected, "{text}");
    }
}

#[test]
fn an_input_request_without_params_or_with_two_of_a_member_is_refused() {
    let err = |text: &str| {
        serde_json::from_str::<InputRequest>(text)
            .unwrap_err()
            .to_string()
    };
    // Absent and null params read alike: required for elicitation and
    // sampling, optional for roots.
    for text in [
        r#"{"method":"elicitation/create"}"#,
        r#"{"method":"elicitation/create","params":null}"#,
        r#"{"params":null,"method":"elicitation/create"}"#,
    ] {
        assert!(
            err(text).starts_with("input request elicitation/create has no params"),
            "{text}: {}",
            err(text)
        );
    }
    assert!(err(r#"{"method":"sampling/createMessage"}"#).contains("has no params"));
    for text in [
        r#"{"method":"roots/list","params":null}"#,
        r#"{"params":null,"method":"roots/list"}"#,
    ] {
        let r: InputRequest = serde_json::from_str(text).unwrap();
        assert_eq!(r, InputRequest::ListRoots(None), "{text}");
    }
    assert!(err(r#"{"params":{}}"#).starts_with("missing field `method`"));
    assert!(
        err(r#"{"method":"roots/list","method":"roots/list"}"#)
            .starts_with("duplicate field `method`")
    );
    for text in [
        r#"{"method":"roots/list","params":{},"params":{}}"#,
        r#"{"params":{},"params":{},"method":"roots/list"}"#,
        r#"{"params":{},"method":"roots/list","params":{}}"#,
    ] {
        assert!(
            err(text).starts_with("duplicate field `params`"),
            "{text}: {}",
            err(text)
        );
    }
    assert!(
        err(r#"{"method":"ping","params":{"a":[1]}}"#)
            .starts_with("unknown input request method \"ping\""),
    );
    assert!(err(r#"["roots/list"]"#).contains("expected an input request"));
}
