//! The 2025-11-25 sessions of the endpoint: what is kept beside each (its
//! stream logs and the task feeding its `GET` stream), the `GET` that reads
//! a stream (resuming with `Last-Event-ID`), the `DELETE` that ends a
//! session, and the pump that moves a detached call's messages into its
//! stream's log.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tern_proto::{McpError, Principal};
use tern_server::{Reply, Session, SessionRefused, Sink};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::body::sse_response;
use super::streams::{GET_STREAM, Streams, parse_event_id};
use super::{App, SESSION_HEADER, error_response};

/// What this endpoint keeps beside a legacy session: its SSE streams.
pub(super) struct HttpSession {
    pub(super) streams: Arc<Streams>,
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

impl App {
    /// Keeps `session`, opened by `owner`, with a fresh `GET` stream fed by
    /// the server; the id, or the refusal at the session budgets.
    pub(super) fn keep(
        &self,
        session: Session,
        owner: Principal,
    ) -> Result<String, SessionRefused> {
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

pub(super) fn session_not_found() -> Response {
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
    // The same admission as a POST's (HTTP-S2: the Origin on every
    // request), and the scopes every request needs.
    let (principal, granted) = super::post::admit_headers(app, headers)?;
    super::post::check_scopes(app, None, granted.as_ref())?;
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
pub(super) async fn open_stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
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
pub(super) async fn end_session(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match named_session(&app, &headers) {
        Ok((id, principal, _)) => {
            app.sessions.close(&id, &principal);
            StatusCode::OK.into_response()
        }
        Err(r) => r,
    }
}

/// Moves a detached legacy request's messages into its stream's log, the
/// final response last.
pub(super) async fn pump(
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
