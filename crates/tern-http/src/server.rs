//! Serving a Tern server over Streamable HTTP (DIGEST §7.3).

use std::collections::HashMap;
use std::future::Future;
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
use bytes::Bytes;
use futures_util::FutureExt;
use tern_proto::decode::{Decoded, Message};
use tern_proto::finish::encode_error;
use tern_proto::sse;
use tern_proto::{Inbound, McpError, McpHeaders, Principal};
use tern_server::{Reply, Server, Session, SessionRefused, SessionTable, Sink};
use tern_types::legacy::Era;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::streams::{GET_STREAM, Streams, parse_event_id};

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

    /// The principal and the scopes its credential grants; `None` for a
    /// credential without scopes (a token file entry, anonymous), on which
    /// no scope is enforced.
    fn authenticate_scoped(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Principal, Option<Vec<String>>), Refusal> {
        self.authenticate(headers).map(|p| (p, None))
    }
}

/// This server as an OAuth protected resource (RFC 9728): the metadata
/// document served at `/.well-known/oauth-protected-resource{path}`, and
/// the scopes requests need.
#[derive(Clone, Debug, Default)]
pub struct ProtectedResource {
    /// The canonical URI of this MCP endpoint, the tokens' audience.
    pub resource: String,
    /// The issuers of the authorization servers clients sign in with.
    pub authorization_servers: Vec<String>,
    /// Every scope this server knows, advertised in the metadata.
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs.
    pub required_scopes: Vec<String>,
    /// Scopes a `tools/call` of the named tool needs besides those.
    pub tool_scopes: HashMap<String, Vec<String>>,
}

impl ProtectedResource {
    /// Where the metadata document lives (RFC 9728 §3.1: the well-known
    /// path inserted before the resource's path).
    pub fn metadata_url(&self) -> String {
        match self.resource.split_once("://") {
            Some((scheme, rest)) => {
                let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                format!(
                    "{scheme}://{host}/.well-known/oauth-protected-resource{}",
                    path.trim_end_matches('/')
                )
            }
            None => String::new(),
        }
    }

    fn document(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes_supported,
            "bearer_methods_supported": ["header"],
        })
    }

    /// The scopes of `granted` this request still lacks.
    fn missing(&self, decoded: Option<&Decoded>, granted: &[String]) -> Vec<String> {
        let mut needed = self.required_scopes.clone();
        if !self.tool_scopes.is_empty()
            && let Some(Decoded {
                message: Message::Request(r),
                ..
            }) = decoded
            && r.method == "tools/call"
            && let Some(name) = r
                .params
                .as_ref()
                .and_then(|p| p.get("name"))
                .and_then(|n| n.as_str())
            && let Some(more) = self.tool_scopes.get(name)
        {
            needed.extend(more.iter().cloned());
        }
        needed.retain(|s| !granted.contains(s));
        needed.dedup();
        needed
    }
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
    /// Serve as an OAuth protected resource (metadata, scopes).
    pub protected_resource: Option<ProtectedResource>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            max_body: 4 * 1024 * 1024,
            allowed_origins: Vec::new(),
            allow_loopback_origins: true,
            keep_alive: Duration::from_secs(15),
            protected_resource: None,
        }
    }
}

struct App {
    server: Server,
    options: HttpOptions,
    auth: Arc<dyn Authenticate>,
    /// Legacy sessions, bound to the principal that opened each (another
    /// principal presenting its id gets 404), under the server's session
    /// budgets (`Config::sessions`).
    sessions: SessionTable<HttpSession>,
}

/// What this endpoint keeps beside a legacy session: its SSE streams.
struct HttpSession {
    streams: Arc<Streams>,
    /// Feeds the session's `GET` stream (list changes, resource updates).
    feed: JoinHandle<()>,
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        // The session is over: nothing of it keeps running.
        self.feed.abort();
        self.streams.close();
    }
}

/// The `Mcp-Session-Id` header.
const SESSION_HEADER: &str = "mcp-session-id";

/// The axum router serving `server` at `options.path`. Modern requests are
/// stateless; `GET` and `DELETE` without a session get 405 (COMPAT-S3). A
/// legacy `initialize` opens an `Mcp-Session-Id` session (COMPAT-S1), whose
/// `GET` is its server-to-client stream and whose `DELETE` ends it.
pub fn router(server: Server, options: HttpOptions, auth: Arc<dyn Authenticate>) -> Router {
    let path = options.path.clone();
    let metadata = options.protected_resource.as_ref().map(|p| {
        let at = p
            .metadata_url()
            .split_once("/.well-known/")
            .map(|(_, rest)| format!("/.well-known/{rest}"))
            .unwrap_or_default();
        (at, p.document())
    });
    let app = Arc::new(App {
        sessions: SessionTable::new(&server),
        server,
        options,
        auth,
    });
    let mut router = Router::new().route(&path, post(handle).get(open_stream).delete(end_session));
    if let Some((at, doc)) = metadata.filter(|(at, _)| !at.is_empty()) {
        let body = Bytes::from(doc.to_string());
        router = router.route(
            &at,
            axum::routing::get(move || {
                let body = body.clone();
                async move { json_response(200, body) }
            }),
        );
    }
    router.with_state(app)
}

impl App {
    /// Keeps `session`, opened by `owner`, with a fresh `GET` stream fed by
    /// the server; the id, or the refusal at the session budgets.
    fn keep(&self, session: Session, owner: Principal) -> Result<String, SessionRefused> {
        let streams = Arc::new(Streams::default());
        streams.open(Some(GET_STREAM));
        let feed = {
            let (server, session, streams) =
                (self.server.clone(), session.clone(), streams.clone());
            tokio::spawn(async move {
                let (tx, mut rx) = mpsc::channel::<Bytes>(32);
                let forward = async {
                    while let Some(m) = rx.recv().await {
                        streams.push(GET_STREAM, &m, false);
                    }
                };
                tokio::join!(server.session_stream(&session, Sink::new(tx)), forward);
            })
        };
        self.sessions
            .open(session, owner, HttpSession { streams, feed })
            .map(|(id, _)| id)
    }
}

fn session_not_found() -> Response {
    error_response(
        &McpError::InvalidRequest("Session not found".into()),
        Some(StatusCode::NOT_FOUND),
    )
}

/// The session a `GET` or `DELETE` names, or the response refusing it.
#[expect(
    clippy::result_large_err,
    reason = "the error is the response itself, built once and sent at once"
)]
fn named_session(
    app: &App,
    headers: &HeaderMap,
) -> Result<(String, Principal, Arc<Streams>), Response> {
    let principal = app
        .auth
        .authenticate(headers)
        .map_err(Refusal::into_response)?;
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        // COMPAT-S3: no session, no stream.
        return Err(StatusCode::METHOD_NOT_ALLOWED.into_response());
    };
    match app.sessions.find(id, &principal) {
        Some((_, kept)) => Ok((id.to_owned(), principal, kept.streams.clone())),
        None => Err(session_not_found()),
    }
}

/// `GET` with a session: its server-to-client stream, kept alive until the
/// session ends or the client leaves; with `Last-Event-ID`, the stream that
/// id belongs to, from the event after it (2025-11-25 resumability).
async fn open_stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let (_, _, streams) = match named_session(&app, &headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let (stream, after) = match headers.get("last-event-id") {
        None => (GET_STREAM, None),
        Some(v) => match v.to_str().ok().and_then(parse_event_id) {
            Some((stream, n)) if streams.has(stream) => (stream, Some(n)),
            _ => {
                return error_response(
                    &McpError::InvalidRequest(
                        "Last-Event-ID names no stream this session still keeps".into(),
                    ),
                    Some(StatusCode::BAD_REQUEST),
                );
            }
        },
    };
    sse_response(Body::from_stream(streams.read(
        stream,
        after,
        app.options.keep_alive,
    )))
}

/// `DELETE` with a session ends it: every call running in it stops and
/// its streams end at once.
async fn end_session(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match named_session(&app, &headers) {
        Ok((id, principal, _)) => {
            app.sessions.close(&id, &principal);
            StatusCode::OK.into_response()
        }
        Err(r) => r,
    }
}

/// Serves `server` on `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    options: HttpOptions,
) -> std::io::Result<()> {
    let listener = crate::CoalescingListener::new(listener);
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

fn header_text(name: &str, value: &HeaderValue) -> Result<String, McpError> {
    value
        .to_str()
        .map(|s| s.trim().to_owned())
        .map_err(|_| McpError::HeaderMismatch {
            message: format!("{name} has invalid characters"),
            supported: None,
        })
}

/// The MCP request headers, read in one pass over the header map: the
/// parameter headers first, then the version, method and name (the first
/// of each when repeated), in that order of errors.
fn mcp_headers(headers: &HeaderMap) -> Result<McpHeaders, McpError> {
    const VERSION: &str = "mcp-protocol-version";
    const METHOD: &str = "mcp-method";
    const NAME: &str = "mcp-name";
    let mut params = Vec::new();
    let (mut version, mut method, mut name) = (None, None, None);
    for (header, value) in headers {
        let h = header.as_str();
        if let Some(suffix) = h.strip_prefix("mcp-param-") {
            params.push((suffix.to_owned(), header_text(h, value)?));
            continue;
        }
        let slot = match h {
            VERSION => &mut version,
            METHOD => &mut method,
            NAME => &mut name,
            _ => continue,
        };
        slot.get_or_insert(value);
    }
    let read = |name: &str, v: Option<&HeaderValue>| v.map(|v| header_text(name, v)).transpose();
    Ok(McpHeaders {
        protocol_version: read(VERSION, version)?,
        method: read(METHOD, method)?,
        name: read(NAME, name)?,
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

/// POST: the request's future is boxed at once. Unboxed, its several KiB
/// were copied at each step of the router's own futures.
fn handle(
    State(app): State<Arc<App>>,
    request: axum::extract::Request,
) -> Pin<Box<dyn Future<Output = Response> + Send>> {
    Box::pin(post_message(app, request))
}

async fn post_message(app: Arc<App>, request: axum::extract::Request) -> Response {
    // The parts are taken, not extracted: a `HeaderMap` extractor copies
    // every header of every request.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let (principal, body, decoded) = match admit(&app, &headers, body).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let mcp = match mcp_headers(&headers) {
        Ok(h) => h,
        Err(e) => return error_response(&e, None),
    };
    // COMPAT-S1: a message in a legacy session, a legacy `initialize`
    // opening one, or a modern request.
    let named = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    let (session, streams) = match named {
        Some(id) => match app.sessions.find(id, &principal) {
            Some((s, kept)) => (Some(s), Some(kept.streams.clone())),
            None => return session_not_found(),
        },
        None => (None, None),
    };
    // The era: a legacy `initialize` opens a session; inside one, a legacy
    // request outlives its stream: only a cancellation or the session's end
    // stops it (2025-11-25 cancellation), which the server sees to. A
    // modern request in a session is still stateless, and its stream's end
    // cancels it (HTTP-S30).
    let legacy = |in_session| {
        decoded
            .as_ref()
            .is_ok_and(|d| d.era(in_session) == Some(Era::Legacy))
    };
    let opening = session.is_none() && legacy(false);
    let sse = accepts_sse(&headers);
    let legacy_call = streams.filter(|_| sse && legacy(true));
    let owner = principal.clone();
    let inbound = Inbound {
        body,
        headers: Some(mcp),
        principal,
    };
    if opening {
        return open_session(&app, decoded, inbound, owner).await;
    }
    run(&app, session, legacy_call, decoded, inbound, sse).await
}

/// HTTP-A5 steps 2 and 3 and the body: the Origin, the credentials, the
/// size, the message decoded (once: the scopes, the era and the session's
/// call look at it, and the server takes it as it is; a body that does not
/// decode gets its refusal where the server would give it), and the
/// scopes this request needs.
async fn admit(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Principal, Bytes, Result<Decoded, Reply>), Response> {
    // Step 2, HTTP-S2.
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, &app.options));
        if !ok {
            return Err(error_response(
                &McpError::InvalidRequest("Origin not allowed".into()),
                Some(StatusCode::FORBIDDEN),
            ));
        }
    }
    // Step 3.
    let (principal, granted) = app
        .auth
        .authenticate_scoped(headers)
        .map_err(Refusal::into_response)?;
    let too_large = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > app.options.max_body);
    if too_large {
        return Err(error_response(&McpError::PayloadTooLarge, None));
    }
    let Ok(body) = axum::body::to_bytes(body, app.options.max_body).await else {
        return Err(error_response(&McpError::PayloadTooLarge, None));
    };
    let decoded = app.server.decode(&body);
    // A token without the scopes this request needs: 403 naming them, so
    // the client can step up (RFC 6750 §3.1, DIGEST §8).
    if let (Some(p), Some(granted)) = (&app.options.protected_resource, &granted) {
        let missing = p.missing(decoded.as_ref().ok(), granted);
        if !missing.is_empty() {
            let mut needed: Vec<String> = granted.clone();
            needed.extend(missing);
            let challenge = crate::auth::challenge(
                Some("insufficient_scope"),
                Some(&needed.join(" ")),
                Some(&p.metadata_url()),
            );
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                challenge: Some(challenge),
            }
            .into_response());
        }
    }
    Ok((principal, body, decoded))
}

/// A legacy `initialize` outside a session: the server answers it in a new
/// session, kept under a fresh id if it opened (within the session
/// budgets).
async fn open_session(
    app: &App,
    decoded: Result<Decoded, Reply>,
    inbound: Inbound,
    owner: Principal,
) -> Response {
    let session = app.server.session();
    // Boxed: awaited inline, the whole request's future would sit inside
    // this one, and this one is moved on every request.
    let reply = match decoded {
        Ok(d) => {
            Box::pin(
                app.server
                    .handle_in_decoded(&session, d, inbound, Sink::none()),
            )
            .await
        }
        Err(refused) => refused,
    };
    if !session.is_open() {
        return reply_response(reply);
    }
    let id = match app.keep(session, owner) {
        Ok(id) => id,
        Err(refused) => {
            return error_response(
                &McpError::InvalidRequest(refused.message().into()),
                StatusCode::from_u16(refused.http_status()).ok(),
            );
        }
    };
    let mut r = reply_response(reply);
    if let Ok(v) = HeaderValue::from_str(&id) {
        r.headers_mut().insert(SESSION_HEADER, v);
    }
    r
}

/// Runs the request and answers: JSON when it sends nothing before its
/// reply, else an SSE stream; a legacy call on its session's stream log.
async fn run(
    app: &App,
    session: Option<Session>,
    mut legacy_call: Option<Arc<Streams>>,
    decoded: Result<Decoded, Reply>,
    inbound: Inbound,
    sse: bool,
) -> Response {
    let (tx, mut rx) = mpsc::channel::<Bytes>(32);
    let sink = if sse { Sink::new(tx) } else { Sink::none() };
    let server = app.server.clone();
    // The request runs inside this response's future until it sends its
    // first notification: most requests never do, and a task of their own
    // would cost a spawn, a scheduler round and a copy of the future. A
    // legacy call is spawned at once: a cancellation aborts it by handle.
    let mut request: Pin<Box<dyn Future<Output = Reply> + Send>> = Box::pin(
        std::panic::AssertUnwindSafe(async move {
            match (session, decoded) {
                // A refused body still counts as the session's activity:
                // the server sees to that (and refuses it again; this is
                // the error path only).
                (Some(s), Err(_)) => Box::pin(server.handle_in(&s, inbound, sink)).await,
                (None, Err(refused)) => refused,
                // Boxed: a session's future is large, and inline it would
                // make every request's future as large, copied whole into
                // the box below.
                (Some(s), Ok(d)) => Box::pin(server.handle_in_decoded(&s, d, inbound, sink)).await,
                (None, Ok(d)) => server.handle_decoded(d, inbound, sink).await,
            }
        })
        .catch_unwind()
        .map(|r| r.unwrap_or(Reply::Closed)),
    );
    let mut task = AbortOnDrop(None);
    if legacy_call.is_some() {
        task.0 = Some(tokio::spawn(request));
        request = Box::pin(std::future::pending());
    }
    let first = tokio::select! {
        biased;
        done = async { if task.0.is_some() { task.join().await } else { Some((&mut request).await) } } => {
            let reply = done.unwrap_or(Reply::Closed);
            // Notifications sent just before the result still go first.
            let mut queued = Vec::new();
            while let Ok(n) = rx.try_recv() {
                queued.push(n);
            }
            if queued.is_empty() {
                return reply_response(reply);
            }
            return sse_response(Body::from_stream(SseBody::finished(queued, reply, app.options.keep_alive)));
        }
        Some(n) = rx.recv() => n,
    };
    let keep_alive = app.options.keep_alive;
    match (legacy_call.take(), task.0.take()) {
        (Some(streams), Some(handle)) => {
            // Detached: the request runs on if the client loses the stream,
            // and a GET with Last-Event-ID picks up where it left off.
            let stream = streams.open(None);
            streams.push(stream, &first, false);
            tokio::spawn(pump(streams.clone(), stream, rx, handle));
            sse_response(Body::from_stream(streams.read(stream, None, keep_alive)))
        }
        (_, handle) => {
            // Streaming from here on: the request moves to a task of its
            // own, where it goes on from where it stopped.
            let task = AbortOnDrop(Some(handle.unwrap_or_else(|| tokio::spawn(request))));
            sse_response(Body::from_stream(SseBody::streaming(
                first, rx, task, keep_alive,
            )))
        }
    }
}

/// Moves a detached legacy request's messages into its stream's log, the
/// final response last.
async fn pump(
    streams: Arc<Streams>,
    stream: u64,
    mut rx: mpsc::Receiver<Bytes>,
    mut task: JoinHandle<Reply>,
) {
    let reply = loop {
        tokio::select! {
            biased;
            Some(n) = rx.recv() => streams.push(stream, &n, false),
            done = &mut task => break done.ok(),
        }
    };
    while let Ok(n) = rx.try_recv() {
        streams.push(stream, &n, false);
    }
    match reply {
        Some(Reply::Message { body, .. }) => streams.push(stream, &body, true),
        // Cancelled or its session ended: the stream ends now, without a
        // response (2025-11-25 cancellation).
        _ => streams.end(stream),
    }
}

fn reply_response(reply: Reply) -> Response {
    match reply {
        Reply::Message { status, body } => json_response(status, body),
        Reply::Accepted => StatusCode::ACCEPTED.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

fn sse_response(body: Body) -> Response {
    let mut r = Response::new(body);
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

impl futures_core::Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(n) = this.queued.pop_front() {
            return Poll::Ready(Some(Ok(sse::event(None, &n))));
        }
        if let Some(rx) = this.rx.as_mut() {
            match rx.poll_recv(cx) {
                Poll::Ready(Some(n)) => return Poll::Ready(Some(Ok(sse::event(None, &n)))),
                // The handler finished and dropped its sink.
                Poll::Ready(None) => this.rx = None,
                Poll::Pending => {
                    if this.keep_alive.poll_tick(cx).is_ready() {
                        return Poll::Ready(Some(Ok(sse::keep_alive())));
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
            Some(Reply::Message { body, .. }) => Poll::Ready(Some(Ok(sse::event(None, &body)))),
            _ => Poll::Ready(None),
        }
    }
}

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
