//! The path of a `POST`: admission (HTTP-A5 steps 2 and 3: Origin,
//! credentials, size, scopes), the MCP headers, a legacy `initialize`
//! opening a session, and running the request to a JSON or SSE answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::FutureExt;
use tern_proto::decode::{Decoded, Message};
use tern_proto::finish::encode_error;
use tern_proto::{Inbound, McpError, McpHeaders, Principal};
use tern_server::{Reply, Session, Sink};
use tern_types::legacy::{Era, LEGACY_VERSIONS};
use tokio::sync::mpsc;

use super::body::{AbortOnDrop, SseBody, sse_response};
use super::sessions::{pump, session_not_found};
use super::streams::Streams;
use super::{App, HttpOptions, Refusal, SESSION_HEADER, error_response, reply_response};

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
pub(super) fn handle(
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
    // 2025-11-25 transport: in a session, a version header that names no
    // version of that era is refused with 400 (COMPAT-A2); absent, the
    // session's own version stands.
    if session.is_some()
        && legacy(true)
        && mcp
            .protocol_version
            .as_deref()
            .is_some_and(|v| !LEGACY_VERSIONS.contains(&v))
    {
        let e = McpError::InvalidRequest(format!(
            "unsupported MCP-Protocol-Version; a session speaks {}",
            LEGACY_VERSIONS.join(", ")
        ));
        return error_response(&e, Some(StatusCode::BAD_REQUEST));
    }
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

/// HTTP-A5 steps 2 and 3, for every method on the endpoint (`POST`, and a
/// session's `GET` and `DELETE`): the Origin (HTTP-S2), then the
/// credentials; the scopes are left to the caller, which knows what the
/// request asks.
#[expect(
    clippy::result_large_err,
    reason = "the error is the response itself, built once and sent at once"
)]
pub(super) fn admit_headers(
    app: &App,
    headers: &HeaderMap,
) -> Result<(Principal, Option<Vec<String>>), Response> {
    // Step 2, HTTP-S2.
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, &app.options));
        if !ok {
            app.server.metrics().refused("origin");
            return Err(error_response(
                &McpError::InvalidRequest("Origin not allowed".into()),
                Some(StatusCode::FORBIDDEN),
            ));
        }
    }
    // Step 3.
    app.auth.authenticate_scoped(headers).map_err(|refusal| {
        let reason = if refusal.status == StatusCode::UNAUTHORIZED {
            "unauthorized"
        } else {
            "forbidden"
        };
        app.server.metrics().refused(reason);
        refusal.into_response()
    })
}

/// A token without the scopes a request needs (`decoded`, or none for a
/// session's `GET` and `DELETE`): 403 naming them, so the client can step
/// up (RFC 6750 §3.1, DIGEST §8).
#[expect(
    clippy::result_large_err,
    reason = "the error is the response itself, built once and sent at once"
)]
pub(super) fn check_scopes(
    app: &App,
    decoded: Option<&Decoded>,
    granted: Option<&Vec<String>>,
) -> Result<(), Response> {
    let (Some(p), Some(granted)) = (&app.options.protected_resource, granted) else {
        return Ok(());
    };
    let missing = p.missing(decoded, granted);
    if missing.is_empty() {
        return Ok(());
    }
    app.server.metrics().refused("insufficient_scope");
    let mut needed: Vec<String> = granted.clone();
    needed.extend(missing);
    let challenge = crate::auth::challenge(
        Some("insufficient_scope"),
        Some(&needed.join(" ")),
        Some(&p.metadata_url()),
    );
    Err(Refusal {
        status: StatusCode::FORBIDDEN,
        challenge: Some(challenge),
    }
    .into_response())
}

/// Admission of a `POST` ([`admit_headers`]), then the size, the message
/// decoded (once: the scopes, the era and the session's call look at it,
/// and the server takes it as it is; a body that does not decode gets its
/// refusal where the server would give it), and the scopes this request
/// needs.
async fn admit(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Principal, Bytes, Result<Decoded, Reply>), Response> {
    let (principal, granted) = admit_headers(app, headers)?;
    let too_large = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > app.options.max_body);
    if too_large {
        app.server.metrics().refused("too_large");
        return Err(error_response(&McpError::PayloadTooLarge, None));
    }
    let body = receive(app, &principal, body).await?;
    let decoded = app.server.decode(&body);
    check_scopes(app, decoded.as_ref().ok(), granted.as_ref())?;
    Ok((principal, body, decoded))
}

/// The body, read within `HttpOptions::body_timeout` and under the budget
/// of bodies being received (`HttpOptions::receiving`), counted as it
/// arrives: a peer sending bodies slowly, or many at once, holds a bounded
/// amount of memory for a bounded time, and never another principal's
/// share. What a refused body sent is dropped at once.
async fn receive(app: &App, principal: &Principal, body: Body) -> Result<Bytes, Response> {
    use futures_util::StreamExt as _;
    let limits = app.options.receiving;
    let max = app.options.max_body;
    let mut held = app
        .receiving
        .take(principal, 0, limits)
        .map_err(|full| busy(app, full))?;
    let mut stream = body.into_data_stream();
    // Most bodies arrive as one chunk, handed on without a copy.
    let mut first: Option<Bytes> = None;
    let mut more = bytes::BytesMut::new();
    let read = async {
        let mut len = 0;
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else {
                let e = McpError::InvalidRequest("the request body was cut off".into());
                return Err(error_response(&e, Some(StatusCode::BAD_REQUEST)));
            };
            len += chunk.len();
            if len > max {
                app.server.metrics().refused("too_large");
                return Err(error_response(&McpError::PayloadTooLarge, None));
            }
            held.grow(chunk.len(), limits)
                .map_err(|full| busy(app, full))?;
            match &first {
                None => first = Some(chunk),
                Some(f) => {
                    if more.is_empty() {
                        more.extend_from_slice(f);
                    }
                    more.extend_from_slice(&chunk);
                }
            }
        }
        Ok(())
    };
    match tokio::time::timeout(app.options.body_timeout, read).await {
        Ok(Ok(())) if more.is_empty() => Ok(first.unwrap_or_default()),
        Ok(Ok(())) => Ok(more.freeze()),
        Ok(Err(refused)) => Err(refused),
        Err(_) => {
            app.server.metrics().limit_reached("body_timeout");
            let e = McpError::timeout(
                "body_timeout",
                format!(
                    "the request body did not arrive within {:?}",
                    app.options.body_timeout
                ),
            );
            // HTTP's own status for a body that did not come in time.
            Err(error_response(&e, Some(StatusCode::REQUEST_TIMEOUT)))
        }
    }
}

/// The busy refusal of a body past its budget (-31003, HTTP 429), counted.
/// Bodies being received end within `body_timeout`, so the room comes
/// back shortly.
fn busy(app: &App, full: tern_server::Full) -> Response {
    let (limit, who) = match full {
        tern_server::Full::Principal => ("body_bytes_per_principal", "for this client"),
        tern_server::Full::Total => ("body_bytes", "in all"),
    };
    app.server.metrics().limit_reached(limit);
    let e = McpError::busy(
        limit,
        format!("too many request bodies are being received {who}; send again shortly"),
        Some(tern_server::RETRY_SHORTLY),
    );
    error_response(&e, None)
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
    // BASE-5: a refusal after the initialize ran answers its id.
    let request_id = match &decoded {
        Ok(Decoded {
            message: Message::Request(r),
            ..
        }) => Some(r.id.clone()),
        _ => None,
    };
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
            let e = refused.error();
            return super::json_response(refused.http_status(), encode_error(request_id, &e));
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
