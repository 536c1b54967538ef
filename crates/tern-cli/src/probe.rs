//! `tern probe`: checks how an MCP server's multi round-trip flows resist a
//! hostile client. It learns one flow of a tool that answers
//! `input_required`, then replays that flow with one thing wrong at a time
//! (the state, its bindings, the answers, the round count) and says, case
//! by case, whether the server refused what it must refuse, with the rule
//! each case rests on (DIGEST ids).
//!
//! Safe by default: loopback servers only unless `--allow-remote HOST`; a
//! bounded number of requests; only the tool it was told, or one it can
//! see is not destructive; replays only of a tool declared `--single-use`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use serde_json::{Map, Value, json};
use tern::client::{Frames, OutboundRequest, Transport};
use tern::proto::McpHeaders;
use tern::proto::decode::Message;
use tern::types::RequestId;

use crate::ProbeArgs;
use crate::exit::{self, usage};

const VERSION: &str = "2026-07-28";

/// How a request ended, as far as the probe judges it.
#[derive(Debug, Clone)]
enum Reply {
    /// `resultType: "complete"` (or none).
    Complete(Map<String, Value>),
    /// `input_required`: the state (if any) and the requests.
    Asked(Option<Value>, Map<String, Value>),
    /// A JSON-RPC error.
    Refused(i64, String),
    /// No answer: the transport failed or timed out.
    Broken(String),
}

impl Reply {
    fn short(&self) -> String {
        match self {
            Reply::Complete(r) if r.get("isError") == Some(&Value::Bool(true)) => {
                "completed with a tool error result".to_owned()
            }
            Reply::Complete(_) => "completed".to_owned(),
            Reply::Asked(..) => "asked again (input_required)".to_owned(),
            Reply::Refused(code, msg) => format!("error {code}: {msg}"),
            Reply::Broken(why) => format!("no answer: {why}"),
        }
    }
}

/// The verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pass,
    Fail,
    Skip,
}

/// How binding a case's rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Must,
    Should,
    Advice,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::Advice => "advice",
        }
    }
}

/// One case's outcome.
#[derive(Debug, Clone)]
struct Case {
    family: &'static str,
    id: String,
    rule: &'static str,
    level: Level,
    status: Status,
    reason: String,
}

/// The connection and the flow under probe.
struct Probe {
    transport: Arc<dyn Transport>,
    /// The same server as another principal (`--other-bearer-env`).
    other: Option<Arc<dyn Transport>>,
    http: bool,
    next_id: AtomicI64,
    sent: AtomicUsize,
    max_requests: usize,
    caps: Value,
    tool: String,
    args: Map<String, Value>,
    scripted: Map<String, Value>,
}

impl Probe {
    /// Sends one request with this probe's `_meta` and the usual headers
    /// (or `headers` when a case forges them).
    async fn send_with(
        &self,
        method: &str,
        params: Value,
        caps: &Value,
        name_header: Option<&str>,
    ) -> Reply {
        self.send_via(&self.transport, method, params, caps, name_header)
            .await
    }

    /// [`Probe::send_with`] over `transport` (another principal's).
    async fn send_via(
        &self,
        transport: &Arc<dyn Transport>,
        method: &str,
        mut params: Value,
        caps: &Value,
        name_header: Option<&str>,
    ) -> Reply {
        if self.sent.fetch_add(1, Ordering::Relaxed) >= self.max_requests {
            return Reply::Broken(format!(
                "the probe's budget of {} requests is spent",
                self.max_requests
            ));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = params.as_object_mut() {
            p.insert(
                "_meta".into(),
                json!({
                    "io.modelcontextprotocol/protocolVersion": VERSION,
                    "io.modelcontextprotocol/clientInfo": {"name": "tern-probe", "version": env!("CARGO_PKG_VERSION")},
                    "io.modelcontextprotocol/clientCapabilities": caps,
                }),
            );
        }
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers = McpHeaders {
            protocol_version: Some(VERSION.to_owned()),
            method: Some(method.to_owned()),
            name: name_header
                .map(str::to_owned)
                .or(name)
                .map(|n| tern::proto::headers::encode_header_value(&n)),
            params: Vec::new(),
        };
        let request = OutboundRequest {
            id: RequestId::from(id),
            method: method.to_owned(),
            body: body.to_string().into(),
            headers,
            progress_token: None,
        };
        let frames = match tokio::time::timeout(
            std::time::Duration::from_secs(10),
            transport.request(request),
        )
        .await
        {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => return Reply::Broken(exit::explain(&e, None)),
            Err(_) => return Reply::Broken("no answer within 10 s".to_owned()),
        };
        read_reply(frames).await
    }

    async fn send(&self, method: &str, params: Value) -> Reply {
        self.send_with(method, params, &self.caps, None).await
    }

    /// Round 1 of the flow under probe.
    async fn start(&self) -> Reply {
        self.send(
            "tools/call",
            json!({"name": self.tool, "arguments": self.args}),
        )
        .await
    }

    /// A retry of the flow with `state` and `responses`.
    async fn retry(&self, state: Value, responses: Value) -> Reply {
        self.send(
            "tools/call",
            json!({"name": self.tool, "arguments": self.args, "requestState": state, "inputResponses": responses}),
        )
        .await
    }

    /// Good answers to `requests`: the `--answers` entry by key or method,
    /// else one that fits what was asked.
    fn answers(&self, requests: &Map<String, Value>) -> Map<String, Value> {
        requests
            .iter()
            .map(|(key, r)| {
                let method = r.get("method").and_then(Value::as_str).unwrap_or("");
                let scripted = self.scripted.get(key).or_else(|| self.scripted.get(method));
                (
                    key.clone(),
                    scripted.cloned().unwrap_or_else(|| fitting_answer(r)),
                )
            })
            .collect()
    }

    /// Round 1, expecting `input_required` with a state.
    async fn fresh(&self) -> Result<(Value, Map<String, Value>), String> {
        match self.start().await {
            Reply::Asked(Some(s), r) => Ok((s, r)),
            Reply::Asked(None, _) => {
                Err("the tool asked for input without a requestState".to_owned())
            }
            other => Err(format!("round 1 did not ask for input: {}", other.short())),
        }
    }

    /// Runs the flow to its end with good answers: the final state and
    /// answers, and the reply.
    async fn complete(&self) -> Result<(Value, Value, Reply), String> {
        let (mut state, mut requests) = self.fresh().await?;
        for _ in 0..10 {
            let responses = Value::Object(self.answers(&requests));
            match self.retry(state.clone(), responses.clone()).await {
                Reply::Asked(Some(s), r) => {
                    state = s;
                    requests = r;
                }
                done => return Ok((state, responses, done)),
            }
        }
        Err("the flow did not complete in 10 rounds with good answers".to_owned())
    }
}

/// A new round-1 state for one case, so that a server whose states are
/// single use judges each case on its own.
async fn fresh_state(p: &Probe) -> Value {
    p.fresh().await.map_or(Value::Null, |(s, _)| s)
}

/// Reads frames until the response.
async fn read_reply(mut frames: Frames) -> Reply {
    while let Some(m) = frames.next().await {
        match m {
            Ok(Message::Result(r)) => {
                let result = r.result;
                return match result.get("resultType").and_then(Value::as_str) {
                    Some("input_required") => Reply::Asked(
                        result.get("requestState").cloned(),
                        result
                            .get("inputRequests")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                    ),
                    _ => Reply::Complete(result),
                };
            }
            Ok(Message::Error(e)) => return Reply::Refused(e.error.code.0, e.error.message),
            Ok(_) => {}
            Err(e) => return Reply::Broken(exit::explain(&e, None)),
        }
    }
    Reply::Broken("the response ended without a result".to_owned())
}

/// A value that satisfies a JSON Schema property, as a person answering
/// the form with the first valid choice would.
fn fitting_value(prop: &Value) -> Value {
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(first) = prop
        .get("oneOf")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.get("const").cloned().unwrap_or(Value::Null);
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(true),
        Some("integer" | "number") => prop.get("minimum").cloned().unwrap_or(json!(1)),
        Some("array") => {
            let item = prop.get("items").map_or(json!("x"), fitting_value);
            json!([item])
        }
        _ => match prop.get("format").and_then(Value::as_str) {
            Some("email") => json!("probe@example.com"),
            Some("uri") => json!("https://example.com/"),
            Some("date") => json!("2026-01-01"),
            Some("date-time") => json!("2026-01-01T00:00:00Z"),
            _ => {
                let n = prop.get("minLength").and_then(Value::as_u64).unwrap_or(1);
                json!("x".repeat(usize::try_from(n.clamp(1, 64)).unwrap_or(1)))
            }
        },
    }
}

/// A good answer to one input request.
fn fitting_answer(request: &Value) -> Value {
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    match request.get("method").and_then(Value::as_str) {
        Some("roots/list") => {
            json!({"roots": [{"uri": "file:///tmp/tern-probe", "name": "probe"}]})
        }
        Some("sampling/createMessage") => json!({
            "role": "assistant",
            "content": {"type": "text", "text": "tern probe reply"},
            "model": "tern-probe",
            "stopReason": "endTurn"
        }),
        _ if params.get("mode").and_then(Value::as_str) == Some("url") => {
            json!({"action": "accept"})
        }
        _ => {
            let schema = params
                .get("requestedSchema")
                .cloned()
                .unwrap_or(Value::Null);
            let content: Map<String, Value> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| {
                    p.iter()
                        .map(|(k, v)| (k.clone(), fitting_value(v)))
                        .collect()
                })
                .unwrap_or_default();
            json!({"action": "accept", "content": content})
        }
    }
}

/// Content that breaks every property's type.
fn violating_content(request: &Value) -> Option<Value> {
    let props = request
        .pointer("/params/requestedSchema/properties")?
        .as_object()?;
    let content: Map<String, Value> = props
        .iter()
        .map(|(k, v)| {
            let bad = match v.get("type").and_then(Value::as_str) {
                Some("string") => json!(12345),
                _ => json!({"not": "valid"}),
            };
            (k.clone(), bad)
        })
        .collect();
    (!content.is_empty()).then(|| json!({"action": "accept", "content": content}))
}

/// A state changed in one character at `at` (a fraction of its length).
fn flipped(state: &str, at: f64) -> String {
    let mut b = state.as_bytes().to_vec();
    if b.is_empty() {
        return "A".to_owned();
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a position within a short string"
    )]
    let i = ((b.len() - 1) as f64 * at) as usize;
    // In base64 the last character may carry unused low bits that a lenient
    // decoder ignores; flipping the character's high bit always changes the
    // bytes it encodes.
    const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    b[i] = match B64URL.iter().position(|c| *c == b[i]) {
        Some(v) => B64URL[v ^ 0x20],
        None if b[i] == b'A' => b'B',
        None => b'A',
    };
    String::from_utf8_lossy(&b).into_owned()
}

/// The tool's state and answers replayed on another method: the first
/// entry of `list` (method, result field, the entry's key) is asked for
/// with `method`. Skipped when the server lists no `noun`.
async fn cross_use(
    p: &Probe,
    good: &Value,
    (list, field, key): (&str, &str, &str),
    method: &str,
    noun: &str,
) -> (Status, String) {
    let first = match p.send(list, json!({})).await {
        Reply::Complete(r) => r
            .get(field)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|e| e.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let Some(target) = first else {
        return (Status::Skip, format!("the server lists no {noun}"));
    };
    let mut params = json!({"requestState": fresh_state(p).await, "inputResponses": good});
    params[key] = json!(target);
    must_refuse(&p.send(method, params).await)
}

/// Whether the server must refuse: an error passes, anything else fails.
fn must_refuse(r: &Reply) -> (Status, String) {
    match r {
        Reply::Refused(..) => (Status::Pass, format!("refused ({})", r.short())),
        Reply::Broken(_) => (Status::Fail, r.short()),
        _ => (Status::Fail, format!("accepted: {}", r.short())),
    }
}

/// Whether the server must not complete: an error or a re-ask passes.
fn must_not_complete(r: &Reply) -> (Status, String) {
    match r {
        Reply::Refused(..) | Reply::Asked(..) => (Status::Pass, r.short()),
        Reply::Broken(_) => (Status::Fail, r.short()),
        Reply::Complete(_) => (Status::Fail, format!("{} from it", r.short())),
    }
}

/// Whether `host` is this machine.
fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

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
    if let Some(url) = &args.target.url {
        if let Err(e) = exit::check_url("the server URL", url) {
            return Ok(usage(&e));
        }
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        if !is_loopback(&host) && args.allow_remote.as_deref() != Some(host.as_str()) {
            return Ok(usage(&format!(
                "{host} is not this machine: tern probe sends hostile requests, so a remote server needs --allow-remote {host}"
            )));
        }
    }
    let mut tool_args = Map::new();
    for kv in &args.args {
        let Some((k, v)) = kv.split_once('=') else {
            return Ok(usage(&format!("expected key=value, found {kv:?}")));
        };
        let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
        tool_args.insert(k.to_owned(), v);
    }
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
        let mut probe = Probe {
            transport,
            other,
            http,
            next_id: AtomicI64::new(1),
            sent: AtomicUsize::new(0),
            max_requests: args.max_requests,
            caps: json!({"elicitation": {"form": {}, "url": {}}, "roots": {}, "sampling": {}}),
            tool: String::new(),
            args: tool_args,
            scripted,
        };
        if let Some(version) = legacy_only(&probe).await {
            probe.tool = args.tool.clone().unwrap_or_default();
            let case = Case {
                family: "era",
                id: "a 2026-07-28 server".to_owned(),
                rule: "VER-S4",
                level: Level::Advice,
                status: Status::Skip,
                reason: format!(
                    "the server speaks {version} only: its calls carry no requestState, so no multi round-trip case applies (tern proxy puts it behind a 2026-07-28 endpoint whose states this probe checks)"
                ),
            };
            return report(&probe, &[case], &args);
        }
        let tool = match pick_tool(&mut probe, args.tool.as_deref()).await {
            Ok(t) => t,
            Err(e) => {
                eprintln!("tern: {e}");
                return Ok(exit::code(exit::USAGE));
            }
        };
        probe.tool = tool;
        let cases = cases(&probe, &args).await;
        report(&probe, &cases, &args)
    })
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

/// The tool to probe: the one named, or the first the server lists that is
/// not marked destructive, needs no argument, asks for input with a state
/// and completes with good answers (else the first that asks).
async fn pick_tool(probe: &mut Probe, named: Option<&str>) -> Result<String, String> {
    if let Some(n) = named {
        return Ok(n.to_owned());
    }
    let tools = match probe.send("tools/list", json!({})).await {
        Reply::Complete(r) => r
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        other => return Err(format!("tools/list failed: {}", other.short())),
    };
    let mut asking = None;
    for t in tools {
        let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
        let destructive = t
            .pointer("/annotations/destructiveHint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let required = t
            .pointer("/inputSchema/required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        if destructive || required {
            continue;
        }
        probe.tool = name.to_owned();
        if probe.fresh().await.is_err() {
            continue;
        }
        if matches!(probe.complete().await, Ok((_, _, Reply::Complete(_)))) {
            return Ok(name.to_owned());
        }
        asking.get_or_insert_with(|| name.to_owned());
    }
    asking.ok_or_else(|| "no listed tool without required arguments answers input_required with a requestState: name one with --tool NAME [key=value ...]".to_owned())
}

/// Every case, in order, with a liveness check after each.
#[expect(
    clippy::too_many_lines,
    reason = "one list of cases, read top to bottom"
)]
async fn cases(p: &Probe, args: &ProbeArgs) -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |family, id: &str, rule, level, (status, reason): (Status, String)| {
        out.push(Case {
            family,
            id: id.to_owned(),
            rule,
            level,
            status,
            reason,
        });
    };
    // The baseline: the flow completes with good answers.
    let baseline = p.complete().await;
    match &baseline {
        Ok((_, _, Reply::Complete(_))) => add(
            "baseline",
            "flow completes",
            "MRTR-S3",
            Level::Must,
            (Status::Pass, "completed with good answers".to_owned()),
        ),
        Ok((_, _, r)) => add(
            "baseline",
            "flow completes",
            "MRTR-S3",
            Level::Must,
            (Status::Fail, r.short()),
        ),
        Err(e) => add(
            "baseline",
            "flow completes",
            "MRTR-S3",
            Level::Must,
            (Status::Fail, e.clone()),
        ),
    }
    let Ok((state, requests)) = p.fresh().await else {
        add(
            "baseline",
            "round 1 asks",
            "MRTR-S4",
            Level::Must,
            (Status::Fail, "round 1 no longer asks for input".to_owned()),
        );
        return out;
    };
    let good = Value::Object(p.answers(&requests));
    let s = state.as_str().unwrap_or_default().to_owned();

    // Integrity (MRTR-SEC1, MRTR-SEC2, MRTR-E-A1).
    let forged: String = tern::seal::random_bytes::<48>()
        .iter()
        .map(|b| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                    [usize::from(*b % 64)],
            )
        })
        .collect();
    let integrity: Vec<(&str, Value)> = vec![
        ("bit flip at the start", json!(flipped(&s, 0.0))),
        ("bit flip in the middle", json!(flipped(&s, 0.5))),
        ("bit flip at the end", json!(flipped(&s, 1.0))),
        (
            "truncated to half",
            json!(s.chars().take(s.chars().count() / 2).collect::<String>()),
        ),
        (
            "re-encoded as standard base64",
            json!(s.replace('-', "+").replace('_', "/") + "=="),
        ),
        ("forged", json!(forged)),
        ("empty", json!("")),
        ("a number", json!(42)),
        ("an object", json!({"state": s})),
        ("oversized (1 MiB)", json!("A".repeat(1 << 20))),
    ];
    for (name, bad) in integrity {
        let r = p.retry(bad, good.clone()).await;
        // The same authentic bytes in another encoding breach nothing;
        // accepting them is malleability, worth fixing but not a MUST.
        let level = if name.starts_with("re-encoded") {
            Level::Advice
        } else {
            Level::Must
        };
        add("integrity", name, "MRTR-SEC2", level, must_refuse(&r));
    }

    // Bindings (MRTR-SEC3).
    let mut other_args = p.args.clone();
    other_args.insert("tern_probe_extra".into(), json!("changed"));
    if let Some((_, v)) = other_args
        .iter_mut()
        .find(|(k, _)| *k != "tern_probe_extra")
    {
        *v = json!("tern-probe-changed");
    }
    let r = p
        .send("tools/call", json!({"name": p.tool, "arguments": other_args, "requestState": fresh_state(p).await, "inputResponses": good}))
        .await;
    add(
        "bindings",
        "other arguments",
        "MRTR-SEC3",
        Level::Should,
        must_refuse(&r),
    );
    add(
        "bindings",
        "another method (prompts/get)",
        "MRTR-SEC3",
        Level::Should,
        cross_use(
            p,
            &good,
            ("prompts/list", "prompts", "name"),
            "prompts/get",
            "prompt",
        )
        .await,
    );
    let r = p
        .send("tools/call", json!({"name": format!("{}-tern-probe", p.tool), "arguments": p.args, "requestState": fresh_state(p).await, "inputResponses": good}))
        .await;
    add(
        "bindings",
        "another tool name",
        "MRTR-SEC3",
        Level::Should,
        must_refuse(&r),
    );
    add(
        "bindings",
        "another method (resources/read)",
        "MRTR-SEC3",
        Level::Should,
        cross_use(
            p,
            &good,
            ("resources/list", "resources", "uri"),
            "resources/read",
            "resource",
        )
        .await,
    );
    // MRTR-SEC3: the state is bound to the principal it was issued to.
    let other = match &p.other {
        Some(t) => {
            let state = fresh_state(p).await;
            must_refuse(
                &p.send_via(
                    t,
                    "tools/call",
                    json!({"name": p.tool, "arguments": p.args, "requestState": state, "inputResponses": good}),
                    &p.caps,
                    None,
                )
                .await,
            )
        }
        None => (
            Status::Skip,
            "give --other-bearer-env VAR (another client's token) where the server authenticates"
                .to_owned(),
        ),
    };
    add(
        "bindings",
        "another principal",
        "MRTR-SEC3",
        Level::Should,
        other,
    );

    // Answers (MRTR-E2, MRTR-E3, MRTR-E-A2, MRTR-E4, ROOT-1).
    let r = p
        .retry(
            fresh_state(p).await,
            json!({"tern_probe_unasked": {"action": "accept", "content": {}}}),
        )
        .await;
    add(
        "answers",
        "only an answer never asked",
        "MRTR-E2",
        Level::Should,
        must_not_complete(&r),
    );
    let r = p.retry(fresh_state(p).await, json!({})).await;
    let missing = match &r {
        Reply::Asked(..) => (
            Status::Pass,
            "asked again for the missing answers".to_owned(),
        ),
        other => (Status::Fail, other.short()),
    };
    add(
        "answers",
        "missing answers are asked again",
        "MRTR-E3",
        Level::Should,
        missing,
    );
    let r = p.retry(fresh_state(p).await, Value::Null).await;
    add(
        "answers",
        "inputResponses null",
        "MRTR-E-A2",
        Level::Should,
        must_refuse(&r),
    );
    let mut wrong_kind = false;
    let mut decline_cancel = false;
    for (key, req) in &requests {
        let method = req.get("method").and_then(Value::as_str).unwrap_or("");
        let mut bad = good.clone();
        if method == "elicitation/create"
            && req.pointer("/params/mode").and_then(Value::as_str) != Some("url")
        {
            if let Some(v) = violating_content(req) {
                bad[key.as_str()] = v;
                let r = p.retry(fresh_state(p).await, bad.clone()).await;
                add(
                    "answers",
                    &format!("{key}: content against the schema"),
                    "MRTR-E-A2",
                    Level::Must,
                    must_not_complete(&r),
                );
            }
            if !wrong_kind {
                wrong_kind = true;
                bad[key.as_str()] = json!({"roots": []});
                let r = p.retry(fresh_state(p).await, bad.clone()).await;
                add(
                    "answers",
                    &format!("{key}: an answer of the wrong kind"),
                    "MRTR-E-A2",
                    Level::Must,
                    must_not_complete(&r),
                );
            }
            if !decline_cancel {
                decline_cancel = true;
                let mut outcome = Vec::new();
                for action in ["decline", "cancel"] {
                    let (s2, r2) = match p.fresh().await {
                        Ok(x) => x,
                        Err(e) => {
                            outcome.push(Reply::Broken(e));
                            continue;
                        }
                    };
                    let mut a = Value::Object(p.answers(&r2));
                    a[key.as_str()] = json!({"action": action});
                    outcome.push(p.retry(s2, a).await);
                }
                let verdict = match &outcome[..] {
                    [Reply::Broken(e), _] | [_, Reply::Broken(e)] => (Status::Fail, e.clone()),
                    [a, b] if format!("{a:?}") != format!("{b:?}") => (
                        Status::Pass,
                        format!("decline: {}; cancel: {}", a.short(), b.short()),
                    ),
                    [a, _] => (Status::Fail, format!("both answered alike: {}", a.short())),
                    _ => (Status::Skip, "not measured".to_owned()),
                };
                add(
                    "answers",
                    &format!("{key}: decline and cancel told apart"),
                    "MRTR-E4",
                    Level::Advice,
                    verdict,
                );
            }
        }
        if method == "sampling/createMessage" {
            bad[key.as_str()] =
                json!({"role": "assistant", "content": {"type": "text", "text": "x"}});
            let r = p.retry(fresh_state(p).await, bad.clone()).await;
            add(
                "answers",
                &format!("{key}: a sample without a model"),
                "MRTR-E-A2",
                Level::Must,
                must_not_complete(&r),
            );
        }
        if method == "roots/list" {
            bad[key.as_str()] = json!({"roots": [{"uri": "https://evil.example/"}, {"uri": "file:///tmp/caf\u{e9}"}]});
            let r = p.retry(fresh_state(p).await, bad.clone()).await;
            add(
                "answers",
                &format!("{key}: a root that is not a file URI"),
                "ROOT-1",
                Level::Should,
                must_not_complete(&r),
            );
        }
    }

    // Replay of a single-use tool (MRTR-SEC4), never of any other.
    if args.single_use.as_deref() == Some(p.tool.as_str()) {
        // The baseline's own final state: a single-use effect may allow no
        // second flow at all.
        match &baseline {
            Ok((st, resp, Reply::Complete(_))) => {
                let r = p.retry(st.clone(), resp.clone()).await;
                add(
                    "replay",
                    "the final state replayed",
                    "MRTR-SEC4",
                    Level::Must,
                    must_not_complete(&r),
                );
            }
            Ok((_, _, r)) => add(
                "replay",
                "the final state replayed",
                "MRTR-SEC4",
                Level::Must,
                (
                    Status::Fail,
                    format!("the flow did not complete: {}", r.short()),
                ),
            ),
            Err(e) => add(
                "replay",
                "the final state replayed",
                "MRTR-SEC4",
                Level::Must,
                (Status::Fail, e.clone()),
            ),
        }
        // Two retries of one state at once: at most one completes.
        match p.fresh().await {
            Ok((st, req)) => {
                let a = Value::Object(p.answers(&req));
                let (r1, r2) = tokio::join!(p.retry(st.clone(), a.clone()), p.retry(st, a));
                let done = [&r1, &r2]
                    .iter()
                    .filter(|r| matches!(r, Reply::Complete(_)))
                    .count();
                let verdict = if done <= 1 {
                    (Status::Pass, format!("{done} of 2 completed"))
                } else {
                    (Status::Fail, "both completed".to_owned())
                };
                add(
                    "replay",
                    "two retries of one state at once",
                    "MRTR-SEC4",
                    Level::Must,
                    verdict,
                );
            }
            Err(e) => add(
                "replay",
                "two retries of one state at once",
                "MRTR-SEC4",
                Level::Must,
                (Status::Fail, e),
            ),
        }
    } else {
        add(
            "replay",
            "the final state replayed",
            "MRTR-SEC4",
            Level::Must,
            (
                Status::Skip,
                "not declared single use (--single-use TOOL)".to_owned(),
            ),
        );
    }

    // The round ceiling: answers withheld, the server asked again and again.
    let mut st = fresh_state(p).await;
    let mut verdict = (Status::Fail, "still asking after 64 rounds".to_owned());
    for round in 1..=64 {
        match p.retry(st.clone(), json!({})).await {
            Reply::Asked(Some(next), _) => st = next,
            Reply::Refused(code, msg) => {
                verdict = (
                    Status::Pass,
                    format!("refused at round {round}: error {code}: {msg}"),
                );
                break;
            }
            other => {
                verdict = (Status::Fail, other.short());
                break;
            }
        }
    }
    add(
        "rounds",
        "a round ceiling",
        "MRTR-SEC3",
        Level::Should,
        verdict,
    );

    // Gates (MRTR-S8, MRTR-S9, MRTR-S-A3).
    let r = p
        .send_with(
            "tools/call",
            json!({"name": p.tool, "arguments": p.args}),
            &json!({}),
            None,
        )
        .await;
    let gate = match &r {
        Reply::Asked(_, req) if !req.is_empty() => (
            Status::Fail,
            "asked a client that declared nothing".to_owned(),
        ),
        _ => (Status::Pass, r.short()),
    };
    add(
        "gates",
        "no capability declared",
        "MRTR-S8",
        Level::Must,
        gate,
    );
    let r = p.send("tools/list", json!({"inputResponses": good})).await;
    add(
        "gates",
        "inputResponses on tools/list",
        "MRTR-S-A3",
        Level::Advice,
        must_refuse(&r),
    );
    if p.http {
        let r = p
            .send_with(
                "tools/call",
                json!({"name": p.tool, "arguments": p.args}),
                &p.caps,
                Some("tern-probe-other-name"),
            )
            .await;
        add(
            "gates",
            "Mcp-Name header unlike the body",
            "HTTP-S11",
            Level::Must,
            must_refuse(&r),
        );
    } else {
        add(
            "gates",
            "Mcp-Name header unlike the body",
            "HTTP-S11",
            Level::Must,
            (Status::Skip, "stdio has no headers".to_owned()),
        );
    }

    // Expiry, when the lifetime is known (MRTR-SEC3).
    match args.state_ttl {
        Some(ttl) => {
            // Past the lifetime and a 30 s clock skew allowance.
            tokio::time::sleep(std::time::Duration::from_secs(ttl + 31)).await;
            let r = p.retry(state.clone(), good.clone()).await;
            add(
                "expiry",
                "a state past its lifetime",
                "MRTR-SEC3",
                Level::Should,
                must_refuse(&r),
            );
        }
        None => add(
            "expiry",
            "a state past its lifetime",
            "MRTR-SEC3",
            Level::Should,
            (
                Status::Skip,
                "give --state-ttl SECS to wait it out".to_owned(),
            ),
        ),
    }

    // Still alive after all that.
    let alive = match p.fresh().await {
        Ok(_) => (Status::Pass, "round 1 still answers".to_owned()),
        Err(e) => (Status::Fail, e),
    };
    add(
        "liveness",
        "the server still answers",
        "SECURITY",
        Level::Must,
        alive,
    );
    out
}

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Pass => "PASS",
        Status::Fail => "FAIL",
        Status::Skip => "SKIP",
    }
}

/// Prints the table (or JSON, or writes JUnit) and picks the exit code:
/// 1 when a MUST case failed.
fn report(p: &Probe, cases: &[Case], args: &ProbeArgs) -> Result<ExitCode, String> {
    let count = |s: Status| cases.iter().filter(|c| c.status == s).count();
    let must_failed = cases
        .iter()
        .any(|c| c.status == Status::Fail && c.level == Level::Must);
    if args.json {
        let out = json!({
            "tool": p.tool,
            "requests": p.sent.load(Ordering::Relaxed),
            "cases": cases.iter().map(|c| json!({
                "family": c.family, "case": c.id, "rule": c.rule,
                "level": c.level.as_str(), "status": status_str(c.status), "reason": c.reason,
            })).collect::<Vec<_>>(),
            "summary": {"pass": count(Status::Pass), "fail": count(Status::Fail), "skip": count(Status::Skip)},
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        let sent = p.sent.load(Ordering::Relaxed);
        if p.tool.is_empty() {
            println!("tern probe: no flow to probe, {sent} requests");
        } else {
            println!("tern probe: tool {:?}, {sent} requests", p.tool);
        }
        println!(
            "{:<6} {:<7} {:<11} {:<11} {:<52} reason",
            "status", "level", "rule", "family", "case"
        );
        for c in cases {
            println!(
                "{:<6} {:<7} {:<11} {:<11} {:<52} {}",
                status_str(c.status),
                c.level.as_str(),
                c.rule,
                c.family,
                c.id,
                c.reason
            );
        }
        println!(
            "{} passed, {} failed, {} skipped{}",
            count(Status::Pass),
            count(Status::Fail),
            count(Status::Skip),
            if must_failed { " (a MUST failed)" } else { "" }
        );
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(cases))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(exit::code(if must_failed {
        exit::FAILED
    } else {
        exit::DONE
    }))
}

/// The cases as a JUnit XML report.
fn junit(cases: &[Case]) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
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
        out.push_str(&format!(
            "  <testcase classname=\"{}\" name=\"{} [{} {}]\">",
            esc(c.family),
            esc(&c.id),
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
