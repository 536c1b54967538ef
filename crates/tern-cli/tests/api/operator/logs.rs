//! The log and the metrics: a line per request and per refused state with
//! its reason, which the peer never sees, counted in Prometheus metrics;
//! no line lost in a burst or at exit; JSON lines with the caller's trace.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{Logged, call, deploy_state, http, resume_deploy};

/// The same state with one character in its middle changed.
fn tampered(state: &str) -> String {
    let mut b = state.as_bytes().to_vec();
    let i = b.len() / 2;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

#[test]
fn requests_and_refused_states_are_logged_and_counted() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = free.local_addr().unwrap().to_string();
    drop(free);
    let s = Logged::start(&["--metrics", &metrics_addr], TempDir::new().unwrap());
    // The startup line names what the server runs with.
    let started = s.wait_for("tern serve started");
    for field in [
        "keys=",
        "replay=\"sqlite:",
        "resource_id=\"urn:tern:",
        "state_ttl_secs=600",
        "max_rounds=",
        "metrics=",
    ] {
        assert!(started.contains(field), "{field} not in {started}");
    }
    let state = deploy_state(&s.url);
    let r = resume_deploy(&s.url, &tampered(&state));
    // The peer sees the one uniform refusal, never the reason.
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(!r.to_string().contains("bad_tag"), "{r}");
    // The log has the reason, and a line per request with its outcome.
    let refused = s.wait_for("requestState refused");
    assert!(refused.contains("reason=\"bad_tag\""), "{refused}");
    assert!(refused.contains("tool=\"deploy\""), "{refused}");
    assert_eq!(s.field("outcome=\"rejected\"", "code"), "-32602");
    assert_eq!(
        s.field("outcome=\"input_required\"", "method"),
        "tools/call"
    );
    let (status, text) = http("GET", &format!("http://{metrics_addr}/metrics"), &[], "");
    assert_eq!(status, 200);
    for line in [
        "tern_requests_total{method=\"tools/call\",outcome=\"input_required\"} 1",
        "tern_requests_total{method=\"tools/call\",outcome=\"rejected\"} 1",
        "tern_state_rejected_total{reason=\"bad_tag\"} 1",
        "tern_state_bytes_count 1",
        "tern_request_duration_seconds_count 2",
        "tern_replay_store_errors_total 0",
        "tern_sessions_open 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
}

#[test]
fn no_request_line_is_lost_in_a_burst_or_at_exit() {
    // The log is written by a thread of its own (off the request path);
    // a burst fills its queue faster than stderr drains, and SIGTERM
    // stops the server: every request still has its line.
    let mut s = Logged::start(&[], TempDir::new().unwrap());
    const THREADS: usize = 8;
    const EACH: usize = 250;
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let url = s.url.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let text = format!("burst-{t}-{i}");
                    let r = call(&url, "echo", json!({"text": text}), json!({}));
                    assert_eq!(r["result"]["content"][0]["text"], text, "{r}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut status = None;
    for _ in 0..750 {
        status = s.child.try_wait().unwrap();
        if status.is_some() && s.closed.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = status.expect("tern serve exits on SIGTERM");
    assert!(status.success(), "{status}");
    assert!(s.closed.load(Ordering::SeqCst), "stderr closed");
    let log = s.log.lock().unwrap().clone();
    let lines = log
        .lines()
        .filter(|l| l.contains("tool=\"echo\"") && l.contains("outcome=\"complete\""))
        .count();
    assert_eq!(lines, THREADS * EACH, "request lines in the log");
    assert!(log.lines().any(|l| l.contains("stopping")), "{log}");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let s = Logged::start(&["--log-format", "json"], TempDir::new().unwrap());
    let traced = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "operator-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    }});
    let r = call(&s.url, "echo", json!({"text": "hi"}), traced);
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    let line: Value = serde_json::from_str(&s.wait_for("\"message\":\"request\"")).unwrap();
    // The caller's trace continues in the request's span.
    assert_eq!(line["span"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(line["span"]["parent_id"], "00f067aa0ba902b7");
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["fields"]["outcome"], "complete");
    assert_eq!(line["span"]["name"], "request");
    assert_eq!(line["span"]["method"], "tools/call");
    assert_eq!(line["span"]["tool"], "echo");
    assert_eq!(line["span"]["round"], 0);
    // Nothing but JSON objects on stderr.
    for l in s.log.lock().unwrap().lines() {
        assert!(
            serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object()),
            "{l}"
        );
    }
}
