//! Notifications a handler sends on its own request's stream: progress and
//! (deprecated) log messages (DIGEST §6.7, §6.9).

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use tern_proto::accept::LOG_LEVELS;
use tern_proto::finish::encode_notification;

/// Where a request's notifications go: the transport turns them into SSE
/// events (HTTP) or lines (stdio) before the final response.
#[derive(Clone, Debug, Default)]
pub struct Sink(pub(crate) Option<mpsc::Sender<Bytes>>);

impl Sink {
    /// A sink feeding `tx`. The transport owns the receiver; dropping it
    /// cancels the request (CANC-S2).
    pub fn new(tx: mpsc::Sender<Bytes>) -> Self {
        Sink(Some(tx))
    }

    /// A sink that drops everything (no stream to send on).
    pub fn none() -> Self {
        Sink(None)
    }

    /// Whether there is a stream to send on at all.
    pub(crate) fn is_open(&self) -> bool {
        self.0.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    pub(crate) async fn send(&self, frame: Bytes) -> bool {
        match &self.0 {
            Some(tx) => tx.send(frame).await.is_ok(),
            None => false,
        }
    }

    pub(crate) async fn closed(&self) {
        match &self.0 {
            Some(tx) => tx.closed().await,
            None => std::future::pending().await,
        }
    }
}

/// Sends `notifications/progress` for the request, when it carried a
/// `progressToken` (PROG-S2..S4); otherwise does nothing.
#[derive(Clone, Debug)]
pub struct Progress {
    pub(crate) sink: Sink,
    pub(crate) token: Option<Value>,
}

impl Progress {
    /// Whether the client asked for progress.
    pub fn wanted(&self) -> bool {
        self.token.is_some()
    }

    /// Reports progress. `progress` must increase with every call (PROG-S3).
    pub async fn notify(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.token else { return };
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(t) = total {
            params.insert("total".into(), json!(t));
        }
        if let Some(m) = message {
            params.insert("message".into(), json!(m));
        }
        self.sink
            .send(encode_notification("notifications/progress", &params))
            .await;
    }
}

/// Sends `notifications/message` at or above the level the request opted
/// into, and nothing without `io.modelcontextprotocol/logLevel` (LOG-S2,
/// META-S14). Deprecated in this revision: prefer stderr or tracing.
#[derive(Clone, Debug)]
pub struct Log {
    pub(crate) sink: Sink,
    pub(crate) level: Option<usize>,
}

impl Log {
    /// Logs `data` at `level` (one of the eight levels, e.g. `"info"`).
    pub async fn log(&self, level: &str, data: Value) {
        let Some(threshold) = self.level else { return };
        let Some(at) = LOG_LEVELS.iter().position(|l| *l == level) else {
            return;
        };
        if at < threshold {
            return;
        }
        let params = json!({"level": level, "data": data});
        self.sink
            .send(encode_notification("notifications/message", &params))
            .await;
    }

    /// The level the request opted into, if any (a proxy asks its upstream
    /// for the same).
    pub fn level(&self) -> Option<&'static str> {
        self.level.and_then(|l| LOG_LEVELS.get(l).copied())
    }

    /// Logs at `info`.
    pub async fn info(&self, data: Value) {
        self.log("info", data).await;
    }
}
