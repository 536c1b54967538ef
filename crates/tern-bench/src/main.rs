//! `tern-bench`: closed-loop load on `tern serve` for the flows the shared
//! load generator does not speak, measured the way it measures (flows per
//! second, the server's CPU per flow from `/proc`, flow latency), one JSON
//! line on stdout for `bench/vs-floor.sh`.
//!
//! - `--flow legacy`: each worker opens a 2025-11-25 session (`initialize`
//!   once) and calls `deploy` again and again; the server asks the form
//!   and the roots as requests of its own on the call's SSE stream, and
//!   the answers are POSTed back.
//! - `--flow task`: each worker calls `migrate` as a task (the tasks
//!   extension declared): created, polled, its go-ahead asked during the
//!   task and answered with `tasks/update`, polled to its result.
//!
//! The client is tern-client; its own cost runs on the load's CPU, not
//! the server's.

// A load generator measures wall time and prints its result.
#![allow(clippy::disallowed_methods, clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use serde_json::{Map, Value, json};
use tern::client::{
    BoxFuture, Client, EraPolicy, InputContext, InputKinds, InputProvider, Refusal,
};
use tern::types::{
    ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue, ListRootsResult, Root,
};

#[derive(Clone, Copy, ValueEnum)]
enum Flow {
    /// A 2025-11-25 session's `deploy`.
    Legacy,
    /// `migrate` as a task with one in-task question.
    Task,
}

/// Closed-loop load for a 2025-11-25 session's flow or a task.
#[derive(Parser)]
struct Args {
    /// The flow each worker runs back to back.
    #[arg(long, value_enum)]
    flow: Flow,
    /// The server's MCP endpoint.
    #[arg(long)]
    url: String,
    /// Workers, each with its own client (and, for `legacy`, session).
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// The measured window, in seconds.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Flows run before the window, not recorded, in seconds.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// The server's PID, for its CPU time over the window.
    #[arg(long)]
    server_pid: Option<u32>,
    /// A label for the result line.
    #[arg(long, default_value = "")]
    label: String,
}

/// Answers every form with a value for each required field, and lists
/// one root.
struct Filler;

impl InputProvider for Filler {
    fn kinds(&self) -> InputKinds {
        InputKinds::NONE.with_form().with_roots()
    }

    fn elicit_form(
        &self,
        _cx: InputContext,
        params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        let schema = serde_json::to_value(&params.requested_schema).unwrap_or_default();
        let content = fill(&schema);
        Box::pin(async move {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(content),
            })
        })
    }

    fn list_roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        Box::pin(async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///tmp/tern-bench".into(),
                    name: None,
                    meta: None,
                }],
            })
        })
    }
}

/// A value for each required property of a flat form schema: `true`,
/// the first choice or `"x"`, the minimum or 1.
fn fill(schema: &Value) -> BTreeMap<String, ElicitValue> {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    let mut out = BTreeMap::new();
    for name in required.iter().filter_map(Value::as_str) {
        let p = &props[name];
        let v = match p["type"].as_str() {
            Some("boolean") => ElicitValue::Bool(true),
            Some("integer" | "number") => {
                ElicitValue::Number(p["minimum"].as_i64().unwrap_or(1).into())
            }
            _ => {
                let first = p["enum"][0]
                    .as_str()
                    .or_else(|| p["oneOf"][0]["const"].as_str());
                ElicitValue::String(first.unwrap_or("x").to_owned())
            }
        };
        out.insert(name.to_owned(), v);
    }
    out
}

fn client(args: &Args) -> Result<Client, String> {
    let transport = tern::http::HttpTransport::new(&args.url).map_err(|e| e.to_string())?;
    let b = Client::builder(transport).provider(Filler);
    Ok(match args.flow {
        Flow::Legacy => b.era(EraPolicy::Legacy),
        Flow::Task => b.tasks(true),
    }
    .build())
}

fn call(flow: Flow) -> (&'static str, Map<String, Value>) {
    let (tool, args) = match flow {
        Flow::Legacy => ("deploy", json!({"environment": "prod"})),
        Flow::Task => ("migrate", json!({"database": "bench", "seconds": 0})),
    };
    (tool, args.as_object().cloned().unwrap_or_default())
}

/// The CPU time (user + system) of `pid` so far, in microseconds.
fn cpu_us(pid: u32, ticks_per_s: u64) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 1_000_000 / ticks_per_s)
}

fn ticks_per_s() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

#[derive(Default)]
struct Tally {
    latencies_ms: Mutex<Vec<f64>>,
    failed: AtomicU64,
    first_failure: Mutex<Option<String>>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let started = Instant::now();
    let window = started + Duration::from_secs_f64(args.warmup);
    let end = window + Duration::from_secs_f64(args.duration);
    let tally = Arc::new(Tally::default());
    let mut workers = Vec::new();
    for _ in 0..args.concurrency {
        let c = client(&args)?;
        let tally = tally.clone();
        let flow = args.flow;
        workers.push(tokio::spawn(async move {
            while Instant::now() < end {
                let (tool, arguments) = call(flow);
                let t0 = Instant::now();
                let r = c.call_tool(tool, arguments).await;
                if t0 < window {
                    continue;
                }
                match r {
                    Ok(r) if r.is_error != Some(true) => {
                        let ms = t0.elapsed().as_secs_f64() * 1000.0;
                        if let Ok(mut l) = tally.latencies_ms.lock() {
                            l.push(ms);
                        }
                    }
                    other => {
                        tally.failed.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut f) = tally.first_failure.lock() {
                            f.get_or_insert_with(|| format!("{other:?}"));
                        }
                    }
                }
            }
            let _ = c.close().await;
        }));
    }
    let hz = ticks_per_s();
    tokio::time::sleep_until(window.into()).await;
    let cpu0 = args.server_pid.and_then(|p| cpu_us(p, hz));
    let t0 = Instant::now();
    tokio::time::sleep_until(end.into()).await;
    let cpu1 = args.server_pid.and_then(|p| cpu_us(p, hz));
    let elapsed = t0.elapsed().as_secs_f64();
    let mut lat = tally
        .latencies_ms
        .lock()
        .map(|l| l.clone())
        .unwrap_or_default();
    for w in workers {
        let _ = w.await;
    }
    lat.sort_by(f64::total_cmp);
    let flows = lat.len() as f64;
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let cpu_per_flow = match (cpu0, cpu1) {
        (Some(a), Some(b)) if flows > 0.0 => (b - a) as f64 / flows,
        _ => 0.0,
    };
    if let Ok(f) = tally.first_failure.lock()
        && let Some(f) = f.as_ref()
    {
        eprintln!("tern-bench: a failed flow: {f}");
    }
    let line = json!({
        "label": args.label,
        "concurrency": args.concurrency,
        "flows_per_s": flows / elapsed,
        "flows_failed": tally.failed.load(Ordering::Relaxed),
        "flows_unfinished": 0,
        "cpu": {"servers": [{"cpu_us_per_flow": cpu_per_flow}]},
        "flow_latency_ms": {"p50": pct(0.5), "p99": pct(0.99)},
    });
    println!("{line}");
    Ok(())
}
