//! An upstream call's progress and log notifications on their way to the
//! call's client.
//!
//! The upstream's read loop hands each one over without waiting: the
//! client's stream is bounded and a client may stop reading it, and a read
//! loop that waited for it would stall the upstream call itself. What waits
//! in between is bounded instead ([`MAX_RELAYED`], [`MAX_RELAYED_BYTES`],
//! SECURITY.md "`tern proxy`"); past it a notification is dropped and
//! counted, and the first drop of each upstream request is logged.
//! Progress and log notifications are lossy by nature (PROG-S3 asks only
//! that progress increase, which dropping keeps).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Map, Value};
use tern_server::{Log, Progress};
use tern_types::Notification;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// The most notifications of one call the proxy holds for a client that
/// does not read them (each counted from the moment the upstream sent it
/// until the client's stream took it).
pub const MAX_RELAYED: usize = 64;

/// The most bytes of one call's notifications (their params, as JSON) the
/// proxy holds the same way. A notification counts as at least
/// `MAX_RELAYED_BYTES / MAX_RELAYED` bytes, so one budget bounds both; a
/// single notification larger than this is never relayed.
pub const MAX_RELAYED_BYTES: usize = 1024 * 1024;

/// What one notification counts against [`MAX_RELAYED_BYTES`].
fn cost(params: &Map<String, Value>) -> u32 {
    let size = tern_proto::finish::encoded_len(params).max(MAX_RELAYED_BYTES / MAX_RELAYED);
    u32::try_from(size).unwrap_or(u32::MAX)
}

/// A notification admitted, with its share of the budget; the share is
/// given back once the client's stream took it.
struct Admitted {
    method: String,
    params: Map<String, Value>,
    _room: OwnedSemaphorePermit,
}

/// The handler for a call's notifications: each progress or log
/// notification goes to `progress` or `log`, in order, while the call's
/// budget has room; past it, it is dropped and counted in `dropped`.
pub(crate) fn relay(
    upstream: &str,
    progress: Progress,
    log: Log,
    dropped: Arc<AtomicU64>,
) -> impl Fn(&Notification) + Send + Sync + 'static {
    // Unbounded as a channel, bounded by `room`: a permit rides with each
    // notification, so what is still to be delivered counts too.
    let (tx, mut rx) = mpsc::unbounded_channel::<Admitted>();
    let room = Arc::new(Semaphore::new(MAX_RELAYED_BYTES));
    tokio::spawn(async move {
        while let Some(n) = rx.recv().await {
            deliver(&progress, &log, &n.method, &n.params).await;
        }
    });
    let upstream = upstream.to_owned();
    let warned = AtomicBool::new(false);
    move |n: &Notification| {
        if !matches!(
            n.method.as_str(),
            "notifications/progress" | "notifications/message"
        ) {
            return;
        }
        let params = n.params.clone().unwrap_or_default();
        let Ok(permit) = room.clone().try_acquire_many_owned(cost(&params)) else {
            dropped.fetch_add(1, Ordering::Relaxed);
            if !warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    upstream = %upstream,
                    max = MAX_RELAYED,
                    max_bytes = MAX_RELAYED_BYTES,
                    "a client is not reading its call's notifications; those past the proxy's budget are dropped"
                );
            }
            return;
        };
        let _ = tx.send(Admitted {
            method: n.method.clone(),
            params,
            _room: permit,
        });
    }
}

/// Sends one notification on to the client.
async fn deliver(progress: &Progress, log: &Log, method: &str, p: &Map<String, Value>) {
    if method == "notifications/progress" {
        let Some(done) = p.get("progress").and_then(Value::as_f64) else {
            return;
        };
        let total = p.get("total").and_then(Value::as_f64);
        let message = p.get("message").and_then(Value::as_str);
        progress.notify(done, total, message).await;
    } else {
        let level = p.get("level").and_then(Value::as_str).unwrap_or("info");
        let data = p.get("data").cloned().unwrap_or(Value::Null);
        log.log(level, data).await;
    }
}
