//! The targets, each with its invariant and its generator.

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern::proto::accept::accept;
use tern::proto::decode::{Decoded, Limits, Message, decode, decode_uncached};
use tern::proto::headers::{decode_header_value, encode_header_value};
use tern::proto::{Inbound, Principal};
use tern::seal::{Binding, Claims, KeyRing, OpenPolicy};
use tern::server::clock::ManualClock;
use tern::server::{Ask, Elicited, Error, Need, Reply, Server, ServerBuilder, Sink, ToolResult};
use tern::stdio::{StdioOptions, serve_io};
use tokio::io::AsyncReadExt;

use crate::Target;
use crate::generate::{Rng, mutate, value_from};

/// Every target, by name.
pub static TARGETS: &[Target] = &[
    Target {
        name: "decode_message",
        about: "JSON-RPC decoding with size, depth and duplicate-key limits, then the _meta checks",
        run: decode_message_target,
        generate: gen_envelope,
    },
    Target {
        name: "open_sealed_state",
        about: "a forged, mutated or re-encoded requestState never opens",
        run: open_sealed_state,
        generate: gen_state_edit,
    },
    Target {
        name: "server_request",
        about: "any request body: a JSON-RPC answer, never -32603 or a panic",
        run: server_request,
        generate: gen_envelope,
    },
    Target {
        name: "answers",
        about: "form, URL, sampling and roots answers with a valid or mutated state",
        run: answers,
        generate: gen_answer,
    },
    Target {
        name: "stdio_framing",
        about: "any byte stream on stdin: every line out is one JSON-RPC object",
        run: stdio_framing,
        generate: gen_stream,
    },
    Target {
        name: "sse_decode",
        about: "any event-stream body in any chunking",
        run: sse_decode,
        generate: gen_sse,
    },
    Target {
        name: "header_value",
        about: "header values decode without panicking and encode to visible ASCII that decodes back",
        run: header_value,
        generate: gen_text,
    },
    Target {
        name: "client_result",
        about: "the client's checks of a server result before it acts on it",
        run: client_result,
        generate: gen_result,
    },
    Target {
        name: "legacy_session",
        about: "a 2025-11-25 session: any messages in any order, then its end stops every call",
        run: crate::session::legacy_session,
        generate: crate::session::gen_session,
    },
];

pub(crate) const NOW: u64 = 1_800_000_000;
const VERSION: &str = "2026-07-28";

pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime")
    })
}

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 8},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
    }, "required": ["name"]})
}

async fn form(ask: Ask) -> Result<ToolResult, Error> {
    let answer = ask.all(Need::form_schema("f", "Fill in", schema()))?;
    Ok(ToolResult::text(match answer {
        Elicited::Accepted(m) => Value::Object(m).to_string(),
        Elicited::Declined => "declined".into(),
        Elicited::Cancelled => "cancelled".into(),
    }))
}

async fn url(ask: Ask) -> Result<ToolResult, Error> {
    let answer = ask.all(Need::url("u", "Sign in", "https://example.com/sign-in"))?;
    Ok(ToolResult::text(format!("{answer:?}")))
}

async fn sample(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text("s", "2+2?", 10))?;
    Ok(ToolResult::text(s.text()))
}

async fn sample_tools(ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sampling(
        "s",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "w?"}}],
               "maxTokens": 9, "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]}),
    ))?;
    Ok(ToolResult::text(format!("{:?}", s.stop_reason)))
}

async fn roots(ask: Ask) -> Result<ToolResult, Error> {
    let (r, f) = ask.all((
        Need::roots("r"),
        Need::form_schema("f", "And this", schema()).optional(),
    ))?;
    Ok(ToolResult::text(format!("{} {}", r.len(), f.is_some())))
}

/// The tools answers go to, with the key each asks under first.
const FLOWS: &[(&str, &str)] = &[
    ("form", "f"),
    ("url", "u"),
    ("sample", "s"),
    ("sample_tools", "s"),
    ("roots", "r"),
];

/// The asking tools every server of these targets serves.
pub(crate) fn flow_tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool("form", "asks a form", form)
        .tool("url", "asks to open a URL", url)
        .tool("sample", "asks for a sample", sample)
        .tool("sample_tools", "asks for a sample with tools", sample_tools)
        .tool("roots", "asks for roots", roots)
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        flow_tools(Server::builder("fuzz", "1"))
            .clock(ManualClock::new(NOW))
            .resource_id("fuzz")
            .build()
            .expect("the fuzz server builds")
    })
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"}
    })
}

/// Sends `body`; returns the reply as JSON, or `None` for no reply.
fn send(body: Vec<u8>) -> Option<Value> {
    let inbound = Inbound {
        body: Bytes::from(body),
        headers: None,
        principal: Principal::Anonymous,
    };
    match runtime().block_on(server().handle(inbound, Sink::none())) {
        Reply::Message { body, .. } => {
            assert!(!body.contains(&b'\n'), "a reply on more than one line");
            Some(serde_json::from_slice(&body).expect("every reply is JSON"))
        }
        _ => None,
    }
}

/// Hostile input is refused, never an internal error: -32603 means the
/// server failed (or panicked) on something a peer sent.
fn assert_not_internal(reply: &Value) {
    assert_ne!(
        reply["error"]["code"],
        json!(-32603),
        "hostile input became an internal error: {reply}"
    );
    assert_no_panic(server());
}

/// No request of `server` panicked (the panic boundary answered it).
pub(crate) fn assert_no_panic(server: &Server) {
    assert_eq!(server.metrics().failed("panic"), 0, "a request panicked");
}

/// Decoding never panics, its fast path gives what the general path gives
/// (twice: the second sight of a `_meta` comes from the cache), and the
/// accept steps take the result.
fn decode_message_target(data: &[u8]) {
    let limits = Limits::default();
    let general = decode_uncached(data, &limits);
    for _ in 0..2 {
        assert_eq!(decode(data, &limits), general, "the fast path disagrees");
    }
    if let Ok(Decoded {
        message: Message::Request(r),
        meta,
    }) = general
    {
        let _ = accept(r, meta, None, &[VERSION.to_owned()]);
    }
}

fn server_request(data: &[u8]) {
    if let Some(reply) = send(data.to_vec()) {
        assert_not_internal(&reply);
    }
}

fn call(name: &str, extra: Map<String, Value>) -> Value {
    let mut params = json!({"_meta": meta(), "name": name, "arguments": {}});
    if let Some(p) = params.as_object_mut() {
        p.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

/// The first round's state of each flow, made once.
fn states() -> &'static Vec<String> {
    static STATES: OnceLock<Vec<String>> = OnceLock::new();
    STATES.get_or_init(|| {
        FLOWS
            .iter()
            .map(|(name, _)| {
                let body = serde_json::to_vec(&call(name, Map::new())).unwrap_or_default();
                let reply = send(body).expect("round one is answered");
                reply["result"]["requestState"]
                    .as_str()
                    .expect("round one asks")
                    .to_owned()
            })
            .collect()
    })
}

/// `data`: a flow selector byte, a state-edit byte, then the answer as
/// JSON (or as a string when it is not JSON).
fn answers(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Some((&edit, answer)) = rest.split_first() else {
        return;
    };
    let flow = which as usize % FLOWS.len();
    let (name, key) = FLOWS[flow];
    let valid = &states()[flow];
    let state = if edit % 4 == 0 {
        String::from_utf8_lossy(&mutate(valid.as_bytes(), &mut Rng::new(u64::from(edit))))
            .into_owned()
    } else {
        valid.clone()
    };
    let answer: Value = serde_json::from_slice(answer)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(answer).into_owned()));
    let mut responses = Map::new();
    responses.insert(key.to_owned(), answer);
    let mut extra = Map::new();
    extra.insert("requestState".into(), Value::String(state.clone()));
    extra.insert("inputResponses".into(), Value::Object(responses));
    let body = serde_json::to_vec(&call(name, extra)).unwrap_or_default();
    let reply = send(body).expect("a tools/call is answered");
    assert_not_internal(&reply);
    if state != *valid {
        // A state that is not the one sealed never opens (SECURITY.md §3.5).
        assert_eq!(
            reply["error"]["code"],
            json!(-32602),
            "a mutated state opened: {reply}"
        );
    }
}

fn ring() -> &'static (KeyRing, String) {
    static RING: OnceLock<(KeyRing, String)> = OnceLock::new();
    RING.get_or_init(|| {
        let ring = KeyRing::ephemeral().expect("a key");
        let claims = Claims {
            issued_at: NOW,
            expires_at: NOW + 600,
            binding: Binding([7; 32]),
            // postcard is not self-describing: a concrete payload.
            body: (1u8, vec!["k".to_owned()]),
        };
        let token = ring.seal_at("fuzz", &claims).expect("seals");
        (ring, token)
    })
}

/// `data`: an edit seed byte then either a whole token (even seed) or
/// nothing more (odd: the valid token mutated from the seed).
fn open_sealed_state(data: &[u8]) {
    let (ring, valid) = ring();
    let token = match data.split_first() {
        Some((&seed, rest)) if seed % 2 == 0 => String::from_utf8_lossy(rest).into_owned(),
        Some((&seed, rest)) => {
            let seed = rest
                .iter()
                .fold(u64::from(seed), |h, b| h.rotate_left(8) ^ u64::from(*b));
            let mut rng = Rng::new(seed);
            String::from_utf8_lossy(&mutate(valid.as_bytes(), &mut rng)).into_owned()
        }
        None => String::new(),
    };
    let policy = OpenPolicy {
        skew_secs: 30,
        max_ttl_secs: 3600,
    };
    let opened = ring.open_at::<(u8, Vec<String>)>("fuzz", &token, &Binding([7; 32]), NOW, &policy);
    if token != *valid {
        assert!(
            opened.is_err(),
            "a token other than the sealed one opened: {token:?}"
        );
    } else {
        assert!(opened.is_ok(), "the sealed token did not open");
    }
}

fn stdio_framing(data: &[u8]) {
    let input = data.to_vec();
    let out = runtime().block_on(async {
        let (mut peer_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut peer_out) = tokio::io::duplex(1 << 16);
        let options = StdioOptions {
            max_line_bytes: 4096,
            shutdown_grace: std::time::Duration::from_millis(50),
            ..StdioOptions::default()
        };
        let serving = tokio::spawn(serve_io(server().clone(), server_in, server_out, options));
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = peer_in.write_all(&input).await;
            let _ = peer_in.shutdown().await;
        });
        let mut out = Vec::new();
        let _ = peer_out.read_to_end(&mut out).await;
        let _ = writer.await;
        let _ = serving.await;
        out
    });
    for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).expect("every line out is JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_not_internal(&v);
    }
}

fn sse_decode(data: &[u8]) {
    let Some((&size, body)) = data.split_first() else {
        return;
    };
    let size = usize::from(size % 16) + 1;
    let chunks: Vec<&[u8]> = body.chunks(size).collect();
    let _ = tern::http::fuzzing::sse_events(&chunks, 256);
}

fn header_value(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = decode_header_value(&text);
    let encoded = encode_header_value(&text);
    assert!(
        encoded.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "an encoded header value must be visible ASCII: {encoded:?}"
    );
    assert_eq!(
        decode_header_value(&encoded).as_deref(),
        Ok(&*text),
        "encode then decode changed the value"
    );
}

fn client_result(data: &[u8]) {
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(data) {
        let _ = tern::client::fuzzing::check_result(&m);
    }
}

fn gen_envelope(rng: &mut Rng) -> Vec<u8> {
    let method = *rng.pick(&[
        "tools/call",
        "tools/list",
        "prompts/get",
        "resources/read",
        "server/discover",
        "subscriptions/listen",
        "initialize",
        "ping",
    ]);
    let mut params = match value_from(rng, 3) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if !rng.one_in(5) {
        params.insert("_meta".into(), meta());
    }
    if method == "tools/call" && !rng.one_in(4) {
        let (name, _) = *rng.pick(FLOWS);
        params.insert("name".into(), json!(name));
    }
    let mut v = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if !rng.one_in(6) {
        v["id"] = value_from(rng, 0);
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

fn gen_state_edit(rng: &mut Rng) -> Vec<u8> {
    // Odd first byte: the valid token mutated from the bytes that follow.
    let mut out = vec![(rng.bits() as u8) | 1];
    out.extend(rng.bits().to_le_bytes());
    if rng.one_in(3) {
        out.truncate(1);
        out[0] &= 0xfe;
        out.extend(ring().1.as_bytes());
        out = mutate(&out, rng);
    }
    out
}

fn gen_answer(rng: &mut Rng) -> Vec<u8> {
    let flow = rng.below(FLOWS.len() as u64) as u8;
    let edit = if rng.one_in(5) {
        0
    } else {
        1 + (rng.bits() as u8 % 200)
    };
    let answer = match FLOWS[flow as usize].0 {
        "form" | "url" => {
            let action = *rng.pick(&["accept", "decline", "cancel", "maybe"]);
            let mut content = Map::new();
            for k in [
                "name", "email", "age", "ratio", "ok", "color", "tags", "extra",
            ] {
                if rng.one_in(2) {
                    content.insert(k.into(), value_from(rng, 1));
                }
            }
            json!({"action": action, "content": content})
        }
        "roots" => {
            let roots: Vec<Value> = (0..rng.below(3))
                .map(|_| json!({"uri": value_from(rng, 0), "name": value_from(rng, 0)}))
                .collect();
            json!({"roots": roots})
        }
        _ => json!({
            "role": *rng.pick(&["assistant", "user"]),
            "model": value_from(rng, 0),
            "content": value_from(rng, 2),
            "stopReason": value_from(rng, 0),
        }),
    };
    let mut out = vec![flow, edit];
    out.extend(serde_json::to_vec(&answer).unwrap_or_default());
    out
}

fn gen_stream(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..=rng.below(4) {
        if rng.one_in(4) {
            out.extend(rng.bytes(40));
        } else {
            out.extend(gen_envelope(rng));
        }
        out.extend_from_slice(if rng.one_in(3) { b"\r\n" } else { b"\n" });
    }
    out
}

fn gen_sse(rng: &mut Rng) -> Vec<u8> {
    let mut out = vec![rng.bits() as u8];
    for _ in 0..=rng.below(5) {
        let field = *rng.pick(&["data", "event", "id", "retry", "", ":"]);
        out.extend(field.as_bytes());
        out.extend(b": ");
        out.extend(serde_json::to_vec(&value_from(rng, 2)).unwrap_or_default());
        out.extend_from_slice(rng.pick::<&[u8]>(&[&b"\n"[..], b"\r\n", b"\r", b"\n\n"]));
    }
    out
}

fn gen_text(rng: &mut Rng) -> Vec<u8> {
    match value_from(rng, 0) {
        Value::String(s) => s.into_bytes(),
        other => other.to_string().into_bytes(),
    }
}

fn gen_result(rng: &mut Rng) -> Vec<u8> {
    let mut m = match value_from(rng, 3) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert(
        "resultType".into(),
        json!(*rng.pick(&["input_required", "complete", "other"])),
    );
    if rng.one_in(2) {
        let mut reqs = Map::new();
        for i in 0..rng.below(4) {
            let method = *rng.pick(&[
                "elicitation/create",
                "sampling/createMessage",
                "roots/list",
                "ping",
            ]);
            reqs.insert(
                format!("k{i}"),
                json!({"method": method, "params": value_from(rng, 2)}),
            );
        }
        m.insert("inputRequests".into(), Value::Object(reqs));
    }
    serde_json::to_vec(&m).unwrap_or_default()
}
