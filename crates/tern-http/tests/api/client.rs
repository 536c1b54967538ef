//! The HTTP client transport against the real Tern HTTP server on loopback
//! sockets: headers the server validates, JSON and SSE answers, MRTR over
//! HTTP, errors decided on the JSON-RPC body.
#![cfg(all(feature = "client", feature = "server"))]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tern_client::{CallOptions, Client};
use tern_http::{HttpOptions, HttpTransport};
use tern_server::{Ask, Elicited, Error, Need, Progress, RawArgs, Server, ToolDef, ToolResult};

async fn greet(ask: Ask) -> Result<ToolResult, Error> {
    let need = Need::form_schema(
        "user_name",
        "Name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    );
    match ask.all(need)? {
        Elicited::Accepted(f) => Ok(ToolResult::text(format!(
            "Hello, {}!",
            f.get("name").and_then(Value::as_str).unwrap_or("?")
        ))),
        _ => Err(Error::tool("declined")),
    }
}

async fn progress(progress: Progress) -> ToolResult {
    progress.notify(1.0, Some(2.0), Some("half")).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    progress.notify(2.0, Some(2.0), Some("done")).await;
    ToolResult::text("finished")
}

async fn region(RawArgs(args): RawArgs) -> ToolResult {
    ToolResult::text(format!(
        "region={}",
        args.get("region").and_then(Value::as_str).unwrap_or("none")
    ))
}

async fn needs_sampling(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text("s", "hi", 5))?;
    Ok(ToolResult::text(s.text()))
}

async fn start() -> String {
    let server = Server::builder("http-client-tests", "1.0.0")
        .tool("greet", "Asks a name", greet)
        .tool("progress", "Reports progress", progress)
        .tool("needs_sampling", "Needs sampling", needs_sampling)
        .tool_def(
            ToolDef::new("region", "Mirrors its region", region).input_schema(json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "count": {"type": "integer", "x-mcp-header": "Count"}
                }
            })),
        )
        .tool_def(
            ToolDef::new("invalid", "Bad annotation", region).input_schema(json!({
                "type": "object",
                "properties": {"f": {"type": "number", "x-mcp-header": "F"}}
            })),
        )
        .build()
        .expect("server builds");
    let (addr, _task) = tern_http::spawn(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        server,
        HttpOptions::default(),
    )
    .await
    .expect("binds");
    format!("http://{addr}/mcp")
}

use tern_testkit::provider::Ada;

fn client(url: &str) -> Client {
    Client::builder(HttpTransport::new(url).unwrap())
        .provider(Ada)
        .build()
}

fn text(r: &tern_types::CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[tokio::test]
async fn discover_and_list_over_json() {
    let url = start().await;
    let c = client(&url);
    let d = c.discover().await.unwrap();
    assert!(d.supported_versions.iter().any(|v| v == "2026-07-28"));
    let tools = c.list_tools(None).await.unwrap().tools;
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    // HTTP-XMH-C3: the tool with an invalid annotation is left out.
    assert_eq!(names, ["greet", "needs_sampling", "progress", "region"]);
}

#[tokio::test]
async fn an_mrtr_flow_completes_over_http() {
    let url = start().await;
    let r = client(&url)
        .call_tool("greet", obj(json!({})))
        .await
        .unwrap();
    assert_eq!(text(&r), "Hello, Ada!");
}

#[tokio::test]
async fn annotated_arguments_travel_as_headers_the_server_accepts() {
    // HTTP-XMH-C4 checked by the server's own validation (HTTP-XMH-S5):
    // a missing or wrong Mcp-Param-Region would be 400 + -32020.
    let url = start().await;
    let c = client(&url);
    c.list_tools(None).await.unwrap();
    for region in ["us-west1", "Hello, 世界", " padded ", ""] {
        let r = c
            .call_tool("region", obj(json!({"region": region, "count": 42})))
            .await
            .unwrap();
        assert_eq!(text(&r), format!("region={region}"));
    }
    let r = c
        .call_tool("region", obj(json!({"region": null})))
        .await
        .unwrap();
    assert_eq!(text(&r), "region=none");
}

#[tokio::test]
async fn without_tools_list_no_param_headers_are_sent_and_the_server_refuses() {
    // HTTP-XMH-A1: a client that never saw the schema sends none; the
    // server's 400 + -32020 reaches the caller as the remote error.
    let url = start().await;
    let e = client(&url)
        .call_tool("region", obj(json!({"region": "us-west1"})))
        .await
        .unwrap_err();
    assert!(e.is_remote(), "{e}");
    assert_eq!(e.remote_error().unwrap().code.0, -32020);
}

#[tokio::test]
async fn progress_arrives_over_sse_before_the_result() {
    let url = start().await;
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let opts = CallOptions::new().on_notification(move |n| {
        sink.lock().unwrap().push(n.method.clone());
    });
    let r = client(&url)
        .call_tool_with("progress", obj(json!({})), &opts)
        .await
        .unwrap();
    assert_eq!(text(&r), "finished");
    assert_eq!(
        *got.lock().unwrap(),
        ["notifications/progress", "notifications/progress"]
    );
}

#[tokio::test]
async fn a_400_with_a_json_rpc_body_is_that_error() {
    // HTTP-A4: -32021 comes with status 400; the body decides.
    let url = start().await;
    let e = client(&url)
        .call_tool("needs_sampling", obj(json!({})))
        .await
        .unwrap_err();
    assert!(e.is_remote() && e.is_capability(), "{e}");
    let unknown = client(&url)
        .call_tool("nope", obj(json!({})))
        .await
        .unwrap_err();
    assert_eq!(unknown.remote_error().unwrap().code.0, -32602);
}

#[tokio::test]
async fn a_status_without_a_json_rpc_body_is_a_transport_error() {
    let url = start().await;
    let wrong_path = url.replace("/mcp", "/elsewhere");
    let e = client(&wrong_path).discover().await.unwrap_err();
    assert!(e.is_transport(), "{e}");
}

#[tokio::test]
async fn nobody_listening_is_a_transport_error() {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let e = client(&format!("http://{addr}/mcp"))
        .discover()
        .await
        .unwrap_err();
    assert!(e.is_transport(), "{e}");
}

#[tokio::test]
async fn a_legacy_session_runs_a_form_round_and_ends_with_delete() {
    // The same server in a 2025-11-25 session (COMPAT-S1): the form goes
    // out as a server request on the call's stream and Ada answers it.
    let url = start().await;
    let transport = HttpTransport::new(&url).unwrap();
    let c = Client::builder(transport.clone())
        .era(tern_client::EraPolicy::Legacy)
        .provider(Ada)
        .build();
    let r = c.call_tool("greet", obj(json!({}))).await.unwrap();
    assert_eq!(text(&r), "Hello, Ada!");
    assert_eq!(c.era(), Some(tern_client::Era::Legacy));
    let sid = transport.session_id().expect("a session id");
    c.close().await.unwrap();
    assert_eq!(transport.session_id(), None);
    // The server forgot it: the id now gets 404.
    let r = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::NOT_FOUND);
}
