//! The proxy driven in memory: its downstream side through
//! `Server::handle` / `Server::handle_in`, its upstreams real tern-server
//! instances (a 2026-07-28 one through `Direct`, a 2025-11-25 session
//! through [`Sessioned`]) or scripted peers that misbehave.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tern_client::{
    BoxFuture, Client, Error as ClientError, Frames, OutboundNotification, OutboundRequest,
    OutboundResponse, Transport,
};
use tern_proto::decode::{Limits, decode_message};
use tern_proto::{Inbound, Principal};
use tern_proxy::{Connect, Proxy, ProxyOptions, UPSTREAM_ERROR, UPSTREAM_UNAVAILABLE};
use tern_server::{
    Args, Ask, Config, Elicited, Error, Need, Reply, Server, ServerBuilder, Session, Sink,
    ToolResult,
};
use tern_testkit::request::{accept, all_caps, call, retry};
use tern_testkit::transport::{Answer, Direct, Scripted};
use tokio::sync::mpsc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Deploy {
    environment: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

/// The upstream's deploy: a form and the roots in one round.
async fn deploy(Args(d): Args<Deploy>, ask: Ask) -> Result<ToolResult, Error> {
    let schema = json!({"type": "object", "properties": {"approved": {"type": "boolean"}},
                        "required": ["approved"]});
    let message = format!("Approve deployment to {}?", d.environment);
    let (form, roots) = ask.all((
        Need::form_schema("approve", &message, schema),
        Need::roots("roots"),
    ))?;
    Ok(match form {
        Elicited::Accepted(_) => ToolResult::text(format!(
            "deployed to {} with {} root(s)",
            d.environment,
            roots.len()
        )),
        _ => ToolResult::error(format!("deployment to {} was declined", d.environment)),
    })
}

async fn echo(Args(e): Args<Echo>) -> ToolResult {
    ToolResult::text(e.text)
}

fn upstream_server() -> ServerBuilder {
    Server::builder("upstream", "1.0.0")
        .tool("deploy", "Deploys after approval", deploy)
        .tool("echo", "Echoes", echo)
}

fn connect<T: Transport + Clone>(t: T) -> Connect {
    Arc::new(move || {
        let t = t.clone();
        Box::pin(async move { Ok(Client::builder(t)) })
    })
}

fn quick() -> ProxyOptions {
    ProxyOptions {
        pending_ttl: Duration::from_secs(60),
        max_pending: 16,
        upstream_timeout: Duration::from_secs(5),
    }
}

async fn proxy_of(upstreams: Vec<(&str, Connect)>, options: ProxyOptions) -> Proxy {
    let config = Config {
        client_answer_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    let mut b = Proxy::builder(Server::builder("proxy", "1.0.0").config(config)).options(options);
    for (name, c) in upstreams {
        b = b.upstream(name, c);
    }
    let proxy = b.build().expect("proxy builds");
    assert!(proxy.sync().await.is_empty(), "every upstream lists");
    proxy
}

fn inbound(body: &Value) -> Inbound {
    Inbound {
        body: Bytes::from(serde_json::to_vec(body).unwrap()),
        headers: None,
        principal: Principal::Anonymous,
    }
}

fn parse(reply: Reply) -> Value {
    match reply {
        Reply::Message { body, .. } => serde_json::from_slice(&body).unwrap(),
        Reply::Accepted => Value::Null,
        _ => panic!("the request closed without a response"),
    }
}

/// One modern request to the proxy.
async fn send(proxy: &Proxy, body: &Value) -> Value {
    parse(proxy.server().handle(inbound(body), Sink::none()).await)
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

fn roots_answer() -> Value {
    json!({"roots": [{"uri": "file:///work", "name": "work"}]})
}

/// MRTR through the proxy (a 2026-07-28 client and upstream): the
/// upstream's keys and questions reach the client unchanged, the state is
/// the proxy's, and the answers reach the upstream with the upstream's own
/// state.
#[tokio::test]
async fn a_modern_round_passes_through_under_the_proxys_state() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct.clone()))], quick()).await;
    let first = call("deploy", json!({"environment": "staging"}), all_caps());
    let r = send(&proxy, &first).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"]["approve"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        result["inputRequests"]["approve"]["params"]["message"],
        "Approve deployment to staging?"
    );
    assert_eq!(result["inputRequests"]["roots"]["method"], "roots/list");
    let state = result["requestState"].clone();

    let answers = json!({"approve": accept(json!({"approved": true})), "roots": roots_answer()});
    let done = send(&proxy, &retry(&first, Some(&state), answers)).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "deployed to staging with 1 root(s)"
    );
    // Upstream: the first call, then the retry with its own state (not the
    // proxy's) and the answers under its keys.
    let seen = direct.seen();
    let retried = seen.last().unwrap().params().clone();
    assert_eq!(retried["name"], "deploy");
    let upstream_state = retried["requestState"].as_str().unwrap();
    assert_ne!(upstream_state, state.as_str().unwrap());
    assert_eq!(retried["inputResponses"]["approve"]["action"], "accept");
    assert_eq!(retried["inputResponses"]["roots"], roots_answer());
}

/// SECURITY.md §3: the proxy's state is hostile input. Tampered,
/// truncated and re-encoded states are -32602 and never reach upstream.
#[tokio::test]
async fn a_tampered_truncated_or_reencoded_state_is_refused_at_the_edge() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct.clone()))], quick()).await;
    let first = call("deploy", json!({"environment": "staging"}), all_caps());
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"approve": accept(json!({"approved": true})), "roots": roots_answer()});
    let sent_before = direct.seen().len();

    let mut tampered = state.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let truncated = state[..state.len() - 8].to_owned();
    // The same bytes in standard base64 with padding.
    let mut reencoded = state.replace('-', "+").replace('_', "/");
    while reencoded.len() % 4 != 0 {
        reencoded.push('=');
    }
    for bad in [tampered, truncated, reencoded] {
        let reply = send(&proxy, &retry(&first, Some(&json!(bad)), answers.clone())).await;
        assert_eq!(code(&reply), -32602, "{bad}: {reply}");
    }
    assert_eq!(direct.seen().len(), sent_before, "nothing reached upstream");
}

/// A state issued for one upstream's tool, retried on another upstream's
/// tool of the same name, is refused: the route is bound (params digest)
/// and so is the upstream inside the state.
#[tokio::test]
async fn a_state_cannot_be_redirected_to_another_upstream() {
    let (a, _ca) = Direct::new(upstream_server());
    let (b, _cb) = Direct::new(upstream_server());
    let proxy = proxy_of(
        vec![("a", connect(a.clone())), ("b", connect(b.clone()))],
        quick(),
    )
    .await;
    let first = call("a__deploy", json!({"environment": "staging"}), all_caps());
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].clone();
    let answers = json!({"approve": accept(json!({"approved": true})), "roots": roots_answer()});
    let mut redirected = retry(&first, Some(&state), answers);
    redirected["params"]["name"] = json!("b__deploy");
    let reply = send(&proxy, &redirected).await;
    assert_eq!(code(&reply), -32602, "{reply}");
    assert!(
        b.seen().iter().all(|s| s.body["method"] != "tools/call"),
        "b was never called"
    );
}

/// Gateway names: SERVER__NAME for every upstream's tools.
#[tokio::test]
async fn a_gateway_prefixes_every_upstreams_tools() {
    let (a, _ca) = Direct::new(upstream_server());
    let (b, _cb) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("a", connect(a)), ("b", connect(b))], quick()).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                      "params": {"_meta": tern_testkit::request::meta(json!({}))}});
    let r = send(&proxy, &list).await;
    let mut names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["a__deploy", "a__echo", "b__deploy", "b__echo"]);
    let r = send(&proxy, &call("b__echo", json!({"text": "hi"}), json!({}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
}

/// MRTR-S9 through the proxy: the client's capabilities are forwarded, so
/// the upstream's gate answers -32021 naming what is missing.
#[tokio::test]
async fn the_clients_capabilities_are_forwarded_per_request() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct.clone()))], quick()).await;
    let r = send(
        &proxy,
        &call(
            "deploy",
            json!({"environment": "x"}),
            json!({"elicitation": {"form": {}}}),
        ),
    )
    .await;
    assert_eq!(code(&r), -32021, "{r}");
    assert!(
        r["error"]["data"]["requiredCapabilities"]
            .get("roots")
            .is_some(),
        "{r}"
    );
    let seen = direct.seen();
    let sent = seen
        .iter()
        .find(|s| s.body["method"] == "tools/call")
        .expect("the call went upstream");
    assert_eq!(
        sent.params()["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

/// A scripted 2026-07-28 upstream listing one tool `t`, whose calls are
/// answered by `call`.
fn one_tool(call: impl Fn() -> Answer + Send + Sync + 'static) -> Scripted {
    Scripted::new(
        move |req, _| match req["method"].as_str().unwrap_or_default() {
            "server/discover" => Answer::Result(json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "ttlMs": 0
            })),
            "tools/list" => Answer::Result(json!({
                "resultType": "complete",
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}], "ttlMs": 0
            })),
            "tools/call" => call(),
            _ => Answer::Error(json!({"code": -32601, "message": "Method not found"})),
        },
    )
}

/// An upstream whose answer is not a valid result: a clear error naming
/// it, and the proxy keeps serving.
#[tokio::test]
async fn an_upstream_answering_garbage_is_a_clear_error() {
    let script =
        one_tool(|| Answer::Result(json!({"resultType": "complete", "content": "not blocks"})));
    let proxy = proxy_of(vec![("odd", connect(script))], quick()).await;
    let r = send(&proxy, &call("t", json!({}), json!({}))).await;
    assert_eq!(code(&r), UPSTREAM_ERROR, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"odd\""), "{message}");
}

/// An upstream that never answers: -31001 after the upstream timeout.
#[tokio::test]
async fn an_upstream_that_hangs_times_out() {
    let script = one_tool(|| Answer::Silence);
    let options = ProxyOptions {
        upstream_timeout: Duration::from_millis(200),
        ..quick()
    };
    let proxy = proxy_of(vec![("slow", connect(script))], options).await;
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        send(&proxy, &call("t", json!({}), json!({}))),
    )
    .await
    .expect("the proxy answers");
    assert_eq!(code(&r), UPSTREAM_UNAVAILABLE, "{r}");
}

/// A 2025-11-25 upstream in memory: a tern-server session; `server/discover`
/// is refused as a 2025-11-25 server would, so the client opens a session.
#[derive(Clone)]
struct Sessioned {
    server: Server,
    session: Session,
}

impl Sessioned {
    fn new() -> Self {
        let server = upstream_server().build().unwrap();
        let session = server.session();
        Sessioned { server, session }
    }
}

impl Sessioned {
    /// A message that expects no reply: a notification or a response.
    async fn deliver(&self, body: Bytes) -> Result<(), ClientError> {
        let inbound = Inbound {
            body,
            headers: None,
            principal: Principal::Anonymous,
        };
        self.server
            .handle_in(&self.session, inbound, Sink::none())
            .await;
        Ok(())
    }
}

impl Transport for Sessioned {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, ClientError>> {
        Box::pin(async move {
            let (tx, rx) = mpsc::channel(64);
            if request.method == "server/discover" {
                let id = serde_json::to_value(&request.id).unwrap();
                let body = json!({"jsonrpc": "2.0", "id": id,
                                  "error": {"code": -32601, "message": "Method not found"}});
                let m = decode_message(&serde_json::to_vec(&body).unwrap(), &Limits::default())
                    .unwrap();
                return Ok(Frames::ready(m));
            }
            let (ntx, mut nrx) = mpsc::channel::<Bytes>(64);
            let forward_tx = tx.clone();
            let forward = tokio::spawn(async move {
                while let Some(frame) = nrx.recv().await {
                    let m = decode_message(&frame, &Limits::default()).unwrap();
                    if forward_tx.send(Ok(m)).await.is_err() {
                        return;
                    }
                }
            });
            let (server, session) = (self.server.clone(), self.session.clone());
            tokio::spawn(async move {
                let reply = server
                    .handle_in(
                        &session,
                        Inbound {
                            body: request.body,
                            headers: None,
                            principal: Principal::Anonymous,
                        },
                        Sink::new(ntx),
                    )
                    .await;
                let _ = forward.await;
                if let Reply::Message { body, .. } = reply {
                    let m = decode_message(&body, &Limits::default()).unwrap();
                    let _ = tx.send(Ok(m)).await;
                }
            });
            Ok(Frames::new(rx))
        })
    }

    fn notify(&self, n: OutboundNotification) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(self.deliver(n.body))
    }

    fn respond(&self, r: OutboundResponse) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(self.deliver(r.body))
    }
}

/// A modern client, a 2025-11-25 upstream: each request the upstream sends
/// during the call is one input round under the proxy's state, keyed by
/// its method; the answers go upstream as the responses.
#[tokio::test]
async fn a_legacy_upstreams_requests_become_rounds() {
    let up = Sessioned::new();
    let proxy = proxy_of(vec![("old", connect(up.clone()))], quick()).await;
    let first = call("deploy", json!({"environment": "prod"}), all_caps());
    let r = send(&proxy, &first).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["elicitation/create"]);
    assert_eq!(proxy.pending_calls(), 1);
    let answer = json!({"elicitation/create": accept(json!({"approved": true}))});
    let r = send(
        &proxy,
        &retry(&first, Some(&result["requestState"]), answer),
    )
    .await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"]["roots/list#2"]["method"],
        "roots/list"
    );
    let mut second = retry(
        &first,
        Some(&result["requestState"]),
        json!({"roots/list#2": roots_answer()}),
    );
    second["id"] = json!(3);
    let done = send(&proxy, &second).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed to prod with 1 root(s)",
        "{done}"
    );
    assert_eq!(proxy.pending_calls(), 0);
    assert_eq!(up.session.waiting(), 0);
}

/// A held call is used once: the same state again finds nothing and is
/// told to restart (-32602 with restart), as is a retry after the held
/// call's lifetime.
#[tokio::test]
async fn a_held_call_is_single_use_and_expires() {
    let up = Sessioned::new();
    let options = ProxyOptions {
        pending_ttl: Duration::from_millis(150),
        ..quick()
    };
    let proxy = proxy_of(vec![("old", connect(up.clone()))], options).await;
    let first = call("deploy", json!({"environment": "prod"}), all_caps());
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].clone();
    let answer = json!({"elicitation/create": accept(json!({"approved": true}))});
    let ok = send(&proxy, &retry(&first, Some(&state), answer.clone())).await;
    assert_eq!(ok["result"]["resultType"], "input_required", "{ok}");
    let again = send(&proxy, &retry(&first, Some(&state), answer.clone())).await;
    assert_eq!(code(&again), -32602, "{again}");
    assert_eq!(again["error"]["data"]["restart"], true, "{again}");

    // A second call, answered only after its lifetime.
    let r = send(&proxy, &first).await;
    let state = r["result"]["requestState"].clone();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late = send(&proxy, &retry(&first, Some(&state), answer)).await;
    assert_eq!(code(&late), -32602, "{late}");
    assert_eq!(late["error"]["data"]["restart"], true, "{late}");
}

/// A 2025-11-25 client, a modern upstream: the upstream's round reaches
/// the client as server-initiated requests on the call's stream; a client
/// that never answers fails the call once the answer timeout passes.
#[tokio::test]
async fn a_legacy_client_is_asked_and_one_that_never_answers_fails_the_call() {
    let (direct, _clock) = Direct::new(upstream_server());
    let proxy = proxy_of(vec![("up", connect(direct))], quick()).await;
    let server = proxy.server();
    let session = server.session();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "roots": {}},
        "clientInfo": {"name": "old", "version": "1"}}});
    let r = parse(
        server
            .handle_in(&session, inbound(&init), Sink::none())
            .await,
    );
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    server
        .handle_in(&session, inbound(&note), Sink::none())
        .await;

    let deploy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"environment": "staging"}}});
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    let (s2, sess2, d2) = (server.clone(), session.clone(), deploy.clone());
    let call =
        tokio::spawn(async move { parse(s2.handle_in(&sess2, inbound(&d2), Sink::new(tx)).await) });
    let mut methods = Vec::new();
    for _ in 0..2 {
        let frame = rx.recv().await.expect("a server request");
        let req: Value = serde_json::from_slice(&frame).unwrap();
        methods.push(req["method"].as_str().unwrap().to_owned());
        let result = if req["method"] == "roots/list" {
            roots_answer()
        } else {
            accept(json!({"approved": true}))
        };
        let resp = json!({"jsonrpc": "2.0", "id": req["id"], "result": result});
        server
            .handle_in(&session, inbound(&resp), Sink::none())
            .await;
    }
    methods.sort();
    assert_eq!(methods, ["elicitation/create", "roots/list"]);
    let done = call.await.unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed to staging with 1 root(s)",
        "{done}"
    );
    assert!(
        done["result"].get("resultType").is_none(),
        "legacy shape: {done}"
    );

    // The same call, never answered.
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    let (s2, sess2) = (server.clone(), session.clone());
    let call =
        tokio::spawn(
            async move { parse(s2.handle_in(&sess2, inbound(&deploy), Sink::new(tx)).await) },
        );
    let _asked = rx.recv().await.expect("asked");
    let failed = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends")
        .unwrap();
    assert_eq!(code(&failed), -32600, "{failed}");
}

/// An upstream's template with reserved and query expressions (RFC 6570
/// levels 2 and 3) is routed: the read reaches the upstream with the URI
/// as the client sent it, and the upstream reads its variables.
#[tokio::test]
async fn a_template_with_reserved_and_query_expressions_is_routed() {
    async fn file(
        tern_server::Uri(uri): tern_server::Uri,
        tern_server::UriParams(vars): tern_server::UriParams,
    ) -> tern_server::ResourceResult {
        let rev = vars.get("rev").map_or("head", String::as_str);
        tern_server::ResourceResult::text(&uri, "text/plain", format!("{} at {rev}", vars["path"]))
    }
    let upstream = upstream_server().resource_template(tern_server::TemplateDef::new(
        "repo://files/{+path}{?rev}",
        "file",
        file,
    ));
    let (direct, _clock) = Direct::new(upstream);
    let proxy = proxy_of(vec![("up", connect(direct))], quick()).await;
    let read = |uri: &str| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read",
               "params": {"_meta": tern_testkit::request::meta(all_caps()), "uri": uri}})
    };
    let r = send(&proxy, &read("repo://files/src/lib.rs?rev=v1")).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(
        r["result"]["contents"][0]["uri"],
        "repo://files/src/lib.rs?rev=v1"
    );
    assert_eq!(r["result"]["contents"][0]["text"], "src/lib.rs at v1");
    let r = send(&proxy, &read("repo://files/docs/a/b.md")).await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "docs/a/b.md at head",
        "{r}"
    );
    // A URI the template does not describe is not routed upstream.
    let r = send(&proxy, &read("repo://other/x")).await;
    assert_eq!(code(&r), -32602, "{r}");
    assert_eq!(r["error"]["data"]["uri"], "repo://other/x");
}
