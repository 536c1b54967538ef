//! The shared task directory: what instances of one deployment need to
//! share so that any of them can answer `tasks/get`, `tasks/update` and
//! `tasks/cancel` for a task another one runs (ARCHITECTURE.md "Tasks").

use std::collections::HashMap;
use std::fmt;
use std::future::ready;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::replay::{BoxFuture, Durability, StoreError, clock};

/// Longest task id a store accepts, in bytes. Callers check ids before a
/// store sees them; the bound keeps a hostile id out of keys and rows.
pub const MAX_TASK_ID_BYTES: usize = 64;

/// Most answers one task may hold in a store, over all its rounds: past
/// it [`TaskStore::answer`] ignores new keys (the task's round ceiling
/// and the answers per request keep an honest task far below).
pub const MAX_TASK_ANSWERS: usize = 1024;

/// Default bound of [`MemoryTaskStore`]: tasks held before `put` fails
/// with [`StoreError::Full`].
pub const DEFAULT_MEMORY_TASKS: usize = 4096;

/// What a [`TaskStore`] holds for one task.
///
/// The store does not read any of it: the record and the answers are the
/// server's encoding. `Debug` shows sizes, not bytes (answers may carry
/// what a person typed).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TaskEntry {
    /// The record its owner last wrote with [`TaskStore::put`].
    pub record: Vec<u8>,
    /// Answers posted with [`TaskStore::answer`], by key, the first posted
    /// under a key kept; in an order each backend documents (callers look
    /// answers up by key).
    pub answers: Vec<(String, Vec<u8>)>,
    /// Whether [`TaskStore::cancel`] was called.
    pub cancelled: bool,
}

impl fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskEntry")
            .field("record_bytes", &self.record.len())
            .field("answers", &self.answers.len())
            .field("cancelled", &self.cancelled)
            .finish()
    }
}

/// Where the instances of one deployment keep their tasks, so a task runs
/// on one instance while any instance answers for it.
///
/// Three writers meet here without a lock between them, so each has its
/// own part of an entry:
///
/// - the instance running the task (its *owner*) is the only writer of
///   the record ([`put`](Self::put)): status, open questions, result, and
///   the lease it renews while it lives;
/// - any instance adds answers ([`answer`](Self::answer)): first answer
///   under a key wins, so two racing updates cannot swap an answer after
///   it was acknowledged;
/// - any instance sets the cancel flag ([`cancel`](Self::cancel)).
///
/// The owner reads answers and the flag back with [`get`](Self::get).
///
/// Contract for implementations: each method is atomic for its part;
/// every part of an entry lives at least the `ttl` last passed for it, on
/// the store's own clock, and is gone some time after; a store that cannot
/// answer returns [`StoreError`], never a made-up entry or `Ok(None)` for
/// one it could not read.
pub trait TaskStore: Send + Sync + 'static {
    /// Writes the owner's record of task `id`, replacing the one before.
    fn put(
        &self,
        id: &str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The task's entry, or `None` when it has no record (never written,
    /// or expired).
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>>;

    /// Adds `answers` under keys not answered yet; an answered key keeps
    /// its first answer. At [`MAX_TASK_ANSWERS`] new keys are ignored.
    fn answer(
        &self,
        id: &str,
        answers: Vec<(String, Vec<u8>)>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Sets the task's cancel flag.
    fn cancel(&self, id: &str, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>>;

    /// How far the entries reach: whether instances on other hosts share
    /// them.
    fn durability(&self) -> Durability;
}

/// A bounded in-process [`TaskStore`], shared by servers in one process
/// (tests, several servers on one runtime). [`Durability::Volatile`].
pub struct MemoryTaskStore {
    entries: Mutex<HashMap<String, (Instant, TaskEntry)>>,
    capacity: usize,
}

impl fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_TASKS)
    }
}

impl MemoryTaskStore {
    /// A store bounded to `capacity` tasks.
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryTaskStore {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Tasks held, expired ones not yet purged included.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, TaskEntry)>> {
        // Every update below is one assignment: a poisoned map is whole.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live entry of `id`, created empty (expiring after `ttl`) when
    /// `create` is set and there is room.
    fn with_entry<R>(
        &self,
        id: &str,
        ttl: Duration,
        create: bool,
        f: impl FnOnce(&mut TaskEntry) -> R,
    ) -> Result<Option<R>, StoreError> {
        let now = clock();
        let expires = now
            .checked_add(ttl)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        let mut map = self.lock();
        if map.get(id).is_some_and(|(at, _)| *at <= now) {
            map.remove(id);
        }
        if !map.contains_key(id) {
            if !create {
                return Ok(None);
            }
            if map.len() >= self.capacity {
                map.retain(|_, (at, _)| *at > now);
                if map.len() >= self.capacity {
                    return Err(StoreError::Full(format!(
                        "task store holds {} tasks",
                        self.capacity
                    )));
                }
            }
            map.insert(id.to_owned(), (expires, TaskEntry::default()));
        }
        let (at, entry) = map.get_mut(id).expect("present: inserted above");
        *at = (*at).max(expires);
        Ok(Some(f(entry)))
    }
}

impl TaskStore for MemoryTaskStore {
    fn put(
        &self,
        id: &str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = self
            .with_entry(id, ttl, true, |e| e.record = record)
            .map(drop);
        Box::pin(ready(done))
    }

    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>> {
        let got = self
            .with_entry(id, Duration::ZERO, false, |e| e.clone())
            .map(|e| e.filter(|e| !e.record.is_empty()));
        Box::pin(ready(got))
    }

    fn answer(
        &self,
        id: &str,
        answers: Vec<(String, Vec<u8>)>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = self
            .with_entry(id, ttl, true, |e| {
                for (key, answer) in answers {
                    if e.answers.len() < MAX_TASK_ANSWERS
                        && !e.answers.iter().any(|(k, _)| *k == key)
                    {
                        e.answers.push((key, answer));
                    }
                }
            })
            .map(drop);
        Box::pin(ready(done))
    }

    fn cancel(&self, id: &str, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        let done = self
            .with_entry(id, ttl, true, |e| e.cancelled = true)
            .map(drop);
        Box::pin(ready(done))
    }

    fn durability(&self) -> Durability {
        Durability::Volatile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(f: BoxFuture<'_, T>) -> T {
        // The memory store's futures are ready at once.
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = f;
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => unreachable!("memory store futures are ready"),
        }
    }

    #[test]
    fn the_first_answer_under_a_key_is_kept() {
        let s = MemoryTaskStore::default();
        let ttl = Duration::from_secs(60);
        block(s.put("t", b"r1".to_vec(), ttl)).unwrap();
        block(s.answer("t", vec![("a".into(), b"1".to_vec())], ttl)).unwrap();
        block(s.answer(
            "t",
            vec![("a".into(), b"2".to_vec()), ("b".into(), b"3".to_vec())],
            ttl,
        ))
        .unwrap();
        block(s.put("t", b"r2".to_vec(), ttl)).unwrap();
        let e = block(s.get("t")).unwrap().unwrap();
        assert_eq!(e.record, b"r2");
        assert_eq!(
            e.answers,
            vec![("a".into(), b"1".to_vec()), ("b".into(), b"3".to_vec())]
        );
        assert!(!e.cancelled);
        block(s.cancel("t", ttl)).unwrap();
        assert!(block(s.get("t")).unwrap().unwrap().cancelled);
    }

    #[test]
    fn an_entry_without_a_record_or_past_its_ttl_is_none() {
        let s = MemoryTaskStore::with_capacity(2);
        block(s.answer(
            "x",
            vec![("a".into(), b"1".to_vec())],
            Duration::from_secs(60),
        ))
        .unwrap();
        assert_eq!(block(s.get("x")).unwrap(), None);
        block(s.put("y", b"r".to_vec(), Duration::ZERO)).unwrap();
        assert_eq!(block(s.get("y")).unwrap(), None);
        // Full, but "y" expired: room is made.
        block(s.put("z", b"r".to_vec(), Duration::from_secs(60))).unwrap();
        assert!(matches!(
            block(s.put("w", b"r".to_vec(), Duration::from_secs(60))),
            Err(StoreError::Full(_))
        ));
    }
}
