//! A client on the real Python SDK (`mcp` 2.3.0, pinned in
//! `interop/py/requirements.txt`) against `tern serve`, over stdio and HTTP,
//! in both eras from the same server (COMPAT-S1): the SDK's default mode,
//! which probes `server/discover` and so runs 2026-07-28 with the deploy
//! form, roots and sampling as `input_required` rounds; and its
//! `mode="legacy"`, the 2025-11-25 initialize handshake with server-sent
//! requests through the legacy bridge (COMPAT-A2). Compiled as ignored where
//! the SDK is not installed (see build.rs); CI installs it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use super::common::{Server, tern_bin};

fn interop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/py")
}

pub(super) fn run(args: &[&str]) -> Value {
    let dir = interop();
    let out = Command::new(dir.join(".venv/bin/python"))
        .arg(dir.join("client.py"))
        .args(args)
        .output()
        .expect("the venv's python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("the client prints one JSON object")
}

/// `tern serve --stdio` with its data directory in `home`. Through `env`:
/// the SDK passes the server only a fixed list of variables.
fn stdio(home: &str) -> [&str; 5] {
    ["env", home, tern_bin(), "serve", "--stdio"]
}

fn expect_the_workload(seen: &Value, revision: &str) {
    expect_the_workload_from(seen, revision, "tern");
}

/// The workload in `revision` as served by `server`.
pub(super) fn expect_the_workload_from(seen: &Value, revision: &str, server: &str) {
    assert_eq!(seen["revision"], revision, "{seen}");
    // The same workload, answers and order as the TypeScript peer's, in
    // both eras.
    super::interop::expect_the_workload_from(seen, server);
}

#[test]
#[cfg_attr(tern_no_py_sdk, ignore = "the Python SDK peer is not installed")]
fn a_python_sdk_client_in_its_default_mode_runs_the_workload_over_stdio() {
    let data = tempfile::TempDir::new().unwrap();
    let home = format!("XDG_DATA_HOME={}", data.path().display());
    let mut args = vec!["stdio"];
    args.extend(stdio(&home));
    expect_the_workload(&run(&args), "2026-07-28");
}

#[test]
#[cfg_attr(tern_no_py_sdk, ignore = "the Python SDK peer is not installed")]
fn a_python_sdk_client_in_its_default_mode_runs_the_workload_over_http() {
    let server = Server::start();
    expect_the_workload(&run(&["http", &server.url]), "2026-07-28");
}

#[test]
#[cfg_attr(tern_no_py_sdk, ignore = "the Python SDK peer is not installed")]
fn a_python_sdk_client_in_2025_11_25_mode_runs_the_workload_over_stdio() {
    let data = tempfile::TempDir::new().unwrap();
    let home = format!("XDG_DATA_HOME={}", data.path().display());
    let mut args = vec!["--revision", "2025-11-25", "stdio"];
    args.extend(stdio(&home));
    expect_the_workload(&run(&args), "2025-11-25");
}

#[test]
#[cfg_attr(tern_no_py_sdk, ignore = "the Python SDK peer is not installed")]
fn a_python_sdk_client_in_2025_11_25_mode_runs_the_workload_over_http() {
    let server = Server::start();
    expect_the_workload(
        &run(&["--revision", "2025-11-25", "http", &server.url]),
        "2025-11-25",
    );
}
