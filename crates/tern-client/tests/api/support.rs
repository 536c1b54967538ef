//! Transports for the tests: `Direct` calls `Server::handle` with no
//! sockets; `Scripted` answers from a closure and records every request
//! (tower-test's mock, in miniature).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern_client::{
    BoxFuture, Error, Frames, InputContext, InputKinds, InputProvider, OutboundNotification,
    OutboundRequest, Refusal, Transport,
};
use tern_proto::decode::{Limits, Message, decode_message};
use tern_proto::{Inbound, McpHeaders, Principal};
use tern_server::clock::ManualClock;
use tern_server::{Reply, Server, ServerBuilder, Sink};
use tern_types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitResult, ElicitValue, ListRootsResult, Role, Root,
};
use tokio::sync::mpsc;

pub(crate) const NOW: u64 = 1_800_000_000;

/// One request as a transport saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) body: Value,
    pub(crate) headers: McpHeaders,
}

impl Seen {
    pub(crate) fn params(&self) -> &Map<String, Value> {
        self.body["params"].as_object().expect("params")
    }
}

pub(crate) type Log = Arc<Mutex<Vec<Seen>>>;

fn record(log: &Log, request: &OutboundRequest) {
    let body: Value = serde_json::from_slice(&request.body).expect("request is JSON");
    log.lock().unwrap().push(Seen {
        body,
        headers: request.headers.clone(),
    });
}

/// The client and a real server back to back.
#[derive(Clone)]
pub(crate) struct Direct {
    pub(crate) server: Server,
    pub(crate) log: Log,
}

impl Direct {
    pub(crate) fn new(builder: ServerBuilder) -> (Self, ManualClock) {
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

    pub(crate) fn seen(&self) -> Vec<Seen> {
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
pub(crate) enum Answer {
    Result(Value),
    Error(Value),
    Silence,
}

type Responder = Arc<dyn Fn(&Value, usize) -> Answer + Send + Sync>;

/// A transport whose server is a closure of the request and its index.
#[derive(Clone)]
pub(crate) struct Scripted {
    respond: Responder,
    pub(crate) log: Log,
    pub(crate) mirrors: bool,
}

impl Scripted {
    pub(crate) fn new(respond: impl Fn(&Value, usize) -> Answer + Send + Sync + 'static) -> Self {
        Scripted {
            respond: Arc::new(respond),
            log: Log::default(),
            mirrors: false,
        }
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
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

/// A provider that answers forms with the given fields, samples with a
/// fixed text, and lists one root; it can be told to decline or refuse.
#[derive(Clone, Default)]
pub(crate) struct Canned {
    pub(crate) kinds: Option<InputKinds>,
    pub(crate) form: Vec<(String, ElicitValue)>,
    pub(crate) decline: bool,
    pub(crate) refuse_sampling: bool,
    pub(crate) asked: Arc<Mutex<Vec<InputContext>>>,
}

impl Canned {
    pub(crate) fn accepting(fields: &[(&str, ElicitValue)]) -> Self {
        Canned {
            form: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            ..Canned::default()
        }
    }
}

impl InputProvider for Canned {
    fn kinds(&self) -> InputKinds {
        self.kinds
            .unwrap_or(InputKinds::NONE.with_form().with_sampling().with_roots())
    }

    fn elicit_form(
        &self,
        cx: InputContext,
        _params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        let answer = if self.decline {
            ElicitResult::new(ElicitAction::Decline)
        } else {
            ElicitResult {
                action: ElicitAction::Accept,
                content: Some(self.form.iter().cloned().collect()),
            }
        };
        Box::pin(async move { Ok(answer) })
    }

    fn sample(
        &self,
        cx: InputContext,
        _params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        let refuse = self.refuse_sampling;
        Box::pin(async move {
            if refuse {
                return Err(Refusal::new("the user rejected the sampling request"));
            }
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: serde_json::from_value(json!({"type": "text", "text": "Paris"})).unwrap(),
                model: "test-model".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
            })
        })
    }

    fn list_roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        Box::pin(async move {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///work".into(),
                    name: None,
                    meta: None,
                }],
            })
        })
    }
}

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

pub(crate) fn text(r: &tern_types::CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
