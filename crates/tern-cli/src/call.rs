//! `tern call`: call a tool, get a prompt or read a resource, answering the
//! server's questions round by round (DIGEST §4.5).
//!
//! The loop is driven here, one round at a time, through the client's
//! one-shot API (`*_once`, `answer`, `resume`; MRTR-C-A3), so that each
//! round can be shown with its timing and `requestState` size. The client
//! still builds every retry (MRTR-C5..C8) and checks every interim result
//! (MRTR-C-A2).

use std::collections::BTreeMap;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};
use tern::client::{Client, Error, FlowResult, InputKinds, MAX_STATE_ONLY_ROUNDS, Step};
use tern::types::{
    CallToolResult, ElicitRequestParams, GetPromptResult, InputRequest, InputResponses,
    ReadResourceResult,
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

/// Reports rounds as they happen and keeps them for `--json`.
pub(crate) struct Reporter {
    sink: Sink,
    label: String,
    rounds: Mutex<Vec<Value>>,
}

impl Reporter {
    /// A reporter to `sink`; `label` names the server in the spinner.
    pub(crate) fn new(sink: Sink, label: &str) -> Self {
        Reporter {
            sink,
            label: label.to_owned(),
            rounds: Mutex::new(Vec::new()),
        }
    }

    fn line(&self, s: &str) {
        match self.sink {
            Sink::Quiet => {}
            Sink::Stderr => eprintln!("{s}"),
            Sink::Stdout => println!("{s}"),
        }
    }

    fn record(&self, v: Value) {
        self.rounds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(v);
    }

    /// The rounds seen so far, as JSON.
    pub(crate) fn rounds(&self) -> Vec<Value> {
        self.rounds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
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

/// Drives one flow to the end, reporting each round.
pub(crate) async fn drive<T: FlowResult>(
    client: &Client,
    what: &str,
    first: impl Future<Output = Result<Step<T>, Error>>,
    rep: &Reporter,
) -> Result<T, Error> {
    let t = ui::now();
    let step = {
        let _spin = Spinner::start(&format!("waiting for {}", rep.label), false);
        first.await?
    };
    rounds_from(client, what, step, rep, 1, t).await
}

/// The loop of [`drive`] from a round's result: report, answer, resume;
/// timing is measured from each request.
async fn rounds_from<T: FlowResult>(
    client: &Client,
    what: &str,
    mut step: Step<T>,
    rep: &Reporter,
    mut round: u32,
    mut t: Instant,
) -> Result<T, Error> {
    let mut state_only = 0;
    loop {
        let ms = t_ms(t);
        let pending = match step {
            Step::Complete(done) => {
                rep.line(&format!(
                    "{} {} · {what} · {ms} ms · complete",
                    bold("round"),
                    bold(&round.to_string())
                ));
                rep.record(json!({"round": round, "ms": ms, "resultType": "complete"}));
                return Ok(done);
            }
            Step::Pending(p) => p,
        };
        let state = pending.request_state().map(str::len);
        let state_text = state.map_or_else(
            || "no requestState".to_owned(),
            |n| format!("requestState {n} bytes"),
        );
        rep.line(&format!(
            "{} {} · {what} · {ms} ms · input_required · {state_text}",
            bold("round"),
            bold(&pending.round().to_string())
        ));
        for (key, r) in pending.input_requests().iter() {
            rep.line(&format!("  asks    {key}: {}", describe_request(r)));
        }
        let responses = if pending.input_requests().is_empty() {
            // MRTR-C2: nothing to answer; retry after a short, growing
            // pause, a bounded number of times (SECURITY.md §3.10).
            state_only += 1;
            if state_only > MAX_STATE_ONLY_ROUNDS {
                return Err(client_round_limit());
            }
            tokio::time::sleep(Duration::from_millis(100 << (state_only - 1))).await;
            InputResponses::new()
        } else {
            state_only = 0;
            client.answer(&pending).await?
        };
        for (key, v) in responses.iter() {
            rep.line(&format!("  answers {key}: {}", describe_answer(v)));
        }
        rep.record(json!({
            "round": pending.round(),
            "ms": ms,
            "resultType": "input_required",
            "requestStateBytes": state,
            "inputRequests": serde_json::to_value(pending.input_requests()).unwrap_or(Value::Null),
            "inputResponses": serde_json::to_value(&responses).unwrap_or(Value::Null),
        }));
        round = pending.round() + 1;
        t = ui::now();
        step = {
            let _spin = Spinner::start(&format!("waiting for {}", rep.label), false);
            client.resume(pending, responses).await?
        };
    }
}

/// The error for too many state-only rounds in a row.
fn client_round_limit() -> Error {
    Error::protocol(format!(
        "more than {MAX_STATE_ONLY_ROUNDS} consecutive state-only rounds (SECURITY.md §3.10)"
    ))
}

/// Milliseconds since `t`.
fn t_ms(t: Instant) -> u128 {
    t.elapsed().as_millis()
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
    let conn = match target::connect(&args.target, provider.clone()) {
        Ok(c) => c,
        Err(e) => return Ok(usage(&e)),
    };
    let sink = if args.verbose {
        Sink::Stderr
    } else {
        Sink::Quiet
    };
    let rep = Reporter::new(sink, &conn.label);
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
            let r: Result<CallToolResult, Error> = drive(
                &conn.client,
                &format!("tools/call {name}"),
                conn.client.call_tool_once(&name, arguments),
                &rep,
            )
            .await;
            finish(r, args.json, &rep, &provider, |r| {
                (ui::tool_text(r), r.is_error())
            })
        }
        What::Prompt(name, pairs) => {
            let arguments: BTreeMap<String, String> = pairs.into_iter().collect();
            let arguments = (!arguments.is_empty()).then_some(arguments);
            let r: Result<GetPromptResult, Error> = drive(
                &conn.client,
                &format!("prompts/get {name}"),
                conn.client.get_prompt_once(&name, arguments),
                &rep,
            )
            .await;
            finish(r, args.json, &rep, &provider, |r| {
                (ui::prompt_text(r), false)
            })
        }
        What::Read(uri) => {
            let r: Result<ReadResourceResult, Error> = drive(
                &conn.client,
                &format!("resources/read {uri}"),
                conn.client.read_resource_once(&uri),
                &rep,
            )
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
