//! `tern serve` and `tern keys` as an operator runs them: options checked
//! before anything touches the disk, key files guarded, a log line per
//! request and per refused state (none lost in a burst or at exit),
//! Prometheus metrics, and a key file reloaded on SIGHUP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::common::{Run, Server, run, tern_bin};

fn tern(args: &[&str], data: &Path) -> Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(args).env("XDG_DATA_HOME", data);
    run(cmd)
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn serve_checks_every_option_before_touching_the_disk() {
    let data = TempDir::new().unwrap();
    let typo = data.path().join("typo/keys.json").display().to_string();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--threads", "0"], 2, "--threads"),
        (
            &["--http", "nosuchhost.invalid:8080"],
            1,
            "cannot resolve \"nosuchhost.invalid\"",
        ),
        (&["--http", "localhost"], 1, "is not HOST:PORT"),
        (
            &["--http", "127.0.0.1:99999"],
            1,
            "not a number from 0 to 65535",
        ),
        (&["--keys", &typo], 1, "no key file at"),
        (&["--replay", "memory"], 1, "--ephemeral-keys"),
        (
            &["--replay", "mem"],
            1,
            "expected memory, sqlite:PATH or redis://HOST:PORT",
        ),
        (&["--instances", "2"], 1, "--replay redis://HOST:PORT"),
        (&["--state-ttl", "0"], 1, "from 1 to 3600 seconds"),
        (&["--max-rounds", "0"], 1, "--max-rounds must be at least 1"),
        (
            &["--max-requests", "0"],
            1,
            "--max-requests must be at least 1",
        ),
        (
            &["--max-requests-per-principal", "0"],
            1,
            "--max-requests-per-principal must be at least 1",
        ),
        (
            &["--max-sessions", "0"],
            1,
            "--max-sessions must be at least 1",
        ),
        (
            &["--max-sessions-per-principal", "0"],
            1,
            "--max-sessions-per-principal must be at least 1",
        ),
        (
            &["--session-idle-secs", "0"],
            1,
            "--session-idle-secs must be at least 1",
        ),
        (
            &["--max-session-calls", "0"],
            1,
            "--max-session-calls must be at least 1",
        ),
        (
            &["--answer-timeout-secs", "0"],
            1,
            "--answer-timeout-secs must be at least 1",
        ),
    ];
    for (args, code, says) in cases {
        let mut all = vec!["serve"];
        if !args.contains(&"--http") {
            all.extend(["--http", "127.0.0.1:0"]);
        }
        all.extend(*args);
        let r = tern(&all, data.path());
        assert_eq!(r.code, *code, "{args:?}: {r:#?}");
        assert!(r.stderr.contains(says), "{args:?}: {r:#?}");
        // Worded for users: nothing they do not have.
        assert!(
            !r.stderr.contains("SECURITY.md") && !r.stderr.contains("LocalDurable"),
            "{r:#?}"
        );
        assert_eq!(
            entries(data.path()),
            Vec::<String>::new(),
            "{args:?} touched the disk"
        );
    }
}

/// `initialize` in the 2025-11-25 shape; the session id, or the status.
fn open_legacy_session(url: &str) -> Result<String, u16> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(host).unwrap();
    let body = init.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status: u16 = out[9..12].parse().unwrap();
    let id = out.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("mcp-session-id: ")
            .map(str::to_owned)
    });
    match (status, id) {
        (200, Some(id)) => Ok(id),
        (status, _) => Err(status),
    }
}

#[test]
fn session_budgets_are_flags_of_tern_serve() {
    // SECURITY.md "Budgets": the table holds --max-sessions; an anonymous
    // flood replaces its own longest-idle sessions and is counted.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = free.local_addr().unwrap().to_string();
    drop(free);
    let s = Logged::start(
        &["--max-sessions", "2", "--metrics", &metrics],
        TempDir::new().unwrap(),
    );
    let first = open_legacy_session(&s.url).unwrap();
    for _ in 0..20 {
        open_legacy_session(&s.url).unwrap();
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let (status, _) = http(
        "POST",
        &s.url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json"),
            ("mcp-session-id", &first),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &ping,
    );
    assert_eq!(status, 404, "the first session gave way to the flood");
    let (_, text) = http("GET", &format!("http://{metrics}/metrics"), &[], "");
    assert!(text.contains("tern_sessions_open 2\n"), "{text}");
    assert!(
        text.contains("tern_sessions_closed_total{reason=\"evicted\"} 19\n"),
        "{text}"
    );
    assert!(
        text.contains("tern_limit_reached_total{limit=\"sessions\"} 19\n"),
        "{text}"
    );
}

#[test]
fn serve_resolves_host_names() {
    let s = Server::start_at("localhost:0", &[], &[]);
    assert!(
        s.url.starts_with("http://127.0.0.1:") || s.url.starts_with("http://[::1]:"),
        "{}",
        s.url
    );
}

#[test]
fn memory_replay_over_http_with_an_ephemeral_key() {
    let s = Server::start_with(&["--replay", "memory", "--ephemeral-keys"], &[]);
    let mut cmd = Command::new(tern_bin());
    cmd.args(["call", &s.url, "tool", "echo", "text=hi"]);
    run(cmd).ok().says("hi");
    // No key file was written.
    assert!(!s.dir.path().join("tern/keys.json").exists());
}

#[test]
fn a_key_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let data = TempDir::new().unwrap();
    let file = data.path().join("keys.json");
    let f = file.display().to_string();
    tern(&["keys", "new", &f], data.path()).ok();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = tern(
        &["serve", "--http", "127.0.0.1:0", "--keys", &f],
        data.path(),
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("(mode 644)"), "{r:#?}");
    assert!(r.stderr.contains(&format!("run: chmod 600 {f}")), "{r:#?}");
    tern(&["keys", "list", &f], data.path())
        .failed(1)
        .says("chmod 600");
}

/// `tern keys new FILE`; returns the active kid it printed.
fn new_key_file(file: &str, data: &Path) -> String {
    let created = tern(&["keys", "new", file], data);
    let kid = created
        .ok()
        .stdout
        .rsplit("active kid ")
        .next()
        .unwrap()
        .trim_end_matches([')', '\n']);
    assert!(kid.parse::<u32>().is_ok(), "{created:#?}");
    kid.to_owned()
}

#[test]
fn keys_list_and_retire_speak_to_people() {
    let data = TempDir::new().unwrap();
    let f = data.path().join("keys.json").display().to_string();
    let old = new_key_file(&f, data.path());
    let new = tern(&["keys", "add", &f], data.path());
    let new = new.ok().stdout.trim().to_owned();
    tern(&["keys", "list", &f], data.path())
        .ok()
        .says("verify-only (published, not yet active)");
    tern(&["keys", "activate", &f, &new], data.path()).ok();
    let list = tern(&["keys", "list", &f], data.path());
    let line = list
        .ok()
        .stdout
        .lines()
        .find(|l| l.contains(&format!(" {old}  ")))
        .unwrap()
        .to_owned();
    // "verify-only until Fri, 04 Dec 2026 14:02:09 UTC"
    assert!(
        line.contains("verify-only until ") && line.ends_with(" UTC"),
        "{line}"
    );
    assert!(
        list.stdout
            .lines()
            .any(|l| l.contains(&format!(" {new}  active: seals and opens"))),
        "{list:#?}"
    );
    // Inside the grace period a retire needs --force, and says until when.
    tern(&["keys", "retire", &f, &old], data.path())
        .failed(1)
        .says("still opens states until ")
        .says("Pass --force");
    tern(&["keys", "retire", &f, &old, "--force"], data.path())
        .ok()
        .says(&format!("kid {old} is retired"));
    tern(&["keys", "list", &f], data.path())
        .ok()
        .says(&format!(" {old}  retired"));
}

/// A `tern serve` whose stderr is kept for the test to read.
struct Logged {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
    /// Set when stderr closed (the server exited).
    closed: Arc<AtomicBool>,
    _dir: TempDir,
}

impl Logged {
    fn start(args: &[&str], dir: TempDir) -> Logged {
        Logged::start_with_env(args, &[], dir)
    }

    fn start_with_env(args: &[&str], env: &[(&str, &str)], dir: TempDir) -> Logged {
        let mut child = Command::new(tern_bin())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .env("XDG_DATA_HOME", dir.path())
            .env_remove("RUST_LOG")
            .env_remove("TERN_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap());
        let kept = log.clone();
        let closed = Arc::new(AtomicBool::new(false));
        let eof = closed.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while lines.read_line(&mut line).unwrap_or(0) > 0 {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
            eof.store(true, Ordering::SeqCst);
        });
        let mut s = Logged {
            child,
            url: String::new(),
            log,
            closed,
            _dir: dir,
        };
        let started = s.wait_for("tern serve started");
        s.url = match serde_json::from_str::<Value>(&started) {
            // --log-format json
            Ok(v) => v["fields"]["listen"].as_str().unwrap().to_owned(),
            Err(_) => {
                let at = started.find("listen=").expect("listen field") + "listen=".len();
                started[at..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .trim_matches('"')
                    .to_owned()
            }
        };
        s
    }

    /// The first log line containing `text`, waiting up to 10 s for it.
    fn wait_for(&self, text: &str) -> String {
        for _ in 0..500 {
            if let Some(l) = self.log.lock().unwrap().lines().find(|l| l.contains(text)) {
                return l.to_owned();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "no log line with {text:?} in:\n{}",
            self.log.lock().unwrap()
        );
    }

    fn field(&self, text: &str, name: &str) -> String {
        let line = self.wait_for(text);
        let at = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
        line[at..]
            .split_whitespace()
            .next()
            .unwrap()
            .trim_matches('"')
            .to_owned()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange on a fresh connection.
fn http(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = TcpStream::connect(host).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

/// A 2026-07-28 `tools/call`, with `extra` merged into its params.
fn call(url: &str, tool: &str, args: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "operator-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "roots": {}}
        }
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let (_, text) = http(
        "POST",
        url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
        ],
        &body.to_string(),
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn deploy_state(url: &str) -> String {
    let r = call(url, "deploy", json!({"environment": "prod"}), json!({}));
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    r["result"]["requestState"].as_str().unwrap().to_owned()
}

/// The same state with one character in its middle changed.
fn tampered(state: &str) -> String {
    let mut b = state.as_bytes().to_vec();
    let i = b.len() / 2;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

#[test]
fn requests_and_refused_states_are_logged_and_counted() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = free.local_addr().unwrap().to_string();
    drop(free);
    let s = Logged::start(&["--metrics", &metrics_addr], TempDir::new().unwrap());
    // The startup line names what the server runs with.
    let started = s.wait_for("tern serve started");
    for field in [
        "keys=",
        "replay=\"sqlite:",
        "resource_id=\"urn:tern:",
        "state_ttl_secs=600",
        "max_rounds=",
        "metrics=",
    ] {
        assert!(started.contains(field), "{field} not in {started}");
    }
    let state = deploy_state(&s.url);
    let r = resume_deploy(&s.url, &tampered(&state));
    // The peer sees the one uniform refusal, never the reason.
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(!r.to_string().contains("bad_tag"), "{r}");
    // The log has the reason, and a line per request with its outcome.
    let refused = s.wait_for("requestState refused");
    assert!(refused.contains("reason=\"bad_tag\""), "{refused}");
    assert!(refused.contains("tool=\"deploy\""), "{refused}");
    assert_eq!(s.field("outcome=\"rejected\"", "code"), "-32602");
    assert_eq!(
        s.field("outcome=\"input_required\"", "method"),
        "tools/call"
    );
    let (status, text) = http("GET", &format!("http://{metrics_addr}/metrics"), &[], "");
    assert_eq!(status, 200);
    for line in [
        "tern_requests_total{method=\"tools/call\",outcome=\"input_required\"} 1",
        "tern_requests_total{method=\"tools/call\",outcome=\"rejected\"} 1",
        "tern_state_rejected_total{reason=\"bad_tag\"} 1",
        "tern_state_bytes_count 1",
        "tern_request_duration_seconds_count 2",
        "tern_replay_store_errors_total 0",
        "tern_sessions_open 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
}

#[test]
fn no_request_line_is_lost_in_a_burst_or_at_exit() {
    // The log is written by a thread of its own (off the request path);
    // a burst fills its queue faster than stderr drains, and SIGTERM
    // stops the server: every request still has its line.
    let mut s = Logged::start(&[], TempDir::new().unwrap());
    const THREADS: usize = 8;
    const EACH: usize = 250;
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let url = s.url.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let text = format!("burst-{t}-{i}");
                    let r = call(&url, "echo", json!({"text": text}), json!({}));
                    assert_eq!(r["result"]["content"][0]["text"], text, "{r}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut status = None;
    for _ in 0..750 {
        status = s.child.try_wait().unwrap();
        if status.is_some() && s.closed.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = status.expect("tern serve exits on SIGTERM");
    assert!(status.success(), "{status}");
    assert!(s.closed.load(Ordering::SeqCst), "stderr closed");
    let log = s.log.lock().unwrap().clone();
    let lines = log
        .lines()
        .filter(|l| l.contains("tool=\"echo\"") && l.contains("outcome=\"complete\""))
        .count();
    assert_eq!(lines, THREADS * EACH, "request lines in the log");
    assert!(log.lines().any(|l| l.contains("stopping")), "{log}");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let s = Logged::start(&["--log-format", "json"], TempDir::new().unwrap());
    let traced = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "operator-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    }});
    let r = call(&s.url, "echo", json!({"text": "hi"}), traced);
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    let line: Value = serde_json::from_str(&s.wait_for("\"message\":\"request\"")).unwrap();
    // The caller's trace continues in the request's span.
    assert_eq!(line["span"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(line["span"]["parent_id"], "00f067aa0ba902b7");
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["fields"]["outcome"], "complete");
    assert_eq!(line["span"]["name"], "request");
    assert_eq!(line["span"]["method"], "tools/call");
    assert_eq!(line["span"]["tool"], "echo");
    assert_eq!(line["span"]["round"], 0);
    // Nothing but JSON objects on stderr.
    for l in s.log.lock().unwrap().lines() {
        assert!(
            serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object()),
            "{l}"
        );
    }
}

#[test]
fn sighup_reloads_the_key_file() {
    let dir = TempDir::new().unwrap();
    let f = dir.path().join("keys.json").display().to_string();
    let old = new_key_file(&f, dir.path());
    let s = Logged::start(&["--keys", &f], dir);
    let before = deploy_state(&s.url);
    let path = Path::new(&f);
    let data = path.parent().unwrap();
    let new = tern(&["keys", "add", &f], data);
    let new = new.ok().stdout.trim().to_owned();
    tern(&["keys", "activate", &f, &new], data).ok();
    tern(&["keys", "retire", &f, &old, "--force"], data).ok();
    // Still the old ring until the signal.
    let again = resume_deploy(&s.url, &before);
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let reloaded = s.wait_for("key file reloaded");
    assert!(reloaded.contains(&format!("active={new}")), "{reloaded}");
    // A state sealed under the retired key no longer opens.
    let after = resume_deploy(&s.url, &before);
    assert_eq!(after["error"]["code"], -32602, "{after}");
    // New states are sealed under the new key and open.
    let fresh = deploy_state(&s.url);
    let r = resume_deploy(&s.url, &fresh);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}

/// Round 2 of deploy with `state` and no answers: asked again if the state
/// opens.
fn resume_deploy(url: &str, state: &str) -> Value {
    call(
        url,
        "deploy",
        json!({"environment": "prod"}),
        json!({"requestState": state, "inputResponses": {}}),
    )
}

/// An OTLP/HTTP collector on a free port: every JSON body posted to
/// `/v1/traces`, in order.
fn collector() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = got.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let kept = kept.clone();
                    async move {
                        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                            kept.lock().unwrap().push(v);
                        }
                        "{}"
                    }
                }),
            );
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{addr}"), got)
}

/// Every exported span, flattened.
fn spans(got: &Mutex<Vec<Value>>) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .flat_map(|b| b["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// With an OTLP endpoint configured, each request (one round) is a span
/// exported to it, in the caller's trace, child of the caller's span.
#[test]
fn request_spans_continue_the_callers_trace_over_otlp() {
    let (endpoint, got) = collector();
    let s = Logged::start_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
        TempDir::new().unwrap(),
    );
    let traced = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "operator-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "roots": {}},
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    }});
    // Two rounds of deploy, each with the caller's trace context.
    let r = call(
        &s.url,
        "deploy",
        json!({"environment": "prod"}),
        traced.clone(),
    );
    let state = r["result"]["requestState"].clone();
    let mut retry = traced;
    retry["requestState"] = state;
    retry["inputResponses"] = json!({
        "deployment_approval": {"action": "accept", "content": {"approved": true}},
        "workspace_roots": {"roots": []}
    });
    let done = call(&s.url, "deploy", json!({"environment": "prod"}), retry);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let mut ours = Vec::new();
    for _ in 0..250 {
        ours = spans(&got)
            .into_iter()
            .filter(|s| s["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736")
            .collect();
        if ours.len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    assert_eq!(ours.len(), 2, "{:#?}", spans(&got));
    for span in &ours {
        assert_eq!(span["parentSpanId"], "00f067aa0ba902b7", "{span}");
        assert_eq!(span["name"], "request", "{span}");
        let method = span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == "method")
            .map(|a| a["value"]["stringValue"].clone());
        assert_eq!(method, Some(json!("tools/call")), "{span}");
    }
    assert_ne!(ours[0]["spanId"], ours[1]["spanId"]);
}

/// A JSON-RPC request to `url` with the 2026-07-28 headers; `name` is the
/// `Mcp-Name` (the tool, or the task id of `tasks/*`).
fn rpc(url: &str, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "operator-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (_, text) = http(
        "POST",
        url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ],
        &body.to_string(),
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn task_get(url: &str, id: &str) -> Value {
    let r = rpc(url, "tasks/get", id, json!({"taskId": id}));
    r["result"].clone()
}

/// Polls the instances in turn, as a load balancer spreads a client's
/// requests, until the task shows `status`; fails after `within` of
/// pauses between polls.
fn poll_until(urls: &[&str], id: &str, status: &str, within: Duration) -> Value {
    const PAUSE: Duration = Duration::from_millis(25);
    let polls = within.as_millis() / PAUSE.as_millis();
    let mut last = json!(null);
    for i in 0..=polls {
        last = task_get(urls[usize::try_from(i).unwrap() % urls.len()], id);
        if last["status"] == status {
            return last;
        }
        std::thread::sleep(PAUSE);
    }
    panic!("not {status} within {within:?}: {last}");
}

#[test]
#[cfg_attr(tern_no_redis, ignore = "redis-server is not installed")]
fn a_fleet_answers_a_task_on_any_instance_and_fails_it_when_its_instance_dies() {
    let redis = tern_testkit::redis::RedisServer::start(&[])
        .unwrap_or_else(|e| panic!("redis-server is needed (.ci/run installs it): {e:?}"));
    let keys_dir = TempDir::new().unwrap();
    let key_file = keys_dir.path().join("keys.json");
    let key_file = key_file.to_str().unwrap();
    let url = redis.url();
    let fleet = |create: bool| {
        let mut args = vec![
            "--replay",
            url.as_str(),
            "--instances",
            "3",
            "--task-lease-secs",
            "2",
            "--keys",
            key_file,
        ];
        if create {
            args.push("--create-keys");
        }
        Logged::start(&args, TempDir::new().unwrap())
    };
    let mut a = fleet(true);
    let b = fleet(false);
    let c = fleet(false);
    let (ua, ub, uc) = (a.url.clone(), b.url.clone(), c.url.clone());

    // Created on A, asked for, answered and finished through B and C.
    let created = rpc(
        &ua,
        "tools/call",
        "migrate",
        json!({"name": "migrate", "arguments": {"database": "orders"}}),
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let t = poll_until(&[&ub, &uc], &id, "input_required", Duration::from_secs(10));
    assert_eq!(
        t["inputRequests"]["apply_migration"]["method"], "elicitation/create",
        "{t}"
    );
    let ack = rpc(
        &uc,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {
            "apply_migration": {"action": "accept", "content": {"apply": true}}
        }}),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let t = poll_until(&[&ub, &uc, &ua], &id, "completed", Duration::from_secs(10));
    assert_eq!(t["result"]["content"][0]["text"], "migrated orders", "{t}");

    // Another task on A, then A is killed (-9): no instance reports it
    // `working` past its lease; it ends `failed`.
    let created = rpc(
        &ua,
        "tools/call",
        "migrate",
        json!({"name": "migrate", "arguments": {"database": "billing", "seconds": 60}}),
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task_get(&ub, &id)["status"], "working");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // A 2 s lease, renewed every second at most: failed within 4 s.
    let t = poll_until(&[&ub, &uc], &id, "failed", Duration::from_secs(4));
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert_eq!(
        t["error"]["message"],
        "the server running this task stopped"
    );
    // Its cancel is the empty answer, and it stays failed.
    let ack = rpc(&ub, "tasks/cancel", &id, json!({"taskId": id}));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(task_get(&uc, &id)["status"], "failed");
}
