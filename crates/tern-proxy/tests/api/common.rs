//! What every proxy test shares: the upstream's tools, the proxy built in
//! memory, requests to it as one principal or another, a scripted
//! 2026-07-28 upstream and a 2025-11-25 one ([`Sessioned`]).
#![allow(dead_code, unreachable_pub)]

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
use tern_proxy::{Connect, Proxy, ProxyOptions};
use tern_server::{
    Args, Ask, Config, Elicited, Error, Need, Reply, Server, ServerBuilder, Session, Sink,
    ToolResult,
};
use tern_testkit::transport::{Answer, Scripted};
use tokio::sync::mpsc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Deploy {
    pub environment: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Echo {
    pub text: String,
}

/// The upstream's deploy: a form and the roots in one round.
pub async fn deploy(Args(d): Args<Deploy>, ask: Ask) -> Result<ToolResult, Error> {
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

pub async fn echo(Args(e): Args<Echo>) -> ToolResult {
    ToolResult::text(e.text)
}

pub fn upstream_server() -> ServerBuilder {
    Server::builder("upstream", "1.0.0")
        .tool("deploy", "Deploys after approval", deploy)
        .tool("echo", "Echoes", echo)
}

pub fn connect<T: Transport + Clone>(t: T) -> Connect {
    Arc::new(move || {
        let t = t.clone();
        Box::pin(async move { Ok(Client::builder(t)) })
    })
}

pub fn quick() -> ProxyOptions {
    ProxyOptions {
        pending_ttl: Duration::from_secs(60),
        max_pending: 16,
        max_pending_per_principal: Some(16),
        upstream_timeout: Duration::from_secs(5),
        ..ProxyOptions::default()
    }
}

pub async fn proxy_of(upstreams: Vec<(&str, Connect)>, options: ProxyOptions) -> Proxy {
    let config = Config {
        client_answer_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    proxy_with(upstreams, options, config).await
}

/// A proxy whose own server (and so its pending calls) reads `clock`.
pub async fn proxy_clocked(
    upstreams: Vec<(&str, Connect)>,
    options: ProxyOptions,
    clock: tern_server::clock::ManualClock,
) -> Proxy {
    let server = Server::builder("proxy", "1.0.0")
        .config(Config {
            client_answer_timeout: Duration::from_millis(300),
            ..Config::default()
        })
        .clock(clock);
    let mut b = Proxy::builder(server).options(options);
    for (name, c) in upstreams {
        b = b.upstream(name, c);
    }
    let proxy = b.build().expect("proxy builds");
    assert!(proxy.sync().await.is_empty(), "every upstream lists");
    proxy
}

/// A proxy whose own server has `config`.
pub async fn proxy_with(
    upstreams: Vec<(&str, Connect)>,
    options: ProxyOptions,
    config: Config,
) -> Proxy {
    let mut b = Proxy::builder(Server::builder("proxy", "1.0.0").config(config)).options(options);
    for (name, c) in upstreams {
        b = b.upstream(name, c);
    }
    let proxy = b.build().expect("proxy builds");
    assert!(proxy.sync().await.is_empty(), "every upstream lists");
    proxy
}

pub fn inbound(body: &Value) -> Inbound {
    inbound_as(body, &Principal::Anonymous)
}

/// A request as `principal` sent it (the HTTP layer's authentication).
pub fn inbound_as(body: &Value, principal: &Principal) -> Inbound {
    Inbound {
        body: Bytes::from(serde_json::to_vec(body).unwrap()),
        headers: None,
        principal: principal.clone(),
    }
}

/// A client with a static token of id `id`.
pub fn who(id: &str) -> Principal {
    Principal::Static {
        secret_id: id.to_owned(),
    }
}

pub fn parse(reply: Reply) -> Value {
    match reply {
        Reply::Message { body, .. } => serde_json::from_slice(&body).unwrap(),
        Reply::Accepted => Value::Null,
        _ => panic!("the request closed without a response"),
    }
}

/// One modern request to the proxy.
pub async fn send(proxy: &Proxy, body: &Value) -> Value {
    parse(proxy.server().handle(inbound(body), Sink::none()).await)
}

/// One modern request to the proxy from `principal`.
pub async fn send_as(proxy: &Proxy, principal: &Principal, body: &Value) -> Value {
    parse(
        proxy
            .server()
            .handle(inbound_as(body, principal), Sink::none())
            .await,
    )
}

pub fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

pub fn roots_answer() -> Value {
    json!({"roots": [{"uri": "file:///work", "name": "work"}]})
}

/// A scripted 2026-07-28 upstream listing one tool `t`, whose calls are
/// answered by `call`.
pub fn one_tool(call: impl Fn() -> Answer + Send + Sync + 'static) -> Scripted {
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

/// A 2025-11-25 upstream in memory: a tern-server session; `server/discover`
/// is refused as a 2025-11-25 server would, so the client opens a session.
/// A call whose frames the client drops before the reply is abandoned as a
/// real transport abandons it (its task aborted, as tern-http does when
/// the stream goes) and recorded.
#[derive(Clone)]
pub struct Sessioned {
    pub server: Server,
    pub session: Session,
    abandoned: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Sessioned {
    pub fn new() -> Self {
        Sessioned::of(upstream_server())
    }

    /// A 2025-11-25 session of the server `builder` makes.
    pub fn of(builder: ServerBuilder) -> Self {
        let server = builder.build().unwrap();
        let session = server.session();
        Sessioned {
            server,
            session,
            abandoned: Arc::default(),
        }
    }

    /// The methods of the requests the client abandoned, in order.
    pub fn abandoned(&self) -> Vec<String> {
        self.abandoned.lock().unwrap().clone()
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
            let mut call = tokio::spawn(async move {
                let inbound = Inbound {
                    body: request.body,
                    headers: None,
                    principal: Principal::Anonymous,
                };
                server.handle_in(&session, inbound, Sink::new(ntx)).await
            });
            let abandoned = self.abandoned.clone();
            tokio::spawn(async move {
                let reply = tokio::select! {
                    reply = &mut call => reply.ok(),
                    () = tx.closed() => {
                        call.abort();
                        abandoned.lock().unwrap().push(request.method.clone());
                        return;
                    }
                };
                let _ = forward.await;
                if let Some(Reply::Message { body, .. }) = reply {
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

/// A 2025-11-25 session at `server`, initialized (elicitation and roots
/// declared) and told `notifications/initialized`.
pub async fn legacy_session(server: &Server) -> Session {
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
    session
}
