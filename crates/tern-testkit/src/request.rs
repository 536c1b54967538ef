//! Request builders and reply readers for tests that speak JSON-RPC to a
//! server: the 2026-07-28 `_meta`, a call and its retry, an accepted form.

use serde_json::{Value, json};

/// The manual clock's start in every harness (Unix seconds).
pub const NOW: u64 = 1_800_000_000;

/// A request `_meta` declaring `caps`.
pub fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
    })
}

/// Every input kind: form and URL elicitation, sampling, roots.
pub fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
}

/// `tools/call` of `name` with `args`, declaring `caps`, id 1.
pub fn call(name: &str, args: Value, caps: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"_meta": meta(caps), "name": name, "arguments": args}})
}

/// The same call as a retry: a new id, the answers and the exact state.
pub fn retry(first: &Value, state: Option<&Value>, responses: Value) -> Value {
    let mut r = first.clone();
    r["id"] = json!(2);
    r["params"]["inputResponses"] = responses;
    if let Some(s) = state {
        r["params"]["requestState"] = s.clone();
    }
    r
}

/// An accepted form answer.
pub fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// The `result` of an HTTP-200 reply; panics with the reply otherwise.
pub fn result(reply: &(u16, Value)) -> Value {
    assert_eq!(reply.0, 200, "{}", reply.1);
    reply
        .1
        .get("result")
        .unwrap_or_else(|| panic!("not a result: {}", reply.1))
        .clone()
}

/// The error code and object of a reply; panics on a result.
pub fn error(reply: &(u16, Value)) -> (i64, Value) {
    let e = reply
        .1
        .get("error")
        .unwrap_or_else(|| panic!("not an error: {}", reply.1));
    (e["code"].as_i64().unwrap_or_default(), e.clone())
}

/// The first text block of a complete result.
pub fn text(result: Value) -> String {
    assert_eq!(result["resultType"], "complete", "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
