//! Sending one message: the headers every message carries, the `POST`
//! with its sign-in retries, and the answer read as JSON or as SSE (HTTP-S7,
//! HTTP-A4).

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tern_client::Error;
use tern_proto::McpHeaders;
use tern_proto::decode::{Limits, Message, decode_message};
use tokio::sync::mpsc;

use super::Core;
use super::stream::read_sse;

impl Core {
    /// The headers every message carries: the configured ones, and in a
    /// session its id and version.
    pub(super) fn base_headers(
        &self,
        mcp: Option<&McpHeaders>,
    ) -> Result<(HeaderMap, bool), Error> {
        let mut headers = self.options.headers.clone();
        if let Some(bearer) = self.authorizer.as_ref().and_then(|a| a.current()) {
            headers.insert(http::header::AUTHORIZATION, bearer);
        }
        let in_session = {
            let session = self.lock_session();
            if let Some(id) = &session.id {
                headers.insert("mcp-session-id", id.clone());
            }
            session.id.is_some()
        };
        if let Some(mcp) = mcp {
            if let Some(v) = &mcp.protocol_version {
                self.lock_session().version = Some(v.clone());
            }
            mirror(&mut headers, mcp)?;
        }
        Ok((headers, in_session))
    }

    /// POSTs one message. A `401` or `403` goes to the sign-in, if any, and
    /// the same body goes again; a refusal that stays is an unauthorized
    /// error, and a `404` to a message in a session ends the session.
    pub(super) async fn post(
        &self,
        body: Bytes,
        mcp: Option<&McpHeaders>,
    ) -> Result<reqwest::Response, Error> {
        let mut challenges = 0;
        let mut attempts = crate::oauth::Attempts::default();
        let (resp, in_session) = loop {
            if let Some(a) = &self.authorizer {
                a.ready(self.url.as_str()).await;
            }
            let (mut headers, in_session) = self.base_headers(mcp)?;
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            );
            let resp = self
                .http
                .post(self.url.clone())
                .headers(headers)
                .body(body.clone())
                .send()
                .await
                .map_err(|e| Error::transport_from(format!("POST {} failed", self.url), e))?;
            let status = resp.status();
            let refused = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
            match &self.authorizer {
                // DIGEST §8: sign in (or step up) and send the same body
                // again, a bounded number of times.
                Some(a) if refused && challenges < 4 => {
                    challenges += 1;
                    if !a
                        .answer(self.url.as_str(), status, resp.headers(), &mut attempts)
                        .await?
                    {
                        break (resp, in_session);
                    }
                }
                _ => break (resp, in_session),
            }
        };
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            // Not a server's answer to the message but a refusal of the
            // credential: say what the challenge asks for (DIGEST §8). Not
            // an era signal either (COMPAT-C8).
            let challenge = resp
                .headers()
                .get(http::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            let what = if status == StatusCode::UNAUTHORIZED {
                "needs a valid access token"
            } else {
                "refuses this access token"
            };
            return Err(Error::unauthorized(format!(
                "HTTP {} from {}: the server {what}{challenge}",
                status.as_u16(),
                self.url
            )));
        }
        if in_session && resp.status() == StatusCode::NOT_FOUND {
            // 2025-11-25 session management: the server ended the session.
            self.lock_session().id = None;
            return Err(Error::session_expired(format!(
                "{} no longer knows this session (HTTP 404)",
                self.url
            )));
        }
        if resp.status().is_success()
            && let Some(id) = resp.headers().get("mcp-session-id")
        {
            self.lock_session().id = Some(id.clone());
        }
        Ok(resp)
    }

    /// Reads a POST's answer, JSON or SSE, into `tx`.
    pub(super) async fn read_response(
        &self,
        mut resp: reqwest::Response,
        tx: mpsc::Sender<Result<Message, Error>>,
    ) {
        let status = resp.status();
        let max = self.options.max_body;
        if status.is_success() && is_event_stream(&resp) {
            read_sse(resp, tx, max, self.clone()).await;
            return;
        }
        let frame = match read_body(&mut resp, max).await {
            Ok(body) => decode_body(status, &body, max),
            Err(e) => Err(e),
        };
        let _ = tx.send(frame).await;
    }
}

/// Writes the mirrored headers (HTTP-C8). Values arrive encoded
/// (HTTP-C16/C17), so each is a valid header value.
fn mirror(headers: &mut HeaderMap, mcp: &McpHeaders) -> Result<(), Error> {
    let value = |v: &str| HeaderValue::from_str(v).map_err(|_| bad_header(v));
    if let Some(v) = &mcp.protocol_version {
        headers.insert("mcp-protocol-version", value(v)?);
    }
    if let Some(v) = &mcp.method {
        headers.insert("mcp-method", value(v)?);
    }
    if let Some(v) = &mcp.name {
        headers.insert("mcp-name", value(v)?);
    }
    for (name, v) in &mcp.params {
        let name = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes())
            .map_err(|_| bad_header(name))?;
        headers.insert(name, value(v)?);
    }
    Ok(())
}

pub(super) fn bad_header(what: &str) -> Error {
    Error::transport(format!("{what:?} cannot be sent as an HTTP header"))
}

pub(super) fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// Reads a whole body, refusing more than `max` bytes.
pub(super) async fn read_body(resp: &mut reqwest::Response, max: usize) -> Result<Bytes, Error> {
    let mut buf = BytesMut::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Error::transport_from("the response body broke off", e))?
    {
        if buf.len() + chunk.len() > max {
            return Err(Error::protocol(format!("response body over {max} bytes")));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// Decodes a JSON body. A JSON-RPC message decides whatever the status
/// (HTTP-A4); a body that is not one is a protocol error on success and a
/// transport error otherwise (a proxy's or a legacy server's page).
pub(super) fn decode_body(status: StatusCode, body: &[u8], max: usize) -> Result<Message, Error> {
    let limits = Limits {
        max_bytes: max,
        ..Limits::default()
    };
    match decode_message(body, &limits) {
        Ok(m) => Ok(m),
        Err(e) if status.is_success() => Err(Error::protocol(format!(
            "HTTP {status} with a body that is not JSON-RPC: {e}"
        ))),
        Err(_) => Err(Error::http_status(
            status.as_u16(),
            format!("HTTP {status} without a JSON-RPC body"),
        )),
    }
}
