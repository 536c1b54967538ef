//! `MemoryTaskStore`, the reference the backends are held to, passes the
//! task suite (its bounds are its own, so not the size bounds).

use std::sync::Arc;
use std::time::Duration;

use tern_seal::{BoxFuture, Durability, MemoryTaskStore, StoreError, TaskEntry, TaskStore};

use crate::tasks_suite::TaskFixture;

/// One in-process store; every handle shares it.
pub(crate) struct Memory(Arc<MemoryTaskStore>);

pub(crate) struct Handle(Arc<MemoryTaskStore>);

impl TaskStore for Handle {
    fn put(
        &self,
        id: &str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.0.put(id, record, ttl)
    }

    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>> {
        self.0.get(id)
    }

    fn answer(
        &self,
        id: &str,
        answers: Vec<(String, Vec<u8>)>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.0.answer(id, answers, ttl)
    }

    fn cancel(&self, id: &str, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        self.0.cancel(id, ttl)
    }

    fn durability(&self) -> Durability {
        self.0.durability()
    }
}

impl TaskFixture for Memory {
    type Store = Handle;
    const SORTED_BY_KEY: bool = false;

    async fn start() -> Self {
        Self(Arc::new(MemoryTaskStore::default()))
    }

    async fn handle(&self) -> Handle {
        Handle(Arc::clone(&self.0))
    }
}

crate::tasks_suite::task_suite!(Memory);
