//! Method gates and the plain methods (MRTR-S1, MRTR-S2, MRTR-S-A3, VER-S4,
//! CACHE-S1, PAGE-S3, RES-S2, TOOL-S11).

use serde_json::{Value, json};
use tern_server::{
    Args, Ask, Config, Error, PromptDef, PromptResult, ResourceDef, ResourceResult, Server,
    ToolResult,
};

use super::support::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

async fn echo(Args(e): Args<Echo>) -> ToolResult {
    ToolResult::text(e.text)
}

async fn secret(ask: Ask) -> Result<ResourceResult, Error> {
    ask.form::<Approval>("confirm", "Reveal?")?;
    // The URI read is filled in: the route states it once.
    Ok(ResourceResult::read_text("text/plain", "s3cr3t"))
}

fn harness() -> Harness {
    let mut b = Server::builder("t", "1")
        .config(Config {
            page_size: 2,
            ..Config::default()
        })
        .resource_def(ResourceDef::new("config://secret", "secret", secret))
        .prompt_def(
            PromptDef::new(
                "review",
                "r",
                |Args(a): Args<serde_json::Map<String, Value>>| async move {
                    PromptResult::user_text(format!("review {}", a["target"]))
                },
            )
            .argument("target", "what", true),
        );
    for i in 0..5 {
        b = b.tool(&format!("echo{i}"), "echoes", echo);
    }
    Harness::new(b)
}

fn req(method: &str, params: Value) -> Value {
    let mut p = params;
    p["_meta"] = meta(json!({}));
    json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": p})
}

#[tokio::test]
async fn discover_names_versions_capabilities_and_cache_hints() {
    // VER-S4, CACHE-S1, META-S12.
    let h = harness();
    let r = result(&h.send(&req("server/discover", json!({}))).await);
    assert_eq!(r["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(r["capabilities"]["tools"], json!({"listChanged": true}));
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert_eq!(r["resultType"], "complete");
}

/// Every tool `tools/list` gives, page by page, in order.
async fn tools(h: &Harness) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let r = result(&h.send(&req("tools/list", params)).await);
        assert_eq!(r["cacheScope"], "private");
        tools.extend(r["tools"].as_array().unwrap().iter().cloned());
        match r.get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => return tools,
        }
    }
}

async fn tool_names(h: &Harness) -> Vec<String> {
    let tools = tools(h).await;
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn lists_page_deterministically_and_reject_bad_cursors() {
    // TOOL-S3, PAGE-S3, CACHE-S1.
    let h = harness();
    assert_eq!(
        tool_names(&h).await,
        ["echo0", "echo1", "echo2", "echo3", "echo4"]
    );
    let (code, _) = error(
        &h.send(&req("tools/list", json!({"cursor": "garbage"})))
            .await,
    );
    assert_eq!(code, -32602);
    let t = result(&h.send(&req("tools/list", json!({}))).await)["tools"][0].clone();
    assert_eq!(t["inputSchema"]["type"], "object");
    assert_eq!(t["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(t["description"], "echoes");
}

#[tokio::test]
async fn mrtr_fields_on_other_methods_are_invalid_params() {
    // MRTR-S-A3.
    let h = harness();
    for (method, field) in [
        ("tools/list", "requestState"),
        ("server/discover", "inputResponses"),
    ] {
        let (code, _) = error(&h.send(&req(method, json!({field: "x"}))).await);
        assert_eq!(code, -32602, "{method}");
    }
}

#[tokio::test]
async fn tool_argument_errors_are_tool_errors_and_unknown_tools_protocol_errors() {
    // TOOL-S10, TOOL-S11.
    let h = harness();
    let r = result(&h.send(&call("echo0", json!({"text": 5}), json!({}))).await);
    assert_eq!(
        (r["isError"].clone(), r["resultType"].clone()),
        (json!(true), json!("complete"))
    );
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Invalid arguments")
    );
    let (code, _) = error(&h.send(&call("nope", json!({}), json!({}))).await);
    assert_eq!(code, -32602);
}

#[tokio::test]
async fn resources_read_can_ask_and_carries_cache_hints() {
    // MRTR-S1 on resources/read; CACHE-S1; RES-S2.
    let h = harness();
    let first = req("resources/read", json!({"uri": "config://secret"}));
    let mut first = first;
    first["params"]["_meta"] = meta(all_caps());
    let r = result(&h.send(&first).await);
    assert_eq!(r["resultType"], "input_required");
    let done = result(
        &h.send(&retry(
            &first,
            Some(&r["requestState"]),
            json!({"confirm": accept(json!({"approved": true}))}),
        ))
        .await,
    );
    assert_eq!(done["contents"][0]["text"], "s3cr3t");
    assert_eq!(done["contents"][0]["uri"], "config://secret", "{done}");
    assert_eq!(
        (done["ttlMs"].clone(), done["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    let (code, e) = error(
        &h.send(&req("resources/read", json!({"uri": "config://none"})))
            .await,
    );
    assert_eq!(
        (code, e["data"].clone()),
        (-32602, json!({"uri": "config://none"}))
    );
}

#[tokio::test]
async fn prompts_check_required_arguments() {
    // PROMPT-S2.
    let h = harness();
    let (code, _) = error(&h.send(&req("prompts/get", json!({"name": "review"}))).await);
    assert_eq!(code, -32602);
    let r = result(
        &h.send(&req(
            "prompts/get",
            json!({"name": "review", "arguments": {"target": "x"}}),
        ))
        .await,
    );
    assert_eq!(r["messages"][0]["content"]["text"], "review \"x\"");
}

#[tokio::test]
async fn unknown_and_removed_methods_are_404() {
    // HTTP-S13, COMPAT-S-A1.
    let h = harness();
    for m in [
        "ping",
        "initialize",
        "logging/setLevel",
        "unknown/method",
        "completion/complete",
    ] {
        let reply = h.send(&req(m, json!({}))).await;
        assert_eq!((reply.0, error(&reply).0), (404, -32601), "{m}");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Brief {
    /// The topic to brief on
    topic: String,
    /// How many points
    points: Option<u8>,
}

#[tokio::test]
async fn a_prompts_arguments_come_from_its_args_type() {
    let h = Harness::new(Server::builder("t", "1").prompt_def(PromptDef::new(
        "brief",
        "a brief",
        |Args(b): Args<Brief>| async move {
            PromptResult::user_text(format!("{} in {} points", b.topic, b.points.unwrap_or(3)))
        },
    )));
    let listed = result(&h.send(&req("prompts/list", json!({}))).await);
    assert_eq!(
        listed["prompts"][0]["arguments"],
        // By name, as the schema lists its properties.
        json!([
            {"name": "points", "description": "How many points", "required": false},
            {"name": "topic", "description": "The topic to brief on", "required": true}
        ]),
        "{listed}"
    );
    // PROMPT-S2: a required argument missing is -32602, as when declared
    // by hand.
    let (code, e) = error(&h.send(&req("prompts/get", json!({"name": "brief"}))).await);
    assert_eq!(code, -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("topic"), "{e}");
    let got = result(
        &h.send(&req(
            "prompts/get",
            json!({"name": "brief", "arguments": {"topic": "tides"}}),
        ))
        .await,
    );
    assert_eq!(got["messages"][0]["content"]["text"], "tides in 3 points");
}

struct Greeting(&'static str);
struct Count(u32);

async fn greet(
    tern_server::State(g): tern_server::State<Greeting>,
    tern_server::State(c): tern_server::State<Count>,
) -> ToolResult {
    ToolResult::text(format!("{} x{}", g.0, c.0))
}

#[tokio::test]
async fn a_handler_takes_several_states_and_a_missing_one_is_refused_when_built() {
    let missing = Server::builder("t", "1")
        .state(Greeting("hi"))
        .tool("greet", "greets", greet)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("tool greet takes State<") && missing.contains("Count>"),
        "{missing}"
    );
    let h = Harness::new(
        Server::builder("t", "1")
            .state(Greeting("hi"))
            .state(Count(1))
            // One value per type: the second replaces the first.
            .state(Count(2))
            .tool("greet", "greets", greet),
    );
    let reply = h.send(&call("greet", json!({}), json!({}))).await;
    assert_eq!(text(result(&reply)), "hi x2");
}

#[tokio::test]
async fn a_route_added_at_run_time_is_refused_without_its_state() {
    let h = Harness::new(Server::builder("t", "1").state(Greeting("hi")));
    let refused = h
        .server
        .add_tool(tern_server::ToolDef::new("greet", "greets", greet))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("tool greet takes State<") && refused.contains("Count>"),
        "{refused}"
    );
    // Nothing was added: the server still offers no tools at all, so
    // tools/call is not one of its methods.
    let (code, _) = error(&h.send(&call("greet", json!({}), json!({}))).await);
    assert_eq!(code, -32601);
    let h = Harness::new(
        Server::builder("t", "1")
            .state(Greeting("hi"))
            .state(Count(3)),
    );
    h.server
        .add_tool(tern_server::ToolDef::new("greet", "greets", greet))
        .expect("its states are there");
    let reply = h.send(&call("greet", json!({}), json!({}))).await;
    assert_eq!(text(result(&reply)), "hi x3");
}

#[tokio::test]
async fn route_changes_made_together_apply_as_one() {
    // SUB-S7: a proxy's catalog sync adds and withdraws many routes at once.
    let h = harness();
    let refused = h.server.change_routes(|c| {
        c.remove_tool("echo1");
        c.remove_tool("never-there");
        c.add_tool(tern_server::ToolDef::new("late", "first", echo))
            .unwrap();
        // The later of two under one name wins; a route the server cannot
        // serve is refused and the rest still applies.
        c.add_tool(tern_server::ToolDef::new("late", "second", echo))
            .unwrap();
        c.add_tool(tern_server::ToolDef::new("greet", "greets", greet))
            .unwrap_err()
            .to_string()
    });
    assert!(refused.contains("tool greet takes State<"), "{refused}");
    assert_eq!(
        tool_names(&h).await,
        ["echo0", "echo2", "echo3", "echo4", "late"]
    );
    let late = tools(&h).await.pop().unwrap();
    assert_eq!(late["description"], "second");
    let reply = h
        .send(&call("late", json!({"text": "hi"}), json!({})))
        .await;
    assert_eq!(text(result(&reply)), "hi");
    let (code, _) = error(
        &h.send(&call("echo1", json!({"text": "x"}), json!({})))
            .await,
    );
    assert_eq!(code, -32602);
}
