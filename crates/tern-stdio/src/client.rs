//! The stdio client transport (DIGEST §7.2): spawns the server as a child
//! process and speaks newline-delimited JSON through its pipes.
//!
//! One reader task matches responses to requests by id (STDIO-A1) and
//! routes notifications: listen-stream notifications by
//! `_meta["io.modelcontextprotocol/subscriptionId"]` (SUB-C5), progress by
//! `progressToken` (PROG-S4). A child that exits or writes a line that is
//! not JSON-RPC fails every pending call with a clear error, never a hang.
//! Dropping a call's frames sends `notifications/cancelled` (STDIO-C7).
//!
//! A 2025-11-25 server sends requests of its own (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) while it handles a call; stdio
//! does not say which call they belong to, so they go to the newest pending
//! request, whose client answers them through [`Transport::respond`].
//! `ping` is answered here.

use std::collections::HashMap;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tern_client::{
    BoxFuture, Error, Frames, OutboundNotification, OutboundRequest, OutboundResponse, Transport,
};
use tern_proto::decode::{Limits, Message, decode_message};
use tern_types::{RequestId, meta_keys};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

/// Options of the stdio client transport.
#[derive(Clone, Debug)]
pub struct StdioClientOptions {
    /// The longest line read from the server (default 16 MiB, STDIO-A2).
    pub max_line_bytes: usize,
    /// How long [`StdioTransport::shutdown`] waits for the child to exit
    /// after closing its stdin before killing it (default 2 s, STDIO-C8).
    pub shutdown_grace: Duration,
    /// Whether the child's stderr is passed through to ours (default true;
    /// STDIO-C4: stderr is logs, never a failure signal).
    pub inherit_stderr: bool,
}

impl Default for StdioClientOptions {
    fn default() -> Self {
        StdioClientOptions {
            max_line_bytes: 16 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            inherit_stderr: true,
        }
    }
}

enum Cmd {
    Line(bytes::Bytes),
    Close,
}

struct Route {
    tx: mpsc::Sender<Result<Message, Error>>,
    progress: Option<Value>,
    /// The order requests were sent in.
    seq: u64,
}

struct Shared {
    routes: Mutex<HashMap<RequestId, Route>>,
    /// Why the transport is dead, once it is.
    dead: Mutex<Option<String>>,
    writer: mpsc::UnboundedSender<Cmd>,
    next_seq: AtomicU64,
}

impl Shared {
    /// Fails every pending call and refuses new ones.
    fn fail_all(&self, error: impl Fn() -> Error, reason: &str) {
        if let Ok(mut d) = self.dead.lock() {
            d.get_or_insert_with(|| reason.to_owned());
        }
        let routes: Vec<Route> = match self.routes.lock() {
            Ok(mut r) => r.drain().map(|(_, v)| v).collect(),
            Err(_) => Vec::new(),
        };
        for route in routes {
            let _ = route.tx.try_send(Err(error()));
        }
    }

    /// The newest pending request: where a legacy server's requests and
    /// unattributed notifications go.
    fn newest(&self) -> Option<mpsc::Sender<Result<Message, Error>>> {
        let routes = self.routes.lock().ok()?;
        routes.values().max_by_key(|r| r.seq).map(|r| r.tx.clone())
    }

    fn write_json(&self, message: &Value) {
        if let Ok(body) = serde_json::to_vec(message) {
            let _ = self.writer.send(Cmd::Line(body.into()));
        }
    }

    fn dead(&self) -> Option<String> {
        self.dead.lock().ok().and_then(|d| d.clone())
    }

    fn route_notification(
        &self,
        method: &str,
        params: Option<&serde_json::Map<String, Value>>,
    ) -> Option<mpsc::Sender<Result<Message, Error>>> {
        let routes = self.routes.lock().ok()?;
        let params = params?;
        // SUB-C5: listen-stream notifications carry the listen request's id.
        if let Some(sub) = params
            .get("_meta")
            .and_then(|m| m.get(meta_keys::SUBSCRIPTION_ID))
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
        {
            return routes.get(&sub).map(|r| r.tx.clone());
        }
        // SUB-A1: a server may end a listen stream with a cancellation.
        if method == "notifications/cancelled" {
            let id = params
                .get("requestId")
                .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())?;
            return routes.get(&id).map(|r| r.tx.clone());
        }
        let token = params.get(meta_keys::PROGRESS_TOKEN)?;
        routes
            .values()
            .find(|r| r.progress.as_ref() == Some(token))
            .map(|r| r.tx.clone())
    }
}

/// A client [`Transport`] to a server running as a child process.
pub struct StdioTransport {
    shared: Arc<Shared>,
    child: tokio::sync::Mutex<Option<Child>>,
    options: StdioClientOptions,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("dead", &self.shared.dead())
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Starts `command` as the server (STDIO-1) with default options.
    pub fn spawn(command: Command) -> Result<Self, Error> {
        StdioTransport::spawn_with(command, StdioClientOptions::default())
    }

    /// Starts `command` as the server with `options`. Must be called inside
    /// a Tokio runtime: the pipes are served by two tasks.
    pub fn spawn_with(mut command: Command, options: StdioClientOptions) -> Result<Self, Error> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if options.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| Error::transport_from("cannot start the server process", e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::transport("the server process has no pipes"));
        };
        let (writer, commands) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            routes: Mutex::new(HashMap::new()),
            dead: Mutex::new(None),
            writer,
            next_seq: AtomicU64::new(0),
        });
        tokio::spawn(write_loop(stdin, commands, shared.clone()));
        tokio::spawn(read_loop(stdout, shared.clone(), options.max_line_bytes));
        Ok(StdioTransport {
            shared,
            child: tokio::sync::Mutex::new(Some(child)),
            options,
        })
    }

    /// Shuts the server down (STDIO-C8): closes its stdin, waits up to the
    /// grace period for it to exit, then kills it. Pending calls fail.
    /// Returns the exit status.
    pub async fn shutdown(&self) -> Result<ExitStatus, Error> {
        let _ = self.shared.writer.send(Cmd::Close);
        let Some(mut child) = self.child.lock().await.take() else {
            return Err(Error::transport("the transport was already shut down"));
        };
        let status = match tokio::time::timeout(self.options.shutdown_grace, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                tracing::warn!("the server did not exit after stdin closed; killing it");
                // tokio's kill is SIGKILL on Unix; there is no portable
                // SIGTERM without another dependency.
                let _ = child.start_kill();
                child.wait().await
            }
        }
        .map_err(|e| Error::transport_from("waiting for the server process failed", e))?;
        self.shared.fail_all(
            || Error::transport("the transport was shut down"),
            "the transport was shut down",
        );
        Ok(status)
    }
}

async fn write_loop(
    mut stdin: ChildStdin,
    mut commands: mpsc::UnboundedReceiver<Cmd>,
    shared: Arc<Shared>,
) {
    while let Some(cmd) = commands.recv().await {
        let Cmd::Line(line) = cmd else { break };
        let written = async {
            stdin.write_all(&line).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        if let Err(e) = written.await {
            let reason = format!("cannot write to the server: {e}");
            shared.fail_all(|| Error::transport(reason.clone()), &reason);
            return;
        }
    }
    // Dropping stdin closes it: the server sees end of file (STDIO-S9).
}

async fn read_loop(stdout: ChildStdout, shared: Arc<Shared>, max_line: usize) {
    let mut reader = BufReader::new(stdout);
    let limits = Limits {
        max_bytes: max_line,
        ..Limits::default()
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = u64::try_from(max_line)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let read = (&mut reader).take(limit).read_until(b'\n', &mut line).await;
        match read {
            Ok(0) => {
                let reason = "the server closed its stdout (it exited)";
                shared.fail_all(|| Error::transport(reason), reason);
                return;
            }
            Ok(_) => {}
            Err(e) => {
                let reason = format!("cannot read from the server: {e}");
                shared.fail_all(|| Error::transport(reason.clone()), &reason);
                return;
            }
        }
        if line.len() > max_line {
            let reason = format!("the server wrote a line over {max_line} bytes");
            shared.fail_all(|| Error::protocol(reason.clone()), &reason);
            return;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match decode_message(text, &limits) {
            Ok(Message::Result(r)) => deliver(&shared, r.id.clone(), Message::Result(r)).await,
            Ok(Message::Error(e)) => match e.id.clone() {
                Some(id) => deliver(&shared, id, Message::Error(e)).await,
                None => {
                    tracing::warn!(error = %e.error, "the server reported an error without an id");
                }
            },
            Ok(Message::Notification(n)) => {
                let to = shared
                    .route_notification(&n.method, n.params.as_ref())
                    .or_else(|| (!is_listen(&n)).then(|| shared.newest()).flatten());
                match to {
                    Some(tx) => {
                        let _ = tx.try_send(Ok(Message::Notification(n)));
                    }
                    None => {
                        tracing::debug!(method = %n.method, "a notification for no pending request");
                    }
                }
            }
            // 2025-11-25: a server may ping the client at any time.
            Ok(Message::Request(r)) if r.method == "ping" => {
                shared.write_json(&json!({"jsonrpc": "2.0", "id": r.id, "result": {}}));
            }
            // A legacy server's request during a call (a modern one never
            // sends any, BASE-7; its client refuses it).
            Ok(Message::Request(r)) => match shared.newest() {
                Some(tx) => {
                    let _ = tx.send(Ok(Message::Request(r))).await;
                }
                None => {
                    tracing::debug!(method = %r.method, "a server request outside any call");
                    shared.write_json(&json!({"jsonrpc": "2.0", "id": r.id, "error": {
                        "code": -32601,
                        "message": format!("{} outside a call is not served by this client", r.method)}}));
                }
            },
            Err(e) => {
                // Garbage on stdout (STDIO-S3): the framing cannot be
                // trusted any more.
                let reason = format!("the server wrote a line that is not JSON-RPC: {e}");
                shared.fail_all(|| Error::protocol(reason.clone()), &reason);
                return;
            }
        }
    }
}

async fn deliver(shared: &Shared, id: RequestId, message: Message) {
    let route = shared.routes.lock().ok().and_then(|mut r| r.remove(&id));
    match route {
        Some(route) => {
            let _ = route.tx.send(Ok(message)).await;
        }
        // CANC-C5: a response after a cancellation is ignored.
        None => tracing::debug!(%id, "a response for no pending request"),
    }
}

impl Transport for StdioTransport {
    fn request(&self, request: OutboundRequest) -> BoxFuture<'_, Result<Frames, Error>> {
        Box::pin(async move {
            if let Some(reason) = self.shared.dead() {
                return Err(Error::transport(reason));
            }
            let (tx, rx) = mpsc::channel(128);
            {
                let mut routes = self
                    .shared
                    .routes
                    .lock()
                    .map_err(|_| Error::transport("the transport is poisoned"))?;
                if routes.contains_key(&request.id) {
                    // BASE-3.
                    return Err(Error::transport(format!(
                        "request id {} is already in flight",
                        request.id
                    )));
                }
                routes.insert(
                    request.id.clone(),
                    Route {
                        tx,
                        progress: request.progress_token.clone(),
                        seq: self.shared.next_seq.fetch_add(1, Ordering::Relaxed),
                    },
                );
            }
            self.shared
                .writer
                .send(Cmd::Line(request.body))
                .map_err(|_| Error::transport("the server's stdin is closed"))?;
            let shared = self.shared.clone();
            let id = request.id;
            Ok(Frames::with_cancel(rx, move || cancel(&shared, id)))
        })
    }

    fn notify(&self, notification: OutboundNotification) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if let Some(reason) = self.shared.dead() {
                return Err(Error::transport(reason));
            }
            self.shared
                .writer
                .send(Cmd::Line(notification.body))
                .map_err(|_| Error::transport("the server's stdin is closed"))
        })
    }

    fn respond(&self, response: OutboundResponse) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if let Some(reason) = self.shared.dead() {
                return Err(Error::transport(reason));
            }
            self.shared
                .writer
                .send(Cmd::Line(response.body))
                .map_err(|_| Error::transport("the server's stdin is closed"))
        })
    }
}

/// A listen-stream notification is for its stream only (SUB-C5).
fn is_listen(n: &tern_types::Notification) -> bool {
    n.params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta_keys::SUBSCRIPTION_ID))
        .is_some()
}

/// STDIO-C7: a request the client gave up on is cancelled on the wire,
/// unless its response already arrived (CANC-3).
fn cancel(shared: &Shared, id: RequestId) {
    let still_pending = shared
        .routes
        .lock()
        .ok()
        .and_then(|mut r| r.remove(&id))
        .is_some();
    if still_pending && shared.dead().is_none() {
        let n = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "cancelled by the client"}});
        if let Ok(body) = serde_json::to_vec(&n) {
            let _ = shared.writer.send(Cmd::Line(body.into()));
        }
    }
}
