//! The bridge: a round of a 2025-11-25 session's request goes out as
//! server-initiated requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) on the request's own stream, all
//! at once, and the client's responses come back in-process as the answers
//! of the next run (DIGEST §3.4, COMPAT-S1). Nothing is sealed: the round
//! lives in the server for the duration of the request, and only responses
//! to ids this server sent count, so a client cannot inject an answer.

use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_proto::finish::{encode_notification, encode_request};
use tern_seal::random_bytes;
use tern_types::{ClientCapabilities, RequestId};

use super::{Delivered, Delivery, Start};
use crate::ask::{AskContext, Asked, InputKind};
use crate::legacy::{ClientAnswer, Session};
use crate::notify::Sink;
use crate::outcome::Pending;
use crate::server::Server;

/// Delivers rounds to a 2025-11-25 client in its session.
pub(crate) struct Bridge<'a> {
    session: &'a Session,
    sink: Sink,
    /// URL-mode elicitations the client accepted: once the handler
    /// completes past them, the out-of-band interaction is complete.
    opened_urls: Vec<String>,
    /// The flow's lifetime ends here, however many rounds it asks
    /// (SECURITY.md "Every request": one flow's lifetime, both eras).
    flow_deadline: tokio::time::Instant,
}

impl<'a> Bridge<'a> {
    pub(crate) fn new(server: &Server, session: &'a Session, sink: Sink) -> Self {
        Bridge {
            session,
            sink,
            opened_urls: Vec::new(),
            flow_deadline: server.inner.clock.instant() + server.config().flow_ttl,
        }
    }

    /// Sends every request of the round to the client at once and waits for
    /// each answer (or the timeout), keyed as the handler asked. A URL-mode
    /// elicitation gets the `elicitationId` 2025-11-25 requires; the ids the
    /// client accepted are kept for [`Delivery::completed`].
    async fn ask_client(
        &mut self,
        server: &Server,
        asked: &[Asked],
    ) -> Result<Map<String, Value>, McpError> {
        let (session, sink) = (self.session, &self.sink);
        if asked.is_empty() {
            // A state-only round: nothing to ask; run again at once.
            return Ok(Map::new());
        }
        let url_ids: Vec<Option<String>> = asked
            .iter()
            .map(|a| (a.request["params"]["mode"] == "url").then(tern_seal::random_id))
            .collect();
        let url_capable = session.url_capable();
        if !sink.is_open() && url_capable && url_ids.iter().all(Option::is_some) {
            // No stream to ask on (a JSON-only POST): URL-mode asks still
            // reach the client as -32042; it finishes them and retries
            // (2025-11-25 URLElicitationRequiredError).
            let elicitations = asked
                .iter()
                .zip(&url_ids)
                .map(|(a, id)| {
                    let p = &a.request["params"];
                    json!({"mode": "url", "elicitationId": id, "url": p["url"],
                           "message": p["message"]})
                })
                .collect();
            return Err(McpError::UrlElicitationRequired { elicitations });
        }
        // Whatever ends the round (answers, an error, the timeout, or the
        // call being stopped mid-wait), nothing of it waits any more: a late
        // answer is unsolicited.
        let mut asking = Asking {
            session,
            ids: Vec::with_capacity(asked.len()),
        };
        let mut waits = Vec::with_capacity(asked.len());
        for (a, url_id) in asked.iter().zip(&url_ids) {
            let method = a.request["method"].as_str().unwrap_or_default().to_owned();
            let mut params = a
                .request
                .get("params")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if let (Some(id), Value::Object(p)) = (url_id, &mut params) {
                p.insert("elicitationId".into(), json!(id));
            }
            let (id, rx) = session.expect();
            asking.ids.push(id.clone());
            if !sink.send(encode_request(&id, &method, &params)).await {
                return Err(McpError::InvalidRequest(
                    "the client's stream closed before it could be asked".into(),
                ));
            }
            waits.push((a.key.clone(), method, rx, url_id.clone()));
        }
        // One deadline for the whole round, however many it asked, and
        // never past the flow's.
        let deadline = (server.inner.clock.instant() + server.config().client_answer_timeout)
            .min(self.flow_deadline);
        let mut out = Map::new();
        for (key, method, rx, url_id) in waits {
            let Ok(Ok(answer)) = tokio::time::timeout_at(deadline, rx).await else {
                return Err(McpError::timeout(
                    "client_answer",
                    format!("the client did not answer {method} in time"),
                ));
            };
            match answer {
                ClientAnswer::Result(r) => {
                    if let Some(url) = url_id.filter(|_| r.get("action") == Some(&json!("accept")))
                    {
                        self.opened_urls.push(url);
                    }
                    out.insert(key, Value::Object(r));
                }
                ClientAnswer::Error(e) => {
                    return Err(McpError::InvalidParams {
                        message: format!(
                            "the client refused {method}: {}",
                            e["message"].as_str().unwrap_or("no reason given")
                        ),
                        data: Some(json!({"key": key})),
                    });
                }
            }
        }
        Ok(out)
    }
}

impl Delivery for Bridge<'_> {
    const RERUNS: bool = true;

    fn start(&mut self, caps: &ClientCapabilities) -> Start {
        Start::first(caps, random_bytes::<16>())
    }

    /// Asks the client and waits; its responses are the next run's
    /// answers, read as `inputResponses` are (the same parsers, pinned to
    /// the questions of this round).
    async fn deliver(
        &mut self,
        server: &Server,
        round: Pending,
        answers: &AskContext,
    ) -> Result<Delivered, McpError> {
        let responses = self.ask_client(server, &round.requests).await?;
        // A session client's responses are a retry's `inputResponses` by
        // another road: the same budget.
        super::check_input_responses(&responses, server.config())?;
        super::check_answer_kinds(&responses, server.config(), |key| {
            round
                .requests
                .iter()
                .any(|q| q.key == key && q.kind == InputKind::Sampling)
        })?;
        Ok(Delivered::Answered(Box::new(AskContext::answered(
            answers.caps.clone(),
            round.requests.iter().map(Asked::expect).collect(),
            answers.carried_except(&round.requests),
            responses,
        ))))
    }

    async fn completed(&mut self, _: &Server, _: &Map<String, Value>) {
        for id in std::mem::take(&mut self.opened_urls) {
            let done = json!({ "elicitationId": id });
            self.sink
                .send(encode_notification(
                    "notifications/elicitation/complete",
                    &done,
                ))
                .await;
        }
    }
}

/// The server-initiated requests of one round, forgotten when it ends.
struct Asking<'a> {
    session: &'a Session,
    ids: Vec<RequestId>,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        for id in &self.ids {
            self.session.forget(id);
        }
    }
}
