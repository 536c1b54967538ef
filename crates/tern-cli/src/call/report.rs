//! What a call shows while it runs: each round as the client's driver
//! reports it (timing, `requestState` size, what is asked and answered),
//! and the server's progress and log notifications. The client drives the
//! flow (MRTR-C-A3); this only watches. Everything the server wrote goes
//! through [`safe`](crate::safe) first, and a server that floods the call
//! with notifications gets [`MAX_NOTICES_SHOWN`] lines, then a count.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tern::client::{CallOptions, Error, RoundEvent};
use tern::types::{ElicitRequestParams, InputRequest};

use crate::safe;
use crate::ui::{self, Spinner, bold, dim};

/// The most progress and log lines shown for one call; the rest are
/// counted and the count is shown when the call ends, so a server sending
/// a thousand notifications a second cannot bury the terminal.
pub(crate) const MAX_NOTICES_SHOWN: usize = 1_000;

/// Where round reports go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sink {
    /// Nowhere (the rounds are still collected for `--json`).
    Quiet,
    /// stderr (`-v`).
    Stderr,
    /// stdout (`tern demo`).
    Stdout,
}

/// Shows each round of a call as the client's driver reports it and keeps
/// them for `--json`.
pub(crate) struct Reporter {
    sink: Sink,
    label: String,
    what: String,
    state: Mutex<Watch>,
}

/// What the reporter remembers between events.
struct Watch {
    sent: Instant,
    spinner: Option<Spinner>,
    /// The interim round waiting for its answers: its record so far.
    open: Option<Value>,
    rounds: Vec<Value>,
    /// Whether any answer was a decline or a cancel.
    declined: bool,
    /// Notification lines shown so far, and those left unshown since the
    /// last count was printed.
    shown: usize,
    unshown: usize,
}

impl Reporter {
    /// A reporter to `sink` for the call described by `what`; `label`
    /// names the server in the spinner.
    pub(crate) fn new(sink: Sink, label: &str, what: &str) -> Arc<Self> {
        Arc::new(Reporter {
            sink,
            label: safe::line(label),
            what: safe::line(what),
            state: Mutex::new(Watch {
                sent: ui::now(),
                spinner: None,
                open: None,
                rounds: Vec::new(),
                declined: false,
                shown: 0,
                unshown: 0,
            }),
        })
    }

    /// Call options that report every round here, and show the call's
    /// progress and log notifications on stderr.
    pub(crate) fn options(self: &Arc<Self>) -> CallOptions {
        let me = Arc::clone(self);
        let shown = Arc::clone(self);
        CallOptions::new()
            .observe(move |e| me.on(e))
            .on_notification(move |n| shown.notified(n))
            .log_level("info")
    }

    /// A progress notification as a bar, a log message as a dim line, each
    /// one line of safe text, within [`MAX_NOTICES_SHOWN`].
    fn notified(&self, n: &tern::types::Notification) {
        let Some(p) = n.params.as_ref() else { return };
        let line = match n.method.as_str() {
            "notifications/progress" => {
                let done = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
                let total = p.get("total").and_then(Value::as_f64);
                let message = p.get("message").and_then(Value::as_str).unwrap_or("");
                safe::line(&ui::progress_bar(done, total, message))
            }
            "notifications/message" => {
                let level = p.get("level").and_then(Value::as_str).unwrap_or("info");
                let data = match p.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let logger = p
                    .get("logger")
                    .and_then(Value::as_str)
                    .map(|l| format!("{l}: "))
                    .unwrap_or_default();
                dim(&safe::line(&format!("[{level}] {logger}{data}")))
            }
            _ => return,
        };
        let mut w = self.watch();
        if w.shown >= MAX_NOTICES_SHOWN {
            w.unshown += 1;
            return;
        }
        w.shown += 1;
        // The spinner would draw over the line.
        w.spinner = None;
        eprintln!("{line}");
    }

    fn watch(&self) -> std::sync::MutexGuard<'_, Watch> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn on(&self, event: &RoundEvent<'_>) {
        let mut w = self.watch();
        match event {
            RoundEvent::Sending { .. } => {
                w.sent = ui::now();
                w.spinner = Some(Spinner::start(
                    &format!("waiting for {}", self.label),
                    false,
                ));
            }
            RoundEvent::InputRequired {
                round,
                input_requests,
                request_state,
            } => {
                w.spinner = None;
                let ms = w.sent.elapsed().as_millis();
                let state = request_state.map(str::len);
                let state_text = state.map_or_else(
                    || "no requestState".to_owned(),
                    |n| format!("requestState {n} bytes"),
                );
                self.line(&format!(
                    "{} {} · {} · {ms} ms · input_required · {state_text}",
                    bold("round"),
                    bold(&round.to_string()),
                    self.what
                ));
                for (key, r) in input_requests.iter() {
                    self.line(&format!(
                        "  asks    {}: {}",
                        safe::line(key),
                        describe_request(r)
                    ));
                }
                let record = json!({
                    "round": round,
                    "ms": ms,
                    "resultType": "input_required",
                    "requestStateBytes": state,
                    "inputRequests": serde_json::to_value(input_requests).unwrap_or(Value::Null),
                });
                if input_requests.is_empty() {
                    w.rounds.push(record);
                } else {
                    w.open = Some(record);
                }
            }
            RoundEvent::Answered { responses, .. } => {
                w.declined |= responses.iter().any(|(_, v)| {
                    matches!(
                        v.get("action").and_then(Value::as_str),
                        Some("decline" | "cancel")
                    )
                });
                for (key, v) in responses.iter() {
                    self.line(&format!(
                        "  answers {}: {}",
                        safe::line(key),
                        safe::line(&describe_answer(v))
                    ));
                }
                if let Some(mut record) = w.open.take() {
                    record["inputResponses"] =
                        serde_json::to_value(responses).unwrap_or(Value::Null);
                    w.rounds.push(record);
                }
            }
            RoundEvent::Task {
                task_id,
                status,
                message,
            } => {
                // A server that changes its status message at every poll
                // gets the notices' budget; how the task ends is always
                // shown.
                let ended = matches!(*status, "completed" | "failed" | "cancelled");
                if w.shown >= MAX_NOTICES_SHOWN && !ended {
                    w.unshown += 1;
                    return;
                }
                w.shown += 1;
                // Shown whatever the sink: a task can run for long, and the
                // person sees where it is. Server text, made safe.
                let message = message.map(|m| format!(" · {}", safe::line(m)));
                w.spinner = None;
                eprintln!(
                    "{} {} · {}{}",
                    bold("task"),
                    safe::line(task_id),
                    safe::line(status),
                    message.as_deref().unwrap_or("")
                );
                // Not while questions are open: their dialogs use the
                // terminal.
                if *status == "working" {
                    w.spinner = Some(Spinner::start(
                        &format!("task {} on {}", safe::line(task_id), self.label),
                        false,
                    ));
                }
                w.rounds.push(json!({"task": task_id, "status": status}));
            }
            RoundEvent::Complete { round } => {
                w.spinner = None;
                let ms = w.sent.elapsed().as_millis();
                self.line(&format!(
                    "{} {} · {} · {ms} ms · complete",
                    bold("round"),
                    bold(&round.to_string()),
                    self.what
                ));
                w.rounds
                    .push(json!({"round": round, "ms": ms, "resultType": "complete"}));
            }
            _ => {}
        }
    }

    /// Stops the spinner at the end of a call (or of one attempt), and
    /// says how many notifications were not shown.
    pub(crate) fn stop(&self) {
        let (spinner, unshown) = {
            let mut w = self.watch();
            (w.spinner.take(), std::mem::take(&mut w.unshown))
        };
        drop(spinner);
        if unshown > 0 {
            eprintln!(
                "{}",
                dim(&format!(
                    "tern: {unshown} more progress and log notifications and task status lines were not shown (at most {MAX_NOTICES_SHOWN} a call)"
                ))
            );
        }
    }

    fn line(&self, s: &str) {
        match self.sink {
            Sink::Quiet => {}
            Sink::Stderr => eprintln!("{s}"),
            Sink::Stdout => println!("{s}"),
        }
    }

    /// Whether the person declined or cancelled anything in this call.
    pub(crate) fn declined(&self) -> bool {
        self.watch().declined
    }

    /// The rounds seen so far, as JSON.
    pub(crate) fn rounds(&self) -> Vec<Value> {
        self.watch().rounds.clone()
    }
}

/// One line about an input request, in safe text.
fn describe_request(r: &InputRequest) -> String {
    match r {
        InputRequest::Elicitation(ElicitRequestParams::Form(f)) => {
            let required = f.requested_schema.required.clone().unwrap_or_default();
            let fields: Vec<String> = f
                .requested_schema
                .properties
                .iter()
                .map(|(name, field)| {
                    let kind = serde_json::to_value(field)
                        .ok()
                        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_default();
                    let req = if required.contains(name) {
                        ", required"
                    } else {
                        ""
                    };
                    format!("{name}: {kind}{req}")
                })
                .collect();
            safe::line(&format!("a form \"{}\" ({})", f.message, fields.join("; ")))
        }
        InputRequest::Elicitation(ElicitRequestParams::Url(u)) => {
            format!(
                "to open {} (\"{}\")",
                safe::url(&u.url),
                safe::line(&u.message)
            )
        }
        InputRequest::Sampling(s) => {
            let first = s
                .messages
                .iter()
                .flat_map(|m| m.content.blocks())
                .find_map(|b| match b {
                    tern::types::SamplingMessageContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            safe::line(&format!(
                "a model completion of \"{first}\" (at most {} tokens)",
                s.max_tokens
            ))
        }
        InputRequest::ListRoots(_) => "the workspace roots".to_owned(),
    }
}

/// One line about an answer, from its wire form (made safe by the caller:
/// `--yes` answers with the server's own defaults).
fn describe_answer(v: &Value) -> String {
    if let Some(action) = v.get("action").and_then(Value::as_str) {
        return match v.get("content") {
            Some(c) if !c.is_null() => format!("{action} {c}"),
            _ => action.to_owned(),
        };
    }
    if let Some(roots) = v.get("roots").and_then(Value::as_array) {
        let uris: Vec<&str> = roots
            .iter()
            .filter_map(|r| r.get("uri").and_then(Value::as_str))
            .collect();
        return format!("{} root(s) {}", roots.len(), uris.join(" "));
    }
    if let Some(model) = v.get("model").and_then(Value::as_str) {
        let text = v
            .get("content")
            .and_then(|c| {
                c.get("text")
                    .or_else(|| c.get(0).and_then(|b| b.get("text")))
            })
            .and_then(Value::as_str)
            .unwrap_or("");
        return format!("reply from {model}: \"{text}\"");
    }
    v.to_string()
}

/// Runs one call through the client's driver with `rep` watching every
/// round (MRTR-C-A3: the client drives, the display only observes).
pub(crate) async fn drive<T, F, Fut>(rep: &Arc<Reporter>, call: F) -> Result<T, Error>
where
    F: FnOnce(CallOptions) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let r = call(rep.options()).await;
    rep.stop();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that changes its task's status message at every poll gets
    /// the notices' budget of lines (and of records kept for `--json`);
    /// how the task ends is shown past it.
    #[test]
    fn task_status_lines_share_the_notices_budget_but_the_end_is_shown() {
        let rep = Reporter::new(Sink::Quiet, "server", "tool t");
        for i in 0..1_200 {
            let message = format!("step {i}");
            rep.on(&RoundEvent::Task {
                task_id: "t1",
                status: "working",
                message: Some(&message),
            });
        }
        rep.on(&RoundEvent::Task {
            task_id: "t1",
            status: "completed",
            message: None,
        });
        let w = rep.watch();
        assert_eq!((w.shown, w.unshown), (MAX_NOTICES_SHOWN + 1, 200));
        assert_eq!(w.rounds.len(), MAX_NOTICES_SHOWN + 1);
        assert_eq!(w.rounds.last().unwrap()["status"], "completed");
    }
}
