//! A cancellation token for calls (MRTR-C-A3: the caller can stop the loop
//! at any point). Built on `tokio::sync::watch` so this crate needs no
//! runtime features beyond `sync`.

use tokio::sync::watch;

/// Cancels the calls it is passed to. Cheap to clone; every clone cancels
/// the same calls. Cancelling is permanent.
#[derive(Clone, Debug)]
pub struct CancelToken {
    tx: std::sync::Arc<watch::Sender<bool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        CancelToken {
            tx: std::sync::Arc::new(watch::channel(false).0),
        }
    }

    /// Cancels every call holding this token. The current round's request
    /// is abandoned (on stdio the transport sends `notifications/cancelled`,
    /// on HTTP it closes the stream, CANC-C1) and no retry is sent.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the token is cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so `wait_for` cannot see it closed.
        let _ = rx.wait_for(|c| *c).await;
    }
}
