//! A harness around `Server::handle`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_proto::{Inbound, Principal};
use tern_server::clock::ManualClock;
use tern_server::{ElicitForm, Reply, Server, ServerBuilder, Sink};

pub(crate) const NOW: u64 = 1_800_000_000;

#[derive(Debug, Deserialize, ElicitForm)]
pub(crate) struct Approval {
    /// Approve?
    pub(crate) approved: bool,
}

#[derive(Debug, Deserialize, ElicitForm)]
pub(crate) struct Profile {
    /// Your name
    #[form(max_length = 10)]
    pub(crate) name: String,
    /// Your age
    #[form(minimum = 0, maximum = 150)]
    pub(crate) age: Option<i64>,
    /// Favourite colour
    pub(crate) color: Option<Color>,
}

#[derive(Debug, Deserialize, tern_server::ElicitEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Color {
    Red,
    Blue,
}

pub(crate) struct Harness {
    pub(crate) server: Server,
    pub(crate) clock: ManualClock,
}

impl Harness {
    pub(crate) fn new(builder: ServerBuilder) -> Self {
        let clock = ManualClock::new(NOW);
        let server = builder
            .clock(clock.clone())
            .resource_id("test-deployment")
            .build()
            .unwrap();
        Harness { server, clock }
    }

    pub(crate) async fn send_as(&self, principal: Principal, body: &Value) -> (u16, Value) {
        let inbound = Inbound {
            body: Bytes::from(serde_json::to_vec(body).unwrap()),
            headers: None,
            principal,
        };
        match self.server.handle(inbound, Sink::none()).await {
            Reply::Message { status, body } => (status, serde_json::from_slice(&body).unwrap()),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) async fn send(&self, body: &Value) -> (u16, Value) {
        self.send_as(Principal::Anonymous, body).await
    }
}

pub(crate) fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
    })
}

pub(crate) fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
}

pub(crate) fn call(name: &str, args: Value, caps: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"_meta": meta(caps), "name": name, "arguments": args}})
}

/// The same call as a retry: a new id, answers and the exact state.
pub(crate) fn retry(first: &Value, state: Option<&Value>, responses: Value) -> Value {
    let mut r = first.clone();
    r["id"] = json!(2);
    r["params"]["inputResponses"] = responses;
    if let Some(s) = state {
        r["params"]["requestState"] = s.clone();
    }
    r
}

pub(crate) fn result(reply: &(u16, Value)) -> Value {
    assert_eq!(reply.0, 200, "{}", reply.1);
    reply
        .1
        .get("result")
        .unwrap_or_else(|| panic!("not a result: {}", reply.1))
        .clone()
}

pub(crate) fn error(reply: &(u16, Value)) -> (i64, Value) {
    let e = reply
        .1
        .get("error")
        .unwrap_or_else(|| panic!("not an error: {}", reply.1));
    (e["code"].as_i64().unwrap(), e.clone())
}

pub(crate) fn text(result: Value) -> String {
    assert_eq!(result["resultType"], "complete", "{result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

pub(crate) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}
