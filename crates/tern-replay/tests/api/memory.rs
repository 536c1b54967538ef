//! `MemoryReplayStore` passes the same suite (minus restart: it is
//! `Volatile` by design, SECURITY.md §3.9).

use std::sync::Arc;
use std::time::Duration;

use tern_seal::{
    BoxFuture, ConsumeKey, Consumed, MemoryReplayStore, ReplayStore, StoreError, StoredResult,
};

use crate::suite::Fixture;

/// One in-process store; every handle shares it, as every request of one
/// process does.
pub(crate) struct Memory(Arc<MemoryReplayStore>);

pub(crate) struct Handle(Arc<MemoryReplayStore>);

impl ReplayStore for Handle {
    fn consume(
        &self,
        key: ConsumeKey,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>> {
        self.0.consume(key, ttl)
    }

    fn durability(&self) -> tern_seal::Durability {
        self.0.durability()
    }

    // A forwarding store must forward these too, or it silently falls back
    // to the defaults and keeps no results.
    fn keeps_results(&self) -> bool {
        self.0.keeps_results()
    }

    fn put_result(
        &self,
        key: ConsumeKey,
        owner: [u8; 32],
        result: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.0.put_result(key, owner, result, ttl)
    }

    fn get_result(
        &self,
        key: ConsumeKey,
    ) -> BoxFuture<'_, Result<Option<StoredResult>, StoreError>> {
        self.0.get_result(key)
    }
}

impl Fixture for Memory {
    type Store = Handle;

    async fn start() -> Self {
        Self(Arc::new(MemoryReplayStore::new()))
    }

    async fn handle(&self) -> Handle {
        Handle(Arc::clone(&self.0))
    }
}

crate::suite::replay_suite!(Memory);
