//! The probe's side of the wire: one connection with a request budget, the
//! replies as the probe judges them, and a flow driven round by round with
//! answers that fit what was asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tern::client::{Frames, OutboundRequest, Transport};
use tern::proto::McpHeaders;
use tern::proto::decode::Message;
use tern::types::RequestId;

use crate::exit;

/// The revision the probe speaks.
pub(super) const VERSION: &str = "2026-07-28";

/// Rounds the probe answers before it gives a flow up: a server's own
/// ceiling is usually lower (MRTR-SEC3), and a hostile one never stops.
pub(super) const FLOW_ROUNDS: usize = 10;

/// How a request ended, as far as the probe judges it.
#[derive(Debug, Clone)]
pub(super) enum Reply {
    /// `resultType: "complete"` (or none).
    Complete(Map<String, Value>),
    /// `input_required`: the state (if any) and the requests.
    Asked(Option<Value>, Map<String, Value>),
    /// A JSON-RPC error.
    Refused(i64, String),
    /// An HTTP 5xx with no JSON-RPC message: a server error, which clients
    /// retry.
    ServerError(u16),
    /// No answer: the transport failed or timed out, or the budget is spent.
    Broken(String),
}

impl Reply {
    /// The reply in a few words, for a case's reason.
    pub(super) fn short(&self) -> String {
        match self {
            Reply::Complete(r) if r.get("isError") == Some(&Value::Bool(true)) => {
                "completed with a tool error result".to_owned()
            }
            Reply::Complete(_) => "completed".to_owned(),
            Reply::Asked(..) => "asked again (input_required)".to_owned(),
            Reply::Refused(code, msg) => format!("error {code}: {msg}"),
            Reply::ServerError(status) => format!("HTTP {status} with no JSON-RPC message"),
            Reply::Broken(why) => format!("no answer: {why}"),
        }
    }

    /// A server error (`-32603`, or an HTTP 5xx with no JSON-RPC message),
    /// as a case's reason says it; `None` for any other reply.
    pub(super) fn server_error(&self) -> Option<String> {
        match self {
            Reply::Refused(-32603, _) | Reply::ServerError(..) => Some(self.short()),
            _ => None,
        }
    }

    /// The reply to a request that failed at the transport: a server error
    /// for an HTTP 5xx, no answer otherwise.
    fn failed(e: &tern::client::Error) -> Reply {
        match e.status() {
            Some(status) if (500..600).contains(&status) => Reply::ServerError(status),
            _ => Reply::Broken(exit::explain(e, None)),
        }
    }
}

/// One tool's flow: the tool and the arguments of every round.
#[derive(Debug, Clone)]
pub(super) struct Flow {
    pub(super) tool: String,
    pub(super) args: Map<String, Value>,
}

/// A flow run to its end with good answers.
#[derive(Debug, Clone)]
pub(super) struct Baseline {
    /// The last state and answers sent and the server's reply to them, or
    /// why the flow never got that far.
    pub(super) end: Result<(Value, Value, Reply), String>,
    /// Set when the flow did not complete and waits on a URL-mode step the
    /// person finishes out of band (ELIC-10): the reason the probe cannot
    /// finish it, which makes the flow a SKIP rather than a failure.
    pub(super) out_of_band: Option<String>,
}

impl Baseline {
    /// Whether the flow completed.
    pub(super) fn completed(&self) -> bool {
        matches!(self.end, Ok((_, _, Reply::Complete(_))))
    }
}

/// The connection to the server under probe and what every request
/// carries.
pub(super) struct Probe {
    pub(super) transport: Arc<dyn Transport>,
    /// The same server as another principal (`--other-bearer-env`).
    pub(super) other: Option<Arc<dyn Transport>>,
    /// Over HTTP (headers can be forged), not stdio.
    pub(super) http: bool,
    pub(super) next_id: AtomicI64,
    /// Requests sent, never more than `max_requests`.
    pub(super) sent: AtomicUsize,
    /// Requests not sent because the budget was spent.
    pub(super) unsent: AtomicUsize,
    /// `--max-requests`: the most requests the probe sends in all.
    pub(super) max_requests: usize,
    /// `--reply-timeout`: the wait for each reply.
    pub(super) reply_timeout: Duration,
    /// The capabilities the probe declares: every kind of input.
    pub(super) caps: Value,
    /// `--answers`: answers by input key or method.
    pub(super) scripted: Map<String, Value>,
}

impl Probe {
    /// Requests sent so far.
    pub(super) fn sent(&self) -> usize {
        self.sent.load(Ordering::Relaxed)
    }

    /// Requests refused by the budget so far.
    pub(super) fn unsent(&self) -> usize {
        self.unsent.load(Ordering::Relaxed)
    }

    /// Requests the budget still allows.
    pub(super) fn left(&self) -> usize {
        self.max_requests.saturating_sub(self.sent())
    }

    /// Takes one request from the budget, or counts one not sent.
    fn take_one(&self) -> bool {
        let taken = self
            .sent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_requests).then_some(n + 1)
            })
            .is_ok();
        if !taken {
            self.unsent.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Sends one request with this probe's `_meta` and the usual headers
    /// (or `name_header` when a case forges it).
    pub(super) async fn send_with(
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
    pub(super) async fn send_via(
        &self,
        transport: &Arc<dyn Transport>,
        method: &str,
        mut params: Value,
        caps: &Value,
        name_header: Option<&str>,
    ) -> Reply {
        if !self.take_one() {
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
        // One limit for the whole reply: a server that opens its stream
        // and then sends nothing (or only comments) is as silent as one
        // that never answers.
        let reply = async {
            match transport.request(request).await {
                Ok(frames) => read_reply(frames).await,
                Err(e) => Reply::failed(&e),
            }
        };
        tokio::time::timeout(self.reply_timeout, reply)
            .await
            .unwrap_or_else(|_| {
                Reply::Broken(format!(
                    "no answer within {} s",
                    self.reply_timeout.as_secs()
                ))
            })
    }

    /// Sends one request with the probe's capabilities.
    pub(super) async fn send(&self, method: &str, params: Value) -> Reply {
        self.send_with(method, params, &self.caps, None).await
    }

    /// Round 1 of `flow`.
    pub(super) async fn start(&self, flow: &Flow) -> Reply {
        self.send(
            "tools/call",
            json!({"name": flow.tool, "arguments": flow.args}),
        )
        .await
    }

    /// A retry of `flow` with `state` and `responses`.
    pub(super) async fn retry(&self, flow: &Flow, state: Value, responses: Value) -> Reply {
        self.send(
            "tools/call",
            json!({"name": flow.tool, "arguments": flow.args, "requestState": state, "inputResponses": responses}),
        )
        .await
    }

    /// Good answers to `requests`: the `--answers` entry by key or method,
    /// else one that fits what was asked.
    pub(super) fn answers(&self, requests: &Map<String, Value>) -> Map<String, Value> {
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

    /// Round 1 of `flow`, expecting `input_required` with a state.
    pub(super) async fn fresh(&self, flow: &Flow) -> Result<(Value, Map<String, Value>), String> {
        match self.start(flow).await {
            Reply::Asked(Some(s), r) => Ok((s, r)),
            Reply::Asked(None, _) => {
                Err("the tool asked for input without a requestState".to_owned())
            }
            other => Err(format!("round 1 did not ask for input: {}", other.short())),
        }
    }

    /// A new round-1 state of `flow` for one case, so that a server whose
    /// states are single use judges each case on its own.
    pub(super) async fn fresh_state(&self, flow: &Flow) -> Value {
        self.fresh(flow).await.map_or(Value::Null, |(s, _)| s)
    }

    /// Runs `flow` from round 1 to its end with good answers.
    pub(super) async fn complete(&self, flow: &Flow) -> Baseline {
        match self.fresh(flow).await {
            Ok((state, requests)) => self.finish(flow, state, requests).await,
            Err(e) => Baseline {
                end: Err(e),
                out_of_band: None,
            },
        }
    }

    /// Answers `flow` from `state` and `requests` on until it ends, for at
    /// most [`FLOW_ROUNDS`] rounds. A URL-mode request asked again after
    /// its accept waits on the person (ELIC-10): the probe stops there.
    pub(super) async fn finish(
        &self,
        flow: &Flow,
        mut state: Value,
        mut requests: Map<String, Value>,
    ) -> Baseline {
        let mut url_keys = url_mode_keys(&requests);
        let mut seen_url = url_keys.first().cloned();
        let out_of_band = |key: &str| {
            format!(
                "{key:?} is a URL-mode step the person finishes out of band, so the probe cannot complete this flow (ELIC-10)"
            )
        };
        for _ in 0..FLOW_ROUNDS {
            let responses = Value::Object(self.answers(&requests));
            match self.retry(flow, state.clone(), responses.clone()).await {
                Reply::Asked(Some(s), r) => {
                    let again = url_mode_keys(&r);
                    if let Some(key) = again.iter().find(|k| url_keys.contains(k)) {
                        let why = out_of_band(key);
                        return Baseline {
                            end: Err(format!("asked again for {key:?} after its accept")),
                            out_of_band: Some(why),
                        };
                    }
                    seen_url = seen_url.or_else(|| again.first().cloned());
                    url_keys = again;
                    state = s;
                    requests = r;
                }
                done => {
                    let out_of_band = (!matches!(done, Reply::Complete(_)))
                        .then(|| seen_url.as_deref().map(out_of_band))
                        .flatten();
                    return Baseline {
                        end: Ok((state, responses, done)),
                        out_of_band,
                    };
                }
            }
        }
        Baseline {
            end: Err(format!(
                "the flow did not complete in {FLOW_ROUNDS} rounds with good answers"
            )),
            out_of_band: seen_url.as_deref().map(out_of_band),
        }
    }
}

/// The keys of URL-mode elicitations among `requests`.
fn url_mode_keys(requests: &Map<String, Value>) -> Vec<String> {
    requests
        .iter()
        .filter(|(_, r)| {
            r.get("method").and_then(Value::as_str) == Some("elicitation/create")
                && r.pointer("/params/mode").and_then(Value::as_str) == Some("url")
        })
        .map(|(k, _)| k.clone())
        .collect()
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
            Err(e) => return Reply::failed(&e),
        }
    }
    Reply::Broken("the response ended without a result".to_owned())
}

/// A value that satisfies a form field's schema, as a person answering
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
