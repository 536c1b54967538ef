//! Single use: at-most-once effects guarded by the replay store
//! (SECURITY.md §3.9, MRTR-SEC4).
//!
//! A sealed, bound, expiring state still cannot prove it was not used
//! before. A handler whose effect is irreversible consumes a key at the
//! point of the effect, after authorization: the flow id and a label, or a
//! business key such as a redemption code, never the token text. The first
//! consume wins; every replay gets the uniform -32602; a store that is down
//! fails closed with -32603 and nothing consumed.

use std::time::Duration;

use tern_seal::ConsumeKey;

use crate::extract::{CallContext, FromCall};
use crate::outcome::{Error, Outcome};
use crate::server::Server;

/// The handle a handler consumes single-use keys through.
#[derive(Clone)]
pub struct SingleUse {
    server: Server,
    flow_id: [u8; 16],
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
        let ttl = self.server.config().marker_ttl();
        self.server
            .consume(ConsumeKey::for_flow(&self.flow_id, label), ttl)
            .await
            .map_err(Error::Protocol)
    }

    /// Consumes a business key (for example a redemption code) for `ttl`:
    /// at most once across every flow and instance sharing the store. The
    /// key holds a marker in the store for `ttl`: consume only keys your
    /// service issued, or a peer making keys up fills the store.
    pub async fn consume_key(
        &self,
        namespace: &str,
        key: &str,
        ttl: Duration,
    ) -> Result<(), Error> {
        self.server
            .consume(ConsumeKey::business(namespace, key), ttl)
            .await
            .map_err(Error::Protocol)
    }
}

impl FromCall for SingleUse {
    fn from_call(cx: &CallContext) -> Result<Self, Outcome> {
        Ok(SingleUse {
            server: cx.server.clone(),
            flow_id: cx.flow_id,
        })
    }
}
