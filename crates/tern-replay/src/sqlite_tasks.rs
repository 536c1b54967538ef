//! The task directory of one host, in SQLite (ARCHITECTURE.md "Tasks").
//!
//! Two tables, which may share a file with [`crate::SqliteReplayStore`]'s:
//!
//! - `tern_tasks (id TEXT PRIMARY KEY, record BLOB, cancelled INTEGER,
//!   expires_ms INTEGER)`: one row per task. `record` is `NULL` until the
//!   owner's first `put`, since answers and the cancel flag may arrive
//!   first; `expires_ms` is in Unix milliseconds.
//! - `tern_task_answers (id TEXT, key TEXT, seq INTEGER, answer BLOB,
//!   PRIMARY KEY (id, key))`: the answers, first under a key kept by the
//!   primary key, `seq` their order of arrival within the task.
//!
//! The whole entry shares one expiry, as in [`tern_seal::MemoryTaskStore`]:
//! every write extends it to at least its `ttl` and never shortens it, and
//! a write to an expired entry starts a fresh one (its old answers and flag
//! gone). Each call is one transaction, so it is atomic across every
//! connection and process on the file. Each handle owns one connection on
//! a worker thread of its own, so async callers never block on the disk,
//! as [`crate::SqliteReplayStore`] does.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use tern_seal::{BoxFuture, Durability, MAX_TASK_ANSWERS, StoreError, TaskEntry, TaskStore};
use tokio::sync::oneshot;

use crate::sqlite::{
    Purge, SqliteOpenError, SqliteOptions, Synchronous, millis, open_connection, spawn_worker,
    store_error, unix_millis,
};
use crate::tasks::{MAX_TASK_ANSWERS_BYTES, answers_full, check_answers, check_id, check_record};

/// Both tables. Answers are an ordinary rowid table: values of up to
/// megabytes are too big for `WITHOUT ROWID`, which suits small rows.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS tern_tasks (
    id TEXT PRIMARY KEY NOT NULL,
    record BLOB,
    cancelled INTEGER NOT NULL DEFAULT 0,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tern_task_answers (
    id TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    answer BLOB NOT NULL,
    PRIMARY KEY (id, key)
)";

/// An expired entry's answers, before its row goes: a later write starts
/// the task afresh, as the memory store's does, instead of reviving them.
const FORGET_EXPIRED_ANSWERS: &str = "DELETE FROM tern_task_answers WHERE id = ?1
    AND EXISTS (SELECT 1 FROM tern_tasks WHERE id = ?1 AND expires_ms <= ?2)";

const FORGET_EXPIRED_TASK: &str = "DELETE FROM tern_tasks WHERE id = ?1 AND expires_ms <= ?2";

/// Writes the record; the expiry only grows.
const PUT: &str =
    "INSERT INTO tern_tasks (id, record, cancelled, expires_ms) VALUES (?1, ?2, 0, ?3)
    ON CONFLICT(id) DO UPDATE SET record = excluded.record,
    expires_ms = max(tern_tasks.expires_ms, excluded.expires_ms)";

/// Sets the flag; the expiry only grows.
const CANCEL: &str =
    "INSERT INTO tern_tasks (id, record, cancelled, expires_ms) VALUES (?1, NULL, 1, ?2)
    ON CONFLICT(id) DO UPDATE SET cancelled = 1,
    expires_ms = max(tern_tasks.expires_ms, excluded.expires_ms)";

/// Makes the row answers hang from, or extends its expiry.
const TOUCH: &str =
    "INSERT INTO tern_tasks (id, record, cancelled, expires_ms) VALUES (?1, NULL, 0, ?2)
    ON CONFLICT(id) DO UPDATE SET
    expires_ms = max(tern_tasks.expires_ms, excluded.expires_ms)";

/// How many answers the task holds, and their bytes.
const COUNT_ANSWERS: &str =
    "SELECT count(*), coalesce(sum(length(answer)), 0) FROM tern_task_answers WHERE id = ?1";

/// Adds an answer unless its key has one; changes no row for an answered
/// key.
const ADD_ANSWER: &str = "INSERT INTO tern_task_answers (id, key, seq, answer)
    VALUES (?1, ?2, ?3, ?4) ON CONFLICT(id, key) DO NOTHING";

/// A live entry only: an expired row is as good as absent before a purge.
const GET_TASK: &str = "SELECT record, cancelled FROM tern_tasks WHERE id = ?1 AND expires_ms > ?2";

const GET_ANSWERS: &str = "SELECT key, answer FROM tern_task_answers WHERE id = ?1 ORDER BY seq";

const PURGE_ANSWERS: &str = "DELETE FROM tern_task_answers
    WHERE id IN (SELECT id FROM tern_tasks WHERE expires_ms < ?1)";

const PURGE_TASKS: &str = "DELETE FROM tern_tasks WHERE expires_ms < ?1";

/// A [`TaskStore`] in one SQLite file, shared by every process on the host.
///
/// [`Durability::LocalDurable`]: tasks survive restarts of the instances
/// (and, with [`Synchronous::Full`], power cuts), and any number of
/// processes may open the file at once. It cannot be shared across hosts:
/// WAL mode needs shared memory. The file may be the replay store's: the
/// tables differ.
///
/// Time is the host's wall clock in Unix milliseconds, the clock of
/// [`crate::SqliteReplayStore`], because entries outlive the process. A
/// clock stepped forward ends entries early; one stepped back keeps them
/// longer. Expired rows read as absent at once and are deleted by a purge
/// at most once per [`SqliteOptions::purge_interval`], run before a call,
/// [`SqliteOptions::purge_skew`] after their expiry.
///
/// Answers come back from [`get`](TaskStore::get) in the order they were
/// first added, as from the memory store. An empty record reads as no
/// record, as there.
///
/// Every error fails closed: a write that returns one may or may not have
/// landed only after [`StoreError::Timeout`] (or a dropped future);
/// otherwise it was rolled back whole. A read never answers `Ok(None)` for
/// an entry it could not read. Values are bounded
/// ([`crate::MAX_TASK_RECORD_BYTES`], [`crate::MAX_TASK_ANSWER_KEY_BYTES`],
/// [`MAX_TASK_ANSWERS_BYTES`]); past a bound a call is refused with
/// [`StoreError::Full`] and writes nothing.
pub struct SqliteTaskStore {
    jobs: mpsc::Sender<Job>,
    path: PathBuf,
    synchronous: Synchronous,
}

/// One call, run on the worker thread; it sends its own answer.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

impl SqliteTaskStore {
    /// Opens (creating with mode 0600 if needed) the store at `path`, in WAL
    /// mode with the chosen durability, and starts its worker thread.
    ///
    /// This blocks on the disk; call it at startup.
    ///
    /// # Errors
    ///
    /// As [`crate::SqliteReplayStore::open`]: the file cannot be opened,
    /// others may write it, or SQLite refuses it or the settings.
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, SqliteOpenError> {
        let path = path.as_ref().to_path_buf();
        let mut conn = open_connection(&path, &options, SCHEMA)?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let mut purge = Purge::new(&options);
        spawn_worker("tern-tasks-sqlite", &path, move || {
            // Until every handle is dropped.
            while let Ok(job) = queue.recv() {
                if let Some(before) = purge.due() {
                    purge_expired(&mut conn, before);
                }
                job(&mut conn);
            }
        })?;
        Ok(Self {
            jobs,
            path,
            synchronous: options.synchronous,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The commit durability this store was opened with.
    pub fn synchronous(&self) -> Synchronous {
        self.synchronous
    }

    /// Runs `work` on the worker and awaits its answer. A worker that is
    /// gone cannot read or write anything: fail closed, and never answer
    /// `Ok(None)` for a read.
    async fn ask<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // A caller may have given up waiting; its loss.
            let _ = reply.send(work(conn));
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Unavailable("sqlite task worker stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("sqlite task worker stopped".into()))?
    }
}

impl fmt::Debug for SqliteTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteTaskStore")
            .field("path", &self.path)
            .field("synchronous", &self.synchronous)
            .finish_non_exhaustive()
    }
}

impl TaskStore for SqliteTaskStore {
    fn put(
        &self,
        id: &str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_record(&id, &record)?;
            self.ask(move |conn| {
                write(conn, &id, ttl, |tx, exp| {
                    tx.prepare_cached(PUT)?
                        .execute(params![id, record, exp])
                        .map(drop)
                })
            })
            .await
        })
    }

    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_id(&id)?;
            self.ask(move |conn| read(conn, &id)).await
        })
    }

    fn answer(
        &self,
        id: &str,
        answers: Vec<(String, Vec<u8>)>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_answers(&id, &answers)?;
            self.ask(move |conn| add_answers(conn, &id, &answers, ttl))
                .await
        })
    }

    fn cancel(&self, id: &str, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_id(&id)?;
            self.ask(move |conn| {
                write(conn, &id, ttl, |tx, exp| {
                    tx.prepare_cached(CANCEL)?
                        .execute(params![id, exp])
                        .map(drop)
                })
            })
            .await
        })
    }

    fn durability(&self) -> Durability {
        Durability::LocalDurable
    }
}

/// Runs `change` in one write transaction, after forgetting the entry if it
/// expired; `change` gets the expiry (Unix ms) this write asks for.
///
/// IMMEDIATE: the write lock is taken (or waited for, up to the busy
/// timeout) before anything is read, so a read-then-write cannot fail
/// halfway on a lock upgrade.
fn write(
    conn: &mut Connection,
    id: &str,
    ttl: Duration,
    change: impl FnOnce(&Connection, i64) -> rusqlite::Result<()>,
) -> Result<(), StoreError> {
    let now = unix_millis()?;
    let exp = now.saturating_add(millis(ttl));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(store_error)?;
    forget_expired(&tx, id, now).map_err(store_error)?;
    change(&tx, exp).map_err(store_error)?;
    tx.commit().map_err(store_error)
}

fn forget_expired(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(FORGET_EXPIRED_ANSWERS)?
        .execute(params![id, now])?;
    conn.prepare_cached(FORGET_EXPIRED_TASK)?
        .execute(params![id, now])?;
    Ok(())
}

/// Adds the answers under keys not answered yet, in order, until the task
/// holds [`MAX_TASK_ANSWERS`]; refuses the whole call, rolled back, if the
/// task's answers would pass [`MAX_TASK_ANSWERS_BYTES`].
fn add_answers(
    conn: &mut Connection,
    id: &str,
    answers: &[(String, Vec<u8>)],
    ttl: Duration,
) -> Result<(), StoreError> {
    let now = unix_millis()?;
    let exp = now.saturating_add(millis(ttl));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(store_error)?;
    forget_expired(&tx, id, now).map_err(store_error)?;
    tx.prepare_cached(TOUCH)
        .and_then(|mut stmt| stmt.execute(params![id, exp]))
        .map_err(store_error)?;
    let (mut held, mut bytes): (i64, i64) = tx
        .prepare_cached(COUNT_ANSWERS)
        .and_then(|mut stmt| stmt.query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(store_error)?;
    let cap = i64::try_from(MAX_TASK_ANSWERS).unwrap_or(i64::MAX);
    let byte_cap = i64::try_from(MAX_TASK_ANSWERS_BYTES).unwrap_or(i64::MAX);
    {
        let mut add = tx.prepare_cached(ADD_ANSWER).map_err(store_error)?;
        for (key, answer) in answers {
            if held >= cap {
                // New keys are ignored from here on; answered ones would
                // be anyway.
                break;
            }
            if add
                .execute(params![id, key, held, answer])
                .map_err(store_error)?
                == 1
            {
                held += 1;
                bytes = bytes.saturating_add(i64::try_from(answer.len()).unwrap_or(i64::MAX));
            }
        }
    }
    if bytes > byte_cap {
        // Dropping `tx` rolls every answer of this call back.
        return Err(answers_full());
    }
    tx.commit().map_err(store_error)
}

/// The live entry: its row and answers read in one transaction, so they
/// belong to the same moment.
fn read(conn: &mut Connection, id: &str) -> Result<Option<TaskEntry>, StoreError> {
    let now = unix_millis()?;
    let tx = conn.transaction().map_err(store_error)?;
    let row: Option<(Option<Vec<u8>>, i64)> = tx
        .prepare_cached(GET_TASK)
        .and_then(|mut stmt| {
            stmt.query_row(params![id, now], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(store_error)?;
    let Some((Some(record), cancelled)) = row else {
        return Ok(None);
    };
    if record.is_empty() {
        return Ok(None);
    }
    let answers = tx
        .prepare_cached(GET_ANSWERS)
        .and_then(|mut stmt| {
            stmt.query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<(String, Vec<u8>)>>>()
        })
        .map_err(store_error)?;
    // A read-only transaction: ending it cannot lose anything.
    drop(tx);
    Ok(Some(TaskEntry {
        record,
        answers,
        cancelled: cancelled != 0,
    }))
}

/// Deletes tasks and answers expired before `before`. One transaction, so
/// no answer outlives its task's row; dropped uncommitted, it rolls back.
/// A failure is left for the next purge.
fn purge_expired(conn: &mut Connection, before: i64) {
    let _ = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .and_then(|tx| {
            tx.execute(PURGE_ANSWERS, params![before])?;
            tx.execute(PURGE_TASKS, params![before])?;
            tx.commit()
        });
}
