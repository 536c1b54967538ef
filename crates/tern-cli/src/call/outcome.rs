//! How a finished call is printed and which exit code it gives (README,
//! "Exit codes"). The result is the server's text: printed safe, as plain
//! text or as JSON whose strings escape everything a terminal could obey.

use std::process::ExitCode;

use serde::Serialize;
use serde_json::{Value, json};
use tern::client::Error;

use super::missing::{self, Withheld};
use super::report::Reporter;
use crate::provider::TerminalProvider;
use crate::{exit, safe};

/// How a finished call is printed.
pub(super) struct Out {
    /// `--json`.
    pub(super) json: bool,
    /// `--restart`.
    pub(super) restart: bool,
    /// The server's URL, to name in transport errors.
    pub(super) url: Option<String>,
    /// `--detach`.
    pub(super) detach: bool,
    /// Cancelled on Ctrl-C: nothing more is printed.
    pub(super) cancel: tern::client::CancelToken,
    /// The capabilities the call declared, as JSON: what a `-32021` is
    /// explained against.
    pub(super) declared: Value,
    /// The flags that withheld some of them, named in that explanation.
    pub(super) withheld: Withheld,
}

/// What `--json` prints.
#[derive(Serialize)]
struct JsonOut<'a, T: Serialize> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    rounds: Vec<Value>,
}

/// Prints a finished call and picks the exit code: 0; 1 for a tool error
/// result, or 4 when the person declined what the server asked. `text`
/// gives the result as safe text, and whether it is a tool error.
pub(super) fn finish<T: Serialize>(
    r: Result<T, Error>,
    out: &Out,
    rep: &Reporter,
    provider: &TerminalProvider,
    text: impl Fn(&T) -> (String, bool),
) -> ExitCode {
    if out.cancel.is_cancelled() {
        return exit::code(exit::INTERRUPTED);
    }
    match r {
        Ok(result) => {
            let (body, is_error) = text(&result);
            if out.json {
                let out = JsonOut {
                    result: Some(&result),
                    error: None,
                    rounds: rep.rounds(),
                };
                println!("{}", safe::json(&out));
            } else if is_error {
                eprintln!("tern: the tool reported an error:");
                println!("{body}");
            } else {
                println!("{body}");
            }
            match (is_error, rep.declined()) {
                (false, _) => exit::code(exit::DONE),
                (true, false) => exit::code(exit::FAILED),
                (true, true) => exit::code(exit::REFUSED),
            }
        }
        Err(e) => report_error(&e, out, rep, provider),
    }
}

/// `--detach`: drives the call's rounds, and when the server runs it as a
/// task prints the task's id (on stdout, or `{"taskId": ...}` with
/// `--json`) and exits 0 without waiting; a call that completes at once is
/// printed as usual.
pub(super) async fn detach(
    client: &tern::client::Client,
    name: &str,
    arguments: serde_json::Map<String, Value>,
    out: &Out,
    rep: &std::sync::Arc<Reporter>,
    provider: &TerminalProvider,
) -> ExitCode {
    let opts = rep.options().cancel(out.cancel.clone());
    let r = client.start_tool(name, arguments, &opts).await;
    rep.stop();
    match r {
        Ok(tern::client::Step::Task(task)) => {
            if out.json {
                println!("{}", safe::json(&json!({"taskId": task.task_id()})));
            } else {
                println!("{}", safe::line(task.task_id()));
            }
            exit::code(exit::DONE)
        }
        Ok(tern::client::Step::Complete(r)) => finish(Ok(r), out, rep, provider, |r| {
            (crate::ui::tool_text(r), r.is_error())
        }),
        Ok(tern::client::Step::Pending(_)) => report_error(
            &Error::protocol("the call ended waiting for input"),
            out,
            rep,
            provider,
        ),
        Err(e) => finish::<()>(Err(e), out, rep, provider, |()| (String::new(), false)),
    }
}

/// Prints a failed call (JSON-RPC errors with their code and data, a
/// transport failure with its cause) and picks the exit code.
pub(super) fn report_error(
    e: &Error,
    out: &Out,
    rep: &Reporter,
    provider: &TerminalProvider,
) -> ExitCode {
    if out.cancel.is_cancelled() {
        return exit::code(exit::INTERRUPTED);
    }
    if provider.interrupted() {
        eprintln!("tern: cancelled");
        return exit::code(exit::INTERRUPTED);
    }
    if out.json {
        let error = match e.remote_error() {
            Some(o) => serde_json::to_value(o).unwrap_or(Value::Null),
            None => json!({"message": exit::explain(e, out.url.as_deref())}),
        };
        let out: JsonOut<'_, ()> = JsonOut {
            result: None,
            error: Some(error),
            rounds: rep.rounds(),
        };
        println!("{}", safe::json(&out));
    }
    eprintln!("tern: {}", exit::explain(e, out.url.as_deref()));
    if let Some(d) = e.remote_error().and_then(|o| o.data.as_ref()) {
        eprintln!("tern: error data: {}", safe::line(&d.to_string()));
    }
    if e.is_capability() && e.is_remote() {
        let data = e.remote_error().and_then(|o| o.data.as_ref());
        for line in missing::advice(data, &out.declared, out.withheld) {
            eprintln!("tern: {line}");
        }
    }
    let code = if e.is_refused() && provider.lacked_terminal() {
        exit::USAGE
    } else if e.is_refused() || (e.is_remote() && rep.declined()) {
        exit::REFUSED
    } else if e.is_remote() && !e.is_capability() {
        exit::FAILED
    } else {
        exit::PROTOCOL
    };
    exit::code(code)
}
