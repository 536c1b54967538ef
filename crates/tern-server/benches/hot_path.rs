//! Each stage of the modern request path, on the reference `deploy` flow
//! (round 1 asks a form and the roots, round 2 answers them), so a
//! regression shows in the stage that caused it:
//!
//! - `decode`: strict parsing (depth, duplicate keys) and the JSON-RPC shape;
//!   `decode/serve_*` is the server's own path, which reads `_meta` while
//!   decoding (a per-thread cache keyed by its text, warm here as it is
//!   under load);
//! - `accept`: the envelope checks and method resolution (HTTP-A5 6–12);
//!   `accept/serve_round2` takes the `_meta` the server's decode read;
//! - `digest`: the canonical parameters digest a state is bound to;
//! - `form`: validating accepted content against the asked schema;
//! - `encode`: the `input_required` response written out;
//! - `server/round1`: routing, the handler, sealing the state, encoding;
//! - `server/round2`: opening the state, bindings and digest, every answer
//!   validated, the handler, encoding.
//!
//! Sealing and opening alone are in `tern-seal`'s `seal` bench.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tern_proto::accept::accept;
use tern_proto::decode::{Limits, Message, decode, decode_uncached};
use tern_proto::{Inbound, Principal};
use tern_server::{Ask, ElicitForm, Elicited, Error, Need, Reply, Server, Sink, ToolResult};
use tern_testkit::request::{all_caps, call, retry};

#[derive(Debug, Deserialize, ElicitForm)]
struct Approval {
    /// Approve the deployment?
    approved: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct DeployArgs {
    /// Where to deploy.
    environment: String,
}

async fn deploy(
    tern_server::Args(a): tern_server::Args<DeployArgs>,
    ask: Ask,
) -> Result<ToolResult, Error> {
    let (approval, roots) = ask.all((
        Need::form::<Approval>(
            "deployment_approval",
            &format!("Approve deployment to {}?", a.environment),
        ),
        Need::roots("workspace_roots").optional(),
    ))?;
    match approval {
        Elicited::Accepted(Approval { approved: true }) => Ok(ToolResult::text(format!(
            "deployed to {} with {} workspace root(s)",
            a.environment,
            roots.map_or(0, |r| r.len())
        ))),
        _ => Err(Error::tool("not approved")),
    }
}

fn server() -> Server {
    Server::builder("bench", "1.0.0")
        .tool("deploy", "Deploys after approval", deploy)
        .build()
        .expect("server builds")
}

fn inbound(body: &Value) -> Inbound {
    Inbound {
        body: Bytes::from(serde_json::to_vec(body).expect("serialises")),
        headers: None,
        principal: Principal::Anonymous,
    }
}

fn reply_json(reply: Reply) -> Value {
    match reply {
        Reply::Message { body, .. } => serde_json::from_slice(&body).expect("JSON reply"),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// The two request bodies of one flow, and the round-1 result.
struct Flow {
    first: Value,
    second: Value,
    round1_result: Map<String, Value>,
}

fn flow(rt: &tokio::runtime::Runtime, server: &Server) -> Flow {
    let first = call("deploy", json!({"environment": "prod"}), all_caps());
    let r1 = reply_json(rt.block_on(server.handle(inbound(&first), Sink::none())));
    let result = r1["result"].as_object().expect("a result").clone();
    assert_eq!(result["resultType"], "input_required", "{r1}");
    let second = retry(
        &first,
        Some(&result["requestState"]),
        json!({
            "deployment_approval": {"action": "accept", "content": {"approved": true}},
            "workspace_roots": {"roots": [{"uri": "file:///tmp/work", "name": "work"}]}
        }),
    );
    let r2 = reply_json(rt.block_on(server.handle(inbound(&second), Sink::none())));
    assert_eq!(r2["result"]["resultType"], "complete", "{r2}");
    Flow {
        first,
        second,
        round1_result: result,
    }
}

fn stages(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let server = server();
    let f = flow(&rt, &server);
    let limits = Limits::default();
    let round1 = serde_json::to_vec(&f.first).unwrap();
    let round2 = serde_json::to_vec(&f.second).unwrap();

    // The general path against the one served (the fast path through its
    // cache): what the cache saves.
    c.bench_function("decode/uncached_round1", |b| {
        b.iter(|| decode_uncached(black_box(&round1), &limits).unwrap());
    });
    c.bench_function("decode/uncached_round2", |b| {
        b.iter(|| decode_uncached(black_box(&round2), &limits).unwrap());
    });
    c.bench_function("decode/round1", |b| {
        b.iter(|| decode(black_box(&round1), &limits).unwrap());
    });
    c.bench_function("decode/round2", |b| {
        b.iter(|| decode(black_box(&round2), &limits).unwrap());
    });

    let supported = vec!["2026-07-28".to_owned()];
    let served = decode(&round2, &limits).unwrap();
    let (Message::Request(served_req), Some(served_meta)) = (served.message, served.meta) else {
        panic!("round 2 decodes to a request with its _meta read");
    };
    c.bench_function("accept/round2", |b| {
        b.iter_batched(
            || (served_req.clone(), served_meta.clone()),
            |(r, m)| {
                accept(r, Some(m), None, &supported)
                    .unwrap()
                    .resolve(None, |_| true, &supported)
                    .unwrap()
            },
            BatchSize::SmallInput,
        );
    });

    let salient = json!({"m": "tools/call", "name": "deploy",
                         "arguments": f.first["params"]["arguments"].clone()});
    c.bench_function("digest/params", |b| {
        b.iter(|| tern_seal::canonical::digest(black_box(&salient)).unwrap());
    });

    let schema =
        f.round1_result["inputRequests"]["deployment_approval"]["params"]["requestedSchema"]
            .clone();
    let content = json!({"approved": true});
    c.bench_function("form/validate", |b| {
        b.iter(|| {
            tern_server::__bench::validate_content(
                "deployment_approval",
                black_box(&schema),
                black_box(&content),
            )
            .unwrap()
        });
    });

    let id = tern_types::RequestId::Number(1);
    c.bench_function("encode/input_required", |b| {
        b.iter(|| tern_proto::finish::encode_result(&id, black_box(&f.round1_result)));
    });

    c.bench_function("server/round1", |b| {
        b.iter_batched(
            || inbound(&f.first),
            |i| rt.block_on(server.handle(i, Sink::none())),
            BatchSize::SmallInput,
        );
    });
    c.bench_function("server/round2", |b| {
        b.iter_batched(
            || inbound(&f.second),
            |i| rt.block_on(server.handle(i, Sink::none())),
            BatchSize::SmallInput,
        );
    });
}

criterion_group!(benches, stages);
criterion_main!(benches);
