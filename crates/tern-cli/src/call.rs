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
use crate::exit::{self, usage};
use crate::provider::{self, Answers, Sampler, Settings, TerminalProvider};
use crate::target;
use crate::ui::{self, Spinner, bold, dim};

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
    Tool(String, Vec<(String, Arg)>),
    Prompt(String, Vec<(String, Arg)>),
    Read(String),
}

/// One argument from the command line.
#[derive(Debug, Clone, PartialEq)]
enum Arg {
    /// `key=value`: coerced by the schema.
    Text(String),
    /// `key:=JSON` (or a member of `--args`): taken as it is.
    Json(Value),
}

/// One `key=value` or `key:=JSON` word.
fn parse_pair(kv: &str) -> Result<(String, Arg), String> {
    let (k, v) = kv
        .split_once('=')
        .filter(|(k, _)| !k.is_empty() && *k != ":")
        .ok_or_else(|| format!("expected key=value or key:=JSON, found {kv:?}"))?;
    match k.strip_suffix(':') {
        Some(k) => serde_json::from_str(v)
            .map(|j| (k.to_owned(), Arg::Json(j)))
            .map_err(|e| format!("argument {k}: {v:?} is not JSON: {e}")),
        None => Ok((k.to_owned(), Arg::Text(v.to_owned()))),
    }
}

/// `--args JSON`: an object of arguments, before the `key=value` words.
fn parse_args_json(text: &str) -> Result<Vec<(String, Arg)>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m.into_iter().map(|(k, v)| (k, Arg::Json(v))).collect()),
        Ok(_) => Err("--args must be a JSON object".to_owned()),
        Err(e) => Err(format!("--args is not JSON: {e}")),
    }
}

/// Splits WHAT into the operation and its `key=value` pairs.
fn parse_what(words: &[String]) -> Result<What, String> {
    let [kind, name, rest @ ..] = words else {
        return Err("expected `tool NAME`, `prompt NAME` or `read URI`".to_owned());
    };
    let pairs = || {
        rest.iter()
            .map(|kv| parse_pair(kv))
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
    /// Whether any answer was a decline or a cancel.
    declined: bool,
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
                declined: false,
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

    /// A progress notification as a bar, a log message as a dim line.
    fn notified(&self, n: &tern::types::Notification) {
        let Some(p) = n.params.as_ref() else { return };
        let mut w = self.watch();
        match n.method.as_str() {
            "notifications/progress" => {
                // The spinner would draw over the bar.
                w.spinner = None;
                let done = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
                let total = p.get("total").and_then(Value::as_f64);
                let message = p.get("message").and_then(Value::as_str).unwrap_or("");
                eprintln!("{}", ui::progress_bar(done, total, message));
            }
            "notifications/message" => {
                w.spinner = None;
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
                eprintln!("{}", dim(&format!("[{level}] {logger}{data}")));
            }
            _ => {}
        }
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
                w.declined |= responses.iter().any(|(_, v)| {
                    matches!(
                        v.get("action").and_then(Value::as_str),
                        Some("decline" | "cancel")
                    )
                });
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

    /// Whether the person declined or cancelled anything in this call.
    pub(crate) fn declined(&self) -> bool {
        self.watch().declined
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

/// Whether the server asked to start the flow over (`data.restart`: the
/// state expired, or was already used).
fn restart_asked(e: &Error) -> bool {
    e.remote_error()
        .and_then(|o| o.data.as_ref())
        .and_then(|d| d.get("restart"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// [`drive`], starting the whole call over once when the server says its
/// state can no longer be resumed: at once with `--restart`, after asking
/// in a terminal, otherwise not (the error says how).
async fn drive_restarting<T, F, Fut>(
    rep: &Arc<Reporter>,
    auto: bool,
    mut call: F,
) -> Result<T, Error>
where
    F: FnMut(CallOptions) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let first = call(rep.options()).await;
    rep.stop();
    let e = match first {
        Err(e) if restart_asked(&e) => e,
        other => return other,
    };
    eprintln!(
        "tern: the server can no longer resume this call ({}); your answers were not used",
        exit::explain(&e, None)
    );
    let again = if auto {
        true
    } else if provider::stdin_is_terminal() {
        tokio::task::spawn_blocking(|| {
            inquire::Confirm::new("Start the call over?")
                .with_default(true)
                .prompt()
                .unwrap_or(false)
        })
        .await
        .unwrap_or(false)
    } else {
        eprintln!("tern: pass --restart to start over by itself");
        false
    };
    if !again {
        return Err(e);
    }
    eprintln!("tern: starting over");
    let r = call(rep.options()).await;
    rep.stop();
    r
}

/// Coerces `key=value` arguments by the tool's `inputSchema`: integer,
/// number, boolean, string, or JSON for objects and arrays; `key:=JSON` is
/// taken as it is. A later word wins over an earlier one.
fn coerce_args(
    schema: &Map<String, Value>,
    pairs: &[(String, Arg)],
) -> Result<Map<String, Value>, String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for (key, arg) in pairs {
        let v = match arg {
            Arg::Text(raw) => coerce(key, raw, props.and_then(|p| p.get(key)))?,
            Arg::Json(v) => v.clone(),
        };
        out.insert(key.clone(), v);
    }
    Ok(out)
}

/// What the arguments lack or have too many of, by the tool's
/// `inputSchema`: names not among its properties (unless it allows more),
/// then required ones missing.
struct ArgCheck {
    unknown: Vec<String>,
    missing: Vec<String>,
}

fn check_args(schema: &Map<String, Value>, args: &Map<String, Value>) -> ArgCheck {
    let props = schema.get("properties").and_then(Value::as_object);
    let open =
        !matches!(schema.get("additionalProperties"), Some(Value::Bool(false))) && props.is_none();
    let unknown = args
        .keys()
        .filter(|k| !open && !props.is_some_and(|p| p.contains_key(k.as_str())))
        .cloned()
        .collect();
    let missing = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|k| !args.contains_key(*k))
        .map(str::to_owned)
        .collect();
    ArgCheck { unknown, missing }
}

/// The property names a schema lists, for messages.
fn property_names(schema: &Map<String, Value>) -> String {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".to_owned())
}

/// Asks the person for each missing required argument, coerced like a
/// `key=value` word. Ctrl-C or Esc ends the call.
async fn ask_missing(
    schema: &Map<String, Value>,
    missing: Vec<String>,
) -> Result<Vec<(String, Arg)>, String> {
    let props = schema.get("properties").and_then(Value::as_object).cloned();
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        for key in missing {
            let prop = props.as_ref().and_then(|p| p.get(&key));
            let kind = prop
                .and_then(|p| p.get("type"))
                .map(|t| t.to_string().replace('"', ""))
                .unwrap_or_else(|| "value".to_owned());
            let label = format!("{key} ({kind}, required):");
            let mut q = inquire::Text::new(&label);
            let help = prop
                .and_then(|p| p.get("description"))
                .and_then(Value::as_str);
            if let Some(h) = help {
                q = q.with_help_message(h);
            }
            match q.prompt() {
                Ok(v) => out.push((key, Arg::Text(v))),
                Err(inquire::InquireError::OperationInterrupted) => {
                    return Err(provider::INTERRUPTED.to_owned());
                }
                Err(e) => return Err(format!("argument {key} was not given: {e}")),
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| e.to_string())?
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
    if let Err(e) = crate::servers::resolve(&mut args.target) {
        return Ok(usage(&e));
    }
    let what = match parse_what(&args.what) {
        Ok(w) => w,
        Err(e) => return Ok(usage(&e)),
    };
    if args.model_url.is_some() && args.sampling_cmd.is_some() {
        return Ok(usage("give --model-url or --sampling-cmd, not both"));
    }
    if let Some(u) = &args.model_url
        && let Err(e) = exit::check_url("--model-url", u)
    {
        return Ok(usage(&e));
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
    let timeout = args.timeout;
    runtime()?.block_on(async move {
        let run = call(args, what, settings);
        tokio::select! {
            r = async {
                match timeout {
                    Some(t) => tokio::time::timeout(std::time::Duration::from_secs(t), run)
                        .await
                        .unwrap_or_else(|_| {
                            eprintln!("tern: the call did not finish within {t} s (--timeout)");
                            Ok(exit::code(exit::PROTOCOL))
                        }),
                    None => run.await,
                }
            } => r,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("\ntern: cancelled");
                Ok(exit::code(exit::INTERRUPTED))
            }
        }
    })
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
    let out = Out {
        json: args.json,
        restart: args.restart,
        url: args.target.url.clone(),
    };
    let code = match operate(&conn, what, args.args.as_deref(), &out, &rep_for, &provider).await {
        Ok(code) => code,
        Err(Early::Usage(e)) => usage(&e),
        Err(Early::Interrupted) => {
            eprintln!("tern: cancelled");
            exit::code(exit::INTERRUPTED)
        }
        Err(Early::Failed(e, what)) => report_error(&e, &out, &rep_for(&what), &provider),
    };
    conn.close().await;
    Ok(code)
}

/// Why a call ended before its request was sent.
enum Early {
    /// Flags or arguments that cannot work (exit 2).
    Usage(String),
    /// Ctrl-C at a question about the arguments.
    Interrupted,
    /// Listing the tools or prompts failed, for the operation named.
    Failed(Box<Error>, String),
}

impl From<String> for Early {
    fn from(e: String) -> Self {
        Early::Usage(e)
    }
}

impl Early {
    fn lookup(e: Lookup, what: String) -> Self {
        match e {
            Lookup::Usage(e) => Early::Usage(e),
            Lookup::Failed(e) => Early::Failed(Box::new(e), what),
        }
    }
}

/// Checks the arguments, then runs the operation and prints its outcome.
async fn operate(
    conn: &target::Connected,
    what: What,
    args_json: Option<&str>,
    out: &Out,
    rep_for: &dyn Fn(&str) -> Arc<Reporter>,
    provider: &TerminalProvider,
) -> Result<ExitCode, Early> {
    let extra = args_json
        .map(parse_args_json)
        .transpose()?
        .unwrap_or_default();
    let client = &conn.client;
    Ok(match what {
        What::Tool(name, pairs) => {
            let what = format!("tools/call {name}");
            let arguments = tool_arguments(client, &name, &what, [extra, pairs].concat()).await?;
            let rep = rep_for(&what);
            let r: Result<CallToolResult, Error> = drive_restarting(&rep, out.restart, |opts| {
                let (name, arguments) = (&name, arguments.clone());
                async move { client.call_tool_with(name, arguments, &opts).await }
            })
            .await;
            finish(r, out, &rep, provider, |r| (ui::tool_text(r), r.is_error()))
        }
        What::Prompt(name, pairs) => {
            let what = format!("prompts/get {name}");
            let declared = prompt_arguments(client, &name)
                .await
                .map_err(|e| Early::lookup(e, what.clone()))?;
            let arguments = check_prompt_args(&name, &declared, [extra, pairs].concat())?;
            let arguments = (!arguments.is_empty()).then_some(arguments);
            let rep = rep_for(&what);
            let r: Result<GetPromptResult, Error> = drive_restarting(&rep, out.restart, |opts| {
                let (name, arguments) = (&name, arguments.clone());
                async move { client.get_prompt_with(name, arguments, &opts).await }
            })
            .await;
            finish(r, out, &rep, provider, |r| (ui::prompt_text(r), false))
        }
        What::Read(uri) => {
            let rep = rep_for(&format!("resources/read {uri}"));
            let r: Result<ReadResourceResult, Error> =
                drive_restarting(&rep, out.restart, |opts| {
                    let uri = &uri;
                    async move { client.read_resource_with(uri, &opts).await }
                })
                .await;
            finish(r, out, &rep, provider, |r| (ui::resource_text(r), false))
        }
    })
}

/// A tool's arguments from the words, checked against its `inputSchema`;
/// missing required ones are asked for in a terminal.
async fn tool_arguments(
    client: &Client,
    name: &str,
    what: &str,
    mut pairs: Vec<(String, Arg)>,
) -> Result<Map<String, Value>, Early> {
    let schema = tool_schema(client, name)
        .await
        .map_err(|e| Early::lookup(e, what.to_owned()))?;
    let arguments = coerce_args(&schema, &pairs)?;
    let check = check_args(&schema, &arguments);
    if let Some(k) = check.unknown.first() {
        return Err(Early::Usage(format!(
            "the tool {name:?} takes no argument {k:?}; it takes: {}",
            property_names(&schema)
        )));
    }
    let Some(first) = check.missing.first() else {
        return Ok(arguments);
    };
    if !provider::stdin_is_terminal() {
        return Err(Early::Usage(format!(
            "the tool {name:?} needs the argument {first:?} (give {first}=VALUE)"
        )));
    }
    match ask_missing(&schema, check.missing).await {
        Ok(more) => pairs.extend(more),
        Err(e) if e == provider::INTERRUPTED => return Err(Early::Interrupted),
        Err(e) => return Err(Early::Usage(e)),
    }
    Ok(coerce_args(&schema, &pairs)?)
}

/// A prompt's arguments from the words: only those it declares, and every
/// required one.
fn check_prompt_args(
    name: &str,
    declared: &[tern::types::PromptArgument],
    pairs: Vec<(String, Arg)>,
) -> Result<BTreeMap<String, String>, Early> {
    let mut arguments = BTreeMap::new();
    for (k, v) in pairs {
        if !declared.iter().any(|a| a.name == k) {
            let names: Vec<&str> = declared.iter().map(|a| a.name.as_str()).collect();
            return Err(Early::Usage(format!(
                "the prompt {name:?} takes no argument {k:?}; it takes: {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )));
        }
        let text = match v {
            Arg::Text(t) | Arg::Json(Value::String(t)) => t,
            Arg::Json(j) => j.to_string(),
        };
        arguments.insert(k, text);
    }
    if let Some(a) = declared
        .iter()
        .find(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
    {
        return Err(Early::Usage(format!(
            "the prompt {name:?} needs the argument {:?} (give {}=VALUE)",
            a.name, a.name
        )));
    }
    Ok(arguments)
}

/// Why a tool's schema could not be had.
enum Lookup {
    Usage(String),
    Failed(Error),
}

/// The prompt's declared arguments, from `prompts/list` (every page).
async fn prompt_arguments(
    client: &Client,
    name: &str,
) -> Result<Vec<tern::types::PromptArgument>, Lookup> {
    let mut cursor: Option<String> = None;
    let mut names = Vec::new();
    for _ in 0..100 {
        let page = client
            .list_prompts(cursor.as_deref())
            .await
            .map_err(Lookup::Failed)?;
        for p in page.prompts {
            if p.name == name {
                return Ok(p.arguments.unwrap_or_default());
            }
            names.push(p.name);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    Err(Lookup::Usage(format!(
        "the server has no prompt {name:?}; it has: {}",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
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

/// How a finished call is printed.
struct Out {
    /// `--json`.
    json: bool,
    /// `--restart`.
    restart: bool,
    /// The server's URL, to name in transport errors.
    url: Option<String>,
}

/// Prints a finished call and picks the exit code: 0; 1 for a tool error
/// result, or 4 when the person declined what the server asked.
fn finish<T: Serialize>(
    r: Result<T, Error>,
    out: &Out,
    rep: &Reporter,
    provider: &TerminalProvider,
    text: impl Fn(&T) -> (String, bool),
) -> ExitCode {
    match r {
        Ok(result) => {
            let (body, is_error) = text(&result);
            if out.json {
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
            match (is_error, rep.declined()) {
                (false, _) => exit::code(exit::DONE),
                (true, false) => exit::code(exit::FAILED),
                (true, true) => exit::code(exit::REFUSED),
            }
        }
        Err(e) => report_error(&e, out, rep, provider),
    }
}

/// Prints a failed call (JSON-RPC errors with their code and data, a
/// transport failure with its cause) and picks the exit code.
fn report_error(e: &Error, out: &Out, rep: &Reporter, provider: &TerminalProvider) -> ExitCode {
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
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    eprintln!("tern: {}", exit::explain(e, out.url.as_deref()));
    if let Some(d) = e.remote_error().and_then(|o| o.data.as_ref()) {
        eprintln!("tern: error data: {d}");
    }
    if e.is_capability() && e.is_remote() {
        eprintln!(
            "tern: the server needs a kind of input this call did not offer: for sampling pass --sampling-cmd or --model-url (or answer in a terminal); for forms and links drop --no-elicitation; for roots drop --no-roots"
        );
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
        let pairs: Vec<(String, Arg)> = [
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
        .map(|(k, v)| parse_pair(&format!("{k}={v}")).unwrap())
        .chain([parse_pair(r#"j:={"x":[1]}"#).unwrap()])
        .collect();
        let out = coerce_args(schema.as_object().unwrap(), &pairs).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"n": 5, "x": 2.5, "b": true, "s": "5", "o": {"k": 1}, "a": [1, 2], "u": "abc", "free": "7", "j": {"x": [1]}})
        );
        let bad = vec![("n".to_owned(), Arg::Text("five".to_owned()))];
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
        assert!(w(&["tool", "x", "k:=nope"]).is_err());
        assert_eq!(
            parse_pair("k:=[1,2]").unwrap(),
            ("k".to_owned(), Arg::Json(json!([1, 2])))
        );
        assert_eq!(
            parse_pair("k=a=b").unwrap(),
            ("k".to_owned(), Arg::Text("a=b".to_owned()))
        );
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]});
        let schema = schema.as_object().unwrap();
        let c = check_args(schema, json!({"b": 1, "zz": 2}).as_object().unwrap());
        assert_eq!(c.unknown, ["zz"]);
        assert_eq!(c.missing, ["a"]);
        let open = json!({"type": "object"});
        let c = check_args(
            open.as_object().unwrap(),
            json!({"any": 1}).as_object().unwrap(),
        );
        assert!(c.unknown.is_empty() && c.missing.is_empty());
    }
}
