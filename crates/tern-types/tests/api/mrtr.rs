//! Input requests and responses (DIGEST §4.2, §4.6).

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
