//! Serving a Tern server over Streamable HTTP (DIGEST §7.3).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::{Bytes, BytesMut};
use tern_proto::finish::encode_error;
use tern_proto::{Inbound, McpError, McpHeaders, Principal};
use tern_server::{Reply, Server, Sink};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Why a request was refused before it reached the server: 401 with a
/// `WWW-Authenticate` challenge, or 403 (DIGEST §8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 401 or 403.
    pub status: StatusCode,
    /// The `WWW-Authenticate` header value, e.g. `Bearer resource_metadata="…"`.
    pub challenge: Option<String>,
}

impl Refusal {
    fn into_response(self) -> Response {
        let mut r = error_response(
            &McpError::InvalidRequest("Unauthorized".into()),
            Some(self.status),
        );
        if let Some(v) = self.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}

/// Turns a request's headers into a principal, or refuses it (HTTP-A5 step
/// 3). The default accepts everyone as anonymous.
pub trait Authenticate: Send + Sync + 'static {
    /// The principal behind these headers, or why they are refused.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Refusal>;
}

/// Everyone is anonymous.
#[derive(Clone, Copy, Debug, Default)]
pub struct Anonymous;

impl Authenticate for Anonymous {
    fn authenticate(&self, _headers: &HeaderMap) -> Result<Principal, Refusal> {
        Ok(Principal::Anonymous)
    }
}

/// Options of the HTTP endpoint.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The MCP endpoint path (default `/mcp`).
    pub path: String,
    /// The largest body read; larger ones get 413 without being read whole
    /// (default 4 MiB).
    pub max_body: usize,
    /// Origins allowed besides loopback ones (exact `scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Allow `http(s)://localhost|127.0.0.1|[::1]` with any port (default
    /// true; HTTP-A1).
    pub allow_loopback_origins: bool,
    /// How often a listen stream sends an SSE comment to stay alive.
    pub keep_alive: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            max_body: 4 * 1024 * 1024,
            allowed_origins: Vec::new(),
            allow_loopback_origins: true,
            keep_alive: Duration::from_secs(15),
        }
    }
}

struct App {
    server: Server,
    options: HttpOptions,
    auth: Arc<dyn Authenticate>,
}

/// The axum router serving `server` at `options.path`. `GET` and `DELETE`
/// get 405 (COMPAT-S3): this revision has no sessions and no GET stream.
pub fn router(server: Server, options: HttpOptions, auth: Arc<dyn Authenticate>) -> Router {
    let path = options.path.clone();
    let app = Arc::new(App {
        server,
        options,
        auth,
    });
    Router::new().route(&path, post(handle)).with_state(app)
}

/// Serves `server` on `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    options: HttpOptions,
) -> std::io::Result<()> {
    axum::serve(listener, router(server, options, Arc::new(Anonymous))).await
}

/// Binds `addr` and serves `server` there; returns the bound address and
/// the serving task.
pub async fn spawn(
    addr: SocketAddr,
    server: Server,
    options: HttpOptions,
) -> std::io::Result<(SocketAddr, JoinHandle<std::io::Result<()>>)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((local, tokio::spawn(serve(listener, server, options))))
}

fn json_response(status: u16, body: Bytes) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error_response(e: &McpError, status: Option<StatusCode>) -> Response {
    let mut r = json_response(e.http_status(), encode_error(None, e));
    if let Some(s) = status {
        *r.status_mut() = s;
    }
    r
}

/// HTTP-A1: absent Origin is allowed (non-browser clients); a present one
/// must be loopback or configured.
fn origin_allowed(origin: &str, options: &HttpOptions) -> bool {
    if options.allowed_origins.iter().any(|o| o == origin) {
        return true;
    }
    if !options.allow_loopback_origins {
        return false;
    }
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let Some(hostport) = rest else { return false };
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, port)) if port.is_empty() || port.starts_with(':') => {
                return h == "::1" && port_ok(port);
            }
            _ => return false,
        }
    } else {
        match hostport.split_once(':') {
            Some((h, port)) => {
                if !port_ok(&format!(":{port}")) {
                    return false;
                }
                h
            }
            None => hostport,
        }
    };
    host == "localhost" || host == "127.0.0.1"
}

fn port_ok(port: &str) -> bool {
    port.is_empty() || port[1..].chars().all(|c| c.is_ascii_digit()) && port.len() > 1
}

fn header_str(headers: &HeaderMap, name: &str) -> Result<Option<String>, McpError> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => {
            v.to_str()
                .map(|s| Some(s.trim().to_owned()))
                .map_err(|_| McpError::HeaderMismatch {
                    message: format!("{name} has invalid characters"),
                    supported: None,
                })
        }
    }
}

fn mcp_headers(headers: &HeaderMap) -> Result<McpHeaders, McpError> {
    let mut params = Vec::new();
    for (name, value) in headers {
        if let Some(suffix) = name.as_str().strip_prefix("mcp-param-") {
            let v = value.to_str().map_err(|_| McpError::HeaderMismatch {
                message: format!("{name} has invalid characters"),
                supported: None,
            })?;
            params.push((suffix.to_owned(), v.trim().to_owned()));
        }
    }
    Ok(McpHeaders {
        protocol_version: header_str(headers, "mcp-protocol-version")?,
        method: header_str(headers, "mcp-method")?,
        name: header_str(headers, "mcp-name")?,
        params,
    })
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    // Lenient (DIGEST §11 A16): no Accept at all allows either form.
    // Several Accept lines form one list (RFC 9110 §5.3).
    let mut values = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .peekable();
    if values.peek().is_none() {
        return true;
    }
    values.any(|a| a.contains("text/event-stream") || a.contains("*/*"))
}

async fn handle(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    // HTTP-A5 step 2, HTTP-S2.
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, &app.options));
        if !ok {
            return error_response(
                &McpError::InvalidRequest("Origin not allowed".into()),
                Some(StatusCode::FORBIDDEN),
            );
        }
    }
    // Step 3.
    let principal = match app.auth.authenticate(&headers) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let too_large = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > app.options.max_body);
    if too_large {
        return error_response(&McpError::PayloadTooLarge, None);
    }
    let Ok(body) = axum::body::to_bytes(body, app.options.max_body).await else {
        return error_response(&McpError::PayloadTooLarge, None);
    };
    let mcp = match mcp_headers(&headers) {
        Ok(h) => h,
        Err(e) => return error_response(&e, None),
    };
    let inbound = Inbound {
        body,
        headers: Some(mcp),
        principal,
    };
    let sse = accepts_sse(&headers);
    let (tx, mut rx) = mpsc::channel::<Bytes>(32);
    let sink = if sse { Sink::new(tx) } else { Sink::none() };
    let server = app.server.clone();
    let mut task = AbortOnDrop(Some(tokio::spawn(async move {
        server.handle(inbound, sink).await
    })));
    let first = tokio::select! {
        biased;
        done = task.join() => {
            let reply = done.unwrap_or(Reply::Closed);
            // Notifications sent just before the result still go first.
            let mut queued = Vec::new();
            while let Ok(n) = rx.try_recv() {
                queued.push(n);
            }
            if queued.is_empty() {
                return reply_response(reply);
            }
            return sse_response(SseBody::finished(queued, reply, app.options.keep_alive));
        }
        Some(n) = rx.recv() => n,
    };
    sse_response(SseBody::streaming(first, rx, task, app.options.keep_alive))
}

fn reply_response(reply: Reply) -> Response {
    match reply {
        Reply::Message { status, body } => json_response(status, body),
        Reply::Accepted => StatusCode::ACCEPTED.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

fn sse_response(body: SseBody) -> Response {
    let mut r = Response::new(Body::from_stream(body));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // HTTP-S19.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// Aborts the handler task when the response is dropped: a closed stream
/// cancels the request (CANC-S2, HTTP-S30).
struct AbortOnDrop(Option<JoinHandle<Reply>>);

impl AbortOnDrop {
    async fn join(&mut self) -> Option<Reply> {
        match self.0.as_mut() {
            Some(h) => {
                let r = h.await.ok();
                self.0 = None;
                r
            }
            None => std::future::pending().await,
        }
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

/// An SSE response: one `data:` event per JSON-RPC message, no `event:` or
/// `id:` fields (HTTP-A3); the final response ends the stream (HTTP-S18).
struct SseBody {
    queued: std::collections::VecDeque<Bytes>,
    rx: Option<mpsc::Receiver<Bytes>>,
    task: AbortOnDrop,
    last: Option<Reply>,
    keep_alive: tokio::time::Interval,
    done: bool,
}

impl SseBody {
    fn streaming(
        first: Bytes,
        rx: mpsc::Receiver<Bytes>,
        task: AbortOnDrop,
        keep_alive: Duration,
    ) -> Self {
        let mut interval = tokio::time::interval(keep_alive);
        interval.reset();
        SseBody {
            queued: [first].into(),
            rx: Some(rx),
            task,
            last: None,
            keep_alive: interval,
            done: false,
        }
    }

    fn finished(queued: Vec<Bytes>, reply: Reply, keep_alive: Duration) -> Self {
        SseBody {
            queued: queued.into(),
            rx: None,
            task: AbortOnDrop(None),
            last: Some(reply),
            keep_alive: tokio::time::interval(keep_alive),
            done: false,
        }
    }
}

fn event(data: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(data.len() + 8);
    b.extend_from_slice(b"data: ");
    b.extend_from_slice(data);
    b.extend_from_slice(b"\n\n");
    b.freeze()
}

impl futures_core::Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(n) = this.queued.pop_front() {
            return Poll::Ready(Some(Ok(event(&n))));
        }
        if let Some(rx) = this.rx.as_mut() {
            match rx.poll_recv(cx) {
                Poll::Ready(Some(n)) => return Poll::Ready(Some(Ok(event(&n)))),
                // The handler finished and dropped its sink.
                Poll::Ready(None) => this.rx = None,
                Poll::Pending => {
                    if this.keep_alive.poll_tick(cx).is_ready() {
                        return Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n"))));
                    }
                    return Poll::Pending;
                }
            }
        }
        if this.last.is_none()
            && let Some(h) = this.task.0.as_mut()
        {
            match Pin::new(h).poll(cx) {
                Poll::Ready(r) => {
                    this.task.0 = None;
                    this.last = Some(r.unwrap_or(Reply::Closed));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        this.done = true;
        match this.last.take() {
            Some(Reply::Message { body, .. }) => Poll::Ready(Some(Ok(event(&body)))),
            _ => Poll::Ready(None),
        }
    }
}

use std::future::Future as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_pass_and_others_fail() {
        let o = HttpOptions::default();
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8080",
            "http://[::1]:9",
            "http://[::1]",
        ] {
            assert!(origin_allowed(ok, &o), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "http://localhost.evil.com",
            "http://127.0.0.1.evil:80",
            "null",
            "http://localhost:abc",
            "ftp://localhost",
        ] {
            assert!(!origin_allowed(bad, &o), "{bad}");
        }
        let o = HttpOptions {
            allowed_origins: vec!["https://app.example.com".into()],
            ..HttpOptions::default()
        };
        assert!(origin_allowed("https://app.example.com", &o));
    }
}
