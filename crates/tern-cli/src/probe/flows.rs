//! Which flows the probe runs its cases against: the tools named
//! (`--tool`, `--single-use`), else the first listed tool whose flow it can
//! complete, or with `--all` every such tool. Every listed tool it passes
//! over is reported as a SKIP with the reason; a tool marked destructive is
//! never called unless named.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::engine::{Case, Level, Status};
use super::fill;
use super::wire::{Baseline, Flow, Probe, Reply};

/// What the operator asked for.
#[derive(Debug)]
pub(super) struct Wanted<'a> {
    /// `--tool` and its `KEY=VALUE` arguments (empty: made up).
    pub(super) tool: Option<&'a str>,
    pub(super) args: &'a Map<String, Value>,
    /// `--single-use`.
    pub(super) single_use: Option<&'a str>,
    /// `--all`.
    pub(super) all: bool,
    /// `--max-fill-bytes`.
    pub(super) max_fill_bytes: usize,
    /// In every made-up string, unique to this run.
    pub(super) token: &'a str,
}

/// A flow to run the cases against.
#[derive(Debug)]
pub(super) struct Planned {
    pub(super) flow: Flow,
    /// The flow the tool's examination completed, kept as its baseline.
    pub(super) baseline: Option<Baseline>,
}

/// The flows to probe, and a SKIP for every tool passed over.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) flows: Vec<Planned>,
    pub(super) passed_over: Vec<Case>,
}

/// What examining one listed tool found.
enum Found {
    /// Its flow completes with good answers.
    Completes(Planned),
    /// It asks with a state, but its flow did not complete.
    Incomplete(Planned),
    /// No flow the probe can run: the rule and the reason.
    NoFlow(&'static str, String),
}

/// The flows to probe. `Err` only when the tools cannot be listed and
/// they must be chosen from the list (none named, or `--all`).
pub(super) async fn plan(p: &Probe, want: &Wanted<'_>) -> Result<Plan, String> {
    let mut named: Vec<(&str, Option<&Map<String, Value>>)> = Vec::new();
    if let Some(t) = want.tool {
        named.push((t, (!want.args.is_empty()).then_some(want.args)));
    }
    if let Some(s) = want.single_use.filter(|s| Some(*s) != want.tool) {
        let given = (want.tool.is_none() && !want.args.is_empty()).then_some(want.args);
        named.push((s, given));
    }
    let choose = want.all || named.is_empty();
    let listed = if choose {
        list_tools(p).await?
    } else if named.iter().any(|(_, given)| given.is_none()) {
        // Only to make up arguments: a server that lists nothing gets the
        // named tools called with none.
        list_tools(p).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut plan = Plan::default();
    for (name, given) in &named {
        let args = match (given, listed.iter().find(|t| tool_name(t) == Some(name))) {
            (Some(a), _) => (*a).clone(),
            (None, Some(t)) => match made_up(t, want, true) {
                Ok(a) => a,
                Err(why) => {
                    plan.passed_over.push(skip(name, "TOOL-4", why));
                    continue;
                }
            },
            // Not listed: the baseline shows what the server says to it.
            (None, None) => Map::new(),
        };
        plan.flows.push(Planned {
            flow: Flow {
                tool: (*name).to_owned(),
                args,
            },
            baseline: None,
        });
    }
    if choose {
        let names: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
        choose_flows(p, want, &listed, &names, &mut plan).await;
    }
    Ok(plan)
}

/// Examines the listed tools in order (but the named ones, planned
/// already): the first whose flow completes, or every one with `--all`.
/// Without `--all`, when none completes, the first that asked is probed
/// (its baseline then says what went wrong).
async fn choose_flows(
    p: &Probe,
    want: &Wanted<'_>,
    listed: &[Value],
    named: &[&str],
    plan: &mut Plan,
) {
    let mut incomplete = Vec::new();
    let candidates: Vec<(&str, &Value)> = listed
        .iter()
        .filter_map(|t| tool_name(t).map(|n| (n, t)))
        .filter(|(n, _)| !named.contains(n))
        .collect();
    for (i, (name, tool)) in candidates.iter().enumerate() {
        if p.left() == 0 {
            plan.passed_over.push(Case {
                tool: String::new(),
                family: "flows",
                id: format!("{} more listed tool(s)", candidates.len() - i),
                rule: "SECURITY",
                level: Level::Advice,
                status: Status::Skip,
                reason: format!(
                    "not examined: the budget of {} requests (--max-requests) is spent",
                    p.max_requests
                ),
            });
            break;
        }
        match examine(p, want, name, tool).await {
            Found::Completes(planned) => {
                plan.flows.push(planned);
                if !want.all {
                    break;
                }
            }
            Found::Incomplete(planned) if want.all => plan.flows.push(planned),
            Found::Incomplete(planned) => incomplete.push(planned),
            Found::NoFlow(rule, why) => plan.passed_over.push(skip(name, rule, why)),
        }
    }
    let mut incomplete = incomplete.into_iter();
    if plan.flows.is_empty()
        && let Some(first) = incomplete.next()
    {
        plan.flows.push(first);
    }
    for planned in incomplete {
        let why = planned.baseline.as_ref().map_or(String::new(), end_of);
        plan.passed_over.push(skip(
            &planned.flow.tool,
            "MRTR-S3",
            format!("not probed: its flow did not complete ({why}); probe it with --tool NAME"),
        ));
    }
}

/// How a flow that did not complete ended.
fn end_of(b: &Baseline) -> String {
    match &b.end {
        Ok((_, _, r)) => r.short(),
        Err(e) => e.clone(),
    }
}

/// Runs one listed tool's flow with made-up arguments to see whether the
/// probe can complete it. A tool marked destructive is not called.
async fn examine(p: &Probe, want: &Wanted<'_>, name: &str, tool: &Value) -> Found {
    let args = match made_up(tool, want, false) {
        Ok(a) => a,
        Err(why) => {
            let rule = if destructive(tool) {
                "TOOL-S12"
            } else {
                "TOOL-4"
            };
            return Found::NoFlow(rule, why);
        }
    };
    let flow = Flow {
        tool: name.to_owned(),
        args,
    };
    let unsent = p.unsent();
    let baseline = match p.start(&flow).await {
        Reply::Asked(Some(state), requests) => p.finish(&flow, state, requests).await,
        Reply::Asked(None, _) => {
            return Found::NoFlow(
                "MRTR-S4",
                "it asked for input without a requestState: no state to probe".to_owned(),
            );
        }
        Reply::Complete(_) => {
            return Found::NoFlow(
                "MRTR-S3",
                "round 1 completed without asking for input: no flow to probe".to_owned(),
            );
        }
        other => {
            return Found::NoFlow(
                "TOOL-S10",
                format!(
                    "round 1 with {} did not ask for input: {}",
                    json!(flow.args),
                    other.short()
                ),
            );
        }
    };
    if p.unsent() > unsent {
        // Cut short by the budget: nothing is known about the flow.
        return Found::NoFlow(
            "SECURITY",
            format!(
                "not examined: the budget of {} requests (--max-requests) is spent",
                p.max_requests
            ),
        );
    }
    if let Some(why) = &baseline.out_of_band {
        return Found::NoFlow("ELIC-10", why.clone());
    }
    let completes = baseline.completed();
    let planned = Planned {
        flow,
        baseline: Some(baseline),
    };
    if completes {
        Found::Completes(planned)
    } else {
        Found::Incomplete(planned)
    }
}

/// Whether the server marks `tool` destructive: `destructiveHint: true`
/// on a tool not marked read-only (where the hint means nothing).
fn destructive(tool: &Value) -> bool {
    let hint = |h: &str| {
        tool.pointer(&format!("/annotations/{h}"))
            .and_then(Value::as_bool)
    };
    hint("destructiveHint") == Some(true) && hint("readOnlyHint") != Some(true)
}

/// Arguments for `tool` from its `inputSchema`. A destructive tool gets
/// none made up: unless `named`, it is not called at all, and named it is
/// called only when it needs no argument.
fn made_up(tool: &Value, want: &Wanted<'_>, named: bool) -> Result<Map<String, Value>, String> {
    let schema = tool
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    if destructive(tool) {
        let needs = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        if !named {
            return Err("marked destructive (destructiveHint): the probe never calls it unless named with --tool".to_owned());
        }
        if needs {
            return Err("marked destructive (destructiveHint): the probe makes up no arguments for it; give them with --tool NAME KEY=VALUE".to_owned());
        }
        return Ok(Map::new());
    }
    fill::arguments(&schema, want.token, want.max_fill_bytes).map_err(|why| {
        format!("no arguments fit its inputSchema ({why}); give them with --tool NAME KEY=VALUE")
    })
}

fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}

/// A SKIP for a tool passed over.
fn skip(tool: &str, rule: &'static str, reason: String) -> Case {
    Case {
        tool: tool.to_owned(),
        family: "flows",
        id: tool.to_owned(),
        rule,
        level: Level::Advice,
        status: Status::Skip,
        reason,
    }
}

/// Every page of `tools/list`, following `nextCursor` while the budget
/// lasts and the cursor is new.
async fn list_tools(p: &Probe) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut seen = HashSet::new();
    let mut params = json!({});
    loop {
        let page = match p.send("tools/list", params).await {
            Reply::Complete(r) => r,
            other if seen.is_empty() => {
                return Err(format!("tools/list failed: {}", other.short()));
            }
            // A later page failed: probe what was listed.
            _ => break,
        };
        if let Some(t) = page.get("tools").and_then(Value::as_array) {
            tools.extend(t.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if seen.insert(c.to_owned()) => params = json!({"cursor": c}),
            _ => break,
        }
    }
    Ok(tools)
}
