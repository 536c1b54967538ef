//! `tern serve`'s options as an operator gives them: every one checked
//! before anything touches the disk, host names resolved, the memory replay
//! store with an ephemeral key, and the session budgets as flags
//! (SECURITY.md "Budgets").

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use serde_json::json;
use tempfile::TempDir;

use super::super::common::{Server, run, tern_bin};
use super::{Logged, http, tern};

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
