//! Single use: at-most-once effects guarded by the replay store
//! (SECURITY.md §3.9, MRTR-SEC4).
//!
//! A sealed, bound, expiring state still cannot prove it was not used
//! before. A handler whose effect is irreversible consumes a key at the
//! point of the effect, after authorization: the flow id and a label, or a
//! business key such as a redemption code, never the token text. The first
//! consume wins; every replay gets the uniform -32602; a store that is down
//! fails closed with -32603 and nothing consumed.

use std::sync::Arc;
use std::time::Duration;

use tern_proto::McpError;
use tern_seal::{ConsumeKey, Consumed, ReplayStore};

use crate::extract::{CallContext, FromCall};
use crate::outcome::{Error, Outcome};

/// The handle a handler consumes single-use keys through.
#[derive(Clone)]
pub struct SingleUse {
    pub(crate) store: Arc<dyn ReplayStore>,
    pub(crate) flow_id: [u8; 16],
    pub(crate) marker_ttl: Duration,
    pub(crate) metrics: crate::server::Server,
}

impl std::fmt::Debug for SingleUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleUse").finish_non_exhaustive()
    }
}

impl SingleUse {
    /// Consumes `H(flow id ‖ label)`: this flow's effect named `label` runs
    /// at most once, however often its state is replayed or forked.
    pub async fn consume(&self, label: &str) -> Result<(), Error> {
        self.take(ConsumeKey::for_flow(&self.flow_id, label), self.marker_ttl)
            .await
    }

    /// Consumes a business key (for example a redemption code) for `ttl`:
    /// at most once across every flow and instance sharing the store.
    pub async fn consume_key(
        &self,
        namespace: &str,
        key: &str,
        ttl: Duration,
    ) -> Result<(), Error> {
        self.take(ConsumeKey::business(namespace, key), ttl).await
    }

    async fn take(&self, key: ConsumeKey, ttl: Duration) -> Result<(), Error> {
        match self.store.consume(key, ttl).await {
            Ok(Consumed::FirstUse) => Ok(()),
            Ok(Consumed::AlreadyUsed) => {
                tracing::info!(reason = "already_consumed", "single-use key replayed");
                self.metrics.metrics().reject("already_consumed");
                Err(Error::Protocol(McpError::InvalidState))
            }
            Err(e) => {
                tracing::warn!(error = %e, "replay store unavailable; failing closed");
                self.metrics.metrics().reject("store_unavailable");
                Err(Error::Protocol(McpError::Unavailable))
            }
        }
    }
}

impl FromCall for SingleUse {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(SingleUse {
            store: cx.server.replay_store(),
            flow_id: cx.flow_id,
            marker_ttl: cx.server.marker_ttl(),
            metrics: cx.server.clone(),
        })
    }
}
