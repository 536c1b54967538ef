//! The contract between the client and the thing that moves its bytes.
//!
//! A [`Transport`] sends one JSON-RPC request and hands back its
//! [`Frames`]: the notifications that relate to the request (progress, log
//! messages, listen-stream notifications) and then the final response. It
//! also sends notifications. It never interprets results: the client
//! decides on the JSON-RPC body (HTTP-A4).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use serde_json::Value;
use tern_proto::McpHeaders;
use tern_proto::decode::Message;
use tern_types::RequestId;
use tokio::sync::mpsc;

use crate::Error;

/// A boxed, sendable future, as the object-safe traits of this crate
/// return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request, ready to go out.
#[derive(Clone, Debug)]
pub struct OutboundRequest {
    /// The request id; unique among the client's requests (BASE-3).
    pub id: RequestId,
    /// The method, also in the body.
    pub method: String,
    /// The encoded request, compact and on one line (STDIO-2).
    pub body: Bytes,
    /// The mirrored headers (values already encoded, HTTP-C16/C17):
    /// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the
    /// `Mcp-Param-*` of annotated arguments. Transports without a header
    /// layer ignore them.
    pub headers: McpHeaders,
    /// The request's `progressToken`, so a transport that multiplexes
    /// (stdio) can route progress notifications (PROG-S4).
    pub progress_token: Option<Value>,
}

/// One notification, ready to go out.
#[derive(Clone, Debug)]
pub struct OutboundNotification {
    /// The notification method, e.g. `notifications/cancelled`.
    pub method: String,
    /// The encoded notification, compact and on one line.
    pub body: Bytes,
    /// The headers to mirror: `Mcp-Method`, and in a legacy session its
    /// negotiated `MCP-Protocol-Version`.
    pub headers: McpHeaders,
}

/// The client's response to a request the server sent in a legacy session
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`, `ping`).
#[derive(Clone, Debug)]
pub struct OutboundResponse {
    /// The id of the server's request.
    pub id: RequestId,
    /// The encoded JSON-RPC response, compact and on one line.
    pub body: Bytes,
    /// The session's `MCP-Protocol-Version`.
    pub headers: McpHeaders,
}

/// Moves the client's messages. Implementations: the Streamable HTTP
/// client of `tern-http` and the stdio client of `tern-stdio`, or an
/// in-memory one in tests.
///
/// What the client assumes:
/// - [`request`](Self::request) returns once the request was handed over;
///   the response arrives through the returned [`Frames`], preceded by any
///   notifications that relate to this request.
/// - Frames end after the final response (a result or error with the
///   request's id). A transport that cannot deliver one yields an `Err`
///   frame or ends the stream; it never hangs silently once it knows the
///   request is lost (a child that exited, a closed connection).
/// - Dropping the [`Frames`] before the response means the client no longer
///   wants it: the transport cancels the request in its own way (closing
///   the HTTP stream, or `notifications/cancelled` on stdio, CANC-C1).
pub trait Transport: Send + Sync + 'static {
    /// Sends one request.
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>>;

    /// Sends one notification; nothing comes back.
    fn notify(&self, notification: OutboundNotification) -> BoxFuture<'_, Result<(), Error>>;

    /// Sends the answer to a request the server sent (2025-11-25 sessions
    /// only: a modern server never sends requests, BASE-7). Server requests
    /// arrive among a call's [`Frames`] as `Message::Request`.
    fn respond(&self, response: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        let _ = response;
        Box::pin(async {
            Err(Error::transport(
                "this transport cannot answer server requests",
            ))
        })
    }

    /// Ends the legacy session the transport holds, if any (HTTP `DELETE`
    /// with `Mcp-Session-Id`); a no-op otherwise.
    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    /// Whether this transport mirrors `_meta` and arguments into headers
    /// (HTTP). When true the client validates `x-mcp-header` annotations,
    /// drops tools whose annotations are invalid from `tools/list`
    /// (HTTP-XMH-C3) and computes `Mcp-Param-*` headers (HTTP-XMH-C4).
    fn mirrors_headers(&self) -> bool {
        false
    }

    /// The time this transport has spent so far waiting on something
    /// other than the server (a person signing in, say), the wait under
    /// way included: the client's request timeout bounds the server's
    /// time, so it does not count this.
    fn outside_time(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        (**self).request(request)
    }
    fn notify(&self, notification: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        (**self).notify(notification)
    }
    fn respond(&self, response: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        (**self).respond(response)
    }
    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        (**self).close()
    }
    fn mirrors_headers(&self) -> bool {
        (**self).mirrors_headers()
    }
    fn outside_time(&self) -> std::time::Duration {
        (**self).outside_time()
    }
}

/// The deadline of one request's exchange. The request timeout bounds the
/// server's time only: the time the transport spends waiting on the person
/// (an interactive sign-in) moves the deadline on as it passes, as the
/// caller moves it on for the time spent answering the server's own
/// requests (CANC-7).
pub(crate) struct ServerTime<'a> {
    transport: &'a dyn Transport,
    /// When the server's time is up, unless the person's moves it on.
    pub(crate) deadline: tokio::time::Instant,
    /// The transport's [`Transport::outside_time`] already added.
    counted: std::time::Duration,
}

impl<'a> ServerTime<'a> {
    pub(crate) fn new(transport: &'a dyn Transport, wait: std::time::Duration) -> Self {
        ServerTime {
            transport,
            deadline: instant() + wait,
            counted: transport.outside_time(),
        }
    }

    /// Awaits `fut` until the deadline, moved on by the person's time
    /// meanwhile; `None` once the server's time is up.
    pub(crate) async fn within<T>(&mut self, fut: impl Future<Output = T>) -> Option<T> {
        let mut fut = std::pin::pin!(fut);
        loop {
            if let Ok(done) = tokio::time::timeout_at(self.deadline, &mut fut).await {
                return Some(done);
            }
            let spent = self.transport.outside_time();
            let more = spent.saturating_sub(self.counted);
            if more.is_zero() {
                return None;
            }
            self.counted = spent;
            self.deadline += more;
        }
    }
}

type OnDrop = Box<dyn FnOnce() + Send>;

/// The incoming side of one request: its notifications, then its response.
///
/// A transport creates it from a channel it feeds. If the holder drops it
/// before the final response arrived, the cancel hook given to
/// [`with_cancel`](Self::with_cancel) runs (CANC-C1).
pub struct Frames {
    rx: mpsc::Receiver<Result<Message, Error>>,
    on_cancel: Option<OnDrop>,
    done: bool,
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames").field("done", &self.done).finish()
    }
}

impl Frames {
    /// Frames fed through `rx`; nothing special happens on drop.
    pub fn new(rx: mpsc::Receiver<Result<Message, Error>>) -> Self {
        Frames {
            rx,
            on_cancel: None,
            done: false,
        }
    }

    /// Frames fed through `rx`; `on_cancel` runs if they are dropped before
    /// a response (or an error) was read.
    pub fn with_cancel(
        rx: mpsc::Receiver<Result<Message, Error>>,
        on_cancel: impl FnOnce() + Send + 'static,
    ) -> Self {
        Frames {
            rx,
            on_cancel: Some(Box::new(on_cancel)),
            done: false,
        }
    }

    /// A request answered at once with this one message.
    pub fn ready(message: Message) -> Self {
        let (tx, rx) = mpsc::channel(1);
        // Cannot fail: the channel is new and has room for one.
        let _ = tx.try_send(Ok(message));
        Frames::new(rx)
    }

    /// The next frame; `None` when the transport ended the stream.
    pub async fn next(&mut self) -> Option<Result<Message, Error>> {
        let item = self.rx.recv().await;
        match &item {
            Some(Ok(Message::Result(_) | Message::Error(_))) | Some(Err(_)) | None => {
                self.done = true;
            }
            _ => {}
        }
        item
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        if !self.done
            && let Some(f) = self.on_cancel.take()
        {
            f();
        }
    }
}

/// The runtime's monotonic time, which the client's deadlines and waits
/// are measured on (tokio's paused time drives it in tests): the client's
/// one read of it, as `tern_server::clock` is the server's.
#[expect(
    clippy::disallowed_methods,
    reason = "the client's named home of monotonic time"
)]
pub(crate) fn instant() -> tokio::time::Instant {
    tokio::time::Instant::now()
}
