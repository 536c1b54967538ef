//! The Streamable HTTP client transport (DIGEST §7.3, "Sending" and
//! "Receiving").
//!
//! Every message is its own POST to exactly the endpoint URL (HTTP-C4) on a
//! pooled keep-alive connection, with `Content-Type: application/json`,
//! `Accept: application/json, text/event-stream` (HTTP-C5, A16) and the
//! mirrored headers the client computed (HTTP-C8, HTTP-C10, HTTP-XMH-C4).
//! The answer is read as JSON or as SSE (HTTP-S7); the JSON-RPC body
//! decides, never the status alone (HTTP-A4, DIGEST §11 A3).
//!
//! With a 2025-11-25 server the transport also keeps the session: the
//! `Mcp-Session-Id` the server assigns at `initialize` goes on every later
//! message, with the negotiated `MCP-Protocol-Version`; a `404` to a request
//! that named the session means the server forgot it; the client's answers
//! to server requests are POSTed back; an SSE stream that ends before its
//! response is resumed with `GET` and `Last-Event-ID` after the server's
//! `retry` delay; and [`close`](Transport::close) sends `DELETE`
//! (2025-11-25 transports: session management, resumability).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tern_client::{
    BoxFuture, Error, Frames, OutboundNotification, OutboundRequest, OutboundResponse, Transport,
};
use tern_proto::McpHeaders;
use tern_proto::decode::{Limits, Message, decode_message};
use tokio::sync::mpsc;

/// Options of the HTTP client transport.
#[derive(Clone, Debug)]
pub struct HttpClientOptions {
    /// Headers sent with every request, e.g. `Authorization`.
    pub headers: HeaderMap,
    /// The largest JSON body or SSE event read (default 4 MiB).
    pub max_body: usize,
    /// How long to wait for a connection (default 10 s).
    pub connect_timeout: Duration,
}

impl Default for HttpClientOptions {
    fn default() -> Self {
        HttpClientOptions {
            headers: HeaderMap::new(),
            max_body: Limits::default().max_bytes,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl HttpClientOptions {
    /// Adds a header sent with every request.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }
}

/// A client [`Transport`] speaking Streamable HTTP to one endpoint.
#[derive(Clone, Debug)]
pub struct HttpTransport {
    http: reqwest::Client,
    url: reqwest::Url,
    options: HttpClientOptions,
    session: Arc<Mutex<Session>>,
}

/// The legacy session, once the server assigned one.
#[derive(Debug, Default)]
struct Session {
    id: Option<HeaderValue>,
    version: Option<String>,
}

/// How often a broken SSE stream is resumed before the request fails.
const MAX_RESUMES: u32 = 5;
/// The wait before resuming when the server named none (SSE: the client
/// picks), and the most a server's `retry` can make the client wait.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);

impl HttpTransport {
    /// A transport for the endpoint `url` (used exactly as given, path and
    /// all).
    pub fn new(url: &str) -> Result<Self, Error> {
        HttpTransport::with_options(url, HttpClientOptions::default())
    }

    /// A transport for `url` with `options`.
    pub fn with_options(url: &str, options: HttpClientOptions) -> Result<Self, Error> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| Error::transport_from(format!("invalid endpoint URL {url:?}"), e))?;
        let http = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            // An MCP endpoint has no reason to redirect a POST.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::transport_from("cannot build the HTTP client", e))?;
        Ok(HttpTransport {
            http,
            url,
            options,
            session: Arc::new(Mutex::new(Session::default())),
        })
    }

    /// The legacy session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        self.lock_session()
            .id
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    fn lock_session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The headers every message carries: the configured ones, and in a
    /// session its id and version.
    fn base_headers(&self, mcp: Option<&McpHeaders>) -> Result<(HeaderMap, bool), Error> {
        let mut headers = self.options.headers.clone();
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

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    async fn post(
        &self,
        body: Bytes,
        mcp: Option<&McpHeaders>,
    ) -> Result<reqwest::Response, Error> {
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
            .body(body)
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("POST {} failed", self.url), e))?;
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

    /// The headers of a `GET` or `DELETE` in the session.
    fn session_request(&self, method: http::Method) -> Result<reqwest::RequestBuilder, Error> {
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

fn bad_header(what: &str) -> Error {
    Error::transport(format!("{what:?} cannot be sent as an HTTP header"))
}

fn is_event_stream(resp: &reqwest::Response) -> bool {
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
async fn read_body(resp: &mut reqwest::Response, max: usize) -> Result<Bytes, Error> {
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
fn decode_body(status: StatusCode, body: &[u8], max: usize) -> Result<Message, Error> {
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

impl Transport for HttpTransport {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        Box::pin(async move {
            let mut resp = self.post(request.body, Some(&request.headers)).await?;
            let status = resp.status();
            let max = self.options.max_body;
            if status.is_success() && is_event_stream(&resp) {
                let (tx, rx) = mpsc::channel(16);
                tokio::spawn(read_sse(resp, tx, max, self.clone()));
                if self.lock_session().id.is_none() {
                    // Dropping the frames drops `rx`; the reader then drops
                    // the response, closing the stream: that is the
                    // cancellation (CANC-C1, HTTP-S30).
                    return Ok(Frames::new(rx));
                }
                // In a legacy session a closed stream is not a
                // cancellation: say it (2025-11-25 cancellation).
                let this = self.clone();
                let id = request.id;
                let version = request.headers.protocol_version;
                return Ok(Frames::with_cancel(rx, move || {
                    tokio::spawn(async move {
                        let n = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "cancelled by the client"}});
                        let mcp = McpHeaders {
                            protocol_version: version,
                            method: Some("notifications/cancelled".to_owned()),
                            ..McpHeaders::default()
                        };
                        if let Ok(body) = serde_json::to_vec(&n) {
                            let _ = this.post(Bytes::from(body), Some(&mcp)).await;
                        }
                    });
                }));
            }
            let body = read_body(&mut resp, max).await?;
            decode_body(status, &body, max).map(Frames::ready)
        })
    }

    fn notify(&self, notification: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            // HTTP-S6: no header rules are defined for notifications; send
            // Mcp-Method anyway (DIGEST §11 A15 lets servers accept either).
            let mut mcp = notification.headers;
            mcp.method.get_or_insert(notification.method);
            let mut resp = self.post(notification.body, Some(&mcp)).await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(());
            }
            let body = read_body(&mut resp, self.options.max_body).await?;
            match decode_body(status, &body, self.options.max_body)? {
                Message::Error(e) => Err(Error::remote(e.error)),
                _ => Err(Error::transport(format!(
                    "notification refused with HTTP {status}"
                ))),
            }
        })
    }

    fn respond(&self, response: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut resp = self.post(response.body, Some(&response.headers)).await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(());
            }
            let body = read_body(&mut resp, self.options.max_body).await?;
            match decode_body(status, &body, self.options.max_body)? {
                Message::Error(e) => Err(Error::remote(e.error)),
                _ => Err(Error::http_status(
                    status.as_u16(),
                    format!(
                        "the answer to request {} was refused with HTTP {status}",
                        response.id
                    ),
                )),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if self.lock_session().id.is_none() {
                return Ok(());
            }
            let request = self.session_request(http::Method::DELETE)?;
            self.lock_session().id = None;
            let resp = request
                .send()
                .await
                .map_err(|e| Error::transport_from(format!("DELETE {} failed", self.url), e))?;
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
                    format!("DELETE {} answered HTTP {s}", self.url),
                )),
            }
        })
    }

    fn mirrors_headers(&self) -> bool {
        true
    }
}

/// Resumes a broken SSE stream: `GET` with `Last-Event-ID` (2025-11-25
/// resumability); an error when the server does not offer it.
async fn resume(transport: &HttpTransport, last_id: &str) -> Result<reqwest::Response, Error> {
    let request = transport
        .session_request(http::Method::GET)?
        .header(ACCEPT, "text/event-stream")
        .header(
            "last-event-id",
            HeaderValue::from_str(last_id).map_err(|_| bad_header(last_id))?,
        );
    let resp = request
        .send()
        .await
        .map_err(|e| Error::transport_from(format!("GET {} failed", transport.url), e))?;
    if resp.status().is_success() && is_event_stream(&resp) {
        Ok(resp)
    } else {
        Err(Error::http_status(
            resp.status().as_u16(),
            format!(
                "the SSE stream ended early and resuming it with GET {} got HTTP {}",
                transport.url,
                resp.status()
            ),
        ))
    }
}

/// Feeds SSE events to `tx` until the final response, the end of the
/// stream, or the receiver going away. A stream that ends (or breaks) after
/// the server gave its events ids is resumed from the last one; one that
/// never did ends the request (HTTP-20: modern servers send no ids).
async fn read_sse(
    mut resp: reqwest::Response,
    tx: mpsc::Sender<Result<Message, Error>>,
    max: usize,
    transport: HttpTransport,
) {
    let mut sse = SseDecoder::new(max);
    let mut resumes = 0;
    let limits = Limits {
        max_bytes: max,
        ..Limits::default()
    };
    loop {
        let chunk = tokio::select! {
            () = tx.closed() => return,
            c = resp.chunk() => c,
        };
        let broke = match chunk {
            Ok(Some(c)) => match feed(&mut sse, &c, &limits, &tx).await {
                Fed::More => continue,
                Fed::Done => return,
            },
            Ok(None) => None,
            Err(e) => Some(Error::transport_from("the SSE stream broke off", e)),
        };
        let Some(last_id) = sse.last_id.clone().filter(|_| resumes < MAX_RESUMES) else {
            // The client reports a missing response when the stream just
            // ended.
            if let Some(e) = broke {
                let _ = tx.send(Err(e)).await;
            }
            return;
        };
        resumes += 1;
        let wait = sse.retry.map_or(DEFAULT_RETRY, |r| r.min(MAX_RETRY));
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(wait) => {}
        }
        tracing::debug!(%last_id, ?wait, "resuming an SSE stream");
        match resume(&transport, &last_id).await {
            Ok(next) => {
                resp = next;
                sse.restart();
            }
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        }
    }
}

enum Fed {
    More,
    Done,
}

/// Hands the events completed by `chunk` to `tx`.
async fn feed(
    sse: &mut SseDecoder,
    chunk: &[u8],
    limits: &Limits,
    tx: &mpsc::Sender<Result<Message, Error>>,
) -> Fed {
    let events = match sse.feed(chunk) {
        Ok(events) => events,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return Fed::Done;
        }
    };
    for data in events {
        let frame = decode_message(data.as_bytes(), limits)
            .map_err(|e| Error::protocol(format!("an SSE event that is not JSON-RPC: {e}")));
        let last = matches!(frame, Ok(Message::Result(_) | Message::Error(_)) | Err(_));
        if tx.send(frame).await.is_err() || last {
            return Fed::Done;
        }
    }
    Fed::More
}

/// A minimal `text/event-stream` decoder (HTTP-A3): events without a name
/// or named `message` carry JSON-RPC in `data`; comments and events with
/// empty data are skipped. `id:` and `retry:` are remembered for resuming
/// (2025-11-25 resumability); a modern server sends neither (HTTP-20).
#[derive(Debug)]
pub(crate) struct SseDecoder {
    buf: Vec<u8>,
    data: String,
    event: String,
    max: usize,
    /// The last event id the server gave (SSE's last-event-id buffer).
    pub(crate) last_id: Option<String>,
    /// The reconnection delay the server asked for.
    pub(crate) retry: Option<Duration>,
}

impl SseDecoder {
    pub(crate) fn new(max: usize) -> Self {
        SseDecoder {
            buf: Vec::new(),
            data: String::new(),
            event: String::new(),
            max,
            last_id: None,
            retry: None,
        }
    }

    /// A new stream of the same source: partial lines and events are
    /// dropped, the last id and retry delay kept.
    pub(crate) fn restart(&mut self) {
        self.buf.clear();
        self.data.clear();
        self.event.clear();
    }

    /// Feeds bytes; returns the data of every event completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, Error> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n' || *b == b'\r') {
            // A CR at the very end may be the first half of CRLF: wait.
            if self.buf[pos] == b'\r' && pos + 1 == self.buf.len() {
                break;
            }
            let skip = if self.buf[pos] == b'\r' && self.buf.get(pos + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            let line: Vec<u8> = self.buf.drain(..pos + skip).take(pos).collect();
            let line = String::from_utf8(line)
                .map_err(|_| Error::protocol("an SSE line that is not UTF-8"))?;
            self.line(&line, &mut out);
        }
        if self.buf.len() + self.data.len() > self.max {
            return Err(Error::protocol(format!(
                "an SSE event over {} bytes",
                self.max
            )));
        }
        Ok(out)
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let event = std::mem::take(&mut self.event);
            if !data.is_empty() && (event.is_empty() || event == "message") {
                out.push(data);
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(value);
            }
            "event" => self.event = value.to_owned(),
            // SSE: an id with NUL is ignored; an empty one resets.
            "id" if !value.contains('\0') => {
                self.last_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_split_and_noise_ignored() {
        let mut d = SseDecoder::new(1 << 20);
        let mut out = d
            .feed(
                b": keep-alive\n\nid: 7\nretry: 100\ndata: {\"a\":1}\n\nevent: other\ndata: x\n\n",
            )
            .unwrap();
        out.extend(d.feed(b"data: \n\nevent: message\r\ndata: {\"b\"").unwrap());
        out.extend(d.feed(b":2}\r").unwrap());
        out.extend(d.feed(b"\n\r\n").unwrap());
        assert_eq!(out, ["{\"a\":1}", "{\"b\":2}"]);
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut d = SseDecoder::new(8);
        assert!(d.feed(b"data: 0123456789").unwrap_err().is_protocol());
    }
}
