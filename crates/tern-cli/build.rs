//! Decides whether the interop tests can run here: they need `node` and the
//! TypeScript SDK installed in `interop/ts` (`npm ci` there), and the Python
//! SDK in the venv `interop/py/.venv`; the fleet test needs
//! `redis-server`. Without them the tests
//! are compiled as ignored, so the runner lists them as skipped, unless
//! `CI` is set: there a missing peer is a failure, never a silent pass.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tern_no_ts_sdk)");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/ts/node_modules/@modelcontextprotocol/sdk/package.json");
    // A missing path makes cargo look again on the next build.
    println!("cargo::rerun-if-changed={}", sdk.display());
    let path = std::env::var_os("PATH").unwrap_or_default();
    let node = std::env::split_paths(&path).any(|d| d.join("node").is_file());
    let installed = node && sdk.is_file();
    if !(ci || installed) {
        println!(
            "cargo::warning=the TypeScript SDK peer is not installed: the interop tests are skipped here (CI requires them; run `npm ci` in interop/ts)"
        );
        println!("cargo::rustc-cfg=tern_no_ts_sdk");
    }
    // The Python SDK peer: a venv in interop/py with `mcp` installed
    // (`pip install --no-deps -r requirements.txt` there).
    println!("cargo::rustc-check-cfg=cfg(tern_no_py_sdk)");
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/py/.venv");
    let python = venv.join("bin/python");
    println!("cargo::rerun-if-changed={}", python.display());
    // site-packages sits under lib/pythonX.Y, X.Y being whatever made the venv.
    let mut py_sdk = false;
    for lib in std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let mcp = lib.path().join("site-packages/mcp/__init__.py");
        println!("cargo::rerun-if-changed={}", mcp.display());
        py_sdk |= mcp.is_file();
    }
    if !(ci || (python.is_file() && py_sdk)) {
        println!(
            "cargo::warning=the Python SDK peer is not installed: its interop tests are skipped here (CI requires them; see .ci/run for the venv in interop/py)"
        );
        println!("cargo::rustc-cfg=tern_no_py_sdk");
    }
    // The TypeScript SDK v2 line (2026-07-28), whose deploy server `tern
    // probe` is run against (`npm ci` in interop/ts2).
    println!("cargo::rustc-check-cfg=cfg(tern_no_ts2_sdk)");
    let ts2 = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/ts2/node_modules/@modelcontextprotocol/server/package.json");
    println!("cargo::rerun-if-changed={}", ts2.display());
    if !(ci || (node && ts2.is_file())) {
        println!(
            "cargo::warning=the TypeScript SDK v2 peer is not installed: its probe test is skipped here (CI requires it; run `npm ci` in interop/ts2)"
        );
        println!("cargo::rustc-cfg=tern_no_ts2_sdk");
    }
    // The authorization server of the OAuth end-to-end test (`npm ci` in
    // interop/as).
    println!("cargo::rustc-check-cfg=cfg(tern_no_as)");
    let oidc = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/as/node_modules/oidc-provider/package.json");
    println!("cargo::rerun-if-changed={}", oidc.display());
    if !(ci || (node && oidc.is_file())) {
        println!(
            "cargo::warning=the authorization server peer is not installed: the OAuth end-to-end test is skipped here (CI requires it; run `npm ci` in interop/as)"
        );
        println!("cargo::rustc-cfg=tern_no_as");
    }
    // Redis, for the fleet test that runs `tern serve` instances on one
    // server; looked for again once installed (a directory of the PATH
    // changes).
    println!("cargo::rustc-check-cfg=cfg(tern_no_redis)");
    if !(ci || std::env::split_paths(&path).any(|d| d.join("redis-server").is_file())) {
        for dir in std::env::split_paths(&path) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
        println!(
            "cargo::warning=redis-server is not installed: the fleet test on Redis is skipped here (CI requires it; apt-get install redis-server)"
        );
        println!("cargo::rustc-cfg=tern_no_redis");
    }
}
