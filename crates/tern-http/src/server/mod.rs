//! Serving a Tern server over Streamable HTTP (DIGEST §7.3).
//!
//! Here are the endpoint's options, its authentication hook and its
//! router; `post` is the path of a `POST` (admission, a legacy session's
//! opening, running the request), `sessions` the 2025-11-25 sessions
//! (`GET`, `DELETE`, the stream logs of `streams`), and `body` the SSE
//! response of a request that sends before its reply.

mod body;
mod post;
mod sessions;
mod streams;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use tern_proto::decode::{Decoded, Message};
use tern_proto::finish::encode_error;
use tern_proto::{McpError, Principal};
use tern_server::{Reply, Server, SessionTable, ShareLimits, Shares};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use sessions::{HttpSession, end_session, open_stream};

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
    /// How long a request's body may take to arrive once its head has
    /// (default 30 s); past it the request gets 408 and nothing of it is
    /// kept.
    pub body_timeout: Duration,
    /// The bytes of request bodies being received at once, per principal
    /// (default 16 MiB) and in all (default 256 MiB): past either, the
    /// request gets 429 and what it sent is dropped, so bodies sent slowly
    /// hold a bounded amount of memory, and one principal's never another's.
    pub receiving: ShareLimits,
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
            body_timeout: Duration::from_secs(30),
            receiving: ShareLimits {
                per_principal: 16 * 1024 * 1024,
                total: 256 * 1024 * 1024,
            },
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
    /// The bytes of request bodies being received (`HttpOptions::receiving`).
    receiving: Shares,
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
        receiving: Shares::default(),
    });
    let mut router = Router::new().route(
        &path,
        post(post::handle).get(open_stream).delete(end_session),
    );
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

/// Serves `server` on `listener`, within the default
/// [`ConnectionLimits`](crate::ConnectionLimits), until the task is
/// dropped.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    options: HttpOptions,
) -> std::io::Result<()> {
    let app = router(server.clone(), options, Arc::new(Anonymous));
    let limits = crate::ConnectionLimits::default();
    crate::serve_router(listener, app, limits, Some(server), std::future::pending()).await
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

/// Every JSON reply of the endpoint, results and errors, goes out here.
/// A busy refusal (-31003) comes with its status (429, from
/// [`McpError::http_status`], or 503 for a full session table) and here,
/// and nowhere else, gains `Retry-After` in whole seconds, rounded up,
/// when its `data.retryAfterMs` says when to come back (RFC 9110 §10.2.3).
/// Only those statuses are read for it: a result is never parsed again.
fn json_response(status: u16, body: Bytes) -> Response {
    let retry_after = matches!(status, 429 | 503)
        .then(|| retry_after_secs(&body))
        .flatten();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// The `Retry-After` seconds of a busy refusal's body: its
/// `data.retryAfterMs` rounded up to a whole second, at least one.
fn retry_after_secs(body: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Reply {
        error: tern_types::ErrorObject,
    }
    let reply: Reply = serde_json::from_slice(body).ok()?;
    let ms = reply.error.busy_data()?.retry_after_ms?;
    Some(ms.div_ceil(1000).max(1))
}

fn error_response(e: &McpError, status: Option<StatusCode>) -> Response {
    let mut r = json_response(e.http_status(), encode_error(None, e));
    if let Some(s) = status {
        *r.status_mut() = s;
    }
    r
}

fn reply_response(reply: Reply) -> Response {
    match reply {
        Reply::Message { status, body } => json_response(status, body),
        Reply::Accepted => StatusCode::ACCEPTED.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}
