//! The SSE response of a request that sends notifications before its
//! reply: one `data:` event per JSON-RPC message, keep-alive comments while
//! it is quiet, and its handler aborted when the client goes away.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use tern_proto::sse;
use tern_server::Reply;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub(super) fn sse_response(body: Body) -> Response {
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
pub(super) struct AbortOnDrop(pub(super) Option<JoinHandle<Reply>>);

impl AbortOnDrop {
    pub(super) async fn join(&mut self) -> Option<Reply> {
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
pub(super) struct SseBody {
    queued: std::collections::VecDeque<Bytes>,
    rx: Option<mpsc::Receiver<Bytes>>,
    task: AbortOnDrop,
    last: Option<Reply>,
    keep_alive: tokio::time::Interval,
    done: bool,
}

impl SseBody {
    pub(super) fn streaming(
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

    pub(super) fn finished(queued: Vec<Bytes>, reply: Reply, keep_alive: Duration) -> Self {
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
