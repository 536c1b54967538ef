//! The 2025-11-25 session of the transport: the `Mcp-Session-Id` and
//! version the server assigned, the calls waiting for their responses by
//! id, the routing of what the server sends outside a call's own stream,
//! and `DELETE`.

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tern_client::{Error, Frames, OutboundRequest};
use tern_proto::decode::Message;
use tern_proto::{McpError, McpHeaders};
use tokio::sync::mpsc;

use super::post::bad_header;
use super::{Core, HttpTransport, lock};

/// The legacy session, once the server assigned one.
#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) id: Option<HeaderValue>,
    pub(super) version: Option<String>,
}

/// The calls of a legacy session waiting for their responses, newest last:
/// what the server sends on the session's `GET` stream goes to the newest
/// (2025-11-25 lets a server send a call's requests there instead of on the
/// call's own stream).
#[derive(Debug, Default)]
pub(super) struct Calls {
    next: u64,
    open: Vec<Call>,
}

#[derive(Debug)]
struct Call {
    seq: u64,
    id: tern_types::RequestId,
    tx: mpsc::Sender<Result<Message, Error>>,
}

impl Calls {
    fn add(&mut self, id: tern_types::RequestId, tx: mpsc::Sender<Result<Message, Error>>) -> u64 {
        self.open.retain(|c| !c.tx.is_closed());
        self.next += 1;
        self.open.push(Call {
            seq: self.next,
            id,
            tx,
        });
        self.next
    }

    fn remove(&mut self, seq: u64) {
        self.open.retain(|c| c.seq != seq && !c.tx.is_closed());
    }

    fn newest(&mut self) -> Option<mpsc::Sender<Result<Message, Error>>> {
        self.open.retain(|c| !c.tx.is_closed());
        self.open.last().map(|c| c.tx.clone())
    }

    fn by_id(
        &mut self,
        id: &tern_types::RequestId,
    ) -> Option<mpsc::Sender<Result<Message, Error>>> {
        self.open.retain(|c| !c.tx.is_closed());
        self.open.iter().find(|c| c.id == *id).map(|c| c.tx.clone())
    }
}

impl Core {
    pub(super) fn lock_session(&self) -> std::sync::MutexGuard<'_, Session> {
        lock(&self.session)
    }

    pub(super) fn in_session(&self) -> bool {
        self.lock_session().id.is_some()
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        lock(&self.calls)
    }

    /// The headers of a `GET` or `DELETE` in the session.
    pub(super) fn session_request(
        &self,
        method: http::Method,
    ) -> Result<reqwest::RequestBuilder, Error> {
        let (mut headers, _) = self.base_headers(None)?;
        let version = self.lock_session().version.clone();
        if let Some(v) = version {
            headers.insert(
                "mcp-protocol-version",
                HeaderValue::from_str(&v).map_err(|_| bad_header(&v))?,
            );
        }
        Ok(self.http.request(method, self.url.clone()).headers(headers))
    }

    /// Answers a server request the client cannot attribute to a call.
    async fn answer_alone(&self, id: tern_types::RequestId, error: Option<McpError>) {
        let body = match error {
            None => tern_proto::finish::encode_result(&id, &serde_json::Map::new()),
            Some(e) => tern_proto::finish::encode_error(Some(id), &e),
        };
        let mcp = McpHeaders {
            protocol_version: self.lock_session().version.clone(),
            ..McpHeaders::default()
        };
        if let Err(e) = self.post(body, Some(&mcp)).await {
            tracing::debug!(error = %e, "cannot answer a request on the GET stream");
        }
    }

    /// Hands a message of the `GET` stream to the call it belongs to: a
    /// response to the call with its id, anything else to the newest call.
    /// `ping` is answered here; a request while no call is open is refused,
    /// since nothing can show it to anyone.
    pub(super) async fn route(&self, message: Message) {
        let to = match &message {
            Message::Result(r) => self.lock_calls().by_id(&r.id),
            Message::Error(e) => e.id.as_ref().and_then(|id| self.lock_calls().by_id(id)),
            Message::Request(r) if r.method == "ping" => {
                return self.answer_alone(r.id.clone(), None).await;
            }
            _ => self.lock_calls().newest(),
        };
        match (to, message) {
            (Some(tx), m) => {
                let _ = tx.send(Ok(m)).await;
            }
            (None, Message::Request(r)) => {
                // Nothing can show it to anyone outside a call.
                let e = McpError::MethodNotFound {
                    method: r.method,
                    supported: None,
                };
                self.answer_alone(r.id, Some(e)).await;
            }
            (None, m) => tracing::debug!(?m, "a message on the GET stream for no open call"),
        }
    }

    /// Ends the session with `DELETE` (2025-11-25 session management).
    pub(super) async fn end_session(&self) -> Result<(), Error> {
        if !self.in_session() {
            return Ok(());
        }
        let request = self.session_request(http::Method::DELETE)?;
        self.lock_session().id = None;
        let url = &self.url;
        let resp = request
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("DELETE {url} failed"), e))?;
        // 405: the server does not let clients end sessions; 404: it
        // already forgot it. Either way the session is over for us.
        match resp.status() {
            s if s.is_success()
                || s == StatusCode::METHOD_NOT_ALLOWED
                || s == StatusCode::NOT_FOUND =>
            {
                Ok(())
            }
            s => Err(Error::http_status(
                s.as_u16(),
                format!("DELETE {url} answered HTTP {s}"),
            )),
        }
    }
}

impl HttpTransport {
    /// A call inside a legacy session. It is registered before its POST
    /// goes out, so whatever the server sends on the `GET` stream while the
    /// call is open reaches it; the POST runs in its own task and feeds the
    /// same frames. Dropping the frames early tells the server
    /// (`notifications/cancelled`: in a session a closed stream is not a
    /// cancellation).
    pub(super) fn session_call(&self, request: OutboundRequest) -> Frames {
        let (tx, rx) = mpsc::channel(16);
        let seq = self.core.lock_calls().add(request.id.clone(), tx.clone());
        let core = self.core.clone();
        let OutboundRequest {
            id, body, headers, ..
        } = request;
        let version = headers.protocol_version.clone();
        tokio::spawn(async move {
            let sent = tokio::select! {
                () = tx.closed() => None,
                r = core.post(body, Some(&headers)) => Some(r),
            };
            match sent {
                None => {}
                Some(Err(e)) => {
                    let _ = tx.send(Err(e)).await;
                }
                Some(Ok(resp)) => core.read_response(resp, tx).await,
            }
            // The registry's sender goes too, so a stream that ended without
            // a response reads as ended.
            core.lock_calls().remove(seq);
        });
        let core = self.core.clone();
        Frames::with_cancel(rx, move || {
            core.lock_calls().remove(seq);
            tokio::spawn(async move {
                let n = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "cancelled by the client"}});
                let mcp = McpHeaders {
                    protocol_version: version,
                    method: Some("notifications/cancelled".to_owned()),
                    ..McpHeaders::default()
                };
                if let Ok(body) = serde_json::to_vec(&n) {
                    let _ = core.post(Bytes::from(body), Some(&mcp)).await;
                }
            });
        })
    }
}
