//! Transports for tests: [`Direct`] calls `Server::handle` with no sockets;
//! [`Scripted`] answers from a closure and records every request (a mock
//! driven by a script, in miniature).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern_client::{BoxFuture, Error, Frames, OutboundNotification, OutboundRequest, Transport};
use tern_proto::decode::{Limits, Message, decode_message};
use tern_proto::{Inbound, McpHeaders, Principal};
use tern_server::clock::ManualClock;
use tern_server::{Reply, Server, ServerBuilder, Sink};
use tokio::sync::mpsc;

use crate::request::NOW;

/// One request as a transport saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request as JSON.
    pub body: Value,
    /// The MCP headers it carried.
    pub headers: McpHeaders,
}

impl Seen {
    /// The request's params.
    pub fn params(&self) -> &Map<String, Value> {
        self.body["params"].as_object().expect("params")
    }
}

/// Every request a transport saw, in order.
pub type Log = Arc<Mutex<Vec<Seen>>>;

fn record(log: &Log, request: &OutboundRequest) {
    let body: Value = serde_json::from_slice(&request.body).expect("request is JSON");
    log.lock().unwrap().push(Seen {
        body,
        headers: request.headers.clone(),
    });
}

/// The client and a real server back to back.
#[derive(Clone)]
pub struct Direct {
    /// The server requests go to.
    pub server: Server,
    /// What was sent.
    pub log: Log,
}

impl Direct {
    /// A server from `builder` on a manual clock at [`NOW`], and the clock.
    pub fn new(builder: ServerBuilder) -> (Self, ManualClock) {
        let clock = ManualClock::new(NOW);
        let server = builder
            .clock(clock.clone())
            .resource_id("client-tests")
            .build()
            .expect("server builds");
        (
            Direct {
                server,
                log: Log::default(),
            },
            clock,
        )
    }

    /// The requests sent so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
}

impl Transport for Direct {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        record(&self.log, &request);
        let server = self.server.clone();
        Box::pin(async move {
            let (tx, rx) = mpsc::channel(64);
            let (ntx, mut nrx) = mpsc::channel::<Bytes>(64);
            let forward_tx = tx.clone();
            let forward = tokio::spawn(async move {
                while let Some(frame) = nrx.recv().await {
                    let m = decode_message(&frame, &Limits::default()).expect("notification");
                    if forward_tx.send(Ok(m)).await.is_err() {
                        return;
                    }
                }
            });
            tokio::spawn(async move {
                let inbound = Inbound {
                    body: request.body,
                    headers: None,
                    principal: Principal::Anonymous,
                };
                let reply = server.handle(inbound, Sink::new(ntx)).await;
                let _ = forward.await;
                if let Reply::Message { body, .. } = reply {
                    let m = decode_message(&body, &Limits::default()).expect("reply");
                    let _ = tx.send(Ok(m)).await;
                }
            });
            Ok(Frames::new(rx))
        })
    }

    fn notify(&self, _n: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }
}

/// What a scripted server answers: a result object, an error object, or
/// nothing at all (the request hangs).
pub enum Answer {
    /// Answer with this result object.
    Result(Value),
    /// Answer with this error object.
    Error(Value),
    /// Never answer.
    Silence,
}

type Responder = Arc<dyn Fn(&Value, usize) -> Answer + Send + Sync>;

/// A transport whose server is a closure of the request and its index.
#[derive(Clone)]
pub struct Scripted {
    respond: Responder,
    /// What was sent.
    pub log: Log,
    /// Whether to claim the transport mirrors `Mcp-Param-*` headers.
    pub mirrors: bool,
}

impl Scripted {
    /// A transport answering with `respond(request, index)`.
    pub fn new(respond: impl Fn(&Value, usize) -> Answer + Send + Sync + 'static) -> Self {
        Scripted {
            respond: Arc::new(respond),
            log: Log::default(),
            mirrors: false,
        }
    }

    /// The requests sent so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
}

impl Transport for Scripted {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        let index = self.log.lock().unwrap().len();
        record(&self.log, &request);
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let answer = (self.respond)(&body, index);
        Box::pin(async move {
            let id = body["id"].clone();
            let message = match answer {
                Answer::Result(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
                Answer::Error(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
                Answer::Silence => {
                    let (tx, rx) = mpsc::channel(1);
                    // Keep the sender alive forever: nothing ever arrives.
                    std::mem::forget(tx);
                    return Ok(Frames::new(rx));
                }
            };
            let bytes = serde_json::to_vec(&message).unwrap();
            let m: Message = decode_message(&bytes, &Limits::default()).unwrap();
            Ok(Frames::ready(m))
        })
    }

    fn notify(&self, _n: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    fn mirrors_headers(&self) -> bool {
        self.mirrors
    }
}
