//! The SSE streams of one legacy (2025-11-25) HTTP session, kept so a
//! client that lost one can resume it with `GET` and `Last-Event-ID`
//! (2025-11-25 transports, "Resumability and Redelivery").
//!
//! Every event of a session stream carries an id `{stream}-{n}`: the stream
//! number names the stream (0 is the session's `GET` stream, the others are
//! POST responses), so a resumed `GET` replays only what that stream missed
//! and never another stream's messages. A stream opens with a priming event
//! (an id and empty data), so even a stream cut before its first message
//! can be resumed. What is kept is bounded: a few streams per session and a
//! few hundred events, at most a MiB, per stream; a client that comes back later than that
//! loses the oldest events, and a stream no longer kept cannot be resumed.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tern_proto::sse;
use tokio::sync::Notify;

/// Streams kept per session besides the `GET` stream.
const MAX_STREAMS: usize = 16;
/// Events kept per stream.
const MAX_EVENTS: usize = 256;
/// Bytes kept per stream: a stream's events may echo what a client sent,
/// so a count alone would let one session hold 17 × 256 of the largest
/// messages. The newest event is kept whatever its size (a live reader
/// has not had it yet).
const MAX_LOG_BYTES: usize = 1024 * 1024;

/// The session's `GET` stream.
pub(crate) const GET_STREAM: u64 = 0;

/// The streams of one session; shared by its requests and its readers.
#[derive(Default)]
pub(crate) struct Streams {
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    next_stream: u64,
    logs: VecDeque<Log>,
    /// The session ended: every reader ends too.
    closed: bool,
}

struct Log {
    stream: u64,
    /// The number of `events[0]`.
    first: u64,
    events: VecDeque<Bytes>,
    /// The bytes of `events`.
    bytes: usize,
    done: bool,
    /// Bumped by every new reader: an older reader of the same stream ends,
    /// so each message goes out on one connection only.
    reader: u64,
}

impl Log {
    fn new(stream: u64) -> Self {
        Log {
            stream,
            first: 0,
            events: VecDeque::new(),
            bytes: 0,
            done: false,
            reader: 0,
        }
    }

    fn next_n(&self) -> u64 {
        self.first + self.events.len() as u64
    }

    /// The id of this stream's next event.
    fn next_id(&self) -> String {
        event_id(self.stream, self.next_n())
    }

    fn push(&mut self, data: &[u8]) {
        let event = sse::event(Some(&self.next_id()), data);
        self.keep(event);
    }

    fn prime(&mut self) {
        let event = sse::priming(&self.next_id());
        self.keep(event);
    }

    fn keep(&mut self, event: Bytes) {
        self.bytes += event.len();
        self.events.push_back(event);
        while self.events.len() > 1
            && (self.events.len() > MAX_EVENTS || self.bytes > MAX_LOG_BYTES)
        {
            if let Some(old) = self.events.pop_front() {
                self.bytes -= old.len();
                self.first += 1;
            }
        }
    }
}

/// The id of event `n` of `stream`.
fn event_id(stream: u64, n: u64) -> String {
    format!("{stream}-{n}")
}

/// Where a `Last-Event-ID` points: a stream and the last event the client
/// has.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (s, n) = id.split_once('-')?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

impl Streams {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a stream with its priming event; returns its number.
    pub(crate) fn open(&self, stream: Option<u64>) -> u64 {
        let mut s = self.lock();
        let stream = stream.unwrap_or_else(|| {
            s.next_stream += 1;
            s.next_stream
        });
        let mut log = Log::new(stream);
        log.prime();
        s.logs.push_back(log);
        // Forget the oldest finished streams first, then the oldest.
        while s.logs.iter().filter(|l| l.stream != GET_STREAM).count() > MAX_STREAMS {
            let victim = s
                .logs
                .iter()
                .position(|l| l.stream != GET_STREAM && l.done)
                .or_else(|| s.logs.iter().position(|l| l.stream != GET_STREAM));
            match victim {
                Some(i) => {
                    s.logs.remove(i);
                }
                None => break,
            }
        }
        drop(s);
        self.wake.notify_waiters();
        stream
    }

    /// Appends a message to `stream`; the last one ends it.
    pub(crate) fn push(&self, stream: u64, data: &[u8], last: bool) {
        let mut s = self.lock();
        if let Some(log) = s.logs.iter_mut().find(|l| l.stream == stream) {
            log.push(data);
            log.done |= last;
        }
        drop(s);
        self.wake.notify_waiters();
    }

    /// Ends `stream` without a message (its handler produced none).
    pub(crate) fn end(&self, stream: u64) {
        if let Some(log) = self.lock().logs.iter_mut().find(|l| l.stream == stream) {
            log.done = true;
        }
        self.wake.notify_waiters();
    }

    /// Whether `stream` is still kept.
    pub(crate) fn has(&self, stream: u64) -> bool {
        self.lock().logs.iter().any(|l| l.stream == stream)
    }

    /// Ends every reader of the session (it ended; its calls were stopped
    /// by the server).
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_waiters();
    }

    /// The events of `stream` after event `after` (all of them when
    /// `None`), then whatever it gets until it ends, with an SSE comment
    /// every `keep_alive` of silence. A newer reader of the same stream
    /// ends this one.
    pub(crate) fn read(
        self: Arc<Self>,
        stream: u64,
        after: Option<u64>,
        keep_alive: Duration,
    ) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
        let (generation, start, prime) = {
            let mut s = self.lock();
            match s.logs.iter_mut().find(|l| l.stream == stream) {
                Some(log) => {
                    log.reader += 1;
                    match after {
                        // An id past the stream's last event replays
                        // nothing and waits for events after it; at
                        // u64::MAX no event comes after it (a stream ends
                        // long before 2^64 events), so saturating keeps
                        // that answer instead of wrapping to a replay of
                        // everything.
                        Some(n) => (log.reader, n.saturating_add(1), None),
                        // A fresh GET stream starts with what comes next,
                        // primed with the id of the last event so far.
                        None if stream == GET_STREAM => {
                            let next = log.next_n();
                            let prime = sse::priming(&event_id(stream, next - 1));
                            (log.reader, next, Some(prime))
                        }
                        // A POST stream from its beginning.
                        None => (log.reader, 0, None),
                    }
                }
                None => (0, 0, None),
            }
        };
        let state = (self, start, prime);
        futures_util::stream::unfold(state, move |(this, mut next, prime)| async move {
            if let Some(p) = prime {
                return Some((Ok(p), (this, next, None)));
            }
            loop {
                // The waker is borrowed from its own handle so `this` can go
                // back into the state.
                let waker = Arc::clone(&this);
                let notified = waker.wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let s = this.lock();
                    if s.closed {
                        return None;
                    }
                    let log = s.logs.iter().find(|l| l.stream == stream)?;
                    if log.reader != generation {
                        return None;
                    }
                    // Events evicted meanwhile are lost: go on from the
                    // oldest kept.
                    next = next.max(log.first);
                    if let Some(ev) = log.events.get((next - log.first) as usize) {
                        let ev = ev.clone();
                        drop(s);
                        return Some((Ok(ev), (this, next + 1, None)));
                    }
                    if log.done {
                        return None;
                    }
                }
                tokio::select! {
                    () = &mut notified => {}
                    () = tokio::time::sleep(keep_alive) => {
                        return Some((Ok(sse::keep_alive()), (this, next, None)));
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    async fn collect(s: impl Stream<Item = Result<Bytes, Infallible>>) -> Vec<String> {
        s.map(|b| String::from_utf8(b.unwrap().to_vec()).unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_stream_replays_after_the_last_event_id_and_only_its_own() {
        let streams = Arc::new(Streams::default());
        let a = streams.open(None);
        let b = streams.open(None);
        streams.push(a, b"{\"a\":1}", false);
        streams.push(b, b"{\"b\":1}", false);
        streams.push(a, b"{\"a\":2}", true);
        let ka = Duration::from_secs(60);
        assert_eq!(
            collect(streams.clone().read(a, None, ka)).await,
            [
                format!("id: {a}-0\ndata: \n\n"),
                format!("id: {a}-1\ndata: {{\"a\":1}}\n\n"),
                format!("id: {a}-2\ndata: {{\"a\":2}}\n\n"),
            ]
        );
        assert_eq!(
            collect(streams.clone().read(a, Some(1), ka)).await,
            [format!("id: {a}-2\ndata: {{\"a\":2}}\n\n")]
        );
        assert_eq!(parse_event_id(&format!("{a}-1")), Some((a, 1)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("7"), None);
    }

    #[tokio::test]
    async fn a_last_event_id_at_the_top_of_u64_replays_nothing() {
        // Like any id past the stream's last event: nothing kept is
        // replayed, nothing pushed later is sent, and the reader ends with
        // the stream. n + 1 had wrapped to 0 (a replay of everything) in
        // release and panicked in debug.
        let ka = Duration::from_secs(60);
        for n in [u64::MAX, u64::MAX - 1, 5] {
            let streams = Arc::new(Streams::default());
            let a = streams.open(None);
            streams.push(a, b"{\"a\":1}", false);
            let reader = streams.clone().read(a, Some(n), ka);
            streams.push(a, b"{\"a\":2}", false);
            streams.push(a, b"{\"a\":3}", true);
            assert_eq!(collect(reader).await, Vec::<String>::new(), "after {n}");
        }
    }

    #[tokio::test]
    async fn a_newer_reader_ends_the_older_one() {
        let streams = Arc::new(Streams::default());
        streams.open(Some(GET_STREAM));
        let mut old = Box::pin(
            streams
                .clone()
                .read(GET_STREAM, None, Duration::from_secs(60)),
        );
        streams.push(GET_STREAM, b"1", false);
        // Primed with the id of the last event before it came.
        assert_eq!(
            old.next().await.unwrap().unwrap(),
            Bytes::from_static(b"id: 0-0\ndata: \n\n")
        );
        assert_eq!(
            old.next().await.unwrap().unwrap(),
            Bytes::from_static(b"id: 0-1\ndata: 1\n\n")
        );
        let mut new = Box::pin(
            streams
                .clone()
                .read(GET_STREAM, None, Duration::from_secs(60)),
        );
        streams.push(GET_STREAM, b"2", false);
        assert!(old.next().await.is_none());
        assert_eq!(
            new.next().await.unwrap().unwrap(),
            Bytes::from_static(b"id: 0-1\ndata: \n\n")
        );
        assert_eq!(
            new.next().await.unwrap().unwrap(),
            Bytes::from_static(b"id: 0-2\ndata: 2\n\n")
        );
    }

    #[test]
    fn a_streams_log_is_bounded_in_bytes_and_keeps_its_newest_event() {
        let streams = Streams::default();
        let a = streams.open(None);
        let big = vec![b'x'; 600 * 1024];
        for _ in 0..3 {
            streams.push(a, &big, false);
        }
        let s = streams.lock();
        let log = s.logs.iter().find(|l| l.stream == a).unwrap();
        // The priming event and the first two are gone; the third stays.
        assert_eq!((log.first, log.events.len()), (3, 1));
        assert_eq!(log.bytes, log.events[0].len());
        assert!(log.bytes > 600 * 1024);
        drop(s);
        // One larger than the whole budget is still kept, alone.
        let huge = vec![b'y'; 2 * MAX_LOG_BYTES];
        streams.push(a, &huge, true);
        let s = streams.lock();
        let log = s.logs.iter().find(|l| l.stream == a).unwrap();
        assert_eq!((log.first, log.events.len()), (4, 1));
        assert!(log.bytes > 2 * MAX_LOG_BYTES);
    }

    #[test]
    fn only_so_many_streams_are_kept() {
        let streams = Streams::default();
        let first = streams.open(None);
        for _ in 0..MAX_STREAMS {
            streams.open(None);
        }
        assert!(!streams.has(first));
    }
}
