//! `tern call`: call a tool, get a prompt or read a resource, answering the
//! server's questions round by round (DIGEST §4.5).
//!
//! The client's driver runs the flow (MRTR-C-A3): it builds every retry
//! (MRTR-C5..C8), checks every interim result (MRTR-C-A2) and keeps the
//! round limit, deadline and backoff. The command only watches, through the
//! driver's per-round observer, to show each round with its timing and
//! `requestState` size.

use std::collections::BTreeMap;
use std::future::Future;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tern::client::{CallOptions, Client, Error, InputKinds, RoundEvent};
use tern::types::{
    CallToolResult, ElicitRequestParams, GetPromptResult, InputRequest, ReadResourceResult,
};

use crate::CallArgs;
use crate::provider::{self, Answers, Sampler, Settings, TerminalProvider};
use crate::target;
use crate::ui::{self, Spinner, bold, dim};

/// Exit code of a usage error.
pub(crate) const USAGE: u8 = 2;

/// Prints a usage error and gives exit code 2.
pub(crate) fn usage(msg: &str) -> ExitCode {
    eprintln!("tern: {msg}");
    ExitCode::from(USAGE)
}

/// The runtime of the client commands.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// What `tern call` was asked to do.
#[derive(Debug)]
enum What {
    Tool(String, Vec<(String, String)>),
    Prompt(String, Vec<(String, String)>),
    Read(String),
}

/// Splits WHAT into the operation and its `key=value` pairs.
fn parse_what(words: &[String]) -> Result<What, String> {
    let [kind, name, rest @ ..] = words else {
        return Err("expected `tool NAME`, `prompt NAME` or `read URI`".to_owned());
    };
    let pairs = || {
        rest.iter()
            .map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .filter(|(k, _)| !k.is_empty())
                    .ok_or_else(|| format!("expected key=value, found {kv:?}"))
            })
            .collect::<Result<Vec<_>, String>>()
    };
    match kind.as_str() {
        "tool" => Ok(What::Tool(name.clone(), pairs()?)),
        "prompt" => Ok(What::Prompt(name.clone(), pairs()?)),
        "read" if rest.is_empty() => Ok(What::Read(name.clone())),
        "read" => Err("`read URI` takes no key=value arguments".to_owned()),
        other => Err(format!(
            "unknown {other:?}: expected `tool NAME`, `prompt NAME` or `read URI`"
        )),
    }
}

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

/// Shows each round of a call as the client's driver reports it (timing,
/// `requestState` size, what is asked and answered) and keeps them for
/// `--json`. The client drives the flow; this only watches.
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
}

impl Reporter {
    /// A reporter to `sink` for the call described by `what`; `label`
    /// names the server in the spinner.
    pub(crate) fn new(sink: Sink, label: &str, what: &str) -> Arc<Self> {
        Arc::new(Reporter {
            sink,
            label: label.to_owned(),
            what: what.to_owned(),
            state: Mutex::new(Watch {
                sent: ui::now(),
                spinner: None,
                open: None,
                rounds: Vec::new(),
            }),
        })
    }

    /// Call options that report every round here.
    pub(crate) fn options(self: &Arc<Self>) -> CallOptions {
        let me = Arc::clone(self);
        CallOptions::new().observe(move |e| me.on(e))
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
                    self.line(&format!("  asks    {key}: {}", describe_request(r)));
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
                for (key, v) in responses.iter() {
                    self.line(&format!("  answers {key}: {}", describe_answer(v)));
                }
                if let Some(mut record) = w.open.take() {
                    record["inputResponses"] =
                        serde_json::to_value(responses).unwrap_or(Value::Null);
                    w.rounds.push(record);
                }
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

    /// Stops the spinner, for a call that ended in an error.
    pub(crate) fn stop(&self) {
        let spinner = self.watch().spinner.take();
        drop(spinner);
    }

    fn line(&self, s: &str) {
        match self.sink {
            Sink::Quiet => {}
            Sink::Stderr => eprintln!("{s}"),
            Sink::Stdout => println!("{s}"),
        }
    }

    /// The rounds seen so far, as JSON.
    pub(crate) fn rounds(&self) -> Vec<Value> {
        self.watch().rounds.clone()
    }
}

/// One line about an input request.
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
            format!("a form {:?} ({})", f.message, fields.join("; "))
        }
        InputRequest::Elicitation(ElicitRequestParams::Url(u)) => {
            format!("to open {} ({:?})", u.url, u.message)
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
            format!(
                "a model completion of {first:?} (at most {} tokens)",
                s.max_tokens
            )
        }
        InputRequest::ListRoots(_) => "the workspace roots".to_owned(),
    }
}

/// One line about an answer, from its wire form.
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
        return format!("reply from {model}: {text:?}");
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

/// Coerces `key=value` arguments by the tool's `inputSchema`: integer,
/// number, boolean, string, or JSON for objects and arrays.
fn coerce_args(
    schema: &Map<String, Value>,
    pairs: &[(String, String)],
) -> Result<Map<String, Value>, String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for (key, raw) in pairs {
        let prop = props.and_then(|p| p.get(key));
        out.insert(key.clone(), coerce(key, raw, prop)?);
    }
    Ok(out)
}

/// One value by its property schema; strings are tried last.
fn coerce(key: &str, raw: &str, prop: Option<&Value>) -> Result<Value, String> {
    let mut types: Vec<&str> = match prop.and_then(|p| p.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return Ok(Value::String(raw.to_owned()));
    }
    // Strings take anything: try them last.
    types.sort_by_key(|t| *t == "string");
    for t in &types {
        let v = match *t {
            "null" if raw == "null" => Some(Value::Null),
            "integer" => raw.trim().parse::<i64>().ok().map(Value::from),
            "number" => serde_json::from_str::<serde_json::Number>(raw.trim())
                .ok()
                .map(Value::Number),
            "boolean" => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Some(Value::Bool(true)),
                "false" | "no" | "0" => Some(Value::Bool(false)),
                _ => None,
            },
            "object" => serde_json::from_str::<Value>(raw)
                .ok()
                .filter(Value::is_object),
            "array" => serde_json::from_str::<Value>(raw)
                .ok()
                .filter(Value::is_array),
            "string" => Some(Value::String(raw.to_owned())),
            _ => None,
        };
        if let Some(v) = v {
            return Ok(v);
        }
    }
    Err(format!(
        "argument {key}: {raw:?} is not a {} (JSON for objects and arrays)",
        types.join(" or ")
    ))
}

/// What a finished call prints and how it exits.
#[derive(Serialize)]
struct JsonOut<'a, T: Serialize> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    rounds: Vec<Value>,
}

/// `tern call`.
pub(crate) fn run(mut args: CallArgs) -> Result<ExitCode, String> {
    if let Err(e) = target::settle(&mut args.target, Some(&mut args.what)) {
        return Ok(usage(&e));
    }
    let what = match parse_what(&args.what) {
        Ok(w) => w,
        Err(e) => return Ok(usage(&e)),
    };
    if args.model_url.is_some() && args.sampling_cmd.is_some() {
        return Ok(usage("give --model-url or --sampling-cmd, not both"));
    }
    let answers = match args.answers.as_deref().map(Answers::load).transpose() {
        Ok(a) => a,
        Err(e) => return Ok(usage(&e)),
    };
    let roots = if args.no_roots {
        Vec::new()
    } else {
        match provider::roots(&args.roots) {
            Ok(r) => r,
            Err(e) => return Ok(usage(&e)),
        }
    };
    let sampler = match (&args.model_url, &args.sampling_cmd) {
        (Some(url), _) => Some(Sampler::OpenAi {
            url: url.clone(),
            model: args.model.clone(),
        }),
        (None, Some(cmd)) => Some(Sampler::Command(cmd.clone())),
        (None, None) => None,
    };
    let interactive = provider::stdin_is_terminal();
    // META-A1: declare what the person enabled, and sampling only when
    // something can answer it.
    let mut kinds = InputKinds::NONE;
    if !args.no_elicitation {
        kinds = kinds.with_form();
        if !args.form_only {
            kinds = kinds.with_url();
        }
    }
    if !args.no_sampling && (sampler.is_some() || answers.is_some() || interactive) {
        kinds = kinds.with_sampling();
    }
    if !args.no_roots {
        kinds = kinds.with_roots();
    }
    let settings = Settings {
        kinds,
        answers,
        yes: args.yes,
        interactive,
        sampler,
        roots,
        server_label: String::new(),
    };
    runtime()?.block_on(call(args, what, settings))
}

/// Connects, runs the operation and prints its outcome.
async fn call(args: CallArgs, what: What, mut settings: Settings) -> Result<ExitCode, String> {
    let label = args
        .target
        .cmd
        .clone()
        .or_else(|| args.target.url.clone())
        .unwrap_or_default();
    settings.server_label = label.clone();
    let provider = TerminalProvider::new(settings);
    let conn = match target::connect(&args.target, provider.clone()).await {
        Ok(c) => c,
        Err(e) => return Ok(usage(&e)),
    };
    let sink = if args.verbose {
        Sink::Stderr
    } else {
        Sink::Quiet
    };
    let server_label = conn.label.clone();
    let rep_for = |what: &str| Reporter::new(sink, &server_label, what);
    if args.verbose {
        eprintln!(
            "{} {}",
            dim("declared clientCapabilities:"),
            serde_json::to_string(&conn.client.capabilities()).unwrap_or_default()
        );
    }
    let code = match what {
        What::Tool(name, pairs) => {
            let schema = match tool_schema(&conn.client, &name).await {
                Ok(s) => s,
                Err(Lookup::Usage(e)) => {
                    conn.close().await;
                    return Ok(usage(&e));
                }
                Err(Lookup::Failed(e)) => {
                    conn.close().await;
                    let rep = rep_for(&format!("tools/call {name}"));
                    return Ok(report_error(&e, args.json, &rep, &provider));
                }
            };
            let arguments = match coerce_args(&schema, &pairs) {
                Ok(a) => a,
                Err(e) => {
                    conn.close().await;
                    return Ok(usage(&e));
                }
            };
            let rep = rep_for(&format!("tools/call {name}"));
            let client = &conn.client;
            let r: Result<CallToolResult, Error> = drive(&rep, |opts| async move {
                client.call_tool_with(&name, arguments, &opts).await
            })
            .await;
            finish(r, args.json, &rep, &provider, |r| {
                (ui::tool_text(r), r.is_error())
            })
        }
        What::Prompt(name, pairs) => {
            let arguments: BTreeMap<String, String> = pairs.into_iter().collect();
            let arguments = (!arguments.is_empty()).then_some(arguments);
            let rep = rep_for(&format!("prompts/get {name}"));
            let client = &conn.client;
            let r: Result<GetPromptResult, Error> = drive(&rep, |opts| async move {
                client.get_prompt_with(&name, arguments, &opts).await
            })
            .await;
            finish(r, args.json, &rep, &provider, |r| {
                (ui::prompt_text(r), false)
            })
        }
        What::Read(uri) => {
            let rep = rep_for(&format!("resources/read {uri}"));
            let client = &conn.client;
            let r: Result<ReadResourceResult, Error> = drive(&rep, |opts| async move {
                client.read_resource_with(&uri, &opts).await
            })
            .await;
            finish(r, args.json, &rep, &provider, |r| {
                (ui::resource_text(r), false)
            })
        }
    };
    conn.close().await;
    Ok(code)
}

/// Why a tool's schema could not be had.
enum Lookup {
    Usage(String),
    Failed(Error),
}

/// The tool's `inputSchema`, from `tools/list` (every page).
async fn tool_schema(client: &Client, name: &str) -> Result<Map<String, Value>, Lookup> {
    let mut cursor: Option<String> = None;
    let mut names = Vec::new();
    for _ in 0..100 {
        let page = client
            .list_tools(cursor.as_deref())
            .await
            .map_err(Lookup::Failed)?;
        for t in page.tools {
            if t.name == name {
                return Ok(t.input_schema);
            }
            names.push(t.name);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    Err(Lookup::Usage(format!(
        "the server has no tool {name:?}; it has: {}",
        names.join(", ")
    )))
}

/// Prints a finished call and picks the exit code: 0, or 1 for a tool
/// error result or a JSON-RPC error.
fn finish<T: Serialize>(
    r: Result<T, Error>,
    json: bool,
    rep: &Reporter,
    provider: &TerminalProvider,
    text: impl Fn(&T) -> (String, bool),
) -> ExitCode {
    match r {
        Ok(result) => {
            let (body, is_error) = text(&result);
            if json {
                let out = JsonOut {
                    result: Some(&result),
                    error: None,
                    rounds: rep.rounds(),
                };
                println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
            } else if is_error {
                eprintln!("tern: the tool reported an error:");
                println!("{body}");
            } else {
                println!("{body}");
            }
            if is_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => report_error(&e, json, rep, provider),
    }
}

/// Prints a failed call (JSON-RPC errors with their code and data)
/// and picks the exit code.
fn report_error(e: &Error, json: bool, rep: &Reporter, provider: &TerminalProvider) -> ExitCode {
    if json {
        let error = match e.remote_error() {
            Some(o) => serde_json::to_value(o).unwrap_or(Value::Null),
            None => json!({"message": e.to_string()}),
        };
        let out: JsonOut<'_, ()> = JsonOut {
            result: None,
            error: Some(error),
            rounds: rep.rounds(),
        };
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    match e.remote_error() {
        Some(o) => {
            eprintln!("tern: server error {}: {}", o.code, o.message);
            if let Some(d) = &o.data {
                eprintln!("tern: error data: {d}");
            }
        }
        None => eprintln!("tern: {e}"),
    }
    if e.is_refused() && provider.lacked_terminal() {
        ExitCode::from(USAGE)
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_schema() {
        let schema = json!({"properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "o": {"type": "object"}, "a": {"type": "array"},
            "u": {"type": ["integer", "string"]}
        }});
        let pairs: Vec<(String, String)> = [
            ("n", "5"),
            ("x", "2.5"),
            ("b", "yes"),
            ("s", "5"),
            ("o", r#"{"k":1}"#),
            ("a", "[1,2]"),
            ("u", "abc"),
            ("free", "7"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let out = coerce_args(schema.as_object().unwrap(), &pairs).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"n": 5, "x": 2.5, "b": true, "s": "5", "o": {"k": 1}, "a": [1, 2], "u": "abc", "free": "7"})
        );
        let bad = vec![("n".to_owned(), "five".to_owned())];
        assert!(coerce_args(schema.as_object().unwrap(), &bad).is_err());
    }

    #[test]
    fn what_is_parsed() {
        let w = |s: &[&str]| parse_what(&s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>());
        assert!(matches!(
            w(&["tool", "echo", "text=hi"]),
            Ok(What::Tool(..))
        ));
        assert!(matches!(w(&["read", "config://secret"]), Ok(What::Read(_))));
        assert!(w(&["tool", "echo", "oops"]).is_err());
        assert!(w(&["read", "x", "a=b"]).is_err());
        assert!(w(&["frob", "x"]).is_err());
    }
}
