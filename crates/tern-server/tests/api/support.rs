//! A harness around `Server::handle`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use tern_proto::{Inbound, Principal};
use tern_server::clock::ManualClock;
use tern_server::{ElicitForm, Reply, Server, ServerBuilder, Sink};

pub(crate) use tern_testkit::request::NOW;

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

pub(crate) use tern_testkit::request::{accept, all_caps, call, error, meta, result, retry, text};
