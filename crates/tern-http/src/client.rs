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
use tern_proto::decode::{Limits, Message, decode_message};
use tern_proto::sse::{self, SseError};
use tern_proto::{McpError, McpHeaders};

use crate::oauth::{Challenge, OAuth};
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
    /// Sign in when the server answers `401` (DIGEST §8); none by default.
    pub oauth: Option<crate::oauth::OAuthOptions>,
}

impl Default for HttpClientOptions {
    fn default() -> Self {
        HttpClientOptions {
            headers: HeaderMap::new(),
            max_body: Limits::default().max_bytes,
            connect_timeout: Duration::from_secs(10),
            oauth: None,
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
    core: Core,
    /// Ends the session's `GET` listener when the last clone goes.
    listener: Arc<Listener>,
}

/// What the transport and its `GET` listener share.
#[derive(Clone, Debug)]
struct Core {
    http: reqwest::Client,
    url: reqwest::Url,
    options: HttpClientOptions,
    session: Arc<Mutex<Session>>,
    calls: Arc<Mutex<Calls>>,
    oauth: Option<Arc<OAuth>>,
}

/// The legacy session, once the server assigned one.
#[derive(Debug, Default)]
struct Session {
    id: Option<HeaderValue>,
    version: Option<String>,
}

/// The calls of a legacy session waiting for their responses, newest last:
/// what the server sends on the session's `GET` stream goes to the newest
/// (2025-11-25 lets a server send a call's requests there instead of on the
/// call's own stream).
#[derive(Debug, Default)]
struct Calls {
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

/// The session's standalone `GET` stream: opened once, after the session
/// exists; aborted when the session ends or the transport is dropped.
#[derive(Debug)]
struct Listener {
    state: Mutex<ListenerState>,
    /// Turns true once the server answered the `GET` (or refused it).
    answered: tokio::sync::watch::Sender<bool>,
}

impl Default for Listener {
    fn default() -> Self {
        Listener {
            state: Mutex::default(),
            answered: tokio::sync::watch::channel(false).0,
        }
    }
}

#[derive(Debug, Default)]
enum ListenerState {
    #[default]
    NotOpened,
    /// Reading the stream of the session with this id.
    Running(tokio::task::AbortHandle, HeaderValue),
    /// The session ended.
    Over,
}

/// How long a call waits for the server to answer the session's `GET`
/// before going out anyway: a server sends a call's requests on that stream
/// only once it is there, but a proxy may hold its headers back until the
/// first event, and the stream keeps working when they come.
const LISTENER_GRACE: Duration = Duration::from_secs(1);

impl Listener {
    fn stop(&self) {
        let mut s = lock(&self.state);
        if let ListenerState::Running(h, _) = std::mem::replace(&mut *s, ListenerState::Over) {
            h.abort();
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop();
    }
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
        let oauth = options
            .oauth
            .clone()
            .map(|o| Arc::new(OAuth::new(o, http.clone())));
        Ok(HttpTransport {
            core: Core {
                http,
                url,
                options,
                session: Arc::default(),
                calls: Arc::default(),
                oauth,
            },
            listener: Arc::default(),
        })
    }

    /// The legacy session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        self.core
            .lock_session()
            .id
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        self.core.url.as_str()
    }
}

impl Core {
    fn lock_session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The headers every message carries: the configured ones, and in a
    /// session its id and version.
    fn base_headers(&self, mcp: Option<&McpHeaders>) -> Result<(HeaderMap, bool), Error> {
        let mut headers = self.options.headers.clone();
        if let Some(bearer) = self.oauth.as_ref().and_then(|o| o.current()) {
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

    fn in_session(&self) -> bool {
        self.lock_session().id.is_some()
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn post(
        &self,
        body: Bytes,
        mcp: Option<&McpHeaders>,
    ) -> Result<reqwest::Response, Error> {
        let mut challenges = 0;
        let (resp, in_session) = loop {
            if let Some(o) = &self.oauth {
                o.ready(self.url.as_str()).await;
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
            match &self.oauth {
                // DIGEST §8: sign in (or step up) and send the same body
                // again, a bounded number of times.
                Some(o) if refused && challenges < 4 => {
                    challenges += 1;
                    let challenge = Challenge::from_headers(resp.headers());
                    if !o.answer(self.url.as_str(), status, challenge).await? {
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

impl HttpTransport {
    /// A call inside a legacy session. It is registered before its POST
    /// goes out, so whatever the server sends on the `GET` stream while the
    /// call is open reaches it; the POST runs in its own task and feeds the
    /// same frames. Dropping the frames early tells the server
    /// (`notifications/cancelled`: in a session a closed stream is not a
    /// cancellation).
    fn session_call(&self, request: OutboundRequest) -> Frames {
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

    /// Opens the session's standalone `GET` stream once, as soon as there
    /// is a session (2025-11-25: the client MAY open it; servers send
    /// requests and notifications there that belong to no POST), and waits
    /// a moment for the server to take it. A server that offers none (405)
    /// is left alone.
    async fn open_listener(&self) {
        if !self.core.in_session() {
            return;
        }
        self.start_listener();
        let mut answered = self.listener.answered.subscribe();
        let _ = tokio::time::timeout(LISTENER_GRACE, answered.wait_for(|a| *a)).await;
    }

    fn start_listener(&self) {
        let Some(session) = self.core.lock_session().id.clone() else {
            return;
        };
        let mut s = lock(&self.listener.state);
        let fresh = match &*s {
            ListenerState::NotOpened => true,
            // The server forgot the session and the client opened another.
            ListenerState::Running(old, id) if *id != session => {
                old.abort();
                self.listener.answered.send_replace(false);
                true
            }
            _ => false,
        };
        if fresh {
            let core = self.core.clone();
            let answered = self.listener.answered.clone();
            let task = tokio::spawn(async move {
                let opened = async {
                    let request = core
                        .session_request(http::Method::GET)?
                        .header(ACCEPT, "text/event-stream");
                    match request.send().await {
                        Ok(resp) if resp.status().is_success() && is_event_stream(&resp) => {
                            Ok(resp)
                        }
                        Ok(resp) => Err(Error::http_status(
                            resp.status().as_u16(),
                            "the server offers no GET stream",
                        )),
                        Err(e) => Err(Error::transport_from("GET failed", e)),
                    }
                };
                let opened = opened.await;
                answered.send_replace(true);
                match opened {
                    Ok(resp) => listen(resp, core).await,
                    Err(e) => {
                        tracing::debug!(error = %e, "no standalone GET stream for this session");
                    }
                }
            });
            *s = ListenerState::Running(task.abort_handle(), session);
        }
    }
}

impl Core {
    /// Reads a POST's answer, JSON or SSE, into `tx`.
    async fn read_response(
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
    async fn route(&self, message: Message) {
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
}

/// Reads the session's `GET` stream until it ends; resumes it from the last
/// event id when the server gave ids.
async fn listen(mut resp: reqwest::Response, core: Core) {
    let max = core.options.max_body;
    let limits = Limits {
        max_bytes: max,
        ..Limits::default()
    };
    let mut decoder = sse::Decoder::new(max);
    let mut resumes = 0;
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let events = match decoder.feed(&chunk).map_err(sse_error) {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::debug!(error = %e, "the GET stream is unreadable");
                        return;
                    }
                };
                for event in events {
                    resumes = 0;
                    match decode_message(event.data.as_bytes(), &limits) {
                        Ok(m) => core.route(m).await,
                        Err(e) => {
                            tracing::debug!(error = %e.error, "an SSE event that is not JSON-RPC");
                        }
                    }
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, "the GET stream broke off"),
        }
        let Some(last_id) = decoder
            .last_id()
            .map(str::to_owned)
            .filter(|_| resumes < MAX_RESUMES)
        else {
            return;
        };
        resumes += 1;
        tokio::time::sleep(decoder.retry().map_or(DEFAULT_RETRY, |r| r.min(MAX_RETRY))).await;
        match resume(&core, &last_id).await {
            Ok(next) => {
                resp = next;
                decoder.restart();
            }
            Err(e) => {
                tracing::debug!(error = %e, "the GET stream cannot be resumed");
                return;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Transport for HttpTransport {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        Box::pin(async move {
            if self.core.in_session() {
                self.open_listener().await;
                return Ok(self.session_call(request));
            }
            let core = &self.core;
            let mut resp = core.post(request.body, Some(&request.headers)).await?;
            let status = resp.status();
            let max = core.options.max_body;
            if status.is_success() && is_event_stream(&resp) {
                let (tx, rx) = mpsc::channel(16);
                tokio::spawn(read_sse(resp, tx, max, core.clone()));
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
            let mut mcp = notification.headers;
            mcp.method.get_or_insert(notification.method);
            let mut resp = self.core.post(notification.body, Some(&mcp)).await?;
            let status = resp.status();
            if status.is_success() {
                // After `notifications/initialized` the session is ready
                // for its GET stream.
                self.open_listener().await;
                return Ok(());
            }
            let max = self.core.options.max_body;
            let body = read_body(&mut resp, max).await?;
            match decode_body(status, &body, max)? {
                Message::Error(e) => Err(Error::remote(e.error)),
                _ => Err(Error::transport(format!(
                    "notification refused with HTTP {status}"
                ))),
            }
        })
    }

    fn respond(&self, response: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut resp = self
                .core
                .post(response.body, Some(&response.headers))
                .await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(());
            }
            let max = self.core.options.max_body;
            let body = read_body(&mut resp, max).await?;
            match decode_body(status, &body, max)? {
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
            self.listener.stop();
            if !self.core.in_session() {
                return Ok(());
            }
            let request = self.core.session_request(http::Method::DELETE)?;
            self.core.lock_session().id = None;
            let url = &self.core.url;
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
        })
    }

    fn mirrors_headers(&self) -> bool {
        true
    }
}

/// Resumes a broken SSE stream: `GET` with `Last-Event-ID` (2025-11-25
/// resumability); an error when the server does not offer it.
async fn resume(transport: &Core, last_id: &str) -> Result<reqwest::Response, Error> {
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
    transport: Core,
) {
    let mut decoder = sse::Decoder::new(max);
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
            Ok(Some(c)) => match feed(&mut decoder, &c, &limits, &tx).await {
                Fed::More => continue,
                Fed::Done => return,
            },
            Ok(None) => None,
            Err(e) => Some(Error::transport_from("the SSE stream broke off", e)),
        };
        let Some(last_id) = decoder
            .last_id()
            .map(str::to_owned)
            .filter(|_| resumes < MAX_RESUMES)
        else {
            // The client reports a missing response when the stream just
            // ended.
            if let Some(e) = broke {
                let _ = tx.send(Err(e)).await;
            }
            return;
        };
        resumes += 1;
        let wait = decoder.retry().map_or(DEFAULT_RETRY, |r| r.min(MAX_RETRY));
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(wait) => {}
        }
        tracing::debug!(%last_id, ?wait, "resuming an SSE stream");
        match resume(&transport, &last_id).await {
            Ok(next) => {
                resp = next;
                decoder.restart();
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
    decoder: &mut sse::Decoder,
    chunk: &[u8],
    limits: &Limits,
    tx: &mpsc::Sender<Result<Message, Error>>,
) -> Fed {
    let events = match decoder.feed(chunk).map_err(sse_error) {
        Ok(events) => events,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return Fed::Done;
        }
    };
    for event in events {
        let frame = decode_message(event.data.as_bytes(), limits)
            .map_err(|e| Error::protocol(format!("an SSE event that is not JSON-RPC: {e}")));
        let last = matches!(frame, Ok(Message::Result(_) | Message::Error(_)) | Err(_));
        if tx.send(frame).await.is_err() || last {
            return Fed::Done;
        }
    }
    Fed::More
}

/// What an unreadable SSE stream is to the caller: a protocol error.
pub(crate) fn sse_error(e: SseError) -> Error {
    Error::protocol(e.to_string())
}
