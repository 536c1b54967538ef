//! `tern probe`: checks how an MCP server's multi round-trip flows resist a
//! hostile client. It learns a flow of a tool that answers
//! `input_required`, then replays that flow with one thing wrong at a time
//! (the state, its bindings, the answers, the round count) and says, case
//! by case, whether the server refused what it must refuse, with the rule
//! each case rests on (DIGEST ids).
//!
//! Safe by default: loopback servers only unless `--allow-remote HOST`; a
//! bounded number of requests (`--max-requests`); only the tools it was
//! told, or ones the server does not mark destructive, with arguments made
//! up from their `inputSchema` within `--max-fill-bytes`; replays only of
//! a tool declared `--single-use`.
//!
//! The cases are rows of a table ([`cases::ROWS`]) that one engine
//! ([`engine::run`]) plays against each flow; [`flows`] picks the flows.

mod cases;
mod engine;
mod fill;
mod flows;
mod pattern;
mod report;
mod sends;
mod wire;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize};

use serde_json::{Map, Value, json};
use tern::client::Transport;

use self::engine::{Case, Level, Options, Status};
use self::flows::{Plan, Wanted};
use self::wire::{Probe, Reply, VERSION};
use crate::ProbeArgs;
use crate::exit::{self, usage};

/// `tern probe`.
pub(crate) fn run(mut args: ProbeArgs) -> Result<ExitCode, String> {
    // With --cmd, clap takes the first KEY=VALUE for the URL.
    if args.target.cmd.is_some()
        && let Some(word) = args
            .target
            .url
            .take_if(|w| w.contains('=') && !w.contains("://"))
    {
        args.args.insert(0, word);
    }
    if let Err(e) = crate::target::settle(&mut args.target, None) {
        return Ok(usage(&e));
    }
    if let Err(e) = crate::servers::resolve(&mut args.target) {
        return Ok(usage(&e));
    }
    if let Err(e) = check_host(&args) {
        return Ok(usage(&e));
    }
    let tool_args = match parse_args(&args) {
        Ok(a) => a,
        Err(e) => return Ok(usage(&e)),
    };
    let scripted = match &args.answers {
        Some(p) => match load_answers(p) {
            Ok(a) => a,
            Err(e) => return Ok(usage(&e)),
        },
        None => Map::new(),
    };
    crate::call::runtime()?.block_on(async move {
        let (transport, http) = match connect(&args).await {
            Ok(t) => t,
            Err(e) => return Ok(usage(&e)),
        };
        let other = match other_principal(&args) {
            Ok(o) => o,
            Err(e) => return Ok(usage(&e)),
        };
        let probe = Probe {
            transport,
            other,
            http,
            next_id: AtomicI64::new(1),
            sent: AtomicUsize::new(0),
            unsent: AtomicUsize::new(0),
            max_requests: args.max_requests,
            reply_timeout: std::time::Duration::from_secs(args.reply_timeout.max(1)),
            caps: json!({"elicitation": {"form": {}, "url": {}}, "roots": {}, "sampling": {}}),
            scripted,
        };
        if let Some(version) = legacy_only(&probe).await {
            let case = Case {
                tool: args.tool.clone().unwrap_or_default(),
                family: "era",
                id: "a 2026-07-28 server".to_owned(),
                rule: "VER-S4",
                level: Level::Advice,
                status: Status::Skip,
                reason: format!(
                    "the server speaks {version} only: its calls carry no requestState, so no multi round-trip case applies (tern proxy puts it behind a 2026-07-28 endpoint whose states this probe checks)"
                ),
            };
            let tools: Vec<String> = args.tool.iter().cloned().collect();
            return report::report(&tools, probe.sent(), &[case], &args);
        }
        let token: String = tern::seal::hex(&tern::seal::random_bytes::<4>());
        let want = Wanted {
            tool: args.tool.as_deref(),
            args: &tool_args,
            single_use: args.single_use.as_deref(),
            all: args.all,
            max_fill_bytes: args.max_fill_bytes,
            token: &token,
        };
        let plan = match flows::plan(&probe, &want).await {
            Ok(p) => p,
            Err(e) => {
                // The reason may quote the server's own words.
                eprintln!("tern: {}", crate::safe::line(&e));
                return Ok(exit::code(exit::USAGE));
            }
        };
        let (tools, cases) = probe_flows(&probe, plan, &args).await;
        if tools.is_empty() && args.tool.is_none() && args.single_use.is_none() {
            eprintln!(
                "tern: no listed tool has a flow the probe can complete: name one with --tool NAME [KEY=VALUE ...]"
            );
        }
        report::report(&tools, probe.sent(), &cases, &args)
    })
}

/// Runs the cases against each planned flow while the request budget
/// lasts: a flow is not started when fewer requests are left than the
/// most an earlier flow took (it is a SKIP that says so). Returns the
/// tools probed and every case, the tools passed over first.
async fn probe_flows(p: &Probe, plan: Plan, args: &ProbeArgs) -> (Vec<String>, Vec<Case>) {
    let Plan {
        flows,
        mut passed_over,
    } = plan;
    let mut tools = Vec::new();
    let mut cases = Vec::new();
    let mut most = 0;
    for planned in flows {
        let tool = planned.flow.tool.clone();
        if !tools.is_empty() && p.left() < most {
            passed_over.push(Case {
                tool: tool.clone(),
                family: "flows",
                id: tool,
                rule: "SECURITY",
                level: Level::Advice,
                status: Status::Skip,
                reason: format!(
                    "not probed: {} of the {} requests (--max-requests) are left and a flow took {most}",
                    p.left(),
                    p.max_requests
                ),
            });
            continue;
        }
        let before = p.sent();
        let opts = Options {
            single_use: args.single_use.as_deref() == Some(tool.as_str()),
            state_ttl: args.state_ttl,
            clock_skew: args.clock_skew,
        };
        cases.extend(engine::run(p, &planned.flow, planned.baseline, opts).await);
        most = most.max(p.sent() - before);
        tools.push(tool);
    }
    passed_over.extend(cases);
    (tools, passed_over)
}

/// Refuses a server that is not this machine unless `--allow-remote`
/// names it: the probe sends hostile requests.
fn check_host(args: &ProbeArgs) -> Result<(), String> {
    let Some(url) = &args.target.url else {
        return Ok(());
    };
    exit::check_url("the server URL", url)?;
    let host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    if !is_loopback(&host) && args.allow_remote.as_deref() != Some(host.as_str()) {
        return Err(format!(
            "{host} is not this machine: tern probe sends hostile requests, so a remote server needs --allow-remote {host}"
        ));
    }
    Ok(())
}

/// The `KEY=VALUE` arguments (JSON values parsed): they belong to the tool
/// named with `--tool` (else `--single-use`).
fn parse_args(args: &ProbeArgs) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for kv in &args.args {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("expected key=value, found {kv:?}"));
        };
        let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
        out.insert(k.to_owned(), v);
    }
    if !out.is_empty() && args.tool.is_none() && args.single_use.is_none() {
        return Err("KEY=VALUE arguments belong to a tool: name it with --tool NAME".to_owned());
    }
    Ok(out)
}

/// Whether `host` is this machine.
fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The era check (COMPAT-C5): `server/discover` first; a server that does
/// not answer it as a 2026-07-28 server and accepts a 2025-11-25
/// `initialize` speaks only the older revision, whose version is returned.
async fn legacy_only(p: &Probe) -> Option<String> {
    if let Reply::Complete(d) = p.send("server/discover", json!({})).await
        && d.get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|v| v == VERSION))
    {
        return None;
    }
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "tern-probe", "version": env!("CARGO_PKG_VERSION")}});
    match p.send("initialize", init).await {
        Reply::Complete(r) => r
            .get("protocolVersion")
            .and_then(Value::as_str)
            .filter(|v| *v != VERSION)
            .map(str::to_owned),
        _ => None,
    }
}

/// The `--answers` file, checked like `tern call`'s, as raw JSON.
fn load_answers(path: &Path) -> Result<Map<String, Value>, String> {
    crate::provider::Answers::load(path)?;
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The server as another principal: the URL with `--other-bearer-env`'s
/// token instead of the probe's own credentials.
fn other_principal(args: &ProbeArgs) -> Result<Option<Arc<dyn Transport>>, String> {
    let Some(var) = &args.other_bearer_env else {
        return Ok(None);
    };
    let url = args
        .target
        .url
        .as_deref()
        .ok_or("--other-bearer-env needs the server's URL (HTTP)")?;
    let auth = crate::AuthArgs {
        bearer_env: Some(var.clone()),
        ..crate::AuthArgs::default()
    };
    let options = crate::signin::http_options(url, &auth, false)?;
    let transport =
        tern::http::HttpTransport::with_options(url, options).map_err(|e| format!("{url}: {e}"))?;
    Ok(Some(Arc::new(transport)))
}

async fn connect(args: &ProbeArgs) -> Result<(Arc<dyn Transport>, bool), String> {
    let t = &args.target;
    if let Some(url) = &t.url {
        let options = crate::signin::http_options(url, &t.auth, false)?;
        let transport = tern::http::HttpTransport::with_options(url, options)
            .map_err(|e| format!("{url}: {e}"))?;
        return Ok((Arc::new(transport), true));
    }
    let (program, rest, env) = match (&t.spawn, &t.cmd) {
        (Some(s), _) => (s.program.clone(), s.args.clone(), s.env.clone()),
        (None, Some(cmd)) => {
            let words = crate::target::split_command(cmd)?;
            let (p, r) = words.split_first().ok_or("--cmd is empty")?;
            (p.clone(), r.to_vec(), Vec::new())
        }
        (None, None) => return Err("give the server's URL or --cmd 'COMMAND ARGS'".to_owned()),
    };
    exit::find_program(&program)?;
    let mut command = tokio::process::Command::new(&program);
    command.args(&rest).envs(env);
    let transport = tern::stdio::StdioTransport::spawn(command)
        .map_err(|e| format!("cannot start {program:?}: {e}"))?;
    Ok((Arc::new(transport), false))
}
