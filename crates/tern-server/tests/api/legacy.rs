//! A 2025-11-25 session served by the same handlers (COMPAT-S1, COMPAT-A2):
//! `initialize`, the session methods, and the bridge that turns an `Ask`
//! round into server-initiated requests whose responses are validated as
//! `inputResponses` are (SECURITY.md §3.8).

use bytes::Bytes;
use serde_json::{Value, json};
use tern_proto::{Inbound, Principal};
use tern_server::{Ask, Elicited, Error, Need, Reply, Server, Session, Sink, ToolResult};
use tokio::sync::mpsc;

use super::support::*;

pub(super) async fn deploy(ask: Ask) -> Result<ToolResult, Error> {
    let (approval, roots) = ask.all((
        Need::form::<Approval>("approval", "Approve?"),
        Need::roots("roots").optional(),
    ))?;
    match approval {
        Elicited::Accepted(Approval { approved: true }) => Ok(ToolResult::text(format!(
            "deployed with {} root(s)",
            roots.map_or(0, |r| r.len())
        ))),
        Elicited::Accepted(_) => Ok(ToolResult::text("not approved")),
        Elicited::Declined => Ok(ToolResult::text("declined")),
        Elicited::Cancelled => Ok(ToolResult::text("cancelled")),
    }
}

async fn login(ask: Ask) -> Result<ToolResult, Error> {
    let (opened,) = ask.all((Need::url(
        "signin",
        "Sign in to continue",
        "https://auth.example.com/start",
    ),))?;
    Ok(ToolResult::text(match opened {
        Elicited::Accepted(()) => "signed in",
        Elicited::Declined => "declined",
        Elicited::Cancelled => "cancelled",
    }))
}

async fn echo() -> ToolResult {
    ToolResult::text("echo")
}

pub(super) struct Legacy {
    pub(super) server: Server,
    pub(super) session: Session,
}

fn inbound(v: &Value) -> Inbound {
    Inbound {
        body: Bytes::from(serde_json::to_vec(v).unwrap()),
        headers: None,
        principal: Principal::Anonymous,
    }
}

impl Legacy {
    fn new() -> Self {
        Legacy::with(
            Server::builder("t", "1")
                .tool("deploy", "asks", deploy)
                .tool("login", "opens a URL", login)
                .tool("echo", "echoes", echo),
        )
    }

    /// A session on the server `builder` builds.
    pub(super) fn with(builder: tern_server::ServerBuilder) -> Self {
        let server = Harness::new(builder).server;
        let session = server.session();
        Legacy { server, session }
    }

    pub(super) async fn send(&self, v: &Value) -> Value {
        match self
            .server
            .handle_in(&self.session, inbound(v), Sink::none())
            .await
        {
            Reply::Message { body, .. } => serde_json::from_slice(&body).unwrap(),
            other => panic!("no reply: {other:?}"),
        }
    }

    pub(super) async fn initialize(&self, caps: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "legacy-client", "version": "1"}}}),
        )
        .await
    }

    /// Starts `tools/call deploy`; returns the server's requests as they
    /// arrive and the task that will give the reply.
    pub(super) fn call(
        &self,
        name: &str,
    ) -> (mpsc::Receiver<Bytes>, tokio::task::JoinHandle<Value>) {
        let (tx, rx) = mpsc::channel(16);
        let server = self.server.clone();
        let session = self.session.clone();
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": name, "arguments": {}}});
        let task = tokio::spawn(async move {
            match server
                .handle_in(&session, inbound(&body), Sink::new(tx))
                .await
            {
                Reply::Message { body, .. } => serde_json::from_slice(&body).unwrap(),
                other => panic!("no reply: {other:?}"),
            }
        });
        (rx, task)
    }

    pub(super) async fn respond(&self, v: Value) {
        let reply = self
            .server
            .handle_in(&self.session, inbound(&v), Sink::none())
            .await;
        assert_eq!(reply, Reply::Accepted);
    }
}

pub(super) async fn requests(rx: &mut mpsc::Receiver<Bytes>, n: usize) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for _ in 0..n {
        let frame = rx.recv().await.expect("a server-initiated request");
        out.push(serde_json::from_slice(&frame).unwrap());
    }
    out.sort_by_key(|r| r["method"].as_str().unwrap_or_default().to_owned());
    out
}

pub(super) fn all_legacy_caps() -> Value {
    json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}})
}

#[tokio::test]
async fn initialize_negotiates_and_opens_the_session() {
    let l = Legacy::new();
    assert!(!l.session.is_open());
    let r = l.initialize(all_legacy_caps()).await;
    let result = &r["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25", "{r}");
    assert_eq!(result["serverInfo"]["name"], "t");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert!(result.get("resultType").is_none(), "{r}");
    assert!(l.session.is_open());
    // A second initialize in the same session is refused.
    assert_eq!(l.initialize(json!({})).await["error"]["code"], -32600);
    // An unknown version gets the newest legacy one.
    let other = Legacy::new();
    let r = other
        .send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}}),
        )
        .await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    l.respond(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert!(l.session.is_initialized());
}

#[tokio::test]
async fn session_methods_and_lists_answer_in_the_legacy_shape() {
    let l = Legacy::new();
    l.initialize(all_legacy_caps()).await;
    let ping = l
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(ping["result"], json!({}));
    let level = l
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                      "params": {"level": "warning"}}),
        )
        .await;
    assert_eq!(level["result"], json!({}));
    let bad = l
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
                      "params": {"level": "loud"}}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602);
    let sub = l
        .send(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe",
                      "params": {"uri": "test://x"}}),
        )
        .await;
    assert_eq!(sub["result"], json!({}));
    assert!(l.session.is_subscribed("test://x"));
    let list = l
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
        .await;
    let result = &list["result"];
    assert_eq!(result["tools"].as_array().unwrap().len(), 3, "{list}");
    for gone in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(result.get(gone).is_none(), "{gone} in {list}");
    }
    // COMPAT-S1: a modern request in the same connection is served modern.
    let modern = l.send(&call("echo", json!({}), json!({}))).await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
}

#[tokio::test]
async fn an_ask_round_goes_out_as_server_requests_and_comes_back_validated() {
    let l = Legacy::new();
    l.initialize(all_legacy_caps()).await;
    let (mut rx, task) = l.call("deploy");
    let asked = requests(&mut rx, 2).await;
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(asked[0]["params"]["message"], "Approve?");
    assert_eq!(asked[1]["method"], "roots/list");
    assert_eq!(l.session.waiting(), 2);
    l.respond(json!({"jsonrpc": "2.0", "id": asked[1]["id"],
                     "result": {"roots": [{"uri": "file:///work"}]}}))
        .await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"],
                     "result": {"action": "accept", "content": {"approved": true}}}))
        .await;
    let reply = task.await.unwrap();
    assert_eq!(reply["id"], 7);
    assert_eq!(
        reply["result"]["content"][0]["text"], "deployed with 1 root(s)",
        "{reply}"
    );
    assert!(reply["result"].get("resultType").is_none());
    assert_eq!(l.session.waiting(), 0);
}

#[tokio::test]
async fn decline_and_cancel_stay_apart_and_optional_roots_are_not_asked_without_the_capability() {
    let l = Legacy::new();
    l.initialize(json!({"elicitation": {}})).await;
    for (action, text) in [("decline", "declined"), ("cancel", "cancelled")] {
        let (mut rx, task) = l.call("deploy");
        let asked = requests(&mut rx, 1).await;
        assert_eq!(asked[0]["method"], "elicitation/create");
        l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"action": action}}))
            .await;
        let reply = task.await.unwrap();
        assert_eq!(reply["result"]["content"][0]["text"], text, "{reply}");
    }
}

#[tokio::test]
async fn hostile_responses_change_nothing() {
    let l = Legacy::new();
    l.initialize(all_legacy_caps()).await;
    // A response to an id the server never sent is ignored and counted.
    l.respond(json!({"jsonrpc": "2.0", "id": 999, "result": {"action": "accept"}}))
        .await;
    assert_eq!(l.server.metrics().rejected("unsolicited_response"), 1);
    let (mut rx, task) = l.call("deploy");
    let asked = requests(&mut rx, 2).await;
    // The wrong kind of answer for the elicitation: -32602 naming the key.
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"roots": []}}))
        .await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[1]["id"], "result": {"roots": []}}))
        .await;
    // A second response to the same id is refused too.
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"],
                     "result": {"action": "accept", "content": {"approved": true}}}))
        .await;
    assert_eq!(l.server.metrics().rejected("unsolicited_response"), 2);
    let reply = task.await.unwrap();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert_eq!(reply["error"]["data"]["key"], "approval", "{reply}");
    // A client that refuses with a JSON-RPC error ends the call with -32602.
    let (mut rx, task) = l.call("deploy");
    let asked = requests(&mut rx, 2).await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"],
                     "error": {"code": -1, "message": "User rejected"}}))
        .await;
    l.respond(json!({"jsonrpc": "2.0", "id": asked[1]["id"], "result": {"roots": []}}))
        .await;
    let reply = task.await.unwrap();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("User rejected")
    );
}

#[tokio::test]
async fn a_required_kind_the_session_did_not_declare_is_never_sent() {
    let l = Legacy::new();
    l.initialize(json!({"roots": {}})).await;
    let (mut rx, task) = l.call("deploy");
    let reply = task.await.unwrap();
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert!(rx.try_recv().is_err(), "nothing was asked of the client");
}

#[tokio::test]
async fn a_client_that_never_answers_is_timed_out_and_its_request_freed() {
    let config = tern_server::Config {
        client_answer_timeout: std::time::Duration::from_millis(50),
        ..tern_server::Config::default()
    };
    let server = Harness::new(
        Server::builder("t", "1")
            .tool("deploy", "asks", deploy)
            .config(config),
    )
    .server;
    let l = Legacy {
        session: server.session(),
        server,
    };
    l.initialize(all_legacy_caps()).await;
    let (mut rx, task) = l.call("deploy");
    let _asked = requests(&mut rx, 2).await;
    let reply = task.await.unwrap();
    assert_eq!(reply["error"]["code"], -31004, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{reply}"
    );
    // The call is over and nothing of it waits: a late answer to either
    // request is unsolicited and changes nothing.
    assert_eq!(l.session.waiting(), 0);
    l.respond(json!({"jsonrpc": "2.0", "id": 1, "result": {"action": "cancel"}}))
        .await;
    assert_eq!(l.server.metrics().rejected("unsolicited_response"), 1);
}

#[tokio::test]
async fn a_url_elicitation_gets_its_id_and_a_completion_notice() {
    let l = Legacy::new();
    l.initialize(json!({"elicitation": {"form": {}, "url": {}}}))
        .await;
    let (mut rx, task) = l.call("login");
    let asked = requests(&mut rx, 1).await;
    let params = &asked[0]["params"];
    assert_eq!(params["mode"], "url", "{asked:?}");
    assert_eq!(params["url"], "https://auth.example.com/start");
    // 2025-11-25 requires an id on every URL-mode elicitation.
    let eid = params["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(eid.len(), 32, "{eid}");
    l.respond(json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"action": "accept"}}))
        .await;
    // Once the handler is past it, the interaction is complete: the
    // notice goes to this client, on this request's stream, before the
    // result.
    let notice: Value = serde_json::from_slice(&rx.recv().await.unwrap()).unwrap();
    assert_eq!(notice["method"], "notifications/elicitation/complete");
    assert_eq!(notice["params"]["elicitationId"], eid.as_str());
    let reply = task.await.unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"], "signed in",
        "{reply}"
    );
}

#[tokio::test]
async fn without_a_stream_a_url_elicitation_comes_back_as_32042() {
    let l = Legacy::new();
    l.initialize(json!({"elicitation": {"form": {}, "url": {}}}))
        .await;
    // A JSON-only POST: nothing can be asked in-band.
    let reply = l
        .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "login", "arguments": {}}}))
        .await;
    assert_eq!(reply["error"]["code"], -32042, "{reply}");
    let listed = &reply["error"]["data"]["elicitations"];
    assert_eq!(listed.as_array().unwrap().len(), 1, "{reply}");
    assert_eq!(listed[0]["mode"], "url");
    assert_eq!(listed[0]["url"], "https://auth.example.com/start");
    assert_eq!(listed[0]["message"], "Sign in to continue");
    assert_eq!(listed[0]["elicitationId"].as_str().unwrap().len(), 32);
    // A session that declared forms only is never asked for a URL.
    let l = Legacy::new();
    l.initialize(json!({"elicitation": {}})).await;
    let reply = l
        .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "login", "arguments": {}}}))
        .await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
}
