//! `tern call` against a hostile server, past each of its budgets (README,
//! "Budgets of `tern call`"): rounds and a 2025-11-25 server's requests
//! (`--max-rounds`, MRTR-C-A3), the whole call's time (`--timeout`), the
//! tokens of a sampling request (`--max-tokens`), roots only with consent
//! (ROOT-C2, META-A1), and what the terminal shows (notifications, long
//! text, long lists).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::hostile::{Hostile, form, text_result, tool};
use super::common::{Run, Target};

/// The answers a server got: `n - 1` results, then the refusal of round
/// `n + 1` (-32603). A request the server sends after the refusal may race
/// the client's exit; if it is answered at all, it is with an error, never
/// with what the person shares.
fn refused_after(answers: &[Value], n: usize) -> &[Value] {
    assert!(answers.len() >= n, "{answers:#?}");
    assert!(
        answers[..n - 1].iter().all(|a| a.get("result").is_some()),
        "{answers:#?}"
    );
    assert_eq!(answers[n - 1]["error"]["code"], -32603, "{answers:#?}");
    for late in &answers[n..] {
        assert!(
            late.get("result").is_none(),
            "shared after the ceiling: {late}"
        );
    }
    &answers[..n - 1]
}

fn asks(method: &str, params: Value, times: usize) -> Value {
    json!({
        "tools": [tool("t")],
        "call": {"asks": {"request": {"method": method, "params": params}, "times": times},
                 "result": {"content": [{"type": "text", "text": "finished"}]}}
    })
}

#[test]
fn a_legacy_server_asking_for_roots_a_thousand_times_meets_the_round_ceiling() {
    let h = Hostile::legacy(asks("roots/list", json!({}), 1000));
    let dir = h.dir().display().to_string();
    h.call(&["tool", "t", "--yes", "--root", &dir])
        .failed(3)
        .says("round limit: the flow needs more than 10 rounds: the server's roots/list request during tools/call would start round 11");
    let answers = h.answers();
    // MRTR-C-A3: the call's request is the first round, so 9 are answered,
    // as a 2026-07-28 flow answers 9 interim results; the 10th is refused.
    for a in refused_after(&answers, 10) {
        assert_eq!(a["result"]["roots"][0]["uri"], format!("file://{dir}"));
    }

    // --max-rounds lowers it.
    let h = Hostile::legacy(asks("roots/list", json!({}), 1000));
    h.call(&["tool", "t", "--yes", "--max-rounds", "3"])
        .failed(3)
        .says("the flow needs more than 3 rounds");
    assert_eq!(refused_after(&h.answers(), 3).len(), 2);
}

#[test]
fn a_legacy_server_asking_for_a_form_a_thousand_times_meets_the_round_ceiling() {
    let params = json!({"mode": "form", "message": "Again?", "requestedSchema": {
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}});
    let h = Hostile::legacy(asks("elicitation/create", params, 1000));
    h.call(&["tool", "t", "--yes"])
        .failed(3)
        .says("the flow needs more than 10 rounds: the server's elicitation/create request");
    let answers = h.answers();
    assert!(
        refused_after(&answers, 10)
            .iter()
            .all(|a| a["result"] == json!({"action": "accept", "content": {"ok": true}})),
        "{answers:#?}"
    );
    // Within the ceiling the call completes.
    let params = json!({"mode": "form", "message": "Once?", "requestedSchema": {
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}});
    let h = Hostile::legacy(asks("elicitation/create", params, 9));
    h.call(&["tool", "t", "--yes"]).ok().says("finished");
}

#[test]
fn without_a_terminal_no_root_is_offered_or_shared_without_consent() {
    // ROOT-C2, META-A1: no terminal, no --root, no --yes: roots are not
    // declared, so every roots/list is refused (-32601), and the refusals
    // still count against the ceiling.
    let h = Hostile::legacy(asks("roots/list", json!({}), 1000));
    h.call(&["tool", "t"]).failed(3).says("round limit");
    let init = &h.requests("initialize")[0];
    // The tasks extension is declared by default (issue 52); a 2025-11-25
    // server ignores what it does not know.
    assert_eq!(
        init["params"]["capabilities"],
        json!({"elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    let answers = h.answers();
    // The 10th is the ceiling's refusal; a request sent after it may race
    // the client's exit and is refused too.
    assert!(answers.len() >= 10, "{answers:#?}");
    assert!(answers[..9].iter().all(|a| a["error"]["code"] == -32601));
    assert_eq!(answers[9]["error"]["code"], -32603, "{answers:#?}");
    assert!(answers[10..].iter().all(|a| a.get("result").is_none()));
    let log = std::fs::read_to_string(h.path("received.jsonl")).unwrap();
    assert!(!log.contains("file://"), "a root was shared: {log}");

    // A 2026-07-28 server that needs roots says so (-32021), and tern names
    // the capability and both ways to consent (issue 52).
    let h = Hostile::modern(json!({"tools": [tool("t")], "call": {"rounds": [{"error": {
        "code": -32021, "message": "Server requires the roots capability",
        "data": {"requiredCapabilities": {"roots": {}}}}}]}}));
    let r = h.call(&["tool", "t"]);
    r.failed(3).says(
        "tern: the server requires the roots capability; pass --root DIR to share a directory, or --yes to share the current one (a terminal asks instead)\n",
    );
    assert!(!r.stderr.contains("sampling"), "{r:#?}");
    assert!(!r.stderr.contains("tasks"), "{r:#?}");
    let sent = &h.requests("tools/call")[0];
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    // --root is the consent: declared, and shared without a terminal.
    let h = Hostile::modern(json!({"tools": [tool("t")], "call": {"rounds": [
        {"result": {"resultType": "input_required", "requestState": "$next",
            "inputRequests": {"where": {"method": "roots/list"}}}},
        {"result": text_result("thanks")}]}}));
    let dir = h.dir().display().to_string();
    h.call(&["tool", "t", "--root", &dir])
        .ok()
        .says(&format!(
            "tern: sharing the roots file://{dir} without asking (--root; --no-roots shares none)"
        ))
        .says("thanks");
    let retry = &h.requests("tools/call")[1];
    assert_eq!(
        retry["params"]["inputResponses"]["where"]["roots"][0]["uri"],
        format!("file://{dir}")
    );
}

#[test]
fn a_flow_that_never_ends_meets_max_rounds() {
    let scenario =
        json!({"tools": [tool("t")], "call": {"rounds": [{"result": form("again", "Again?")}]}});
    let h = Hostile::modern(scenario.clone());
    h.call(&["tool", "t", "--yes"])
        .failed(3)
        .says("round limit: the flow needs more than 10 rounds");
    assert_eq!(h.requests("tools/call").len(), 10);
    // Above the library's default of 10 too: the flag sets the client's.
    let h = Hostile::modern(scenario);
    h.call(&["tool", "t", "--yes", "--max-rounds", "25"])
        .failed(3)
        .says("the flow needs more than 25 rounds");
    assert_eq!(h.requests("tools/call").len(), 25);
    // A ceiling of none is no ceiling: refused before anything is sent.
    for flag in ["--max-rounds", "--max-tokens"] {
        let h = Hostile::modern(json!({"tools": [tool("t")]}));
        h.call(&["tool", "t", flag, "0"])
            .failed(2)
            .says("0 is not in 1..");
        assert!(h.received().is_empty());
    }
}

fn streaming() -> Value {
    json!({"tools": [tool("t")], "call": {"notices_forever": true, "notices": [
        {"method": "notifications/message", "params": {"level": "info", "data": "still busy"}}]}})
}

#[test]
fn a_server_streaming_notifications_cannot_keep_a_call_alive() {
    for h in [Hostile::modern(streaming()), Hostile::legacy(streaming())] {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test measures that the call ended in time"
        )]
        let t0 = Instant::now();
        h.call(&["tool", "t", "--timeout", "2"])
            .failed(3)
            .says("[info] still busy")
            .says("tern: the call did not finish within 2 s (--timeout SECS; 0 for no limit)");
        assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    }
    // The limit is on by default, and documented where the flag is.
    let help = super::common::hostile::help("call");
    assert!(help.contains("0 for no"), "{help}");
    assert!(help.contains("[default: 600]"), "{help}");
    // 0 is no limit, not no time.
    let h = Hostile::modern(json!({"tools": [tool("t")],
        "call": {"rounds": [{"result": text_result("in time")}]}}));
    h.call(&["tool", "t", "--timeout", "0"])
        .ok()
        .says("in time");
}

#[test]
fn a_flood_of_notifications_is_shown_within_its_budget() {
    // Paced so the transport's queue never overflows: every notice reaches
    // the call, and the budget is what holds them back.
    let h = Hostile::modern(json!({"tools": [tool("t")], "call": {
        "notices": [{"method": "notifications/message", "params": {"level": "info", "data": "tick"}}],
        "notices_repeat": 3000, "notices_pause_every": 20,
        "rounds": [{"result": text_result("done")}]}}));
    let r = h.call(&["tool", "t"]);
    r.ok().says("done");
    assert_eq!(
        r.stderr.matches("[info] tick").count(),
        1000,
        "{}",
        r.stderr.len()
    );
    let unshown = r
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("tern: ")?.strip_suffix(
                " more progress and log notifications and task status lines were not shown (at most 1000 a call)",
            )
        })
        .expect("the count of notifications not shown");
    assert_eq!(unshown, "2000", "{}", r.stderr.len());
}

/// A chat-completions endpoint that records the body of the one request it
/// answers, with `reply`.
fn model_endpoint(reply: &str) -> (String, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let (tx, rx) = mpsc::channel();
    let body = json!({"model": "m-1", "choices": [{"message": {"role": "assistant",
        "content": reply}, "finish_reason": "stop"}]})
    .to_string();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut request = vec![0; length];
        reader.read_exact(&mut request).unwrap();
        tx.send(serde_json::from_slice(&request).unwrap()).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    });
    (url, rx)
}

fn sampling(max_tokens: u64) -> Value {
    json!({"tools": [tool("t")], "call": {"rounds": [
        {"result": {"resultType": "input_required", "requestState": "$next", "inputRequests": {
            "model_answer": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Write forever"}}],
                "maxTokens": max_tokens}}}}},
        {"result": text_result("sampled")}]}})
}

#[test]
fn a_sampling_request_asks_the_model_for_at_most_max_tokens() {
    // SAMP-5, SECURITY.md §3.10: the server's maxTokens is lowered to the
    // client's ceiling before the model is called, and the dialog says so.
    let h = Hostile::modern(sampling(1_000_000_000));
    let (url, seen) = model_endpoint("ok");
    h.call(&["tool", "t", "--yes", "--model-url", &url])
        .ok()
        .says("at most 4096 tokens (the server asked for 1000000000; --max-tokens caps it)")
        .says("sampled");
    let body = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Write forever"}])
    );
    let retry = &h.requests("tools/call")[1];
    assert_eq!(
        retry["params"]["inputResponses"]["model_answer"],
        json!({"role": "assistant", "content": {"type": "text", "text": "ok"},
            "model": "m-1", "stopReason": "endTurn"})
    );
    // --max-tokens sets the ceiling, for a command too: in its request and
    // its environment.
    let h = Hostile::modern(sampling(1_000_000_000));
    let cmd = "cat > request.json; echo \"$TERN_MAX_TOKENS\"";
    h.call(&[
        "tool",
        "t",
        "--yes",
        "--max-tokens",
        "100",
        "--sampling-cmd",
        cmd,
    ])
    .ok()
    .says("at most 100 tokens (the server asked for 1000000000; --max-tokens caps it)");
    let request: Value =
        serde_json::from_str(&std::fs::read_to_string(h.path("request.json")).unwrap()).unwrap();
    assert_eq!(request["maxTokens"], 100);
    let retry = &h.requests("tools/call")[1];
    assert_eq!(
        retry["params"]["inputResponses"]["model_answer"]["content"]["text"],
        "100"
    );
    // A request within the ceiling goes as it is.
    let h = Hostile::modern(sampling(50));
    let (url, seen) = model_endpoint("short");
    let r = h.call(&["tool", "t", "--yes", "--model-url", &url]);
    r.ok().says("at most 50 tokens");
    assert!(!r.stderr.contains("caps it"), "{r:#?}");
    assert_eq!(
        seen.recv_timeout(Duration::from_secs(5)).unwrap()["max_tokens"],
        50
    );
}

#[test]
fn long_text_and_long_lists_from_a_server_are_shown_within_budget() {
    let long = "x".repeat(100_000);
    let h = Hostile::modern(json!({"tools": [tool("t")], "call": {"rounds": [
        {"error": {"code": -32000, "message": long}}]}}));
    let r: Run = h.call(&["tool", "t"]);
    r.failed(1);
    let shown = "server error -32000: ";
    let left = shown.len() + long.len() - 500;
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("tern: server error"))
        .unwrap();
    assert_eq!(
        line,
        format!(
            "tern: {shown}{} … ({left} more characters not shown)",
            "x".repeat(500 - shown.len())
        )
    );
    // A server listing thousands of tools: a few named, the rest counted.
    let tools: Vec<Value> = (0..5000).map(|i| tool(&format!("tool{i}"))).collect();
    let h = Hostile::modern(json!({"tools": tools}));
    h.call(&["tool", "missing"])
        .failed(2)
        .says("the server has no tool \"missing\"; it has: tool0, tool1, ")
        .says("tool19, and 4980 more");
}

#[test]
fn the_deploy_shares_no_root_without_consent() {
    // ROOT-C2 against the reference server: an answers file approves the
    // form but says nothing of roots, so none are offered or shared.
    let t = Target::http();
    let answers = r#"{"deployment_approval": {"action": "accept", "content": {"approved": true}}}"#;
    t.call_with(answers, &["tool", "deploy", "environment=staging", "-v"])
        .ok()
        .says("declared clientCapabilities: {\"sampling\":{},\"elicitation\":{\"form\":{},\"url\":{}},\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}")
        .says("deployed to staging with 0 workspace root(s)");
    let dir = std::fs::canonicalize(t.dir()).unwrap();
    let dir = dir.display().to_string();
    t.call_with(
        answers,
        &["tool", "deploy", "environment=staging", "--root", &dir],
    )
    .ok()
    .says("(--root; --no-roots shares none)")
    .says("deployed to staging with 1 workspace root(s)");
}
