//! A 2025-11-25 client on the real TypeScript SDK (`@modelcontextprotocol/sdk`
//! 1.32.x, pinned in `interop/ts`) against `tern serve`, over stdio and
//! HTTP: initialize, the tool list, echo, the deploy flow with its form and
//! roots, sampling, and a decline, all through the legacy bridge
//! (COMPAT-S1, COMPAT-A2). Compiled as ignored where the SDK is not
//! installed (see build.rs); CI installs it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::common::{Server, tern_bin};

fn client() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/ts/legacy-client.mjs")
}

pub(super) fn run(args: &[&str]) -> Value {
    let out = Command::new("node")
        .arg(client())
        .args(args)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("the client prints one JSON object")
}

pub(super) fn expect_the_workload(seen: &Value) {
    expect_the_workload_from(seen, "tern");
}

/// The workload as served by `server` (`tern`, or `tern-proxy` in front of
/// it).
pub(super) fn expect_the_workload_from(seen: &Value, server: &str) {
    assert_eq!(seen["server"]["name"], server, "{seen}");
    assert_eq!(
        seen["tools"],
        json!([
            "ask_model",
            "count",
            "deploy",
            "echo",
            "login",
            "migrate",
            "order",
            "redeem"
        ])
    );
    assert_eq!(seen["echo"], "hello");
    assert_eq!(
        seen["deploy"],
        "deployed to staging with 1 workspace root(s)"
    );
    assert_eq!(seen["ask_model"], "42");
    assert_eq!(
        seen["declined"],
        json!({"text": "deployment to prod was declined", "isError": true})
    );
    // The bridge asked for the form and the roots together, then sampled.
    assert_eq!(
        seen["asked"],
        json!([
            "elicitation/create: Approve deployment to staging?",
            "roots/list",
            "sampling/createMessage",
            "elicitation/create: Approve deployment to prod?",
            "roots/list"
        ])
    );
}

#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn a_typescript_sdk_client_runs_the_workload_over_stdio() {
    let data = tempfile::TempDir::new().unwrap();
    let home = data.path().to_string_lossy().into_owned();
    let seen = run(&[
        "stdio",
        "env",
        &format!("XDG_DATA_HOME={home}"),
        tern_bin(),
        "serve",
        "--stdio",
    ]);
    expect_the_workload(&seen);
}

#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn a_typescript_sdk_client_runs_the_workload_over_http() {
    let server = Server::start();
    let seen = run(&["http", &server.url]);
    expect_the_workload(&seen);
}
