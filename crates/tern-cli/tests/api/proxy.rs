//! `tern proxy` between real peers of both eras: a 2025-11-25 client on the
//! TypeScript SDK (and the Python SDK in both of its modes) through the
//! proxy to `tern serve`; `tern call` through the proxy to a 2025-11-25
//! server on the TypeScript SDK that elicits, samples and lists roots; and
//! a gateway of both from one mcpServers file.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::common::{Server, listening, run, tern_bin};

/// `tern proxy --http 127.0.0.1:0 ARGS…`, its data in a temp dir.
struct Proxy {
    child: Child,
    url: String,
    dir: TempDir,
}

impl Proxy {
    fn start(args: &[&str]) -> Proxy {
        let dir = TempDir::new().unwrap();
        let mut cmd = Command::new(tern_bin());
        cmd.args(["proxy", "--http", "127.0.0.1:0"])
            .args(args)
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CACHE_HOME", dir.path().join("cache"));
        let (child, url) = listening(cmd, |line| {
            line.split_once(" at http://")
                .map(|(_, u)| format!("http://{u}"))
        });
        Proxy { child, url, dir }
    }

    /// `tern SUB URL ARGS…` against the proxy, with no terminal.
    fn tern(&self, sub: &str, args: &[&str]) -> super::common::Run {
        let mut cmd = Command::new(tern_bin());
        cmd.arg(sub)
            .arg(&self.url)
            .args(args)
            .env("XDG_DATA_HOME", self.dir.path())
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        run(cmd)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn legacy_server() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/ts/legacy-server.mjs")
        .display()
        .to_string()
}

/// Issue 15, mode 1: the TypeScript SDK v1 client (2025-11-25) through the
/// proxy to `tern serve` over HTTP: the deploy form and roots, sampling and
/// a decline, each upstream round asked as server-initiated requests.
#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn a_typescript_sdk_client_runs_the_workload_through_the_proxy_over_http() {
    let server = Server::start();
    let proxy = Proxy::start(&["--upstream", &server.url]);
    let seen = super::interop::run(&["http", &proxy.url]);
    super::interop::expect_the_workload_from(&seen, "tern-proxy");
}

/// The same through `tern proxy --stdio`, spawned by the SDK client, with
/// `tern serve --stdio` as its upstream command.
#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn a_typescript_sdk_client_runs_the_workload_through_the_proxy_over_stdio() {
    let data = TempDir::new().unwrap();
    let home = format!("XDG_DATA_HOME={}", data.path().display());
    let upstream = format!("{} serve --stdio", tern_bin());
    let seen = super::interop::run(&[
        "stdio",
        "env",
        &home,
        tern_bin(),
        "proxy",
        "--stdio",
        "--upstream-cmd",
        &upstream,
    ]);
    super::interop::expect_the_workload_from(&seen, "tern-proxy");
}

/// The Python SDK through the proxy in both of its modes: 2026-07-28 (the
/// upstream's rounds under the proxy's state) and 2025-11-25.
#[test]
#[cfg_attr(tern_no_py_sdk, ignore = "the Python SDK peer is not installed")]
fn a_python_sdk_client_runs_the_workload_through_the_proxy_in_both_eras() {
    let server = Server::start();
    let proxy = Proxy::start(&["--upstream", &server.url]);
    let seen = super::interop_py::run(&["http", &proxy.url]);
    super::interop_py::expect_the_workload_from(&seen, "2026-07-28", "tern-proxy");
    let seen = super::interop_py::run(&["--revision", "2025-11-25", "http", &proxy.url]);
    super::interop_py::expect_the_workload_from(&seen, "2025-11-25", "tern-proxy");
}

/// Issue 15, mode 2: `tern call` (2026-07-28) through the proxy to a
/// 2025-11-25 server on the TypeScript SDK: its elicitation, sampling and
/// roots requests arrive as input rounds keyed by method, and the answers
/// go back as the responses to its requests.
#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn tern_call_reaches_a_legacy_server_through_the_proxy() {
    let cmd = format!("node '{}' stdio", legacy_server());
    let proxy = Proxy::start(&["--upstream-cmd", &cmd]);
    let answers = proxy.dir.path().join("answers.json");
    std::fs::write(
        &answers,
        r#"{"elicitation/create": {"action": "accept", "content": {"quantity": 2, "gift": true}}}"#,
    )
    .unwrap();
    let answers = answers.display().to_string();
    let out = proxy.tern(
        "call",
        &[
            "tool",
            "confirm_order",
            "item=book",
            "--answers",
            &answers,
            "--json",
        ],
    );
    out.ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        v["result"]["content"][0]["text"],
        "ordered 2 book as a gift"
    );
    let rounds = v["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{v}");
    assert_eq!(rounds[0]["resultType"], "input_required");
    assert_eq!(
        rounds[0]["inputRequests"]["elicitation/create"]["params"]["message"],
        "Order book?"
    );
    // The proxy's own sealed state, not a legacy session's nothing.
    assert!(
        rounds[0]["requestStateBytes"].as_u64().unwrap() > 100,
        "{v}"
    );

    proxy
        .tern(
            "call",
            &[
                "tool",
                "summarize",
                "text=a long story",
                "--yes",
                "--sampling-cmd",
                "cat >/dev/null; echo short",
            ],
        )
        .ok()
        .says("summary: short");
    let root = proxy.dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let root = std::fs::canonicalize(root).unwrap().display().to_string();
    let out = proxy.tern("call", &["tool", "list_roots", "--root", &root]);
    out.ok();
    assert_eq!(out.stdout, format!("file://{root}\n"));
    let declined = proxy.dir.path().join("decline.json");
    std::fs::write(
        &declined,
        r#"{"elicitation/create": {"action": "decline"}}"#,
    )
    .unwrap();
    proxy
        .tern(
            "call",
            &[
                "tool",
                "confirm_order",
                "item=pen",
                "--answers",
                &declined.display().to_string(),
            ],
        )
        .ok()
        .says("order declined");
}

/// Issue 15, mode 3: a gateway of `tern serve --stdio` and the 2025-11-25
/// TypeScript server from one mcpServers file: `tern discover` lists both
/// under their prefixes, and both are callable, the MRTR flow included.
#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn a_gateway_serves_a_modern_and_a_legacy_server_from_one_file() {
    let data = TempDir::new().unwrap();
    let config = data.path().join("servers.json");
    let file = json!({"mcpServers": {
        "tern": {"command": tern_bin(), "args": ["serve", "--stdio"],
                 "env": {"XDG_DATA_HOME": data.path().display().to_string()}},
        "legacy": {"command": "node", "args": [legacy_server(), "stdio"]}
    }});
    std::fs::write(&config, file.to_string()).unwrap();
    let proxy = Proxy::start(&["--config", &config.display().to_string()]);
    let out = proxy.tern("discover", &["--json"]);
    out.ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let mut tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        [
            "legacy__confirm_order",
            "legacy__echo",
            "legacy__list_roots",
            "legacy__summarize",
            "tern__ask_model",
            "tern__count",
            "tern__deploy",
            "tern__echo",
            "tern__login",
            "tern__migrate",
            "tern__order",
            "tern__redeem"
        ]
    );
    let resources = v["resources"].as_array().unwrap();
    assert_eq!(resources[0]["_meta"]["tern/upstream"], "tern", "{v}");

    proxy
        .tern("call", &["tool", "legacy__echo", "text=old"])
        .ok()
        .says("old");
    proxy
        .tern("call", &["tool", "tern__echo", "text=new"])
        .ok()
        .says("new");
    let root = std::fs::canonicalize(data.path())
        .unwrap()
        .display()
        .to_string();
    proxy
        .tern(
            "call",
            &[
                "tool",
                "tern__deploy",
                "environment=staging",
                "--yes",
                "--root",
                &root,
            ],
        )
        .ok()
        .says("deployed to staging with 1 workspace root(s)");
}

/// An upstream command that exits is a clear error for the call it
/// breaks, and is started again for the next.
#[test]
fn a_stdio_upstream_that_exits_is_restarted() {
    let data = TempDir::new().unwrap();
    // The first server lives one second; the ones after it live on.
    let marker = data.path().join("started");
    let cmd = format!(
        "sh -c 'if [ -e {m} ]; then exec {t} serve --stdio; else touch {m}; exec timeout 1 {t} serve --stdio; fi'",
        m = marker.display(),
        t = tern_bin()
    );
    let proxy = Proxy::start(&["--upstream-cmd", &cmd]);
    // The first child exits a second after starting.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let first = proxy.tern("call", &["tool", "echo", "text=one"]);
    first.failed(1).says("is unavailable");
    proxy
        .tern("call", &["tool", "echo", "text=two"])
        .ok()
        .says("two");
}

/// One JSON POST to `url` with `token`, over a plain socket: (status, body).
fn post_json(url: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
    use std::io::Write;
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    let body = body.to_string();
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: deploy\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (
        status,
        serde_json::from_str(body.trim()).unwrap_or(Value::Null),
    )
}

/// Issue 15 point 4: the proxy checks its own clients' tokens, and the
/// principal binds its state: a state issued to one client is refused for
/// another (-32602), and accepted for its own.
#[test]
fn the_proxys_state_is_bound_to_its_clients_principal() {
    let server = Server::start();
    let dir = TempDir::new().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "alice token-of-alice\nbob token-of-bob\n").unwrap();
    let proxy = Proxy::start(&[
        "--upstream",
        &server.url,
        "--auth",
        &format!("tokens:{}", tokens.display()),
    ]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    });
    let first = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"_meta": meta, "name": "deploy", "arguments": {"environment": "staging"}}});
    let (status, _) = post_json(&proxy.url, None, &first);
    assert_eq!(status, 401);
    let (status, r) = post_json(&proxy.url, Some("token-of-alice"), &first);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let mut again = first;
    again["id"] = json!(2);
    again["params"]["requestState"] = r["result"]["requestState"].clone();
    again["params"]["inputResponses"] = json!({
        "deployment_approval": {"action": "accept", "content": {"approved": true}},
        "workspace_roots": {"roots": [{"uri": "file:///work"}]}
    });
    let keys: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["deployment_approval", "workspace_roots"], "{r}");
    let (_, stolen) = post_json(&proxy.url, Some("token-of-bob"), &again);
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let (_, own) = post_json(&proxy.url, Some("token-of-alice"), &again);
    assert_eq!(
        own["result"]["content"][0]["text"], "deployed to staging with 1 workspace root(s)",
        "{own}"
    );
}

/// The upstream's progress and log notifications reach the client through
/// the proxy, at the level the client asked for.
#[test]
fn progress_and_logs_pass_through() {
    let server = Server::start();
    let proxy = Proxy::start(&["--upstream", &server.url]);
    proxy
        .tern("call", &["tool", "count", "to=2"])
        .ok()
        .says("[info] counted 1")
        .says("[info] counted 2")
        .says("counted to 2");
}

/// Issue 27 point 11 with the real binaries: an HTTP upstream configured
/// as "search" goes away; the client's error names "search" with the
/// registry's -31002, and nothing of the upstream's URL or address.
#[test]
fn an_upstream_that_goes_away_is_named_without_its_address() {
    let server = Server::start();
    let upstream_url = server.url.clone();
    let address = upstream_url
        .strip_prefix("http://")
        .and_then(|u| u.split_once('/'))
        .map(|(a, _)| a.to_owned())
        .unwrap();
    let data = TempDir::new().unwrap();
    let config = data.path().join("servers.json");
    let file = json!({"mcpServers": {"search": {"url": upstream_url}}});
    std::fs::write(&config, file.to_string()).unwrap();
    let proxy = Proxy::start(&["--config", &config.display().to_string()]);
    proxy
        .tern("call", &["tool", "echo", "text=before"])
        .ok()
        .says("before");
    drop(server);
    for _ in 0..2 {
        let out = proxy.tern("call", &["tool", "echo", "text=after"]);
        out.failed(1)
            .says("the upstream server \"search\" is unavailable")
            .says("-31002");
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(!all.contains(&address), "{all}");
        assert!(!all.contains(&upstream_url), "{all}");
    }
}

/// The pending-call budget's flags are checked before the proxy starts: a
/// share larger than the pool is refused with exit status 1.
#[test]
fn a_per_principal_share_larger_than_the_pool_is_refused() {
    let mut cmd = Command::new(tern_bin());
    cmd.args([
        "proxy",
        "--http",
        "127.0.0.1:0",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--max-pending",
        "4",
        "--max-pending-per-principal",
        "5",
    ]);
    run(cmd)
        .failed(1)
        .says("--max-pending-per-principal must be between 1 and --max-pending (4)");
}

/// Issue 29: a task tool through the proxy, for clients of both eras. A
/// client that takes tasks gets the proxy's own task: it asks the upstream
/// task's question during the run and ends with the upstream's result; a
/// 2025-11-25 client gets the same tool relayed round by round (the
/// extension is not declared upstream, so the task-optional tool runs
/// inline), its question a server-initiated request of its session.
#[test]
fn a_task_tool_through_the_proxy_for_clients_of_both_eras() {
    let server = Server::start();
    let proxy = Proxy::start(&["--upstream", &server.url]);
    let answers = proxy.dir.path().join("answers.json");
    std::fs::write(
        &answers,
        // A 2025-11-25 session's requests have no keys: the method is one.
        r#"{"apply_migration": {"action": "accept", "content": {"apply": true}},
            "elicitation/create": {"action": "accept", "content": {"apply": true}}}"#,
    )
    .unwrap();
    let answers = answers.to_str().unwrap();
    let tasked = proxy.tern(
        "call",
        &[
            "tool",
            "migrate",
            "database=orders",
            "seconds=0.2",
            "--tasks",
            "--answers",
            answers,
            "--json",
        ],
    );
    tasked.ok();
    assert!(tasked.stderr.contains("· working"), "{tasked:#?}");
    assert!(tasked.stderr.contains("· input_required"), "{tasked:#?}");
    assert!(tasked.stderr.contains("· completed"), "{tasked:#?}");
    // The upstream's status message, passed on.
    assert!(tasked.stderr.contains("checking orders"), "{tasked:#?}");
    let v: Value = serde_json::from_str(tasked.stdout.trim()).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "migrated orders", "{v}");

    let legacy = proxy.tern(
        "call",
        &[
            "tool",
            "migrate",
            "database=billing",
            "--era",
            "legacy",
            "--answers",
            answers,
            "--verbose",
        ],
    );
    legacy.ok().says("migrated billing");
    assert!(!legacy.stderr.contains("· working"), "{legacy:#?}");
}

/// A client's cancel of the proxy's task reaches the upstream task: the
/// proxy's task ends `cancelled`, and so does the upstream's, whose id
/// never left the proxy (seen in the upstream's metrics).
#[test]
fn cancelling_the_proxys_task_cancels_the_upstream_task() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = free.local_addr().unwrap().to_string();
    drop(free);
    let server = Server::start_with(&["--metrics", &metrics], &[]);
    let proxy = Proxy::start(&["--upstream", &server.url]);
    let r = proxy.tern(
        "call",
        &[
            "tool",
            "migrate",
            "database=ledger",
            "seconds=30",
            "--detach",
        ],
    );
    r.ok();
    let id = r.stdout.trim().to_owned();
    assert_eq!(id.len(), 32, "{r:#?}");
    let task = |sub: &str| {
        let mut cmd = Command::new(tern_bin());
        cmd.args(["task", sub, &proxy.url, &id])
            .env("XDG_DATA_HOME", proxy.dir.path())
            .stdin(Stdio::null());
        run(cmd)
    };
    task("get").ok().says("working");
    task("cancel").ok();
    task("get").ok().says("cancelled");
    let cancelled = "tern_tasks_ended_total{status=\"cancelled\"} 1";
    let mut text = String::new();
    for _ in 0..100 {
        text = get_text(&format!("http://{metrics}/metrics"));
        if text.contains(cancelled) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        text.contains(cancelled),
        "the upstream task was not cancelled:\n{text}"
    );
}

/// The body of a GET.
fn get_text(url: &str) -> String {
    use std::io::Write;
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n")
        .map_or_else(String::new, |(_, b)| b.to_owned())
}
