//! `tern probe` against `tern serve` (every case passes), against the
//! Python and TypeScript SDKs' servers (their outcomes recorded), and
//! against deliberately careless servers (exactly the matching cases fail).

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use super::common::{Run, Server, listening, run, tern_bin};

mod flows;

fn tern(args: &[&str]) -> Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(args);
    run(cmd)
}

/// `tern probe ... --json`: status by case.
fn statuses(r: &Run) -> BTreeMap<String, String> {
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:#?}"));
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!(
                    "{}: {}",
                    c["family"].as_str().unwrap(),
                    c["case"].as_str().unwrap()
                ),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// `tern probe --cmd CMD --tool deploy environment=prod --json`.
fn probe_deploy(cmd: &str) -> Run {
    tern(&[
        "probe",
        "--cmd",
        cmd,
        "--tool",
        "deploy",
        "environment=prod",
        "--json",
    ])
}

/// The cases that failed, in order.
fn failed(all: &BTreeMap<String, String>) -> Vec<&str> {
    all.iter()
        .filter(|(_, s)| *s == "FAIL")
        .map(|(c, _)| c.as_str())
        .collect()
}

#[test]
fn tern_serve_passes_every_case() {
    let s = Server::start();
    let r = tern(&[
        "probe",
        &s.url,
        "--tool",
        "deploy",
        "environment=prod",
        "--json",
    ]);
    r.ok();
    let all = statuses(&r);
    let failed: Vec<_> = all.iter().filter(|(_, st)| *st == "FAIL").collect();
    assert!(failed.is_empty(), "{failed:?}\n{r:#?}");
    for case in [
        "baseline: flow completes",
        "integrity: bit flip in the middle",
        "integrity: forged",
        "integrity: a number",
        "bindings: other arguments",
        "answers: deployment_approval: content against the schema",
        "answers: deployment_approval: decline and cancel told apart",
        "answers: workspace_roots: a root that is not a file URI",
        "rounds: a round ceiling",
        "gates: no capability declared",
        "gates: Mcp-Name header unlike the body",
        "liveness: the server still answers",
    ] {
        assert_eq!(
            all.get(case).map(String::as_str),
            Some("PASS"),
            "{case}: {all:#?}"
        );
    }
    // Replays only of a tool declared single use.
    assert_eq!(all["replay: the final state replayed"], "SKIP");

    // The single-use tool, over stdio: its final state never redeems twice.
    let cmd = format!("'{}' serve --stdio", tern_bin());
    let r = tern(&[
        "probe",
        "--cmd",
        &cmd,
        "--tool",
        "redeem",
        "code=PROBE-1",
        "--single-use",
        "redeem",
        "--json",
    ]);
    r.ok();
    let all = statuses(&r);
    assert_eq!(all["replay: the final state replayed"], "PASS", "{all:#?}");
    assert_eq!(
        all["replay: two retries of one state at once"], "PASS",
        "{all:#?}"
    );
    assert_eq!(all["gates: Mcp-Name header unlike the body"], "SKIP");

    // Single use per flow: the order's confirmed state opens once.
    let r = tern(&[
        "probe",
        "--cmd",
        &cmd,
        "--tool",
        "order",
        "item=book",
        "--single-use",
        "order",
        "--json",
    ]);
    r.ok();
    let all = statuses(&r);
    assert_eq!(all["replay: the final state replayed"], "PASS", "{all:#?}");
}

#[test]
fn the_table_names_each_case_and_remote_hosts_need_consent() {
    let s = Server::start();
    let junit = s.dir.path().join("probe.xml");
    let j = junit.display().to_string();
    tern(&[
        "probe",
        &s.url,
        "--tool",
        "deploy",
        "environment=prod",
        "--junit",
        &j,
    ])
    .ok()
    .says("PASS   MUST    MRTR-SEC2   integrity   forged  ")
    .says("passed, 0 failed");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"tern probe\"") && xml.contains("failures=\"0\""),
        "{xml}"
    );
    tern(&["probe", "http://192.0.2.1:8080/mcp"])
        .failed(2)
        .says("needs --allow-remote 192.0.2.1");
}

/// A server that gets MRTR wrong on purpose: its state is readable base64
/// JSON with no integrity, it completes whenever the answer's key is there,
/// whatever the state, and it never stops asking.
const CARELESS: &str = r#"
import base64, json, sys
def reply(id, result):
    print(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}), flush=True)
ask = {"resultType": "input_required", "inputRequests": {"ok": {"method": "elicitation/create",
       "params": {"mode": "form", "message": "Go on?", "requestedSchema": {"type": "object",
       "properties": {"go": {"type": "boolean"}}, "required": ["go"]}}}}}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, p = m["method"], m.get("params") or {}
    if method == "tools/list":
        reply(m["id"], {"resultType": "complete", "tools": [{"name": "go", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        answers = p.get("inputResponses")
        if isinstance(answers, dict) and "ok" in answers:
            reply(m["id"], {"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
        else:
            state = base64.urlsafe_b64encode(json.dumps({"round": 1}).encode()).decode()
            reply(m["id"], dict(ask, requestState=state))
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}}), flush=True)
"#;

#[test]
fn a_careless_server_fails_exactly_the_matching_cases() {
    let dir = tempfile::TempDir::new().unwrap();
    let script = dir.path().join("careless.py");
    std::fs::write(&script, CARELESS).unwrap();
    let cmd = format!("python3 {}", script.display());
    let r = tern(&["probe", "--cmd", &cmd, "--era", "modern", "--json"]);
    // A MUST failed: exit 1.
    r.failed(1);
    let all = statuses(&r);
    let expect = [
        ("baseline: flow completes", "PASS"),
        ("integrity: bit flip in the middle", "FAIL"),
        ("integrity: forged", "FAIL"),
        ("integrity: empty", "FAIL"),
        ("integrity: a number", "FAIL"),
        ("bindings: other arguments", "FAIL"),
        ("bindings: another tool name", "FAIL"),
        ("answers: only an answer never asked", "PASS"),
        ("answers: missing answers are asked again", "PASS"),
        ("answers: inputResponses null", "FAIL"),
        ("answers: ok: content against the schema", "FAIL"),
        ("answers: ok: an answer of the wrong kind", "FAIL"),
        ("answers: ok: decline and cancel told apart", "FAIL"),
        ("rounds: a round ceiling", "FAIL"),
        ("gates: no capability declared", "FAIL"),
        ("liveness: the server still answers", "PASS"),
    ];
    for (case, status) in expect {
        assert_eq!(
            all.get(case).map(String::as_str),
            Some(status),
            "{case}: {all:#?}"
        );
    }
}

/// The Python SDK's server, as recorded: it seals and binds its state and
/// validates form content, but takes `inputResponses: null` as no answers,
/// turns an answer of the wrong kind into a tool error result, has no round
/// ceiling and ignores `inputResponses` on other methods. A change in the
/// SDK shows here.
#[test]
#[cfg_attr(tern_no_py_sdk, ignore = "the Python SDK peer is not installed")]
fn the_python_sdk_server_as_recorded() {
    let py = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/py");
    let cmd = format!(
        "'{}' '{}'",
        py.join(".venv/bin/python").display(),
        py.join("deploy_server.py").display()
    );
    let r = probe_deploy(&cmd);
    r.failed(1);
    let all = statuses(&r);
    let fails = failed(&all);
    assert_eq!(
        fails,
        [
            "answers: __main__:ask_approval: an answer of the wrong kind",
            "answers: inputResponses null",
            "gates: inputResponses on tools/list",
            "rounds: a round ceiling",
        ],
        "{all:#?}"
    );
    for case in [
        "baseline: flow completes",
        "integrity: forged",
        "integrity: bit flip in the middle",
        "bindings: other arguments",
        "answers: __main__:ask_approval: content against the schema",
        "answers: __main__:ask_roots: a root that is not a file URI",
        "gates: no capability declared",
        "liveness: the server still answers",
    ] {
        assert_eq!(all[case], "PASS", "{case}: {all:#?}");
    }
}

/// The TypeScript SDK v2 line's server (`@modelcontextprotocol/server`
/// 2.4.0), as recorded, with the SDK's own codec (HMAC, bound to the method
/// as its documentation suggests): it refuses every altered state and
/// gates on capabilities, but its state does not bind the arguments, it
/// takes `inputResponses: null` as no answers, its helpers read a decline
/// and a cancel alike (both re-ask), a root is not checked to be a file
/// URI, there is no round ceiling, and `inputResponses` on other methods
/// are ignored. No MUST fails, so the probe exits 1 by default (SHOULD
/// cases fail) and 0 under `--fail-on must`. A change in the SDK shows
/// here.
#[test]
#[cfg_attr(
    tern_no_ts2_sdk,
    ignore = "the TypeScript SDK v2 peer is not installed"
)]
fn the_typescript_sdk_server_as_recorded() {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/ts2/deploy-server.mjs");
    let cmd = format!("node '{}'", server.display());
    tern(&[
        "probe",
        "--cmd",
        &cmd,
        "--tool",
        "deploy",
        "environment=prod",
        "--fail-on",
        "must",
    ])
    .ok();
    let r = probe_deploy(&cmd);
    r.failed(1);
    let all = statuses(&r);
    let fails = failed(&all);
    assert_eq!(
        fails,
        [
            "answers: deployment_approval: decline and cancel told apart",
            "answers: inputResponses null",
            "answers: workspace_roots: a root that is not a file URI",
            "bindings: other arguments",
            "gates: inputResponses on tools/list",
            "rounds: a round ceiling",
        ],
        "{all:#?}"
    );
    for case in [
        "baseline: flow completes",
        "integrity: forged",
        "integrity: bit flip in the middle",
        "integrity: oversized (1 MiB)",
        "answers: deployment_approval: content against the schema",
        "answers: deployment_approval: an answer of the wrong kind",
        "gates: no capability declared",
        "liveness: the server still answers",
    ] {
        assert_eq!(all[case], "PASS", "{case}: {all:#?}");
    }
}

/// A server with a sealed (HMAC) state bound to the arguments, whose flags
/// switch on the round ceiling (`ceiling`) and single use (`once`), or
/// leave the arguments unbound (`unbound`), answer a state it refuses with
/// `-32603` (`internal`) or, over HTTP (`http`: it prints its URL on
/// stderr), with HTTP 500 (`http500`): the probe must fail exactly the
/// cases of the fault left in.
const CAREFUL: &str = r#"
import base64, hashlib, hmac, json, sys
FLAGS = set(sys.argv[1:])
KEY = b"k" * 32
STATE_ERROR = -32603 if "internal" in FLAGS else -32602
used = set()
class Http500(Exception):
    pass
def reply(id, result):
    return {"jsonrpc": "2.0", "id": id, "result": result}
def error(id, code, msg):
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": msg}}
def refuse_state(id):
    if "http500" in FLAGS:
        raise Http500()
    return error(id, STATE_ERROR, "invalid requestState")
def seal(body):
    raw = json.dumps(body).encode()
    tag = hmac.new(KEY, raw, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(raw + tag).decode()
def unseal(token):
    try:
        data = base64.urlsafe_b64decode(token.encode())
    except Exception:
        return None
    raw, tag = data[:-32], data[-32:]
    if not hmac.compare_digest(tag, hmac.new(KEY, raw, hashlib.sha256).digest()):
        return None
    return json.loads(raw)
def ask(args, rnd):
    state = seal({"args": args, "round": rnd, "n": len(used) + rnd})
    return {"resultType": "input_required", "requestState": state, "inputRequests": {"ok": {
        "method": "elicitation/create", "params": {"mode": "form", "message": "Go on?", "requestedSchema": {
            "type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]}}}}}
def handle(m, name_header=None):
    method, p = m["method"], m.get("params") or {}
    if name_header is not None and name_header != (p.get("name") or p.get("uri")):
        return error(m["id"], -32020, "Header mismatch")
    if method == "tools/list":
        return reply(m["id"], {"resultType": "complete", "tools": [{"name": "spend", "inputSchema": {"type": "object"}}]})
    if method != "tools/call" or p.get("name") != "spend":
        return error(m["id"], -32602 if method == "tools/call" else -32601, "no")
    if not p.get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities", {}).get("elicitation"):
        return error(m["id"], -32021, "elicitation needed")
    args = p.get("arguments") or {}
    if "requestState" not in p:
        return reply(m["id"], ask(args, 1))
    st = p["requestState"]
    body = unseal(st) if isinstance(st, str) else None
    if body is None or ("unbound" not in FLAGS and body["args"] != args):
        return refuse_state(m["id"])
    if "ceiling" in FLAGS and body["round"] >= 8:
        return error(m["id"], -32602, "too many rounds")
    answers = p.get("inputResponses")
    if not isinstance(answers, dict):
        return error(m["id"], -32602, "inputResponses must be an object")
    a = answers.get("ok")
    if not isinstance(a, dict) or a.get("action") not in ("accept", "decline", "cancel"):
        return reply(m["id"], ask(args, body["round"] + 1))
    if a["action"] != "accept":
        return reply(m["id"], {"resultType": "complete", "content": [{"type": "text", "text": a["action"] + "d"}]})
    if not isinstance((a.get("content") or {}).get("go"), bool):
        return error(m["id"], -32602, "ok: go must be a boolean")
    if "once" in FLAGS:
        if st in used:
            return refuse_state(m["id"])
        used.add(st)
    return reply(m["id"], {"resultType": "complete", "content": [{"type": "text", "text": "spent"}]})
if "http" in FLAGS:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    lock = threading.Lock()
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass
        def do_POST(self):
            m = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            try:
                with lock:
                    out = handle(m, self.headers.get("Mcp-Name")) if "id" in m else None
            except Http500:
                out, status = b"internal error", 500
            else:
                out, status = (json.dumps(out).encode() if out else b""), (200 if out else 202)
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if status == 200 else "text/plain")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("serving http://127.0.0.1:%d/mcp" % server.server_address[1], file=sys.stderr, flush=True)
    server.serve_forever()
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m:
        print(json.dumps(handle(m)), flush=True)
"#;

/// `tern probe` against `CAREFUL` with `flags` (over stdio, or HTTP with
/// the `http` flag), `--single-use spend --json` and `extra`.
fn careful(flags: &str, extra: &[&str]) -> Run {
    let dir = tempfile::TempDir::new().unwrap();
    let script = dir.path().join("careful.py");
    std::fs::write(&script, CAREFUL).unwrap();
    let fixed = ["--single-use", "spend", "--json"];
    if !flags.split_whitespace().any(|f| f == "http") {
        let cmd = format!("python3 {} {flags}", script.display());
        return tern(&[&["probe", "--cmd", cmd.as_str()][..], &fixed[..], extra].concat());
    }
    let mut server = Command::new("python3");
    server.arg(&script).args(flags.split_whitespace());
    let (mut child, url) = listening(server, |l| l.strip_prefix("serving ").map(str::to_owned));
    let r = tern(&[&["probe", url.as_str()][..], &fixed[..], extra].concat());
    let _ = child.kill();
    let _ = child.wait();
    r
}

/// The failing cases of `tern probe` against `CAREFUL` with `flags`.
fn careful_failures(flags: &str) -> Vec<String> {
    failed(&statuses(&careful(flags, &[])))
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The failing cases of a run with their levels and rules.
fn failed_levels(r: &Run) -> Vec<(String, String, String)> {
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:#?}"));
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "FAIL")
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_owned();
            (
                format!("{}: {}", s("family"), s("case")),
                s("level"),
                s("rule"),
            )
        })
        .collect()
}

/// The advice cases `CAREFUL` always fails: it decodes a re-encoded state
/// to the same bytes, and ignores inputResponses on tools/list.
const ADVICE: [&str; 2] = [
    "gates: inputResponses on tools/list",
    "integrity: re-encoded as standard base64",
];

#[test]
fn one_fault_fails_exactly_its_cases() {
    // Both guards: only the advice cases.
    assert_eq!(careful_failures("ceiling once"), ADVICE);
    // No single use: the replay cases.
    assert_eq!(
        careful_failures("ceiling"),
        [
            ADVICE[0],
            ADVICE[1],
            "replay: the final state replayed",
            "replay: two retries of one state at once",
        ]
    );
    // No round ceiling.
    assert_eq!(
        careful_failures("once"),
        [ADVICE[0], ADVICE[1], "rounds: a round ceiling"]
    );
}

/// Issue 52 point 9: `tern probe` is a CI gate. By default (`--fail-on
/// should`) a SHOULD failure exits 1, as a MUST failure does: no round
/// ceiling, or a state that does not bind the arguments (MRTR-SEC3).
/// `--fail-on must` lets them pass; `--fail-on advice` fails on advice
/// too; a server that fails only advice exits 0 by default.
#[test]
fn a_should_failure_fails_the_run_unless_fail_on_must() {
    // Correct but for advice: exit 0, and 1 only under --fail-on advice.
    let r = careful("ceiling once", &[]);
    r.ok();
    assert_eq!(
        failed_levels(&r)
            .iter()
            .map(|f| f.1.as_str())
            .collect::<Vec<_>>(),
        ["advice", "advice"],
        "{r:#?}"
    );
    careful("ceiling once", &["--fail-on", "advice"]).failed(1);
    let table = careful("ceiling once", &["--fail-on", "must"]);
    table.ok();

    // No round ceiling: one SHOULD.
    let r = careful("once", &[]);
    r.failed(1);
    assert!(
        failed_levels(&r).contains(&(
            "rounds: a round ceiling".to_owned(),
            "SHOULD".to_owned(),
            "MRTR-SEC3".to_owned()
        )),
        "{r:#?}"
    );
    careful("once", &["--fail-on", "must"]).ok();

    // The arguments not bound: one SHOULD.
    let r = careful("ceiling once unbound", &[]);
    r.failed(1);
    assert_eq!(
        failed(&statuses(&r)),
        ["bindings: other arguments", ADVICE[0], ADVICE[1]],
        "{r:#?}"
    );
    careful("ceiling once unbound", &["--fail-on", "must"]).ok();

    // No single use: MUST cases, whatever --fail-on says.
    careful("ceiling", &["--fail-on", "must"]).failed(1);
}

/// Every case where the server must refuse a state, for `CAREFUL`'s one
/// tool over stdio (no principal, no expiry without --state-ttl).
const STATE_CASES: [&str; 12] = [
    "bindings: other arguments",
    "integrity: a number",
    "integrity: an object",
    "integrity: bit flip at the end",
    "integrity: bit flip at the start",
    "integrity: bit flip in the middle",
    "integrity: empty",
    "integrity: forged",
    "integrity: oversized (1 MiB)",
    "integrity: truncated to half",
    "replay: the final state replayed",
    "replay: two retries of one state at once",
];

/// A state refused as a server error (`-32603`, or HTTP 500 with no
/// JSON-RPC message) is not taken, so no MUST fails, but clients retry
/// server errors: each such case is a SHOULD failure (MRTR-E-A1), which
/// fails the run by default and passes under `--fail-on must`.
#[test]
fn a_state_refused_as_a_server_error_is_a_should_failure() {
    for flags in ["ceiling once internal", "http ceiling once http500"] {
        let r = careful(flags, &[]);
        r.failed(1);
        let fails = failed_levels(&r);
        let state: Vec<&(String, String, String)> = fails
            .iter()
            .filter(|(c, _, _)| !ADVICE.contains(&c.as_str()))
            .collect();
        let mut names: Vec<&str> = state.iter().map(|f| f.0.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, STATE_CASES, "{flags}: {r:#?}");
        for (case, level, rule) in state {
            assert_eq!(
                (level.as_str(), rule.as_str()),
                ("SHOULD", "MRTR-E-A1"),
                "{flags}: {case}"
            );
        }
        let all: Value = serde_json::from_str(&r.stdout).unwrap();
        let forged = all["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case"] == "forged")
            .unwrap();
        let expect = if flags.contains("http500") {
            "refused as a server error (HTTP 500 with no JSON-RPC message), which clients retry: a bad requestState is the client's error (-32602)"
        } else {
            "refused as a server error (error -32603: invalid requestState), which clients retry: a bad requestState is the client's error (-32602)"
        };
        assert_eq!(forged["reason"], expect, "{flags}");
        careful(flags, &["--fail-on", "must"]).ok();
    }
}

/// A 2025-11-25 server has no requestState: the probe finds its era and
/// says so (one skipped case, exit 0) instead of failing cases that do not
/// apply.
#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn a_legacy_server_is_recognised_and_skipped() {
    let server =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/ts/legacy-server.mjs");
    let cmd = format!("node '{}' stdio", server.display());
    let r = tern(&["probe", "--cmd", &cmd, "--json"]);
    r.ok();
    let all = statuses(&r);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all["era: a 2026-07-28 server"], "SKIP");
    r.says("speaks 2025-11-25 only");
    let table = tern(&["probe", "--cmd", &cmd]);
    table.ok().says("tern probe: no flow to probe");
}

/// `--state-ttl`: the probe waits out the lifetime (and the skew the
/// server allows, `--clock-skew`, none here) and checks the state is
/// refused then.
#[test]
fn an_expired_state_is_refused() {
    let s = Server::start_with(&["--state-ttl", "1", "--clock-skew", "0"], &[]);
    let r = tern(&[
        "probe",
        &s.url,
        "--tool",
        "deploy",
        "environment=prod",
        "--state-ttl",
        "1",
        "--clock-skew",
        "0",
        "--json",
    ]);
    r.ok();
    assert_eq!(
        statuses(&r)["expiry: a state past its lifetime"],
        "PASS",
        "{r:#?}"
    );
}

/// Where the server authenticates, `--other-bearer-env` replays the
/// probe's state as another client: `tern serve` refuses it.
#[test]
fn a_state_is_refused_to_another_principal() {
    let dir = tempfile::TempDir::new().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "alice token-of-alice\nbob token-of-bob\n").unwrap();
    let s = Server::start_with(&["--auth", &format!("tokens:{}", tokens.display())], &[]);
    let mut cmd = Command::new(tern_bin());
    cmd.args([
        "probe",
        &s.url,
        "--tool",
        "deploy",
        "environment=prod",
        "--bearer-env",
        "ALICE",
        "--other-bearer-env",
        "BOB",
        "--json",
    ])
    .env("ALICE", "token-of-alice")
    .env("BOB", "token-of-bob");
    let r = run(cmd);
    r.ok();
    let all = statuses(&r);
    assert_eq!(all["bindings: another principal"], "PASS", "{all:#?}");
    assert_eq!(
        all["bindings: another method (resources/read)"], "PASS",
        "{all:#?}"
    );
}
