//! Which flows `tern probe` runs its cases against when none is named
//! (issue 27 point 17): a flow it can complete, its required arguments
//! made up from the tool's `inputSchema`, never a tool marked destructive;
//! a URL-mode flow it cannot finish is a SKIP, never a FAIL; `--single-use
//! TOOL` probes that tool's flow; `--all` every flow, within
//! `--max-requests`.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};
use tern::server::{
    Args, Ask, Config, ElicitForm, Elicited, Error, Need, RawArgs, Server as TernServer, State,
    ToolDef, ToolResult,
};

use super::super::common::{Run, Server, in_process, run, tern_bin};

/// `tern probe ARGS… --json`: the run and its report.
fn probe(args: &[&str]) -> (Run, Value) {
    let mut cmd = Command::new(tern_bin());
    cmd.arg("probe").args(args).arg("--json");
    let r = run(cmd);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:#?}"));
    (r, v)
}

/// Status and reason by `TOOL/family: case`.
fn cases(v: &Value) -> BTreeMap<String, (String, String)> {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!(
                    "{}/{}: {}",
                    c["tool"].as_str().unwrap(),
                    c["family"].as_str().unwrap(),
                    c["case"].as_str().unwrap()
                ),
                (
                    c["status"].as_str().unwrap().to_owned(),
                    c["reason"].as_str().unwrap().to_owned(),
                ),
            )
        })
        .collect()
}

/// The status of one case.
fn status<'a>(all: &'a BTreeMap<String, (String, String)>, case: &str) -> &'a str {
    all.get(case)
        .map(|(s, _)| s.as_str())
        .unwrap_or_else(|| panic!("no case {case}: {all:#?}"))
}

fn failures(all: &BTreeMap<String, (String, String)>) -> Vec<&String> {
    all.iter()
        .filter(|(_, (s, _))| s == "FAIL")
        .map(|(c, _)| c)
        .collect()
}

const NO_FLOW: &str = "round 1 completed without asking for input: no flow to probe";

#[test]
fn with_no_flag_it_probes_a_flow_it_can_complete_on_tern_serve() {
    let s = Server::start();
    let (r, v) = probe(&[&s.url]);
    r.ok();
    assert_eq!(v["tools"], json!(["deploy"]), "{r:#?}");
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    // Passed over, in the order listed: tools that ask nothing. `count`
    // takes an argument, made up from its schema.
    assert_eq!(all["echo/flows: echo"], ("SKIP".into(), NO_FLOW.into()));
    assert_eq!(all["count/flows: count"], ("SKIP".into(), NO_FLOW.into()));
    for case in [
        "baseline: flow completes",
        "integrity: forged",
        "bindings: other arguments",
        "answers: deployment_approval: content against the schema",
        "rounds: a round ceiling",
        "gates: Mcp-Name header unlike the body",
        "liveness: the server still answers",
    ] {
        assert_eq!(status(&all, &format!("deploy/{case}")), "PASS", "{case}");
    }
    assert_eq!(
        status(&all, "deploy/replay: the final state replayed"),
        "SKIP"
    );

    // The table says the same.
    let mut cmd = Command::new(tern_bin());
    cmd.args(["probe", &s.url]);
    run(cmd)
        .ok()
        .says("tern probe: tool \"deploy\", ")
        .says("SKIP   advice  MRTR-S3     flows       echo ")
        .says(" passed, 0 failed, ");

    // Named, the sign-in flow (URL mode) is one the probe cannot finish: a
    // SKIP with the reason, and nothing else is sent (ELIC-10).
    let (r, v) = probe(&[&s.url, "--tool", "login"]);
    r.ok();
    // The era check, the list (to make up its arguments), round 1 and the
    // retry that asks again.
    assert_eq!(v["requests"], 4, "{r:#?}");
    assert_eq!(
        cases(&v),
        BTreeMap::from([(
            "login/baseline: flow completes".to_owned(),
            (
                "SKIP".to_owned(),
                "\"login\" is a URL-mode step the person finishes out of band, so the probe cannot complete this flow (ELIC-10)".to_owned()
            )
        )])
    );
}

#[test]
fn single_use_probes_that_tools_flow_with_its_replays() {
    let s = Server::start();
    // The made-up code is new in every run, so a code that redeems once
    // ever does not fail the second run's baseline.
    for _ in 0..2 {
        let (r, v) = probe(&[&s.url, "--single-use", "redeem"]);
        r.ok();
        assert_eq!(v["tools"], json!(["redeem"]), "{r:#?}");
        let all = cases(&v);
        assert!(failures(&all).is_empty(), "{all:#?}");
        for case in [
            "redeem/baseline: flow completes",
            "redeem/replay: the final state replayed",
            "redeem/replay: two retries of one state at once",
        ] {
            assert_eq!(status(&all, case), "PASS", "{case}: {all:#?}");
        }
    }
    // With another tool named, both flows are probed, the replays only of
    // the single-use one.
    let (r, v) = probe(&[
        &s.url,
        "--tool",
        "deploy",
        "environment=prod",
        "--single-use",
        "order",
    ]);
    r.ok();
    assert_eq!(v["tools"], json!(["deploy", "order"]), "{r:#?}");
    let all = cases(&v);
    assert_eq!(
        status(&all, "deploy/replay: the final state replayed"),
        "SKIP"
    );
    assert!(!all.contains_key("deploy/replay: two retries of one state at once"));
    assert_eq!(
        status(&all, "order/replay: the final state replayed"),
        "PASS"
    );
    assert_eq!(
        status(&all, "order/replay: two retries of one state at once"),
        "PASS"
    );
    assert!(failures(&all).is_empty(), "{all:#?}");
}

#[test]
fn all_probes_every_flow_it_can_complete() {
    let s = Server::start();
    let (r, v) = probe(&[&s.url, "--all"]);
    r.ok();
    assert_eq!(
        v["tools"],
        json!(["deploy", "ask_model", "migrate", "redeem", "order"]),
        "{r:#?}"
    );
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    assert!(v["requests"].as_u64().unwrap() <= 600, "{}", v["requests"]);
    let passed_over: Vec<_> = all
        .iter()
        .filter(|(c, _)| c.contains("/flows: "))
        .map(|(c, (s, why))| (c.as_str(), s.as_str(), why.as_str()))
        .collect();
    assert_eq!(
        passed_over,
        [
            ("count/flows: count", "SKIP", NO_FLOW),
            ("echo/flows: echo", "SKIP", NO_FLOW),
            (
                "login/flows: login",
                "SKIP",
                "\"login\" is a URL-mode step the person finishes out of band, so the probe cannot complete this flow (ELIC-10)"
            ),
        ]
    );
    for tool in ["deploy", "ask_model", "migrate", "redeem", "order"] {
        for case in [
            "baseline: flow completes",
            "integrity: bit flip in the middle",
            "bindings: another tool name",
            "liveness: the server still answers",
        ] {
            assert_eq!(
                status(&all, &format!("{tool}/{case}")),
                "PASS",
                "{tool}: {case}"
            );
        }
    }
    assert_eq!(
        status(
            &all,
            "ask_model/answers: model_answer: a sample without a model"
        ),
        "PASS"
    );

    // One section per flow in the table.
    let mut cmd = Command::new(tern_bin());
    cmd.args(["probe", &s.url, "--all"]);
    run(cmd)
        .ok()
        .says(
            "tern probe: 5 tools (\"deploy\", \"ask_model\", \"migrate\", \"redeem\", \"order\"), ",
        )
        .says("\n-- tool \"ask_model\"\nPASS   MUST    MRTR-S3     baseline    flow completes");
}

#[test]
fn all_stays_within_max_requests() {
    let s = Server::start();
    // Six requests check the era, list the tools and examine the first
    // three; the rest are not examined, and no case the budget stopped is
    // a failure.
    let (r, v) = probe(&[&s.url, "--all", "--max-requests", "6"]);
    r.ok();
    assert_eq!(v["requests"], 6, "{r:#?}");
    assert_eq!(v["tools"], json!(["deploy"]));
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    assert_eq!(
        all["/flows: 5 more listed tool(s)"],
        (
            "SKIP".to_owned(),
            "not examined: the budget of 6 requests (--max-requests) is spent".to_owned()
        )
    );
    // The examination's own flow is the baseline; nothing else was sent.
    assert_eq!(status(&all, "deploy/baseline: flow completes"), "PASS");
    // One fewer: the flow's examination itself is cut short, and says so.
    let (r, v) = probe(&[&s.url, "--all", "--max-requests", "5"]);
    r.ok();
    assert_eq!(v["tools"], json!([]), "{r:#?}");
    assert_eq!(
        cases(&v)["deploy/flows: deploy"].1,
        "not examined: the budget of 5 requests (--max-requests) is spent"
    );
    assert_eq!(
        all["deploy/integrity: forged"],
        (
            "SKIP".to_owned(),
            "not measured: the budget of 6 requests (--max-requests) is spent".to_owned()
        )
    );

    // A budget that covers one flow: the next is not started.
    let (r, v) = probe(&[&s.url, "--all", "--max-requests", "80"]);
    r.ok();
    assert!(v["requests"].as_u64().unwrap() <= 80, "{r:#?}");
    assert_eq!(v["tools"], json!(["deploy"]));
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    let (st, why) = &all["ask_model/flows: ask_model"];
    assert_eq!(st, "SKIP");
    assert!(
        why.starts_with("not probed: ")
            && why.contains(" of the 80 requests (--max-requests) are left and a flow took "),
        "{why}"
    );
}

/// What the correct server's tools were called with.
#[derive(Debug, Default)]
struct Calls {
    wipe: AtomicUsize,
    impossible: AtomicUsize,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WipeArgs {
    /// What to wipe.
    target: String,
}

async fn wipe(Args(a): Args<WipeArgs>, State(calls): State<Arc<Calls>>) -> ToolResult {
    calls.wipe.fetch_add(1, Ordering::SeqCst);
    ToolResult::text(format!("wiped {}", a.target))
}

async fn impossible(RawArgs(_): RawArgs, State(calls): State<Arc<Calls>>) -> ToolResult {
    calls.impossible.fetch_add(1, Ordering::SeqCst);
    ToolResult::text("called")
}

#[derive(Deserialize, schemars::JsonSchema)]
struct SsoArgs {
    /// The account to sign in.
    account: String,
}

/// A sign-in in the browser: accepting is consent, so it asks again until
/// the person finishes out of band (ELIC-10), which never happens here.
async fn sso(Args(a): Args<SsoArgs>, ask: Ask) -> Result<ToolResult, Error> {
    let message = format!("Sign in as {}", a.account);
    let need = || Need::url("sso", &message, "https://sso.example/start");
    match ask.all(need())? {
        Elicited::Accepted(()) => Err(ask.again(need())),
        _ => Err(Error::tool("not signed in")),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Currency {
    Eur,
    Usd,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Account {
    /// The account number.
    iban: String,
    /// Who holds it.
    holder: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct TransferArgs {
    /// How much.
    #[schemars(range(min = 1, max = 500))]
    amount: u32,
    currency: Currency,
    to: Account,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct Confirm {
    /// Confirm
    confirm: bool,
}

async fn transfer(Args(a): Args<TransferArgs>, ask: Ask) -> Result<ToolResult, Error> {
    if !(1..=500).contains(&a.amount) {
        return Err(Error::tool("amount out of range"));
    }
    let cur = match a.currency {
        Currency::Eur => "EUR",
        Currency::Usd => "USD",
    };
    let holder = a.to.holder.as_deref().unwrap_or("its holder");
    let message = format!("Send {} {cur} to {} ({holder})?", a.amount, a.to.iban);
    match ask.form::<Confirm>("confirm_transfer", &message)? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(ToolResult::text("sent")),
        Elicited::Accepted(_) => Err(Error::tool("not confirmed")),
        Elicited::Declined => Err(Error::tool("declined")),
        Elicited::Cancelled => Err(Error::tool("cancelled")),
    }
}

/// A release code is three capitals, a dash and two digits.
fn release_code(code: &str) -> bool {
    let b = code.as_bytes();
    b.len() == 6
        && b[..3].iter().all(u8::is_ascii_uppercase)
        && b[3] == b'-'
        && b[4..].iter().all(u8::is_ascii_digit)
}

async fn tag(RawArgs(a): RawArgs, ask: Ask) -> Result<ToolResult, Error> {
    let code = a.get("code").and_then(Value::as_str).unwrap_or_default();
    if !release_code(code) {
        return Err(Error::tool(format!("{code:?} is not a release code")));
    }
    match ask.form::<Confirm>("confirm_tag", &format!("Tag {code}?"))? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(ToolResult::text("tagged")),
        Elicited::Accepted(_) => Err(Error::tool("not confirmed")),
        Elicited::Declined => Err(Error::tool("declined")),
        Elicited::Cancelled => Err(Error::tool("cancelled")),
    }
}

/// A server built with tern whose every tool takes a required argument, on
/// HTTP, listing two tools a page: one marked destructive, one whose schema
/// nothing satisfies, a URL-mode sign-in, and two flows the probe can
/// complete (typed arguments with a nested `$ref`; a `pattern` and a
/// `format`).
struct Correct {
    url: String,
    calls: Arc<Calls>,
    _rt: tokio::runtime::Runtime,
}

fn correct_server() -> Correct {
    let calls = Arc::new(Calls::default());
    let config = Config {
        page_size: 2,
        ..Config::default()
    };
    let server = TernServer::builder("correct", "1.0.0")
        .config(config)
        .state(calls.clone())
        .tool_def(
            ToolDef::new("wipe", "Wipes a target", wipe)
                .annotations(json!({"destructiveHint": true})),
        )
        .tool_def(
            ToolDef::new("impossible", "Needs a number between 10 and 5", impossible).input_schema(
                json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 5}}, "required": ["n"]}),
            ),
        )
        .tool("sso", "Signs in through the browser", sso)
        .tool("transfer", "Sends money after confirmation", transfer)
        .tool_def(
            ToolDef::new("tag", "Tags a release after confirmation", tag).input_schema(json!({
                "type": "object",
                "properties": {
                    "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
                    "on": {"type": "string", "format": "date"}
                },
                "required": ["code", "on"],
                "additionalProperties": false
            })),
        )
        .build()
        .unwrap();
    let (url, rt) = in_process(server);
    Correct {
        url,
        calls,
        _rt: rt,
    }
}

const DESTRUCTIVE: &str =
    "marked destructive (destructiveHint): the probe never calls it unless named with --tool";
const UNSATISFIABLE: &str = "no arguments fit its inputSchema (n: no integer lies within its bounds); give them with --tool NAME KEY=VALUE";
const OUT_OF_BAND: &str = "\"sso\" is a URL-mode step the person finishes out of band, so the probe cannot complete this flow (ELIC-10)";

#[test]
fn a_correct_server_whose_tools_all_take_arguments_passes() {
    let s = correct_server();
    let (r, v) = probe(&[&s.url]);
    r.ok();
    assert_eq!(v["tools"], json!(["transfer"]), "{r:#?}");
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    assert_eq!(all["wipe/flows: wipe"], ("SKIP".into(), DESTRUCTIVE.into()));
    assert_eq!(
        all["impossible/flows: impossible"],
        ("SKIP".into(), UNSATISFIABLE.into())
    );
    assert_eq!(all["sso/flows: sso"], ("SKIP".into(), OUT_OF_BAND.into()));
    for case in [
        "baseline: flow completes",
        "integrity: forged",
        "bindings: other arguments",
        "answers: confirm_transfer: content against the schema",
        "answers: confirm_transfer: decline and cancel told apart",
        "rounds: a round ceiling",
        "gates: no capability declared",
        "liveness: the server still answers",
    ] {
        assert_eq!(status(&all, &format!("transfer/{case}")), "PASS", "{case}");
    }

    // Every flow: the tool on the last page too, its code made from its
    // pattern and its date from its format.
    let (r, v) = probe(&[&s.url, "--all"]);
    r.ok();
    assert_eq!(v["tools"], json!(["transfer", "tag"]), "{r:#?}");
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    assert_eq!(status(&all, "tag/baseline: flow completes"), "PASS");
    assert_eq!(status(&all, "tag/bindings: other arguments"), "PASS");

    // Named, a destructive tool that needs arguments gets none made up.
    let (r, v) = probe(&[&s.url, "--tool", "wipe"]);
    r.ok();
    assert_eq!(v["tools"], json!([]), "{r:#?}");
    assert_eq!(
        cases(&v)["wipe/flows: wipe"].1,
        "marked destructive (destructiveHint): the probe makes up no arguments for it; give them with --tool NAME KEY=VALUE"
    );

    // Neither the destructive tool nor the one no arguments fit was ever
    // called.
    assert_eq!(s.calls.wipe.load(Ordering::SeqCst), 0);
    assert_eq!(s.calls.impossible.load(Ordering::SeqCst), 0);

    // A budget that covers one flow: the next is skipped, never failed.
    let (r, v) = probe(&[&s.url, "--all", "--max-requests", "60"]);
    r.ok();
    assert!(v["requests"].as_u64().unwrap() <= 60, "{r:#?}");
    assert_eq!(v["tools"], json!(["transfer"]));
    let all = cases(&v);
    assert!(failures(&all).is_empty(), "{all:#?}");
    assert!(
        all["tag/flows: tag"].1.starts_with("not probed: "),
        "{all:#?}"
    );
}

#[test]
fn key_value_arguments_need_their_tool() {
    let s = Server::start();
    let mut cmd = Command::new(tern_bin());
    cmd.args(["probe", &s.url, "environment=prod"]);
    run(cmd)
        .failed(2)
        .says("KEY=VALUE arguments belong to a tool: name it with --tool NAME");
}

/// A server that turns the probe's budgets against it: its tool list never
/// ends (the same cursor again), one schema is a maze of alternatives that
/// each fail deep down, another asks for a gigabyte, and its text carries
/// terminal escape sequences. It counts its `tools/list` calls in the file
/// named by its first argument.
const HOSTILE: &str = r##"
import json, sys
listed = 0
def reply(id, result):
    print(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}), flush=True)
def error(id, msg):
    print(json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": msg}}), flush=True)
TOOLS = [
    {"name": "maze", "inputSchema": {"type": "object", "required": ["x"], "properties": {"x": {"$ref": "#/$defs/a"}},
     "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}}},
    {"name": "huge", "inputSchema": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string", "minLength": 1000000000}}}},
    {"name": "go", "inputSchema": {"type": "object"}},
]
ASK = {"resultType": "input_required", "requestState": "s", "inputRequests": {"ok\u001b[2J": {"method": "elicitation/create",
       "params": {"mode": "form", "message": "Go?", "requestedSchema": {"type": "object",
       "properties": {"go": {"type": "boolean"}}, "required": ["go"]}}}}}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, p = m["method"], m.get("params") or {}
    if method == "tools/list":
        listed += 1
        open(sys.argv[1], "w").write(str(listed))
        reply(m["id"], {"resultType": "complete", "tools": TOOLS, "nextCursor": "again"})
    elif method == "tools/call" and p.get("name") == "go" and "requestState" not in p:
        reply(m["id"], ASK)
    else:
        error(m["id"], "\u001b]0;owned\u0007\u001b[31mrefused")
"##;

#[test]
fn a_hostile_server_cannot_spend_the_probe() {
    let dir = tempfile::TempDir::new().unwrap();
    let script = dir.path().join("hostile.py");
    std::fs::write(&script, HOSTILE).unwrap();
    let count = dir.path().join("listed");
    let cmd = format!("python3 {} {}", script.display(), count.display());
    let (r, v) = probe(&["--cmd", &cmd]);
    // The one flow never completes: its baseline fails, exit 1.
    r.failed(1);
    // A cursor seen before ends the listing: two pages, and the gate case
    // "inputResponses on tools/list".
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "3");
    let all = cases(&v);
    assert_eq!(
        all["maze/flows: maze"].1,
        "no arguments fit its inputSchema (x: no value found within 65536 steps (--max-fill-bytes)); give them with --tool NAME KEY=VALUE"
    );
    assert_eq!(
        all["huge/flows: huge"].1,
        "no arguments fit its inputSchema (x: it asks for more than 16384 bytes of made-up arguments (--max-fill-bytes)); give them with --tool NAME KEY=VALUE"
    );
    assert_eq!(v["tools"], json!(["go"]));
    assert_eq!(
        all["go/baseline: flow completes"],
        (
            "FAIL".to_owned(),
            "error -32602: \u{1b}]0;owned\u{7}\u{1b}[31mrefused".to_owned()
        )
    );
    // On a terminal the server's escape sequences are shown, not run.
    let mut cmd_run = Command::new(tern_bin());
    cmd_run.args(["probe", "--cmd", &cmd]);
    let table = run(cmd_run);
    table
        .failed(1)
        .says("FAIL   MUST    MRTR-S3     baseline    flow completes                                       error -32602: \\u{1b}]0;owned\\u{7}\\u{1b}[31mrefused")
        .says("ok\\u{1b}[2J: content against the schema");
    assert!(!table.stdout.contains('\u{1b}'), "{table:#?}");
}

/// A stdio server that reads every request and answers none.
const SILENT: &str = r#"
import sys
for line in sys.stdin:
    pass
"#;

/// A stdio server whose `tools/list` is refused in words that would
/// clear a terminal, retitle it and paint a verdict.
const TITLED: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "server/discover":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
              "serverInfo": {"name": "titled", "version": "1"}}})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32603,
              "message": "\u001b[2J\u001b]0;owned\u0007\u001b[31mall MUST cases passed"}})
"#;

/// A server that never answers costs the probe its reply limit per
/// request, never a hang; a server's refusal reaches the terminal with
/// its escape sequences shown, not run.
#[test]
fn a_silent_or_titling_server_neither_holds_nor_drives_the_terminal() {
    let dir = tempfile::TempDir::new().unwrap();
    let silent = dir.path().join("silent.py");
    std::fs::write(&silent, SILENT).unwrap();
    let mut cmd = Command::new(tern_bin());
    cmd.args([
        "probe",
        "--reply-timeout",
        "1",
        "--cmd",
        &format!("python3 {}", silent.display()),
    ]);
    let r = run(cmd);
    r.failed(2).says("no answer within 1 s");
    let titled = dir.path().join("titled.py");
    std::fs::write(&titled, TITLED).unwrap();
    let mut cmd = Command::new(tern_bin());
    cmd.args(["probe", "--cmd", &format!("python3 {}", titled.display())]);
    let r = run(cmd);
    r.failed(2).says(
        "tern: tools/list failed: error -32603: \\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{1b}[31mall MUST cases passed",
    );
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{7}'),
        "{r:#?}"
    );
}
