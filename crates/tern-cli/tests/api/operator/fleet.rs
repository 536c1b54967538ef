//! `tern serve --instances N` over Redis: a task answered through any
//! instance, and failed once the instance running it dies.

use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{Logged, http};

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
