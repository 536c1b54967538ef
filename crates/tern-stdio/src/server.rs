//! Serving a Tern server over stdin/stdout (DIGEST §7.2).
//!
//! One reader loop splits stdin into lines with a bounded buffer and hands
//! each request to its own task (STDIO-A1). Every task sends its frames to a
//! single writer task, so lines never interleave, and a request's
//! notifications reach the channel before its response. `notifications/
//! cancelled` closes the request's gate and aborts its task: once the
//! cancellation is read, nothing more is written for that request
//! (CANC-S4, STDIO-C7).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern_proto::decode::{Decoded, Message, decode};
use tern_proto::finish::{encode_error, encode_result, stamp_complete};
use tern_proto::{Inbound, McpError, Principal};
use tern_server::{Reply, Server, Session, Sink};
use tern_types::{RequestId, meta_keys};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Options of the stdio server.
#[derive(Clone, Debug)]
pub struct StdioOptions {
    /// The longest line read, without its `\n` (default 16 MiB, STDIO-A2).
    /// A longer line is discarded as it arrives, never buffered whole, and
    /// answered with `-32600` without `id`. Lines over the server's own
    /// decoding limit (`Config::limits`) are refused the same way.
    pub max_line_bytes: usize,
    /// How long in-flight requests may run after stdin reaches end-of-file
    /// before they are abandoned (default 5 s, STDIO-S9).
    pub shutdown_grace: Duration,
    /// A stable id of the account behind the environment credential the
    /// server uses (never the secret), or empty. It becomes part of the
    /// principal every state is bound to (SECURITY.md §3.6).
    pub credential_identity: String,
    /// The most requests running at once on the connection (default 256,
    /// listen streams included); one more is answered at once with the
    /// busy refusal, `-31003` with `data.limit: "stdio_in_flight"`, and
    /// each that ends frees its place.
    pub max_in_flight: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_line_bytes: 16 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(5),
            credential_identity: String::new(),
            max_in_flight: 256,
        }
    }
}

/// Frames waiting for the writer. Small: a slow reader of stdout should
/// slow the handlers down, not grow memory.
const OUT_QUEUE: usize = 64;
/// Notifications one request may have queued before its handler waits.
const SINK_QUEUE: usize = 32;
/// After the grace period the remaining tasks are aborted; the writer gets
/// this much longer to flush before it is abandoned too (a parent that no
/// longer reads stdout must not keep the process alive).
const FINAL_FLUSH: Duration = Duration::from_secs(1);

/// Serves `server` on the process's stdin and stdout until stdin reaches
/// end-of-file (STDIO-1, STDIO-S9).
///
/// Nothing but JSON-RPC lines is ever written to stdout (STDIO-S3); this
/// crate logs through `tracing` only, so install a subscriber that writes to
/// stderr. Returns `Ok` after a clean shutdown, or the I/O error that ended
/// serving (for example a closed stdout).
pub async fn serve(server: Server, options: StdioOptions) -> io::Result<()> {
    serve_io(server, tokio::io::stdin(), tokio::io::stdout(), options).await
}

/// Serves `server` on any byte stream pair, framed as on stdio: one JSON-RPC
/// message per `\n`-terminated line (STDIO-2, TRANS-3).
///
/// Every request runs in its own task; responses are written as they
/// complete, in any order (STDIO-A1). The principal of every request is
/// `Principal::Stdio` with an instance id drawn when this function starts,
/// the effective uid and `options.credential_identity` (SECURITY.md §3.6).
/// At end-of-file open listen streams end at once with their graceful
/// result (SUB-S9); other requests get `options.shutdown_grace` to finish.
pub async fn serve_io<R, W>(
    server: Server,
    reader: R,
    writer: W,
    options: StdioOptions,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let principal = Principal::Stdio {
        instance_id: server.new_connection_id(),
        uid: effective_uid(),
        credential_identity: options.credential_identity.clone(),
    };
    let (out, rx) = mpsc::channel::<Bytes>(OUT_QUEUE);
    let mut writer_task = tokio::spawn(write_frames(writer, rx));
    // STDIO: the connection is the legacy session, if `initialize` opens
    // one (COMPAT-S1).
    let session = server.session();
    // The connection is also the session's own stream: list changes and
    // resource updates go out on it.
    let feed = {
        let (server, session, out) = (server.clone(), session.clone(), out.clone());
        AbortOnDrop(tokio::spawn(async move {
            server.session_stream(&session, Sink::new(out)).await;
        }))
    };
    let mut conn = Conn {
        server,
        session,
        principal,
        out,
        flights: Arc::new(Flights::default()),
        next_seq: 0,
        max_in_flight: options.max_in_flight.max(1),
    };
    let mut lines = LineReader::new(reader, options.max_line_bytes);
    let read_error = loop {
        let line = tokio::select! {
            line = lines.next() => line,
            done = &mut writer_task => {
                // stdout is gone: nobody can receive an answer any more.
                conn.flights.cancel_all();
                tracing::debug!("stdio: output closed, stopping");
                return flatten(done);
            }
        };
        match line {
            Ok(Line::Text(bytes)) => conn.dispatch(bytes).await,
            Ok(Line::TooLong) => {
                tracing::warn!(limit = options.max_line_bytes, "stdio: line too long");
                let e = McpError::InvalidRequest("line too long".into());
                conn.send(encode_error(None, &e)).await;
            }
            Ok(Line::Eof) => break None,
            Err(e) => break Some(e),
        }
    };
    tracing::debug!("stdio: end of input, finishing in-flight requests");
    drop(feed);
    conn.end_listens();
    let flights = conn.flights.clone();
    // The writer ends once every sender is gone: ours now, each task's when
    // it finishes or is aborted.
    drop(conn);
    let finished = tokio::select! {
        done = &mut writer_task => Some(flatten(done)),
        () = tokio::time::sleep(options.shutdown_grace) => None,
    };
    let written = match finished {
        Some(r) => r,
        None => {
            tracing::warn!("stdio: abandoning requests still running after the grace period");
            flights.cancel_all();
            match tokio::time::timeout(FINAL_FLUSH, &mut writer_task).await {
                Ok(done) => flatten(done),
                Err(_) => {
                    writer_task.abort();
                    Ok(())
                }
            }
        }
    };
    match read_error {
        Some(e) => Err(e),
        None => written,
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn flatten(done: Result<io::Result<()>, tokio::task::JoinError>) -> io::Result<()> {
    done.map_err(io::Error::other)?
}

/// The effective uid, read from `/proc/self/status` (`Uid:` real,
/// effective, saved, fs) because the workspace forbids `unsafe` and so
/// `geteuid`; 0 where that file does not exist.
fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_uid(&s))
        .unwrap_or(0)
}

fn parse_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// Writes frames one per line, flushing whenever the queue runs dry so a
/// burst goes out in one write and a lone response is not held back.
async fn write_frames<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Bytes>,
) -> io::Result<()> {
    let mut w = BufWriter::new(writer);
    while let Some(frame) = rx.recv().await {
        // encode_* serialise compactly, so a frame never holds a newline
        // (STDIO-2).
        debug_assert!(!frame.contains(&b'\n'));
        w.write_all(&frame).await?;
        w.write_all(b"\n").await?;
        if rx.is_empty() {
            w.flush().await?;
        }
    }
    w.flush().await?;
    w.shutdown().await
}

/// One line read from the input.
#[derive(Debug, PartialEq)]
enum Line {
    /// A complete line, without its `\n`.
    Text(Vec<u8>),
    /// A line longer than the limit; its bytes were dropped as they came.
    TooLong,
    /// End of input.
    Eof,
}

/// Splits input into lines while holding at most `max` bytes of one line
/// (STDIO-A2). `next` is cancel-safe: all state lives here and every change
/// happens after `fill_buf` returns.
struct LineReader<R> {
    inner: BufReader<R>,
    buf: Vec<u8>,
    max: usize,
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(reader: R, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            max,
            discarding: false,
        }
    }

    async fn next(&mut self) -> io::Result<Line> {
        loop {
            let avail = self.inner.fill_buf().await?;
            if avail.is_empty() {
                // A last line without its newline still counts.
                if std::mem::take(&mut self.discarding) {
                    return Ok(Line::TooLong);
                }
                if !self.buf.is_empty() {
                    return Ok(Line::Text(std::mem::take(&mut self.buf)));
                }
                return Ok(Line::Eof);
            }
            let newline = avail.iter().position(|b| *b == b'\n');
            let chunk = &avail[..newline.unwrap_or(avail.len())];
            if !self.discarding {
                if self.buf.len() + chunk.len() > self.max {
                    self.discarding = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            let used = chunk.len() + usize::from(newline.is_some());
            self.inner.consume(used);
            if newline.is_some() {
                if std::mem::take(&mut self.discarding) {
                    return Ok(Line::TooLong);
                }
                return Ok(Line::Text(std::mem::take(&mut self.buf)));
            }
        }
    }
}

/// Whether a request may still write, and whether it has written. Closing
/// and writing take the same lock, so after `close` returns no frame of the
/// request can enter the output queue (CANC-S4).
#[derive(Debug, Default)]
struct Gate(Mutex<GateState>);

#[derive(Debug, Default)]
struct GateState {
    closed: bool,
    emitted: bool,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `frame` unless the gate is closed; false when it is closed or
    /// the writer is gone.
    async fn emit(&self, out: &mpsc::Sender<Bytes>, frame: Bytes) -> bool {
        // Wait for room first, outside the lock.
        let Ok(permit) = out.reserve().await else {
            return false;
        };
        let mut g = self.lock();
        if g.closed {
            return false;
        }
        g.emitted = true;
        permit.send(frame);
        true
    }
}

/// One running request.
#[derive(Debug)]
struct Flight {
    seq: u64,
    gate: Arc<Gate>,
    abort: AbortHandle,
    listen: bool,
}

impl Flight {
    fn cancel(&self) {
        self.gate.lock().closed = true;
        self.abort.abort();
    }
}

/// Running requests by id. Ids need be unique only among a client's
/// outstanding requests (BASE-3) and servers do not police that, so one id
/// may name several flights; a cancellation stops them all.
#[derive(Debug, Default)]
struct Flights(Mutex<HashMap<RequestId, Vec<Flight>>>);

impl Flights {
    fn lock(&self) -> MutexGuard<'_, HashMap<RequestId, Vec<Flight>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remove(&self, id: &RequestId, seq: u64) {
        let mut map = self.lock();
        if let Some(v) = map.get_mut(id) {
            v.retain(|f| f.seq != seq);
            if v.is_empty() {
                map.remove(id);
            }
        }
    }

    /// Cancels every flight with `id`; an unknown id is ignored (CANC-S4).
    fn cancel(&self, id: &RequestId) -> bool {
        let taken = self.lock().remove(id);
        // Abort outside the map lock: an aborted task deregisters itself.
        match taken {
            Some(v) => {
                v.iter().for_each(Flight::cancel);
                true
            }
            None => false,
        }
    }

    /// How many requests are running.
    fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn cancel_all(&self) {
        let taken: Vec<Flight> = self.lock().drain().flat_map(|(_, v)| v).collect();
        taken.iter().for_each(Flight::cancel);
    }

    /// Removes the listen flights, returning their ids and gates.
    fn take_listens(&self) -> Vec<(RequestId, Flight)> {
        let mut map = self.lock();
        let mut out = Vec::new();
        for (id, v) in map.iter_mut() {
            let (listens, rest): (Vec<Flight>, Vec<Flight>) = v.drain(..).partition(|f| f.listen);
            *v = rest;
            out.extend(listens.into_iter().map(|f| (id.clone(), f)));
        }
        map.retain(|_, v| !v.is_empty());
        out
    }
}

/// Removes a flight from the table when its task ends, however it ends.
struct Deregister {
    flights: Arc<Flights>,
    id: RequestId,
    seq: u64,
}

impl Drop for Deregister {
    fn drop(&mut self) {
        self.flights.remove(&self.id, self.seq);
    }
}

/// The reader side of one connection.
struct Conn {
    server: Server,
    session: Session,
    principal: Principal,
    out: mpsc::Sender<Bytes>,
    flights: Arc<Flights>,
    next_seq: u64,
    max_in_flight: usize,
}

impl Conn {
    async fn send(&self, frame: Bytes) {
        // A closed writer is noticed by the reader loop.
        let _ = self.out.send(frame).await;
    }

    fn inbound(&self, body: Bytes) -> Inbound {
        Inbound {
            body,
            // STDIO-6: no header layer; HTTP-A5 runs without its header steps.
            headers: None,
            principal: self.principal.clone(),
        }
    }

    async fn dispatch(&mut self, mut line: Vec<u8>) {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        // Blank lines carry no message; skipping them is kinder than a
        // parse error for a stray newline.
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let body = Bytes::from(line);
        // Parsed once: the server takes the decoded message as it is.
        let decoded = match decode(&body, &self.server.config().limits) {
            Ok(decoded) => decoded,
            // STDIO-A2, BASE-5: unparsable lines get an error without id.
            Err(e) => return self.send(encode_error(e.id, &e.error)).await,
        };
        match &decoded.message {
            Message::Request(req) => {
                if self.flights.len() >= self.max_in_flight {
                    self.server.metrics().limit_reached("stdio_in_flight");
                    let e = McpError::busy(
                        "stdio_in_flight",
                        format!(
                            "{} requests are already running; wait for one to end",
                            self.max_in_flight
                        ),
                        None,
                    );
                    self.send(encode_error(Some(req.id.clone()), &e)).await;
                    return;
                }
                let listen = req.method == "subscriptions/listen";
                let id = req.id.clone();
                self.spawn_request(id, listen, decoded, body);
            }
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                self.cancel(n.params.as_ref());
            }
            // Other notifications and responses (to the server's own
            // requests in a legacy session): the server decides (BASE-6,
            // BASE-7); only a refusal is written.
            _ => {
                let inbound = self.inbound(body);
                let reply = self
                    .server
                    .handle_in_decoded(&self.session, decoded, inbound, Sink::none())
                    .await;
                if let Reply::Message { body, .. } = reply {
                    self.send(body).await;
                }
            }
        }
    }

    fn cancel(&self, params: Option<&Map<String, Value>>) {
        let id = params
            .and_then(|p| p.get("requestId"))
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
        // CANC-S4: invalid cancellations and unknown ids are ignored.
        let Some(id) = id else {
            tracing::debug!("stdio: ignoring a cancellation without a valid requestId");
            return;
        };
        if self.flights.cancel(&id) {
            tracing::debug!(%id, "stdio: request cancelled");
        } else {
            tracing::debug!(%id, "stdio: cancellation for no running request");
        }
    }

    fn spawn_request(&mut self, id: RequestId, listen: bool, decoded: Decoded, body: Bytes) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let gate = Arc::new(Gate::default());
        let inbound = self.inbound(body);
        let server = self.server.clone();
        let session = self.session.clone();
        let out = self.out.clone();
        let task_gate = gate.clone();
        let guard = Deregister {
            flights: self.flights.clone(),
            id: id.clone(),
            seq,
        };
        // Hold the table lock across the spawn so a task that finishes at
        // once cannot deregister before it is registered.
        let mut table = self.flights.lock();
        let handle = tokio::spawn(async move {
            let _guard = guard;
            run_request(server, session, decoded, inbound, out, task_gate).await;
        });
        table.entry(id).or_default().push(Flight {
            seq,
            gate,
            abort: handle.abort_handle(),
            listen,
        });
    }

    /// SUB-S9, SUB-A1: at shutdown a listen stream ends with its result,
    /// not with `notifications/cancelled`. A stream that has not yet sent
    /// its acknowledgement gets nothing, since the ack must come first
    /// (SUB-S2).
    fn end_listens(&self) {
        for (id, flight) in self.flights.take_listens() {
            let mut g = flight.gate.lock();
            g.closed = true;
            flight.abort.abort();
            if !g.emitted {
                continue;
            }
            let mut result = Map::new();
            let sub_id = serde_json::to_value(&id).unwrap_or(Value::Null);
            result.insert(
                "_meta".into(),
                json!({ meta_keys::SUBSCRIPTION_ID: sub_id }),
            );
            stamp_complete(&mut result, None);
            // Queued under the gate lock so no frame of the stream follows.
            if let Ok(permit) = self.out.try_reserve() {
                permit.send(encode_result(&id, &result));
            } else {
                tracing::debug!(%id, "stdio: output full, listen stream ends without result");
            }
        }
    }
}

/// Runs one request: forwards its notifications as they come, then the
/// response (PROG-S4, LOG-S3: request notifications precede the response).
async fn run_request(
    server: Server,
    session: Session,
    decoded: Decoded,
    inbound: Inbound,
    out: mpsc::Sender<Bytes>,
    gate: Arc<Gate>,
) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(SINK_QUEUE);
    let handle = server.handle_in_decoded(&session, decoded, inbound, Sink::new(tx));
    tokio::pin!(handle);
    let reply = loop {
        tokio::select! {
            biased;
            Some(n) = rx.recv() => {
                if !gate.emit(&out, n).await {
                    return;
                }
            }
            reply = &mut handle => break reply,
        }
    };
    // Notifications sent just before the result still go first.
    while let Ok(n) = rx.try_recv() {
        if !gate.emit(&out, n).await {
            return;
        }
    }
    // A closed request sends nothing.
    if let Reply::Message { body, .. } = reply {
        gate.emit(&out, body).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], max: usize) -> Vec<Line> {
        let (mut a, b) = tokio::io::duplex(7);
        let input = input.to_vec();
        let w = tokio::spawn(async move {
            a.write_all(&input).await.unwrap();
        });
        let mut r = LineReader::new(b, max);
        let mut out = Vec::new();
        loop {
            let l = r.next().await.unwrap();
            if l == Line::Eof {
                break;
            }
            out.push(l);
        }
        w.await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_split_and_overlong_lines_are_dropped() {
        let got = lines_of(b"ab\n0123456789\ncd\n\nlast", 4).await;
        assert_eq!(
            got,
            vec![
                Line::Text(b"ab".to_vec()),
                Line::TooLong,
                Line::Text(b"cd".to_vec()),
                Line::Text(Vec::new()),
                Line::Text(b"last".to_vec()),
            ]
        );
        // Exactly the limit is fine; one more is not, even at EOF.
        let got = lines_of(b"abcd\nabcde", 4).await;
        assert_eq!(got, vec![Line::Text(b"abcd".to_vec()), Line::TooLong]);
    }

    #[test]
    fn uid_is_the_effective_one() {
        let status = "Name:\tx\nUid:\t1000\t1001\t1000\t1000\nGid:\t5\t5\t5\t5\n";
        assert_eq!(parse_uid(status), Some(1001));
        assert_eq!(parse_uid("Name:\tx\n"), None);
    }
}
