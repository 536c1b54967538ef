//! `tern call` and `tern discover` at their edges, as a person or a script
//! meets them: what failed and why, the answers file checked up front,
//! arguments checked against the schema, and the exit codes (0 done, 1 the
//! operation failed, 2 usage, 3 protocol or transport, 4 refused by the
//! person, 130 interrupted).

use std::process::Command;

use super::common::{Run, Server, Target, run, tern_bin};

fn tern(args: &[&str]) -> Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(args);
    run(cmd)
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn network_failures_say_what_failed() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    tern(&["call", &url, "tool", "echo", "text=x"])
        .failed(3)
        .says(&format!("cannot reach {url}: connection refused"));
    tern(&["call", "http://nosuchhost.invalid/mcp", "tool", "echo"])
        .failed(3)
        .says("cannot reach http://nosuchhost.invalid/mcp: no such host");
    tern(&["discover", &url])
        .failed(3)
        .says("connection refused");
    tern(&["call", "ftp://example.com/mcp", "tool", "echo"])
        .failed(2)
        .says("the scheme ftp:// is not supported; use http:// or https://");
    tern(&[
        "call",
        "--cmd",
        "no-such-program-here --stdio",
        "tool",
        "echo",
    ])
    .failed(2)
    .says("the program \"no-such-program-here\" was not found");
    tern(&["call", &url, "tool", "echo", "--model-url", "notaurl"])
        .failed(2)
        .says("--model-url \"notaurl\" is not a URL");
    let s = Server::start();
    let root = s.url.trim_end_matches("/mcp").to_owned() + "/";
    tern(&["call", &root, "tool", "echo", "text=x"])
        .failed(3)
        .says(&format!("nothing is served at {root} (HTTP 404)"))
        .says(&format!("MCP servers usually answer at {}", s.url));
}

#[test]
fn arguments_are_checked_against_the_schema_before_sending() {
    let t = Target::http();
    t.call(&["tool", "echo", "txt=hi"])
        .failed(2)
        .says("the tool \"echo\" takes no argument \"txt\"; it takes: text");
    t.call(&["tool", "echo"])
        .failed(2)
        .says("the tool \"echo\" needs the argument \"text\" (give text=VALUE)");
    t.call(&["tool", "echo", "text:=\"json text\""])
        .ok()
        .says("json text");
    t.call(&["tool", "echo", "--args", r#"{"text": "from args"}"#])
        .ok()
        .says("from args");
    // A word after --args wins.
    t.call(&["tool", "echo", "--args", r#"{"text": "a"}"#, "text=b"])
        .ok()
        .says("b");
    t.call(&["tool", "echo", "--args", "[1]"])
        .failed(2)
        .says("--args must be a JSON object");
    t.call(&["tool", "echo", "text:=nope"])
        .failed(2)
        .says("argument text: \"nope\" is not JSON");
    // Unknown tools and prompts alike are usage errors.
    t.call(&["tool", "nope"]).failed(2).says("no tool \"nope\"");
    t.call(&["prompt", "nope"])
        .failed(2)
        .says("the server has no prompt \"nope\"; it has: review");
    t.call(&["prompt", "review"])
        .failed(2)
        .says("the prompt \"review\" needs the argument \"target\"");
    t.call(&["prompt", "review", "target=x", "colour=red"])
        .failed(2)
        .says("the prompt \"review\" takes no argument \"colour\"");
}

#[test]
fn the_answers_file_is_checked_up_front() {
    let t = Target::http();
    let cases = [
        ("[1, 2]", "expected a JSON object of answers by input key"),
        ("{not json", "not valid JSON"),
        (
            r#"{"deployment_approval": {"action": "maybe"}}"#,
            "the entry \"deployment_approval\": \"action\" is \"maybe\"; it must be \"accept\", \"decline\" or \"cancel\"",
        ),
        (
            r#"{"deployment_approval": {"content": {}}}"#,
            "the entry \"deployment_approval\": expected an elicitation answer {\"action\": \"accept\"|\"decline\"|\"cancel\"",
        ),
        (
            r#"{"workspace_roots": []}"#,
            "the entry \"workspace_roots\": an empty list holds no answers (for no roots, write {\"roots\": []})",
        ),
        (
            r#"{"workspace_roots": {"roots": [{"uri": "/home/me"}]}}"#,
            "the root \"/home/me\" is not a file:// URI",
        ),
        (
            r#"{"model_answer": {"role": "assistant", "content": {"type": "text", "text": ""}, "model": "m"}}"#,
            "with some text",
        ),
        (
            r#"{"x": 5}"#,
            "the entry \"x\": expected an object, found 5",
        ),
    ];
    for (file, says) in cases {
        let r = t.call_with(file, &["tool", "deploy", "environment=staging"]);
        r.failed(2).says(says);
        // No Rust type names.
        assert!(
            !r.stderr.contains("struct") && !r.stderr.contains('`'),
            "{r:#?}"
        );
    }
    // A key the file lacks is named, with the keys it has.
    t.call_with(
        r#"{"deployment_aproval": {"action": "accept", "content": {"approved": true}}}"#,
        &["tool", "deploy", "environment=staging"],
    )
    .failed(2)
    .says("the --answers file has no answer for the question \"deployment_approval\" (its keys: deployment_aproval)");
    // Roots from the file, empty on purpose.
    t.call_with(
        r#"{"deployment_approval": {"action": "accept", "content": {"approved": true}}, "workspace_roots": {"roots": []}}"#,
        &["tool", "deploy", "environment=staging"],
    )
    .ok()
    .says("deployed to staging with 0 workspace root(s)");
}

#[test]
fn automatic_consent_is_said_and_sampling_needs_a_source() {
    let t = Target::http();
    t.call(&["tool", "deploy", "environment=staging", "--yes"])
        .ok()
        .says("tern: sharing the roots file://")
        .says("without asking (--yes; --no-roots shares none)");
    // No model source and no terminal: sampling is not declared, and the
    // server's -32021 comes with what it names and what to pass.
    t.call(&["tool", "ask_model", "question=hi"])
        .failed(3)
        .says("-32021")
        .says("tern: the server requires the sampling capability; pass --sampling-cmd COMMAND or --model-url URL");
    // --no-sampling withheld it: that is the flag named.
    t.call(&[
        "tool",
        "ask_model",
        "question=hi",
        "--no-sampling",
        "--sampling-cmd",
        "echo 42",
    ])
    .failed(3)
    .says("tern: the server requires the sampling capability; drop --no-sampling\n");
    // A command without a terminal needs --yes to approve.
    t.call(&[
        "tool",
        "ask_model",
        "question=hi",
        "--sampling-cmd",
        "echo x",
    ])
    .failed(2)
    .says("needs your approval: run in a terminal, or pass --yes");
    // An empty reply is not sent.
    t.call(&[
        "tool",
        "ask_model",
        "question=hi",
        "--yes",
        "--sampling-cmd",
        "cat >/dev/null; true",
    ])
    .failed(4)
    .says("gave an empty reply");
}

#[test]
fn timeout_and_completions() {
    // A server that accepts the connection and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", silent.local_addr().unwrap());
    tern(&["call", &url, "tool", "echo", "text=x", "--timeout", "1"])
        .failed(3)
        .says("the call did not finish within 1 s (--timeout SECS; 0 for no limit)");
    for shell in ["bash", "zsh", "fish"] {
        let r = tern(&["completions", shell]);
        r.ok();
        assert!(
            r.stdout.contains("discover") && r.stdout.contains("answers"),
            "{shell}"
        );
    }
    tern(&["completions", "tcsh"]).failed(2);
}

#[test]
fn named_servers_come_from_an_mcp_servers_file() {
    let http = Server::start();
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("hosts.json");
    // A host's own file: other keys are ignored, only mcpServers is read.
    let doc = serde_json::json!({
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "local": {"command": tern_bin(), "args": ["serve", "--stdio"], "env": {"TERN_STATE_TTL_SECS": "60"}},
            "remote": {"url": http.url, "headers": {"X-Team": "infra"}}
        }
    });
    std::fs::write(&file, doc.to_string()).unwrap();
    let f = file.display().to_string();
    tern(&["servers", "--config", &f])
        .ok()
        .says(&format!("servers in {f}:"))
        .says(&format!(
            "local  stdio: {} serve --stdio  (env TERN_STATE_TTL_SECS)",
            tern_bin()
        ))
        .says(&format!("remote  http: {}", http.url));
    for name in ["local", "remote"] {
        tern(&["call", name, "tool", "echo", "text=by name", "--config", &f])
            .ok()
            .says("by name");
    }
    tern(&["discover", "remote", "--config", &f])
        .ok()
        .says("echo");
    tern(&["call", "elsewhere", "tool", "echo", "--config", &f])
        .failed(2)
        .says("\"elsewhere\" is neither a URL nor a server named in")
        .says("(it names: local, remote)");
    std::fs::write(&file, r#"{"mcpServers": {"bad": {"cmd": "x"}}}"#).unwrap();
    tern(&["servers", "--config", &f])
        .failed(1)
        .says("the server \"bad\" needs \"command\"");
}

/// A 2026-07-28 stdio server without `server/discover`: it answers
/// `tools/list` and nothing else.
const NO_DISCOVER: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "tools/list":
        r = {"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "complete", "tools": [
            {"name": "only_tool", "inputSchema": {"type": "object"}}]}}
    else:
        r = {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps(r), flush=True)
"#;

#[test]
fn discover_falls_back_to_the_list_methods() {
    let dir = tempfile::TempDir::new().unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, NO_DISCOVER).unwrap();
    let cmd = format!("python3 {}", script.display());
    tern(&["discover", "--cmd", &cmd, "--era", "modern"])
        .ok()
        .says("the server has no server/discover; asking its list methods instead")
        .says("only_tool");
}

#[test]
fn progress_and_logs_are_shown_in_both_eras() {
    let t = Target::http();
    t.call(&["tool", "count", "to=2"])
        .ok()
        .says("[##########          ]  50% step 1")
        .says("[####################] 100% step 2")
        .says("[info] counted 2")
        .says("counted to 2");
    Target::stdio()
        .call(&["tool", "count", "to=2"])
        .ok()
        .says("[####################] 100% step 2")
        .says("[info] counted 2");
    // A 2025-11-25 session: the level is set with logging/setLevel first.
    t.call(&["tool", "count", "to=2", "--era", "legacy"])
        .ok()
        .says("[####################] 100% step 2")
        .says("[info] counted 2")
        .says("counted to 2");
}

/// A 2026-07-28 stdio server whose first flow's state "expires": the retry
/// is refused with `data.restart`, and a fresh flow completes.
const FLAKY: &str = r#"
import json, sys
refused = False
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, p = m["method"], m.get("params", {})
    if method == "tools/list":
        r = {"resultType": "complete", "tools": [{"name": "flaky", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call" and "requestState" not in p:
        r = {"resultType": "input_required", "requestState": "s1", "inputRequests": {"ok": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Go on?", "requestedSchema": {"type": "object", "properties": {}}}}}}
    elif method == "tools/call" and not refused:
        refused = True
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602,
            "message": "invalid or expired requestState", "data": {"restart": True}}}), flush=True)
        continue
    elif method == "tools/call":
        r = {"resultType": "complete", "content": [{"type": "text", "text": "done after restart"}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

#[test]
fn a_call_whose_state_expired_starts_over_with_restart() {
    let dir = tempfile::TempDir::new().unwrap();
    let script = dir.path().join("flaky.py");
    std::fs::write(&script, FLAKY).unwrap();
    let answers = dir.path().join("answers.json");
    std::fs::write(&answers, r#"{"ok": {"action": "accept", "content": {}}}"#).unwrap();
    let cmd = format!("python3 {}", script.display());
    let a = answers.display().to_string();
    let base = [
        "call",
        "--cmd",
        &cmd,
        "--era",
        "modern",
        "tool",
        "flaky",
        "--answers",
        &a,
    ];
    // Without a terminal or --restart: the error, and how to start over.
    tern(&base)
        .failed(1)
        .says("the server can no longer resume this call (server error -32602: invalid or expired requestState); your answers were not used")
        .says("pass --restart to start over by itself");
    let mut with = base.to_vec();
    with.push("--restart");
    tern(&with)
        .ok()
        .says("tern: starting over")
        .says("done after restart");
}
