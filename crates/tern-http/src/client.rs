//! The Streamable HTTP client transport (DIGEST §7.3, "Sending" and
//! "Receiving").
//!
//! Every message is its own POST to exactly the endpoint URL (HTTP-C4) on a
//! pooled keep-alive connection, with `Content-Type: application/json`,
//! `Accept: application/json, text/event-stream` (HTTP-C5, A16) and the
//! mirrored headers the client computed (HTTP-C8, HTTP-C10, HTTP-XMH-C4).
//! The answer is read as JSON or as SSE (HTTP-S7); the JSON-RPC body
//! decides, never the status alone (HTTP-A4, DIGEST §11 A3).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tern_client::{BoxFuture, Error, Frames, OutboundNotification, OutboundRequest, Transport};
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
}

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
        Ok(HttpTransport { http, url, options })
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
        let mut headers = self.options.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(mcp) = mcp {
            mirror(&mut headers, mcp)?;
        }
        self.http
            .post(self.url.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("POST {} failed", self.url), e))
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
        Err(_) => Err(Error::transport(format!(
            "HTTP {status} without a JSON-RPC body"
        ))),
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
                tokio::spawn(read_sse(resp, tx, max));
                // Dropping the frames drops `rx`; the reader then drops the
                // response, closing the stream: that is the cancellation
                // (CANC-C1, HTTP-S30).
                return Ok(Frames::new(rx));
            }
            let body = read_body(&mut resp, max).await?;
            decode_body(status, &body, max).map(Frames::ready)
        })
    }

    fn notify(&self, notification: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            // HTTP-S6: no header rules are defined for notifications; send
            // Mcp-Method anyway (DIGEST §11 A15 lets servers accept either).
            let mcp = McpHeaders {
                method: Some(notification.method.clone()),
                ..McpHeaders::default()
            };
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

    fn mirrors_headers(&self) -> bool {
        true
    }
}

/// Feeds SSE events to `tx` until the final response, the end of the
/// stream, or the receiver going away.
async fn read_sse(
    mut resp: reqwest::Response,
    tx: mpsc::Sender<Result<Message, Error>>,
    max: usize,
) {
    let mut sse = SseDecoder::new(max);
    let limits = Limits {
        max_bytes: max,
        ..Limits::default()
    };
    loop {
        let chunk = tokio::select! {
            () = tx.closed() => return,
            c = resp.chunk() => c,
        };
        let chunk = match chunk {
            Ok(Some(c)) => c,
            // The stream ended: the client reports a missing response.
            Ok(None) => return,
            Err(e) => {
                let _ = tx
                    .send(Err(Error::transport_from("the SSE stream broke off", e)))
                    .await;
                return;
            }
        };
        let events = match sse.feed(&chunk) {
            Ok(events) => events,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        for data in events {
            let frame = decode_message(data.as_bytes(), &limits)
                .map_err(|e| Error::protocol(format!("an SSE event that is not JSON-RPC: {e}")));
            let last = matches!(frame, Ok(Message::Result(_) | Message::Error(_)) | Err(_));
            if tx.send(frame).await.is_err() || last {
                return;
            }
        }
    }
}

/// A minimal `text/event-stream` decoder (HTTP-A3): events without a name
/// or named `message` carry JSON-RPC in `data`; comments, `id:`, `retry:`
/// and events with empty data are ignored.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    buf: Vec<u8>,
    data: String,
    event: String,
    max: usize,
}

impl SseDecoder {
    pub(crate) fn new(max: usize) -> Self {
        SseDecoder {
            buf: Vec::new(),
            data: String::new(),
            event: String::new(),
            max,
        }
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
            // `id` and `retry` are ignored: no resumption (HTTP-20).
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
