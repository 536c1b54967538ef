//! The `legacy_session` target: one 2025-11-25 session fed any sequence of
//! messages (`initialize`, requests, responses to the server's own
//! requests, notifications, the session's end), with every request
//! running concurrently as a transport runs it.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tern::proto::{Inbound, Principal};
use tern::server::clock::ManualClock;
use tern::server::{Config, Reply, Server, SessionLimits, Sink};
use tokio::sync::mpsc;

use crate::generate::{Rng, value_from};
use crate::targets::{NOW, assert_no_panic, flow_tools, runtime};

/// Calls one session may run at once in this target.
const MAX_CALLS: usize = 3;

/// The line that ends the session (an HTTP `DELETE`).
const END: &[u8] = b"END";

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        flow_tools(Server::builder("fuzz-session", "1"))
            .clock(ManualClock::new(NOW))
            .resource_id("fuzz")
            .config(Config {
                sessions: SessionLimits {
                    max_calls: MAX_CALLS,
                    ..SessionLimits::default()
                },
                client_answer_timeout: Duration::from_secs(30),
                ..Config::default()
            })
            .build()
            .expect("the fuzz session server builds")
    })
}

/// Each line of `data` is one message of the session, or [`END`]. Its
/// invariants: no panic and no -32603 for anything a client sends; every
/// frame the server writes is one JSON-RPC object; never more calls
/// running than the budget; and once the session ends every call stops at
/// once and nothing of it is left waiting.
pub(crate) fn legacy_session(data: &[u8]) {
    runtime().block_on(async {
        let server = server();
        let session = server.session();
        let mut calls = Vec::new();
        for line in data.split(|b| *b == b'\n') {
            if line == END {
                session.close();
                continue;
            }
            let inbound = Inbound {
                body: Bytes::copy_from_slice(line),
                headers: None,
                principal: Principal::Anonymous,
            };
            let (tx, rx) = mpsc::channel::<Bytes>(64);
            let (s, sess) = (server.clone(), session.clone());
            calls.push((
                tokio::spawn(async move { s.handle_in(&sess, inbound, Sink::new(tx)).await }),
                rx,
            ));
            // Let the message be handled as far as it goes before the
            // next one arrives (a call stops at its question).
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
            assert!(session.calls_running() <= MAX_CALLS, "over the call budget");
        }
        session.close();
        for (task, mut frames) in calls {
            let reply = tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .expect("every call ends once its session ends")
                .expect("a message panicked its task");
            if let Reply::Message { body, .. } = reply {
                check_frame(&body);
            }
            while let Ok(frame) = frames.try_recv() {
                check_frame(&frame);
            }
        }
        assert_eq!(session.calls_running(), 0, "a call outlived its session");
        assert_eq!(session.waiting(), 0, "a question outlived its session");
        assert_no_panic(server);
    });
}

fn check_frame(body: &[u8]) {
    assert!(!body.contains(&b'\n'), "a frame on more than one line");
    let v: Value = serde_json::from_slice(body).expect("every frame is JSON");
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_ne!(
        v["error"]["code"],
        json!(-32603),
        "hostile input became an internal error: {v}"
    );
}

/// A session's messages, one per line: mostly well formed, aimed at the
/// ids the server uses for its own requests and the ids of running calls.
pub(crate) fn gen_session(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    if !rng.one_in(5) {
        out.extend(initialize(rng));
        out.push(b'\n');
    }
    for _ in 0..=rng.below(10) {
        let line = match rng.below(12) {
            0..=3 => call(rng),
            4..=6 => response(rng),
            7 => notification(rng),
            8 => json!({"jsonrpc": "2.0", "id": rng.below(4), "method":
                *rng.pick(&["ping", "logging/setLevel", "resources/subscribe", "tools/list"]),
                "params": value_from(rng, 2)})
            .to_string()
            .into_bytes(),
            9 if rng.one_in(3) => END.to_vec(),
            10 => initialize(rng),
            _ => rng.bytes(40),
        };
        out.extend(line);
        out.push(b'\n');
    }
    out
}

fn initialize(rng: &mut Rng) -> Vec<u8> {
    let caps = if rng.one_in(4) {
        value_from(rng, 2)
    } else {
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
    };
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": *rng.pick(&["2025-11-25", "2025-06-18", "2024-11-05"]),
        "capabilities": caps,
        "clientInfo": {"name": "fuzz", "version": "1"}}})
    .to_string()
    .into_bytes()
}

fn call(rng: &mut Rng) -> Vec<u8> {
    let name = *rng.pick(&["form", "url", "sample", "sample_tools", "roots", "nope"]);
    json!({"jsonrpc": "2.0", "id": rng.below(5), "method": "tools/call",
           "params": {"name": name, "arguments": {}}})
    .to_string()
    .into_bytes()
}

/// A response to one of the server's requests (its ids count from 1).
fn response(rng: &mut Rng) -> Vec<u8> {
    let id = 1 + rng.below(8);
    let result = match rng.below(4) {
        0 => json!({"action": *rng.pick(&["accept", "decline", "cancel"]),
                    "content": {"name": "x", "ok": true}}),
        1 => json!({"roots": [{"uri": value_from(rng, 0)}]}),
        2 => json!({"role": "assistant", "model": "m",
                    "content": {"type": "text", "text": "4"}}),
        _ => value_from(rng, 2),
    };
    let mut v = json!({"jsonrpc": "2.0", "id": id});
    match rng.below(4) {
        0 => v["error"] = json!({"code": -1, "message": "no"}),
        1 => {
            v["error"] = json!({"code": -1, "message": "no"});
            v["result"] = result;
        }
        _ => v["result"] = result,
    }
    v.to_string().into_bytes()
}

fn notification(rng: &mut Rng) -> Vec<u8> {
    let v = if rng.one_in(2) {
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": rng.below(5)}})
    } else {
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    };
    v.to_string().into_bytes()
}
