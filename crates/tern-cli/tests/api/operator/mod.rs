//! `tern serve` and `tern keys` as an operator runs them: options checked
//! before anything touches the disk, key files guarded, a log line per
//! request and per refused state (none lost in a burst or at exit),
//! Prometheus metrics, and a key file reloaded on SIGHUP.
//!
//! Here: what the tests share, a `tern serve` whose log the test reads
//! (`Logged`) and requests to it; the tests are in the modules below,
//! one behaviour each.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::common::{Run, run, tern_bin};

mod fleet;
mod keys;
mod logs;
mod options;
mod traces;

fn tern(args: &[&str], data: &Path) -> Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(args).env("XDG_DATA_HOME", data);
    run(cmd)
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
