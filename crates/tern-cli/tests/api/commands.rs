//! `tern demo` without a terminal, and `tern serve` failing clearly.

use std::process::Command;

use super::common::{Run, run, tern_bin};
use tempfile::TempDir;

fn tern(args: &[&str], data: &TempDir) -> Run {
    let mut cmd = Command::new(tern_bin());
    cmd.args(args).env("XDG_DATA_HOME", data.path());
    run(cmd)
}

/// A failure is one clear line on stderr and a non-zero exit.
fn one_line_failure(r: &Run, expect: &str) {
    assert_ne!(r.code, 0, "{r:#?}");
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{r:#?}");
    assert!(
        lines[0].starts_with("tern: ") && lines[0].contains(expect),
        "{r:#?}"
    );
}

#[test]
fn demo_without_a_terminal_deploys() {
    let data = TempDir::new().unwrap();
    let r = tern(&["demo"], &data);
    r.ok()
        .says("no terminal: answering as --yes would")
        .says("round 1")
        .says("requestState")
        .says("asks    deployment_approval")
        .says("answers deployment_approval: accept")
        .says("deployed to staging with 1 workspace root(s)");
}

#[test]
fn demo_with_yes_deploys() {
    let data = TempDir::new().unwrap();
    tern(&["demo", "--yes"], &data).ok().says("deployed to");
}

#[test]
fn serve_with_a_bad_key_file() {
    let data = TempDir::new().unwrap();
    let keys = data.path().join("keys.json");
    std::fs::write(&keys, "not a key file").unwrap();
    let keys = keys.display().to_string();
    let r = tern(&["serve", "--http", "127.0.0.1:0", "--keys", &keys], &data);
    one_line_failure(&r, "key file");
}

#[test]
fn serve_with_unreachable_redis() {
    let data = TempDir::new().unwrap();
    let r = tern(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--replay",
            "redis://127.0.0.1:1",
        ],
        &data,
    );
    one_line_failure(&r, "Redis");
}

#[test]
fn serve_on_a_taken_port() {
    let data = TempDir::new().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let r = tern(&["serve", "--http", &addr], &data);
    one_line_failure(&r, "cannot listen");
}

#[test]
fn call_usage_errors_exit_2() {
    let data = TempDir::new().unwrap();
    // clap's own usage errors.
    assert_eq!(tern(&["call"], &data).code, 2);
    // A URL and --cmd together.
    let r = tern(
        &[
            "call",
            "http://127.0.0.1:1/mcp",
            "--cmd",
            "x",
            "tool",
            "echo",
        ],
        &data,
    );
    assert_eq!(r.code, 2, "{r:#?}");
    // A missing answers file.
    let r = tern(
        &[
            "call",
            "http://127.0.0.1:1/mcp",
            "tool",
            "echo",
            "--answers",
            "/nonexistent/a.json",
        ],
        &data,
    );
    assert_eq!(r.code, 2, "{r:#?}");
}
