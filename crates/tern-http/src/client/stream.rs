//! Reading SSE streams: a `POST`'s answer, the session's standalone `GET`
//! stream, and the resumption of either with `GET` and `Last-Event-ID`
//! after the server's `retry` delay (2025-11-25 resumability).

use std::sync::Mutex;
use std::time::Duration;

use http::HeaderValue;
use http::header::ACCEPT;
use tern_client::Error;
use tern_proto::decode::{Limits, Message, decode_message};
use tern_proto::sse;
use tokio::sync::mpsc;

use super::post::{bad_header, is_event_stream};
use super::{Core, HttpTransport, lock, sse_error};

/// The session's standalone `GET` stream: opened once, after the session
/// exists; aborted when the session ends or the transport is dropped.
#[derive(Debug)]
pub(super) struct Listener {
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
    pub(super) fn stop(&self) {
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

/// How often a broken SSE stream is resumed before it is given up
/// (SECURITY.md, "`tern call` and tern-client").
const MAX_RESUMES: u32 = 5;
/// The wait before resuming when the server named none (SSE: the client
/// picks), and the least and the most a server's `retry` can make the
/// client wait: `retry: 0` must not turn resuming into a busy loop.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
const MIN_RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How long the session's `GET` stream must stay open to earn its resumes
/// back. Events do not: a server that sends one and closes would refill
/// them every time. So the stream costs at most `1 + MAX_RESUMES` `GET`s a
/// minute, however the server behaves.
const SETTLED: Duration = Duration::from_secs(60);

/// The resumes of one SSE stream, the one budget both kinds of stream
/// draw on.
#[derive(Debug, Default)]
struct Resumes {
    used: u32,
}

impl Resumes {
    /// The event id to resume from and how long to wait first; none when
    /// the server gave no ids or the stream has had its resumes.
    fn next(&mut self, decoder: &sse::Decoder) -> Option<(String, Duration)> {
        let last_id = decoder.last_id()?.to_owned();
        if self.used >= MAX_RESUMES {
            return None;
        }
        self.used += 1;
        let wait = decoder
            .retry()
            .map_or(DEFAULT_RETRY, |r| r.clamp(MIN_RETRY, MAX_RETRY));
        Some((last_id, wait))
    }
}

impl HttpTransport {
    /// Opens the session's standalone `GET` stream once, as soon as there
    /// is a session (2025-11-25: the client MAY open it; servers send
    /// requests and notifications there that belong to no POST), and waits
    /// a moment for the server to take it. A server that offers none (405)
    /// is left alone.
    pub(super) async fn open_listener(&self) {
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

/// Reads the session's `GET` stream until it ends; resumes it from the last
/// event id when the server gave ids, within [`MAX_RESUMES`] that only a
/// stream open for [`SETTLED`] earns back.
async fn listen(mut resp: reqwest::Response, core: Core) {
    let max = core.options.max_body;
    let limits = Limits {
        max_bytes: max,
        ..Limits::default()
    };
    let mut decoder = sse::Decoder::new(max);
    let mut resumes = Resumes::default();
    let mut opened = opened_now();
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
        if opened.elapsed() >= SETTLED {
            resumes = Resumes::default();
        }
        let Some((last_id, wait)) = resumes.next(&decoder) else {
            return;
        };
        tokio::time::sleep(wait).await;
        match resume(&core, &last_id).await {
            Ok(next) => {
                resp = next;
                decoder.restart();
                opened = opened_now();
            }
            Err(e) => {
                tracing::debug!(error = %e, "the GET stream cannot be resumed");
                return;
            }
        }
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
pub(super) async fn read_sse(
    mut resp: reqwest::Response,
    tx: mpsc::Sender<Result<Message, Error>>,
    max: usize,
    transport: Core,
) {
    let mut decoder = sse::Decoder::new(max);
    let mut resumes = Resumes::default();
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
        let Some((last_id, wait)) = resumes.next(&decoder) else {
            // The client reports a missing response when the stream just
            // ended.
            if let Some(e) = broke {
                let _ = tx.send(Err(e)).await;
            }
            return;
        };
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

/// When a stream opened, on the runtime's monotonic time (paused time in
/// tests): how long it stayed open earns its resumes back.
#[expect(
    clippy::disallowed_methods,
    reason = "a stream's age, on the runtime's time"
)]
fn opened_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_zero_waits_the_floor_and_resumes_run_out() {
        let mut decoder = sse::Decoder::new(1024);
        decoder.feed(b"id: 1\nretry: 0\ndata: x\n\n").unwrap();
        let mut resumes = Resumes::default();
        for _ in 0..MAX_RESUMES {
            assert_eq!(resumes.next(&decoder), Some(("1".to_owned(), MIN_RETRY)));
        }
        assert_eq!(resumes.next(&decoder), None);
    }

    #[test]
    fn the_server_s_retry_is_held_between_the_bounds() {
        let mut resumes = Resumes::default();
        let mut decoder = sse::Decoder::new(1024);
        assert_eq!(resumes.next(&decoder), None, "no id, no resume");
        decoder.feed(b"id: 7\ndata: x\n\n").unwrap();
        assert_eq!(
            resumes.next(&decoder),
            Some(("7".to_owned(), DEFAULT_RETRY))
        );
        decoder.feed(b"retry: 250\ndata: x\n\n").unwrap();
        assert_eq!(
            resumes.next(&decoder),
            Some(("7".to_owned(), Duration::from_millis(250)))
        );
        decoder.feed(b"retry: 3600000\ndata: x\n\n").unwrap();
        assert_eq!(resumes.next(&decoder), Some(("7".to_owned(), MAX_RETRY)));
    }
}
