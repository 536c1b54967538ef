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
//!
//! Here are the options, the transport and its [`Transport`] methods;
//! `post` sends one message and reads its answer, `session` keeps the
//! 2025-11-25 session and routes what its server sends outside a call's
//! stream, and `stream` reads SSE streams (the session's `GET` stream among
//! them) and resumes them.

mod authorizer;
mod post;
mod session;
mod stream;

pub(crate) use authorizer::Authorizer;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use tern_client::{
    BoxFuture, Error, Frames, OutboundNotification, OutboundRequest, OutboundResponse, Transport,
};
use tern_proto::decode::{Limits, Message};
use tern_proto::sse::SseError;
use tokio::sync::mpsc;

use crate::oauth::OAuth;
use post::{decode_body, is_event_stream, read_body};
use session::{Calls, Session};
use stream::{Listener, read_sse};

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
    /// Signs the transport in, when it does.
    authorizer: Option<Arc<dyn Authorizer>>,
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
        let authorizer = options
            .oauth
            .clone()
            .map(|o| -> Arc<dyn Authorizer> { Arc::new(OAuth::new(o, http.clone())) });
        Ok(HttpTransport {
            core: Core {
                http,
                url,
                options,
                session: Arc::default(),
                calls: Arc::default(),
                authorizer,
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

impl Transport for HttpTransport {
    /// The person's time signing in (the authorizer's).
    fn outside_time(&self) -> Duration {
        self.core
            .authorizer
            .as_ref()
            .map_or(Duration::ZERO, |a| a.person_time())
    }

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
            self.core.end_session().await
        })
    }

    fn mirrors_headers(&self) -> bool {
        true
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What an unreadable SSE stream is to the caller: a protocol error.
pub(crate) fn sse_error(e: SseError) -> Error {
    Error::protocol(e.to_string())
}
