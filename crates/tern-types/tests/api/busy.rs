//! The busy refusal (-31003) and the timeout (-31004) as data: what the
//! constructors put on the wire and what the typed readers take back
//! (issue 52).

use std::time::Duration;

use serde_json::json;
use tern_types::{BusyData, ErrorCode, ErrorObject, TimeoutData};

#[test]
fn a_busy_refusal_names_its_limit_and_when_to_come_back() {
    let e = ErrorObject::busy(
        "requests",
        "try again shortly",
        Some(Duration::from_secs(1)),
    );
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"code": -31003, "message": "try again shortly",
               "data": {"limit": "requests", "retryAfterMs": 1000}})
    );
    let data = e.busy_data().unwrap();
    assert_eq!(
        data,
        BusyData {
            limit: "requests".into(),
            retry_after_ms: Some(1000),
        }
    );
    assert_eq!(data.retry_after(), Some(Duration::from_secs(1)));
}

#[test]
fn an_unknown_retry_time_is_left_out_and_a_fraction_of_a_millisecond_rounds_up() {
    let e = ErrorObject::busy("sessions_per_principal", "end one first", None);
    assert_eq!(e.data, Some(json!({"limit": "sessions_per_principal"})));
    assert_eq!(e.busy_data().unwrap().retry_after(), None);
    let e = ErrorObject::busy("x", "y", Some(Duration::from_micros(1500)));
    assert_eq!(e.busy_data().unwrap().retry_after_ms, Some(2));
}

#[test]
fn only_a_busy_code_with_a_named_limit_reads_as_busy() {
    // The application's own -31003 without data is not one of Tern's
    // refusals: nothing says it did not run.
    assert_eq!(
        ErrorObject::new(ErrorCode::BUSY, "access revoked").busy_data(),
        None
    );
    let other =
        ErrorObject::new(ErrorCode::INVALID_REQUEST, "x").with_data(json!({"limit": "requests"}));
    assert_eq!(other.busy_data(), None);
    let received: ErrorObject = serde_json::from_value(
        json!({"code": -31003, "message": "m", "data": {"limit": "proxy_pending", "extra": 1}}),
    )
    .unwrap();
    assert_eq!(received.busy_data().unwrap().limit, "proxy_pending");
}

#[test]
fn a_timeout_names_its_deadline() {
    let e = ErrorObject::timeout("client_answer", "the client did not answer in time");
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"code": -31004, "message": "the client did not answer in time",
               "data": {"limit": "client_answer"}})
    );
    assert_eq!(
        e.timeout_data(),
        Some(TimeoutData {
            limit: "client_answer".into()
        })
    );
    assert_eq!(e.busy_data(), None);
}
