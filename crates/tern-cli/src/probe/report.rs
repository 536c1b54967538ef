//! The probe's report: a table for people (one section per flow when
//! several ran), JSON or JUnit XML for machines, and the exit code.

use std::process::ExitCode;

use serde_json::json;

use super::engine::{Case, Level, Status};
use crate::{FailOn, ProbeArgs};
use crate::{exit, safe};

/// Prints the table (or JSON, or writes JUnit) and picks the exit code:
/// 1 when a case failed at `--fail-on`'s level or a more binding one (by
/// default a MUST or a SHOULD: a server without a round ceiling, or whose
/// state does not bind the arguments, fails a CI gate). `tools` are the
/// flows probed, in order; `sent` the requests sent in all.
pub(super) fn report(
    tools: &[String],
    sent: usize,
    cases: &[Case],
    args: &ProbeArgs,
) -> Result<ExitCode, String> {
    let count = |s: Status| cases.iter().filter(|c| c.status == s).count();
    // The most binding level that failed.
    let worst = [Level::Must, Level::Should, Level::Advice]
        .into_iter()
        .find(|l| {
            cases
                .iter()
                .any(|c| c.status == Status::Fail && c.level == *l)
        });
    let gated = worst.is_some_and(|l| gates(l, args.fail_on));
    if args.json {
        let out = json!({
            "tool": tools.first().map_or("", String::as_str),
            "tools": tools,
            "requests": sent,
            "cases": cases.iter().map(|c| json!({
                "tool": c.tool, "family": c.family, "case": c.id, "rule": c.rule,
                "level": c.level.as_str(), "status": c.status.as_str(), "reason": c.reason,
            })).collect::<Vec<_>>(),
            "summary": {"pass": count(Status::Pass), "fail": count(Status::Fail), "skip": count(Status::Skip)},
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        table(tools, sent, cases);
        let why = match worst {
            None => String::new(),
            Some(Level::Must) => " (a MUST failed)".to_owned(),
            Some(Level::Should) => " (a SHOULD failed)".to_owned(),
            Some(Level::Advice) => " (advice only)".to_owned(),
        };
        let passes = if worst.is_some() && !gated {
            format!("; exit 0 under --fail-on {}", fail_on_name(args.fail_on))
        } else {
            String::new()
        };
        println!(
            "{} passed, {} failed, {} skipped{why}{passes}",
            count(Status::Pass),
            count(Status::Fail),
            count(Status::Skip),
        );
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(cases, tools.len() > 1))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(exit::code(if gated { exit::FAILED } else { exit::DONE }))
}

/// Whether a failure at `level` fails the run under `--fail-on`.
fn gates(level: Level, fail_on: FailOn) -> bool {
    match level {
        Level::Must => true,
        Level::Should => fail_on >= FailOn::Should,
        Level::Advice => fail_on == FailOn::Advice,
    }
}

/// `--fail-on`'s value as typed.
fn fail_on_name(fail_on: FailOn) -> &'static str {
    match fail_on {
        FailOn::Must => "must",
        FailOn::Should => "should",
        FailOn::Advice => "advice",
    }
}

/// The table: the header, the tools passed over, then each flow's cases
/// (under a line naming the tool when there are several).
fn table(tools: &[String], sent: usize, cases: &[Case]) {
    match tools {
        [] => println!("tern probe: no flow to probe, {sent} requests"),
        [one] => println!("tern probe: tool {:?}, {sent} requests", one),
        many => println!(
            "tern probe: {} tools ({}), {sent} requests",
            many.len(),
            many.iter()
                .map(|t| format!("{t:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    println!(
        "{:<6} {:<7} {:<11} {:<11} {:<52} reason",
        "status", "level", "rule", "family", "case"
    );
    let mut section = None;
    for c in cases {
        if tools.len() > 1 && c.family != "flows" && section != Some(&c.tool) {
            section = Some(&c.tool);
            println!("-- tool {:?}", c.tool);
        }
        println!(
            "{:<6} {:<7} {:<11} {:<11} {:<52} {}",
            c.status.as_str(),
            c.level.as_str(),
            c.rule,
            c.family,
            safe::line(&c.id),
            safe::line(&c.reason)
        );
    }
}

/// The cases as a JUnit XML report; with several flows, each case's name
/// starts with its tool.
fn junit(cases: &[Case], several: bool) -> String {
    let esc = |s: &str| {
        safe::line(s)
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let fails = cases.iter().filter(|c| c.status == Status::Fail).count();
    let skips = cases.iter().filter(|c| c.status == Status::Skip).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"tern probe\" tests=\"{}\" failures=\"{fails}\" skipped=\"{skips}\">\n",
        cases.len()
    );
    for c in cases {
        let name = if several && c.family != "flows" {
            format!("{}: {}", c.tool, c.id)
        } else {
            c.id.clone()
        };
        out.push_str(&format!(
            "  <testcase classname=\"{}\" name=\"{} [{} {}]\">",
            esc(c.family),
            esc(&name),
            c.level.as_str(),
            c.rule
        ));
        match c.status {
            Status::Pass => {}
            Status::Fail => out.push_str(&format!("<failure message=\"{}\"/>", esc(&c.reason))),
            Status::Skip => out.push_str(&format!("<skipped message=\"{}\"/>", esc(&c.reason))),
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("</testsuite>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safe;

    /// `--fail-on`: a level fails the run at its own setting and at every
    /// stricter one.
    #[test]
    fn each_level_gates_from_its_own_setting_on() {
        let rows = [
            (Level::Must, [true, true, true]),
            (Level::Should, [false, true, true]),
            (Level::Advice, [false, false, true]),
        ];
        for (level, want) in rows {
            let got = [FailOn::Must, FailOn::Should, FailOn::Advice].map(|f| gates(level, f));
            assert_eq!(got, want, "{level:?}");
        }
    }

    #[test]
    fn a_servers_escape_sequences_are_shown_not_run() {
        // The report's text goes through the one home of terminal safety.
        assert_eq!(
            safe::line("error -32602: \u{1b}[2J\u{1b}]0;owned\u{7}gone\r\n"),
            "error -32602: \\u{1b}[2J\\u{1b}]0;owned\\u{7}gone\\r\\n"
        );
        assert_eq!(safe::line("caf\u{e9} ok"), "caf\u{e9} ok");
    }
}
