//! Hostile input and failures inside the server: nothing a peer sends
//! panics a request, a panic stays inside its request, internal detail
//! never reaches the peer, and answers must fit the question asked
//! (SECURITY.md §3.5, §3.8).

use serde_json::{Value, json};
use std::sync::Arc;
use tern_proto::McpError;
use tern_seal::{KeyRing, MemoryReplayStore};
use tern_server::{
    Ask, CallContext, Error, FromCall, Need, Outcome, PromptDef, PromptResult, ResourceDef,
    ResourceResult, Server, TemplateDef, ToolDef, ToolResult,
};

use super::support::*;

async fn roots(ask: Ask) -> Result<ToolResult, Error> {
    let r = ask.all(Need::roots("roots"))?;
    Ok(ToolResult::text(format!("{} root(s)", r.len())))
}

async fn plain_sample(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text("q", "2+2?", 10))?;
    Ok(ToolResult::text(format!(
        "{} {:?}",
        s.text(),
        s.stop_reason.as_deref()
    )))
}

async fn tool_sample(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sampling(
        "q",
        json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "weather?"}}],
            "maxTokens": 50,
            "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}]
        }),
    ))?;
    Ok(ToolResult::text(format!("{:?}", s.stop_reason.as_deref())))
}

async fn boom() -> ToolResult {
    panic!("boom: a handler bug")
}

/// An extractor that panics while extracting.
struct Exploding;

impl FromCall for Exploding {
    fn from_call(_cx: &CallContext) -> Result<Self, Outcome> {
        panic!("an extractor bug")
    }
}

async fn uses_exploding(_e: Exploding) -> ToolResult {
    ToolResult::text("unreachable")
}

async fn internal() -> Result<ToolResult, Error> {
    Err(McpError::Internal("database password is hunter2".into()).into())
}

async fn failing_prompt() -> Result<PromptResult, Error> {
    Err(Error::tool("secret stack detail"))
}

async fn echo() -> ToolResult {
    ToolResult::text("still serving")
}

fn harness() -> Harness {
    Harness::new(
        Server::builder("t", "1")
            .tool("roots", "roots", roots)
            .tool("plain_sample", "sampling", plain_sample)
            .tool("tool_sample", "sampling with tools", tool_sample)
            .tool("boom", "panics", boom)
            .tool("exploding", "panics in an extractor", uses_exploding)
            .tool("internal", "fails inside", internal)
            .tool("echo", "echoes", echo)
            .prompt_def(PromptDef::new("failing", "fails", failing_prompt)),
    )
}

async fn answer(h: &Harness, tool: &str, key: &str, answer: Value) -> (u16, Value) {
    let first = call(tool, json!({}), all_caps());
    let r = result(&h.send(&first).await);
    assert_eq!(r["resultType"], "input_required", "{r}");
    let mut responses = serde_json::Map::new();
    responses.insert(key.to_owned(), answer);
    h.send(&retry(
        &first,
        Some(&r["requestState"]),
        Value::Object(responses),
    ))
    .await
}

#[tokio::test]
async fn a_non_ascii_root_is_invalid_params_not_a_panic() {
    // Regression: `uri[..7]` ended inside `é`. ROOT-1, SECURITY.md §3.8.
    let h = harness();
    for uri in [
        "file:/é/abcdef",
        "file:///é",
        "fileé//x",
        "é",
        "file:///a b",
        "file:///\u{7}",
        "file:",
        "",
    ] {
        let reply = answer(&h, "roots", "roots", json!({"roots": [{"uri": uri}]})).await;
        let (code, e) = error(&reply);
        assert_eq!((reply.0, code), (200, -32602), "{uri:?}: {e}");
        assert_eq!(e["data"]["key"], "roots", "{uri:?}");
    }
    let ok = answer(
        &h,
        "roots",
        "roots",
        json!({"roots": [{"uri": "file:///%C3%A9/x"}]}),
    )
    .await;
    assert_eq!(text(result(&ok)), "1 root(s)");
    assert_eq!(h.server.metrics().failed("panic"), 0);
}

#[tokio::test]
async fn a_sampling_answer_must_fit_the_request_that_asked() {
    // SAMP-3, SAMP-4, SAMP-S2, SECURITY.md §3.8: tool use only when tools
    // were offered, never a tool_result from the model.
    let h = harness();
    let tool_use = json!({"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}});
    for bad in [
        json!({"role": "assistant", "model": "m", "stopReason": "toolUse",
               "content": {"type": "text", "text": "calling a tool"}}),
        json!({"role": "assistant", "model": "m", "stopReason": "toolUse", "content": tool_use}),
        json!({"role": "assistant", "model": "m", "content": [{"type": "text", "text": "x"}, tool_use]}),
        json!({"role": "assistant", "model": "m",
               "content": {"type": "tool_result", "toolUseId": "t1", "content": []}}),
        json!({"role": "assistant", "model": "m", "content": []}),
    ] {
        let (code, e) = error(&answer(&h, "plain_sample", "q", bad.clone()).await);
        assert_eq!(code, -32602, "{bad}: {e}");
        assert_eq!(e["data"]["key"], "q", "{bad}");
    }
    let fine = json!({"role": "assistant", "model": "m", "stopReason": "endTurn",
                      "content": {"type": "text", "text": "4"}});
    assert_eq!(
        text(result(&answer(&h, "plain_sample", "q", fine).await)),
        "4 Some(\"endTurn\")"
    );
    // With tools offered: a tool_use of an offered tool is coherent, one of
    // another tool is not.
    let used =
        json!({"role": "assistant", "model": "m", "stopReason": "toolUse", "content": tool_use});
    assert_eq!(
        text(result(&answer(&h, "tool_sample", "q", used).await)),
        "Some(\"toolUse\")"
    );
    let other = json!({"role": "assistant", "model": "m", "stopReason": "toolUse",
        "content": {"type": "tool_use", "id": "t2", "name": "rm_rf", "input": {}}});
    assert_eq!(
        error(&answer(&h, "tool_sample", "q", other).await).0,
        -32602
    );
    let toolless = json!({"role": "assistant", "model": "m", "stopReason": "toolUse",
                          "content": {"type": "text", "text": "no tool"}});
    assert_eq!(
        error(&answer(&h, "tool_sample", "q", toolless).await).0,
        -32602
    );
}

#[tokio::test]
async fn a_panic_answers_its_request_alone_and_serving_goes_on() {
    let h = harness();
    for (tool, n) in [("boom", 1), ("exploding", 2)] {
        let reply = h.send(&call(tool, json!({}), json!({}))).await;
        assert_eq!(reply.0, 200);
        assert_eq!(reply.1["id"], 1, "the same id: {}", reply.1);
        let (code, e) = error(&reply);
        assert_eq!(
            (code, e["message"].as_str()),
            (-32603, Some("Internal error"))
        );
        let cid = e["data"]["correlationId"].as_str().unwrap();
        assert!(
            cid.len() == 16 && cid.bytes().all(|b| b.is_ascii_hexdigit()),
            "{e}"
        );
        assert!(
            !e.to_string().contains("bug"),
            "no panic text on the wire: {e}"
        );
        assert_eq!(h.server.metrics().failed("panic"), n);
        assert_eq!(
            text(result(&h.send(&call("echo", json!({}), json!({}))).await)),
            "still serving"
        );
    }
}

#[tokio::test]
async fn internal_detail_stays_in_the_log() {
    // SECURITY.md §3.5: the peer gets -32603 "Internal error" and an id.
    let h = harness();
    let (code, e) = error(&h.send(&call("internal", json!({}), json!({}))).await);
    assert_eq!(
        (code, e["message"].as_str()),
        (-32603, Some("Internal error"))
    );
    assert!(e["data"]["correlationId"].is_string(), "{e}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                     "params": {"_meta": meta(json!({})), "name": "failing"}});
    let (code, e) = error(&h.send(&get).await);
    assert_eq!(
        (code, e["message"].as_str()),
        (-32603, Some("Internal error"))
    );
    assert!(!e.to_string().contains("secret"), "{e}");
    assert_eq!(h.server.metrics().failed("internal"), 2);
}

async fn prompt() -> PromptResult {
    PromptResult::user_text("p")
}

async fn resource() -> ResourceResult {
    ResourceResult::text("r://x", "text/plain", "x")
}

#[test]
fn a_single_use_route_of_any_kind_needs_a_store_that_remembers() {
    // SECURITY.md §3.9: persistent keys with a volatile store would let a
    // replay through after a restart, whatever kind of route it is.
    let keys = || KeyRing::ephemeral().unwrap();
    let memory = || Arc::new(MemoryReplayStore::new());
    let builders = [
        Server::builder("t", "1").prompt_def(PromptDef::new("p", "p", prompt).single_use()),
        Server::builder("t", "1")
            .resource_def(ResourceDef::new("r://x", "x", resource).single_use()),
        Server::builder("t", "1")
            .template_def(TemplateDef::new("r://{id}", "x", resource).single_use()),
        Server::builder("t", "1").tool_def(ToolDef::new("t", "t", echo).single_use()),
    ];
    for b in builders {
        let err = b.keys(keys()).replay_store(memory()).build().unwrap_err();
        assert!(err.to_string().contains("replay"), "{err}");
    }
    // With an ephemeral key a memory store is fine: states die with it.
    Server::builder("t", "1")
        .prompt_def(PromptDef::new("p", "p", prompt).single_use())
        .build()
        .unwrap();
}

#[test]
fn a_single_use_route_added_at_run_time_passes_the_same_guards() {
    let server = Server::builder("t", "1")
        .tool("echo", "e", echo)
        .keys(KeyRing::ephemeral().unwrap())
        .replay_store(Arc::new(MemoryReplayStore::new()))
        .build()
        .unwrap();
    assert!(
        server
            .add_prompt(PromptDef::new("p", "p", prompt).single_use())
            .is_err()
    );
    assert!(
        server
            .add_tool(ToolDef::new("t", "t", echo).idempotent())
            .is_err()
    );
    assert!(
        server
            .add_resource_template(TemplateDef::new("r://{id}", "x", resource).single_use())
            .is_err()
    );
    server.add_prompt(PromptDef::new("p", "p", prompt)).unwrap();
}
