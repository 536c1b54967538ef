//! Request spans exported over OTLP/HTTP, in the caller's trace.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{Logged, call};

/// An OTLP/HTTP collector on a free port: every JSON body posted to
/// `/v1/traces`, in order.
fn collector() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = got.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let kept = kept.clone();
                    async move {
                        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                            kept.lock().unwrap().push(v);
                        }
                        "{}"
                    }
                }),
            );
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{addr}"), got)
}

/// Every exported span, flattened.
fn spans(got: &Mutex<Vec<Value>>) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .flat_map(|b| b["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// With an OTLP endpoint configured, each request (one round) is a span
/// exported to it, in the caller's trace, child of the caller's span.
#[test]
fn request_spans_continue_the_callers_trace_over_otlp() {
    let (endpoint, got) = collector();
    let s = Logged::start_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
        TempDir::new().unwrap(),
    );
    let traced = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "operator-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "roots": {}},
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    }});
    // Two rounds of deploy, each with the caller's trace context.
    let r = call(
        &s.url,
        "deploy",
        json!({"environment": "prod"}),
        traced.clone(),
    );
    let state = r["result"]["requestState"].clone();
    let mut retry = traced;
    retry["requestState"] = state;
    retry["inputResponses"] = json!({
        "deployment_approval": {"action": "accept", "content": {"approved": true}},
        "workspace_roots": {"roots": []}
    });
    let done = call(&s.url, "deploy", json!({"environment": "prod"}), retry);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let mut ours = Vec::new();
    for _ in 0..250 {
        ours = spans(&got)
            .into_iter()
            .filter(|s| s["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736")
            .collect();
        if ours.len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    assert_eq!(ours.len(), 2, "{:#?}", spans(&got));
    for span in &ours {
        assert_eq!(span["parentSpanId"], "00f067aa0ba902b7", "{span}");
        assert_eq!(span["name"], "request", "{span}");
        let method = span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == "method")
            .map(|a| a["value"]["stringValue"].clone());
        assert_eq!(method, Some(json!("tools/call")), "{span}");
    }
    assert_ne!(ours[0]["spanId"], ours[1]["spanId"]);
}
