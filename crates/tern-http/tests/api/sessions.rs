//! 2025-11-25 sessions against a hostile client, over real HTTP: the
//! session budgets (SECURITY.md, "Budgets"), calls that are abandoned,
//! cancelled or duplicated, responses that cannot be accepted, and answers
//! checked as strictly as `inputResponses`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::HttpOptions;
use tern_server::clock::ManualClock;
use tern_server::{
    Args, Ask, Config, Elicited, Error, Need, Server, SessionLimits, SingleUse, State, ToolResult,
};

use super::server::{ByHeader, Events, confirm, hello, json_of, legacy_post};

/// What the handlers saw.
#[derive(Default)]
struct Seen {
    went_on: AtomicUsize,
    roots: std::sync::Mutex<Vec<String>>,
}

async fn guarded(State(seen): State<Arc<Seen>>, ask: Ask) -> Result<ToolResult, Error> {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    match ask.all(Need::form_schema("ok", "Go on?", schema))? {
        Elicited::Accepted(_) => {
            seen.went_on.fetch_add(1, Ordering::SeqCst);
            Ok(ToolResult::text("went on"))
        }
        _ => Ok(ToolResult::text("stopped")),
    }
}

async fn sample(State(seen): State<Arc<Seen>>, ask: Ask) -> Result<ToolResult, Error> {
    ask.all(Need::sample_text("q", "2+2?", 10))?;
    seen.went_on.fetch_add(1, Ordering::SeqCst);
    Ok(ToolResult::text("sampled"))
}

async fn workspace(State(seen): State<Arc<Seen>>, ask: Ask) -> Result<ToolResult, Error> {
    let roots = ask.all(Need::roots("workspace"))?;
    let uris: Vec<String> = roots.into_iter().map(|r| r.uri).collect();
    seen.roots.lock().unwrap().extend(uris.iter().cloned());
    Ok(ToolResult::text(uris.join(",")))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Code {
    code: String,
}

async fn redeem(Args(c): Args<Code>, once: SingleUse) -> Result<ToolResult, Error> {
    once.consume_key("redeem", &c.code, Duration::from_secs(3600))
        .await?;
    Ok(ToolResult::text(format!("redeemed {}", c.code)))
}

struct Fixture {
    addr: SocketAddr,
    server: Server,
    clock: ManualClock,
    seen: Arc<Seen>,
}

async fn start(limits: SessionLimits, answer_timeout: Duration) -> Fixture {
    let clock = ManualClock::new(1_800_000_000);
    let seen = Arc::new(Seen::default());
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .tool("confirm", "asks first", confirm)
        .tool("guarded", "asks, then acts", guarded)
        .tool("workspace", "reads the roots", workspace)
        .tool("sample", "asks the client's model", sample)
        .tool("redeem", "redeems a code once", redeem)
        .state(seen.clone())
        .clock(clock.clone())
        .config(Config {
            sessions: limits,
            client_answer_timeout: answer_timeout,
            ..Config::default()
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tern_http::router(server.clone(), HttpOptions::default(), Arc::new(ByHeader));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Fixture {
        addr,
        server,
        clock,
        seen,
    }
}

fn limits(max_open: usize, max_per_principal: usize, max_calls: usize) -> SessionLimits {
    SessionLimits {
        max_open,
        max_per_principal,
        idle: Duration::from_secs(600),
        max_calls,
    }
}

/// `initialize` as `who` (an `x-who` principal; `anonymous` is the
/// principal of a server without authentication); the session id, or the
/// refusal's status and body.
async fn open_as(addr: SocketAddr, who: &str) -> Result<String, (StatusCode, Value)> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "roots": {}, "sampling": {}},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let r = legacy_post(addr, who, None)
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    if r.status() != StatusCode::OK {
        return Err(json_of(r).await);
    }
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = legacy_post(addr, who, Some(&id))
        .body(done.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    Ok(id)
}

async fn post(addr: SocketAddr, who: &str, sid: &str, body: &Value) -> reqwest::Response {
    legacy_post(addr, who, Some(sid))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// Starts a call that asks the client; returns its stream positioned after
/// the server's question, and the question.
async fn asked(addr: SocketAddr, who: &str, sid: &str, id: i64, tool: &str) -> (Events, Value) {
    let resp = post(addr, who, sid, &call(id, tool, json!({}))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut events = Events::new(resp);
    let (_, prime) = events.next().await.unwrap();
    assert_eq!(prime, "");
    let (_, data) = events.next().await.unwrap();
    (events, serde_json::from_str(&data).unwrap())
}

/// Posts `result` as alice's response to the server's question `q` (202),
/// then reads what the call answers on its stream.
async fn answered(
    addr: SocketAddr,
    sid: &str,
    events: &mut Events,
    q: &Value,
    result: Value,
) -> Value {
    let answer = json!({"jsonrpc": "2.0", "id": q["id"], "result": result});
    assert_eq!(
        post(addr, "alice", sid, &answer).await.status(),
        StatusCode::ACCEPTED
    );
    let (_, data) = events.next().await.unwrap();
    serde_json::from_str(&data).unwrap()
}

/// The stream ends within `within`, with no further event.
async fn ends(events: &mut Events, within: Duration) {
    let next = tokio::time::timeout(within, events.next())
        .await
        .expect("the stream ends at once");
    assert_eq!(next, None);
}

#[tokio::test]
async fn a_session_flood_costs_the_flooder_its_own_sessions_only() {
    // SECURITY.md "Budgets": one principal at its quota gives up its own
    // longest-idle session; nobody else is locked out.
    let f = start(limits(8, 2, 16), Duration::from_secs(600)).await;
    let alice = open_as(f.addr, "alice").await.unwrap();
    for _ in 0..1100 {
        open_as(f.addr, "mallory").await.unwrap();
    }
    let metrics = f.server.metrics();
    assert_eq!(metrics.sessions_closed("evicted"), 1098);
    assert_eq!(metrics.limits_reached("sessions_per_principal"), 1098);
    // Alice's session is untouched, and a newcomer still gets in.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, tools) = json_of(post(f.addr, "alice", &alice, &list).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tools["result"]["tools"][0]["name"], "hello", "{tools}");
    open_as(f.addr, "bob").await.unwrap();
    assert!(
        metrics
            .render_prometheus()
            .contains("tern_sessions_open 4\n"),
        "alice 1, mallory 2, bob 1"
    );
}

#[tokio::test]
async fn a_principal_whose_sessions_are_all_busy_is_refused_alone() {
    let f = start(limits(4, 2, 16), Duration::from_secs(600)).await;
    let m1 = open_as(f.addr, "mallory").await.unwrap();
    let m2 = open_as(f.addr, "mallory").await.unwrap();
    let (_c1, _) = asked(f.addr, "mallory", &m1, 1, "confirm").await;
    let (_c2, _) = asked(f.addr, "mallory", &m2, 1, "confirm").await;
    // Both of mallory's sessions have a call running: none to give up.
    let (status, body) = open_as(f.addr, "mallory").await.unwrap_err();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(
        body["error"]["message"],
        "too many open sessions for this client, each with a call running; end one first"
    );
    // BASE-5: the refusal answers the initialize's id.
    assert_eq!(body["id"], 0, "{body}");
    // Others still get in until the table is full.
    open_as(f.addr, "alice").await.unwrap();
    open_as(f.addr, "bob").await.unwrap();
    // Full: a principal with nothing to give up gets 503; one with an
    // idle session gives that one up.
    let (status, body) = open_as(f.addr, "carol").await.unwrap_err();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["id"], 0, "{body}");
    open_as(f.addr, "alice").await.unwrap();
    assert_eq!(f.server.metrics().limits_reached("sessions"), 2);
}

#[tokio::test]
async fn anonymous_clients_cannot_hold_the_table_with_busy_sessions() {
    // Without authentication every client is one principal: when each
    // open session has a call running, a newcomer still gets in, and the
    // longest-idle session goes with its call and stream (SECURITY.md,
    // "2025-11-25 sessions").
    let f = start(limits(2, 2, 16), Duration::from_secs(600)).await;
    let first = open_as(f.addr, "anonymous").await.unwrap();
    let (mut first_call, _) = asked(f.addr, "anonymous", &first, 1, "confirm").await;
    let second = open_as(f.addr, "anonymous").await.unwrap();
    let (_second_call, _) = asked(f.addr, "anonymous", &second, 1, "confirm").await;
    let third = open_as(f.addr, "anonymous").await.unwrap();
    ends(&mut first_call, Duration::from_secs(2)).await;
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    assert_eq!(
        post(f.addr, "anonymous", &first, &ping).await.status(),
        StatusCode::NOT_FOUND
    );
    for sid in [&second, &third] {
        assert_eq!(
            post(f.addr, "anonymous", sid, &ping).await.status(),
            StatusCode::OK
        );
    }
    let metrics = f.server.metrics();
    assert_eq!(metrics.sessions_closed("evicted"), 1);
    assert_eq!(metrics.limits_reached("sessions"), 1);
}

#[tokio::test]
async fn a_sessions_calls_hold_places_among_the_requests_running() {
    // SECURITY.md "Every request": a call in a session counts against the
    // requests running per principal and in all, as a modern one does.
    let clock = ManualClock::new(1_800_000_000);
    let server = Server::builder("t", "1")
        .tool("hello", "says hello", hello)
        .tool("confirm", "asks first", confirm)
        .clock(clock)
        .config(Config {
            requests: tern_server::RequestLimits {
                max_running_per_principal: 2,
                max_running: 3,
            },
            ..Config::default()
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tern_http::router(server.clone(), HttpOptions::default(), Arc::new(ByHeader));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let s1 = open_as(addr, "mallory").await.unwrap();
    let s2 = open_as(addr, "mallory").await.unwrap();
    let (_c1, _) = asked(addr, "mallory", &s1, 1, "confirm").await;
    let (_c2, _) = asked(addr, "mallory", &s2, 1, "confirm").await;
    // Mallory's share is spent, in any of her sessions.
    let (status, body) =
        json_of(post(addr, "mallory", &s1, &call(2, "hello", json!({}))).await).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["id"], 2);
    assert_eq!(body["error"]["code"], -31003, "{body}");
    assert_eq!(
        body["error"]["message"],
        "too many requests running for this client; wait for one to end"
    );
    assert_eq!(server.metrics().limits_reached("requests_per_principal"), 1);
    // Another principal still has the rest of the total.
    let alice = open_as(addr, "alice").await.unwrap();
    let (_a1, _) = asked(addr, "alice", &alice, 1, "confirm").await;
    let (status, _) =
        json_of(post(addr, "alice", &alice, &call(2, "hello", json!({}))).await).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(server.metrics().limits_reached("requests"), 1);
}

#[tokio::test]
async fn an_idle_session_closes_on_the_servers_clock_but_a_busy_one_stays() {
    let f = start(limits(8, 4, 16), Duration::from_secs(3600)).await;
    let idle = open_as(f.addr, "alice").await.unwrap();
    let busy = open_as(f.addr, "alice").await.unwrap();
    let (_events, _) = asked(f.addr, "alice", &busy, 1, "confirm").await;
    f.clock.advance(599);
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    assert_eq!(
        post(f.addr, "alice", &idle, &ping).await.status(),
        StatusCode::OK
    );
    // 600 s after its last message the idle one is gone; the one with a
    // call running is not, however long the call waits.
    f.clock.advance(600);
    assert_eq!(
        post(f.addr, "alice", &idle, &ping).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        post(f.addr, "alice", &busy, &ping).await.status(),
        StatusCode::OK
    );
    assert_eq!(f.server.metrics().sessions_closed("idle"), 1);
}

#[tokio::test]
async fn abandoned_calls_are_capped_per_session_and_give_their_place_back() {
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "mallory").await.unwrap();
    let mut waiting = Vec::new();
    let mut refused = 0;
    for id in 1..=1500 {
        let resp = post(f.addr, "mallory", &sid, &call(id, "confirm", json!({}))).await;
        if resp.status() == StatusCode::TOO_MANY_REQUESTS {
            let (_, body) = json_of(resp).await;
            assert_eq!(body["id"], id, "{body}");
            assert_eq!(body["error"]["code"], -31003, "{body}");
            assert_eq!(
                body["error"]["message"],
                "this session already has 16 calls running; wait for one to end"
            );
            refused += 1;
        } else {
            assert_eq!(resp.status(), StatusCode::OK);
            waiting.push(Events::new(resp));
        }
    }
    assert_eq!((waiting.len(), refused), (16, 1484));
    assert_eq!(f.server.metrics().limits_reached("session_calls"), 1484);
    // Answering one ends its call, and its place is free again.
    let mut first = waiting.remove(0);
    first.next().await.unwrap();
    let (_, data) = first.next().await.unwrap();
    let question: Value = serde_json::from_str(&data).unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
                        "result": {"action": "accept", "content": {"ok": true}}});
    assert_eq!(
        post(f.addr, "mallory", &sid, &answer).await.status(),
        StatusCode::ACCEPTED
    );
    let (_, done) = first.next().await.unwrap();
    let done: Value = serde_json::from_str(&done).unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "went on", "{done}");
    let resp = post(f.addr, "mallory", &sid, &call(2000, "confirm", json!({}))).await;
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_call_the_client_never_answers_ends_at_the_answer_timeout() {
    let f = start(limits(8, 4, 1), Duration::from_millis(300)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let (mut events, _) = asked(f.addr, "alice", &sid, 1, "guarded").await;
    let (_, data) = events.next().await.unwrap();
    let failed: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(failed["id"], 1);
    assert_eq!(failed["error"]["code"], -31004, "{failed}");
    assert_eq!(
        failed["error"]["message"],
        "the client did not answer elicitation/create in time"
    );
    assert_eq!(f.seen.went_on.load(Ordering::SeqCst), 0);
    // The one place is free again.
    let (_again, asked_again) = asked(f.addr, "alice", &sid, 2, "guarded").await;
    assert_eq!(asked_again["method"], "elicitation/create");
}

#[tokio::test]
async fn delete_and_cancel_end_every_call_and_its_stream_at_once() {
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let (mut a, qa) = asked(f.addr, "alice", &sid, 1, "guarded").await;
    let (mut b, qb) = asked(f.addr, "alice", &sid, 2, "guarded").await;
    let (mut c, _) = asked(f.addr, "alice", &sid, 3, "guarded").await;
    // BASE-3: an id still in flight in this session names one call only.
    let (status, dup) =
        json_of(post(f.addr, "alice", &sid, &call(2, "guarded", json!({}))).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(dup["error"]["code"], -32600, "{dup}");
    assert_eq!(
        dup["error"]["message"],
        "Invalid request: request id 2 names a call still running in this session"
    );
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 1}});
    assert_eq!(
        post(f.addr, "alice", &sid, &cancel).await.status(),
        StatusCode::ACCEPTED
    );
    ends(&mut a, Duration::from_secs(2)).await;
    // The cancelled call's question is forgotten with it.
    let late = |q: &Value| {
        json!({"jsonrpc": "2.0", "id": q["id"],
               "result": {"action": "accept", "content": {"ok": true}}})
    };
    assert_eq!(
        post(f.addr, "alice", &sid, &late(&qa)).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(f.server.metrics().rejected("unsolicited_response"), 1);
    let http = reqwest::Client::new();
    let del = http
        .delete(format!("http://{}/mcp", f.addr))
        .header("mcp-session-id", &sid)
        .header("x-who", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), StatusCode::OK);
    ends(&mut b, Duration::from_secs(2)).await;
    ends(&mut c, Duration::from_secs(2)).await;
    // The session is gone with its calls: late answers go nowhere.
    assert_eq!(
        post(f.addr, "alice", &sid, &late(&qb)).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(f.seen.went_on.load(Ordering::SeqCst), 0);
    assert_eq!(f.server.metrics().sessions_closed("deleted"), 1);
}

#[tokio::test]
async fn responses_that_cannot_be_accepted_get_400_and_nothing_proceeds() {
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let (mut events, q) = asked(f.addr, "alice", &sid, 1, "guarded").await;
    let id = q["id"].clone();
    let both = json!({"jsonrpc": "2.0", "id": id,
        "result": {"action": "accept", "content": {"ok": true}},
        "error": {"code": -1, "message": "no"}});
    let (status, body) = json_of(post(f.addr, "alice", &sid, &both).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(
        body["error"]["message"],
        "Invalid request: a response carries either result or error, not both"
    );
    assert!(body.get("id").is_none(), "{body}");
    let dup = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"action":"decline","action":"accept","content":{{"ok":true}}}}}}"#
    );
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"action":"accept","content":{}{}}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    for bad in [dup, deep] {
        let r = legacy_post(f.addr, "alice", Some(&sid))
            .body(bad.clone())
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(r).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(body["error"]["code"], -32602, "{body}");
        assert!(body.get("id").is_none(), "{body}");
    }
    assert_eq!(f.seen.went_on.load(Ordering::SeqCst), 0);
    // The question still waits for a real answer.
    let decline = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "decline"}});
    assert_eq!(
        post(f.addr, "alice", &sid, &decline).await.status(),
        StatusCode::ACCEPTED
    );
    let (_, data) = events.next().await.unwrap();
    let done: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "stopped", "{done}");
    assert_eq!(f.seen.went_on.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_used_single_use_key_in_a_session_is_refused_without_restart_advice() {
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let first = json_of(
        post(
            f.addr,
            "alice",
            &sid,
            &call(1, "redeem", json!({"code": "X1"})),
        )
        .await,
    )
    .await;
    assert_eq!(first.1["result"]["content"][0]["text"], "redeemed X1");
    let (status, again) = json_of(
        post(
            f.addr,
            "alice",
            &sid,
            &call(2, "redeem", json!({"code": "X1"})),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        again["error"],
        json!({"code": -32602, "message": "This was already done once and cannot be repeated"})
    );
    assert_eq!(f.server.metrics().rejected("already_consumed"), 1);
}

#[tokio::test]
async fn a_root_that_climbs_out_is_refused_in_a_session_too() {
    // SECURITY.md §3.8, on the 2025-11-25 bridge: the same check as an
    // `inputResponses` entry.
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    for (n, uri) in [
        "file:///tmp/ws/../../etc",
        "file:///tmp/%2e%2e/etc",
        "file://attacker.example/share",
    ]
    .into_iter()
    .enumerate()
    {
        let id = i64::try_from(n).unwrap() + 1;
        let (mut events, q) = asked(f.addr, "alice", &sid, id, "workspace").await;
        assert_eq!(q["method"], "roots/list");
        let done = answered(
            f.addr,
            &sid,
            &mut events,
            &q,
            json!({"roots": [{"uri": uri}]}),
        )
        .await;
        assert_eq!(done["error"]["code"], -32602, "{done}");
        assert_eq!(done["error"]["data"]["key"], "workspace", "{done}");
        assert!(
            done["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("inputResponses.workspace: root {uri:?} ")),
            "{done}"
        );
    }
    assert!(f.seen.roots.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_sampling_answer_missing_its_content_is_refused_in_a_session_too() {
    // The issue's image block without data or mimeType, on the 2025-11-25
    // bridge: the same check as an `inputResponses` entry.
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let (mut events, q) = asked(f.addr, "alice", &sid, 1, "sample").await;
    assert_eq!(q["method"], "sampling/createMessage");
    let done = answered(
        f.addr,
        &sid,
        &mut events,
        &q,
        json!({"role": "assistant", "model": "m", "content": {"type": "image"}}),
    )
    .await;
    assert_eq!(done["error"]["code"], -32602, "{done}");
    assert_eq!(done["error"]["data"]["key"], "q", "{done}");
    assert_eq!(
        done["error"]["message"], "inputResponses.q: content block 0: missing field `data`",
        "{done}"
    );
    assert_eq!(f.seen.went_on.load(Ordering::SeqCst), 0);
}

/// HTTP-S2: a session's `GET` and `DELETE` pass the same Origin check as a
/// `POST`; a page on another origin that learnt a session id can neither
/// read its stream nor end it.
#[tokio::test]
async fn a_foreign_origin_can_neither_read_nor_end_a_session() {
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let evil = "http://evil.example.com";
    let read = super::server::get(f.addr, &sid, None)
        .header("origin", evil)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(read).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body["error"]["message"],
        "Invalid request: Origin not allowed"
    );
    let end = reqwest::Client::new()
        .delete(format!("http://{}/mcp", f.addr))
        .header("mcp-session-id", &sid)
        .header("x-who", "alice")
        .header("origin", evil)
        .send()
        .await
        .unwrap();
    assert_eq!(end.status(), StatusCode::FORBIDDEN);
    assert_eq!(f.server.metrics().sessions_closed("deleted"), 0);
    // The session is whole; a loopback origin is let through.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, tools) = json_of(post(f.addr, "alice", &sid, &list).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tools["result"]["tools"][0]["name"], "hello", "{tools}");
    let read = super::server::get(f.addr, &sid, None)
        .header("origin", format!("http://{}", f.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);
}

/// 2025-11-25 transport (COMPAT-A2): in a session, a version header that
/// names no version of that era gets 400 and is not served; the
/// session's own version is.
#[tokio::test]
async fn a_session_request_naming_a_version_outside_its_era_gets_400() {
    let f = start(limits(8, 4, 16), Duration::from_secs(600)).await;
    let sid = open_as(f.addr, "alice").await.unwrap();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let with_version = |v: &str| {
        reqwest::Client::new()
            .post(format!("http://{}/mcp", f.addr))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("x-who", "alice")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", v)
            .body(list.to_string())
    };
    for bad in ["garbage", "2026-07-28"] {
        let (status, body) = json_of(with_version(bad).send().await.unwrap()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(
            body["error"]["message"],
            "Invalid request: unsupported MCP-Protocol-Version; a session speaks 2025-11-25, \
             2025-06-18, 2025-03-26",
            "{body}"
        );
    }
    let (status, tools) = json_of(with_version("2025-11-25").send().await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tools["result"]["tools"][0]["name"], "hello", "{tools}");
}
