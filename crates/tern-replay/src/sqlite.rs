//! The embedded default for one host: SQLite in WAL mode (SECURITY.md §3.9,
//! defaults).
//!
//! One marker is one row `(id BLOB PRIMARY KEY, exp INTEGER)`, `exp` in Unix
//! milliseconds. `consume` is a single upsert that inserts a new marker or
//! revives an expired one, and reports first use exactly when it changed a
//! row: the primary key makes it atomic across every connection and process
//! on the file. Each store handle owns one connection on a worker thread of
//! its own, so async callers never block on the disk.
//!
//! Stored results (SECURITY.md §3.9, idempotency-key pattern) live beside the
//! markers in a `results` table `(id BLOB PRIMARY KEY, owner BLOB, result
//! BLOB, exp INTEGER)`, written and read by the same worker and purged with
//! the markers. It is an ordinary rowid table: rows of up to 64 KiB are too
//! big for `WITHOUT ROWID`, which suits small rows.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension as _, params};
use tern_seal::{
    BoxFuture, ConsumeKey, Consumed, Durability, ReplayStore, StoreError, StoredResult,
    check_result_size,
};
use tokio::sync::oneshot;

/// Default wait for the database's write lock before `consume` gives up with
/// [`StoreError::Timeout`].
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(1);

/// Default spacing of purges of expired markers (SECURITY.md §3.9: once a
/// minute).
pub const DEFAULT_PURGE_INTERVAL: Duration = Duration::from_secs(60);

/// Default grace kept past a marker's expiry before a purge deletes it: the
/// maximum clock skew of SECURITY.md §3.3.
pub const DEFAULT_PURGE_SKEW: Duration = Duration::from_secs(30);

/// Default WAL pages written between two automatic checkpoints (16 MiB at
/// SQLite's 4 KiB pages; SQLite's own default is 1,000). Markers are keyed
/// by random ids, so each commit dirties pages all over the file; a
/// checkpoint copies each dirty page once however often it was written
/// since, so a longer interval copies far fewer pages per consume (measured
/// on a store of 100,000 flows at twelve consumes per commit: about a fifth
/// less CPU per consume, a third less in the kernel).
pub const DEFAULT_WAL_AUTOCHECKPOINT: u32 = 4_000;

/// Both tables; `IF NOT EXISTS` also adds `results` to a file made before
/// stored results existed.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS markers (
    id BLOB PRIMARY KEY NOT NULL,
    exp INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS results (
    id BLOB PRIMARY KEY NOT NULL,
    owner BLOB NOT NULL,
    result BLOB NOT NULL,
    exp INTEGER NOT NULL
)";

/// Inserts a marker, or revives one whose expiry has passed; changes exactly
/// one row on first use and none while a live marker exists. An expired
/// marker must count as first use, or a key could never be reused after its
/// TTL even though the contract promises only "at least `ttl`".
const CONSUME: &str = "INSERT INTO markers (id, exp) VALUES (?1, ?2)
    ON CONFLICT(id) DO UPDATE SET exp = excluded.exp WHERE markers.exp <= ?3";

const PURGE: &str = "DELETE FROM markers WHERE exp < ?1";

const PURGE_RESULTS: &str = "DELETE FROM results WHERE exp < ?1";

/// Stores a result, replacing any earlier one under the key (a revived
/// business key's new use, or a retried write).
const PUT_RESULT: &str = "INSERT INTO results (id, owner, result, exp) VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT(id) DO UPDATE SET owner = excluded.owner, result = excluded.result,
    exp = excluded.exp";

/// A live result only: an expired row is as good as absent even before a
/// purge deletes it.
const GET_RESULT: &str = "SELECT owner, result FROM results WHERE id = ?1 AND exp > ?2";

/// How hard SQLite pushes each commit to the disk (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// Every commit reaches the disk before `consume` answers, so a marker
    /// survives a power cut. The default (SECURITY.md §3.9); each consume
    /// costs one fsync of the WAL, so its latency is the disk's.
    #[default]
    Full,
    /// A commit survives a crash of the process but may be lost on a power
    /// cut, and with it the markers of the last moments: a replay of those
    /// flows would then be accepted. No fsync per consume (tens of µs);
    /// opt in only if that risk is accepted.
    Normal,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Settings of [`SqliteReplayStore::open`]; [`Default`] is the safe choice.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Commit durability; [`Synchronous::Full`] unless opted out.
    pub synchronous: Synchronous,
    /// How long `consume` waits for another writer before it fails closed
    /// with [`StoreError::Timeout`]. Too short refuses good requests under
    /// load; too long holds them.
    pub busy_timeout: Duration,
    /// Least time between two purges of expired markers. Purges run from
    /// `consume`, after its own write, so no background task is needed.
    pub purge_interval: Duration,
    /// How long past its expiry a marker is kept before a purge deletes it.
    /// Expired markers count as unused either way; the grace means a wall
    /// clock stepped back by up to the skew still finds them live.
    pub purge_skew: Duration,
    /// WAL pages written before SQLite copies them back into the database
    /// file (`PRAGMA wal_autocheckpoint`). The WAL file grows to about this
    /// many pages (plus one commit's) and is then reused from its start;
    /// reopening after a crash reads it whole. 0 turns automatic
    /// checkpoints off, and the WAL then grows without bound.
    pub wal_autocheckpoint: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            purge_interval: DEFAULT_PURGE_INTERVAL,
            purge_skew: DEFAULT_PURGE_SKEW,
            wal_autocheckpoint: DEFAULT_WAL_AUTOCHECKPOINT,
        }
    }
}

impl SqliteOptions {
    /// Sets [`SqliteOptions::synchronous`].
    #[must_use]
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets [`SqliteOptions::busy_timeout`].
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets [`SqliteOptions::purge_interval`].
    #[must_use]
    pub fn purge_interval(mut self, interval: Duration) -> Self {
        self.purge_interval = interval;
        self
    }

    /// Sets [`SqliteOptions::purge_skew`].
    #[must_use]
    pub fn purge_skew(mut self, skew: Duration) -> Self {
        self.purge_skew = skew;
        self
    }

    /// Sets [`SqliteOptions::wal_autocheckpoint`], in pages.
    #[must_use]
    pub fn wal_autocheckpoint(mut self, pages: u32) -> Self {
        self.wal_autocheckpoint = pages;
        self
    }
}

/// Why [`SqliteReplayStore::open`] refused: the process must not start with
/// this store (SECURITY.md §3.9, failure policy).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteOpenError {
    /// The file could not be created or opened.
    #[error("cannot open replay store {path}: {source}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The file is writable by group or others, who could delete markers and
    /// so reopen a replay window.
    #[error("replay store {path} has mode {mode:o}; it must not be writable by group or others")]
    Permissions {
        /// The database file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// SQLite refused the file, the settings or the schema.
    #[error("replay store {path}: {reason}")]
    Database {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
}

/// A replay store in one SQLite file, shared by every process on the host
/// (SECURITY.md §3.9).
///
/// [`Durability::LocalDurable`]: markers survive restarts (and, with
/// [`Synchronous::Full`], power cuts), and any number of processes may open
/// the same file at once, which rolling restarts and prefork servers need.
/// It cannot be shared across hosts: WAL mode needs shared memory.
///
/// Time is the host's wall clock, in Unix milliseconds, because markers must
/// outlive the process. A clock stepped forward shortens live markers; run
/// NTP with slewing.
///
/// Each handle serialises its own calls on one connection, and commits the
/// calls that queue up while it is busy in one transaction (group commit):
/// under load one `fsync` covers many markers, and no call is answered
/// before its marker is committed.
///
/// The mistakes, priced: a replay wrongly accepted repeats an irreversible
/// effect, and here it can only come from a lost marker (a power cut under
/// [`Synchronous::Normal`], a deleted or shared-across-hosts file, a wall
/// clock stepped forward). A retry wrongly refused costs one flow restart,
/// so every doubt resolves that way: an error from `consume` means fail
/// closed. The key was not recorded, except after [`StoreError::Timeout`] or
/// a dropped `consume` future, when the write may still land and the next
/// attempt sees `AlreadyUsed` (at most once).
///
/// It [keeps results](ReplayStore::keeps_results), with the markers'
/// durability: a result survives restarts and is seen by every process on
/// the host.
pub struct SqliteReplayStore {
    jobs: mpsc::Sender<Job>,
    path: PathBuf,
    synchronous: Synchronous,
    /// The worker's committed transactions, so a test can tell one group
    /// commit from a commit per job.
    #[cfg(test)]
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// One request to the worker thread, with the channel for its answer.
enum Job {
    Consume {
        key: ConsumeKey,
        ttl: Duration,
        reply: oneshot::Sender<Result<Consumed, StoreError>>,
    },
    PutResult {
        key: ConsumeKey,
        owner: [u8; 32],
        result: Vec<u8>,
        ttl: Duration,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    GetResult {
        key: ConsumeKey,
        reply: oneshot::Sender<Result<Option<StoredResult>, StoreError>>,
    },
}

impl SqliteReplayStore {
    /// Opens (creating with mode 0600 if needed) the store at `path`, in WAL
    /// mode with the chosen durability, and starts its worker thread.
    ///
    /// This blocks on the disk; call it at startup.
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, SqliteOpenError> {
        let path = path.as_ref().to_path_buf();
        let conn = open_connection(&path, &options, SCHEMA)?;
        let (jobs, queue) = mpsc::channel();
        #[cfg(test)]
        let commits = std::sync::Arc::default();
        let mut worker = Worker {
            conn,
            purge: Purge::new(&options),
            #[cfg(test)]
            commits: std::sync::Arc::clone(&commits),
        };
        spawn_worker("tern-replay-sqlite", &path, move || worker.run(&queue))?;
        Ok(Self {
            jobs,
            path,
            synchronous: options.synchronous,
            #[cfg(test)]
            commits,
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
}

impl fmt::Debug for SqliteReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteReplayStore")
            .field("path", &self.path)
            .field("synchronous", &self.synchronous)
            .finish_non_exhaustive()
    }
}

impl SqliteReplayStore {
    /// Hands a job to the worker and awaits its answer. A worker that is
    /// gone (it panicked) cannot record or read anything: fail closed
    /// rather than guess, and never answer `Ok(None)` for a read.
    async fn ask<T>(
        &self,
        job: impl FnOnce(oneshot::Sender<Result<T, StoreError>>) -> Job,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(job(reply))
            .map_err(|_| StoreError::Unavailable("sqlite worker stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("sqlite worker stopped".into()))?
    }
}

impl ReplayStore for SqliteReplayStore {
    fn consume(
        &self,
        key: ConsumeKey,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>> {
        Box::pin(self.ask(move |reply| Job::Consume { key, ttl, reply }))
    }

    fn durability(&self) -> Durability {
        Durability::LocalDurable
    }

    fn keeps_results(&self) -> bool {
        true
    }

    fn put_result(
        &self,
        key: ConsumeKey,
        owner: [u8; 32],
        result: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            // Refused before it reaches the worker's queue.
            check_result_size(&result)?;
            self.ask(move |reply| Job::PutResult {
                key,
                owner,
                result,
                ttl,
                reply,
            })
            .await
        })
    }

    fn get_result(
        &self,
        key: ConsumeKey,
    ) -> BoxFuture<'_, Result<Option<StoredResult>, StoreError>> {
        Box::pin(self.ask(move |reply| Job::GetResult { key, reply }))
    }
}

/// Opens the file at `path` as every store in this crate does (created
/// 0600, refused when others may write it, WAL, the busy timeout and
/// durability of `options`) and creates `schema`'s tables in it. Shared by
/// the stores that may live in one file, each with tables of its own.
pub(crate) fn open_connection(
    path: &Path,
    options: &SqliteOptions,
    schema: &str,
) -> Result<Connection, SqliteOpenError> {
    let file = create_private(path)?;
    check_mode(path, &file)?;
    drop(file);
    configure(path, options, schema).map_err(|e| SqliteOpenError::Database {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Creates the file owner-only before SQLite sees it, so there is no moment
/// when it exists with the umask's wider mode. SQLite gives its `-wal` and
/// `-shm` files the main file's mode.
fn create_private(path: &Path) -> Result<File, SqliteOpenError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|source| SqliteOpenError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Refuses an existing file that others may write: whoever can delete a
/// marker can replay its flow.
fn check_mode(path: &Path, file: &File) -> Result<(), SqliteOpenError> {
    let meta = file.metadata().map_err(|source| SqliteOpenError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(SqliteOpenError::Permissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn configure(path: &Path, options: &SqliteOptions, schema: &str) -> rusqlite::Result<Connection> {
    // The file exists already (created above with mode 0600); not asking
    // SQLite to create it keeps a race from handing it a different file.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(options.busy_timeout)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // Without WAL, readers and the writer block each other and the
        // measured figures of SECURITY.md §3.9 do not hold.
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "journal_mode stayed {mode}, WAL is required"
        )));
    }
    conn.pragma_update(None, "synchronous", options.synchronous.pragma())?;
    conn.pragma_update(None, "wal_autocheckpoint", options.wal_autocheckpoint)?;
    conn.execute_batch(schema)?;
    Ok(conn)
}

/// The connection and purge bookkeeping, owned by the worker thread.
struct Worker {
    conn: Connection,
    purge: Purge,
    /// Shared with the store handle; see [`SqliteReplayStore`]'s field.
    #[cfg(test)]
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// Starts a store's worker thread, which owns its connection.
pub(crate) fn spawn_worker(
    name: &str,
    path: &Path,
    work: impl FnOnce() + Send + 'static,
) -> Result<(), SqliteOpenError> {
    thread::Builder::new()
        .name(name.into())
        .spawn(work)
        .map(drop)
        .map_err(|source| SqliteOpenError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// When a worker last purged expired rows, and how often it may.
pub(crate) struct Purge {
    interval_ms: i64,
    skew_ms: i64,
    last_ms: Option<i64>,
}

impl Purge {
    pub(crate) fn new(options: &SqliteOptions) -> Self {
        Purge {
            interval_ms: millis(options.purge_interval),
            skew_ms: millis(options.purge_skew),
            last_ms: None,
        }
    }

    /// At most once per interval: the Unix time in milliseconds before which
    /// expired rows may go (their expiry plus the skew). A failed purge is
    /// left for the next interval: expired rows already read as absent, so
    /// a missed purge only costs disk space.
    pub(crate) fn due(&mut self) -> Option<i64> {
        let now = unix_millis().ok()?;
        if self
            .last_ms
            .is_some_and(|last| now.saturating_sub(last) < self.interval_ms)
        {
            return None;
        }
        self.last_ms = Some(now);
        Some(now.saturating_sub(self.skew_ms))
    }
}

/// The most jobs one transaction carries.
const MAX_BATCH: usize = 64;

/// What a job produced, held until its batch is committed.
enum Done {
    Consume(Result<Consumed, StoreError>),
    Put(Result<(), StoreError>),
    Get(Result<Option<StoredResult>, StoreError>),
}

impl Done {
    fn is_ok(&self) -> bool {
        match self {
            Done::Consume(r) => r.is_ok(),
            Done::Put(r) => r.is_ok(),
            Done::Get(r) => r.is_ok(),
        }
    }
}

impl Job {
    /// Sends `done` to the job's caller. A caller may have given up
    /// waiting; its loss, so failed sends are ignored.
    fn answer(self, done: Done) {
        match (self, done) {
            (Job::Consume { reply, .. }, Done::Consume(r)) => {
                let _ = reply.send(r);
            }
            (Job::PutResult { reply, .. }, Done::Put(r)) => {
                let _ = reply.send(r);
            }
            (Job::GetResult { reply, .. }, Done::Get(r)) => {
                let _ = reply.send(r);
            }
            // Not produced by `Worker::execute`; the dropped reply reads as
            // an unavailable store, which fails closed.
            _ => {}
        }
    }
}

impl Worker {
    /// Serves jobs until every handle to the store is dropped.
    ///
    /// Group commit: the jobs already queued when the worker is free run in
    /// one transaction, so one `fsync` covers all of them instead of one
    /// each. Nothing waits to fill a batch, and no answer is sent before its
    /// batch is committed, so a first use is reported only once its marker
    /// is as durable as a commit of its own would make it. A batch that
    /// fails anywhere is rolled back and its jobs run again one by one, each
    /// in its own transaction, so an error reaches only the job it belongs
    /// to, exactly as without batching.
    fn run(&mut self, queue: &mpsc::Receiver<Job>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while let Ok(first) = queue.recv() {
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            if batch.len() > 1
                && let Some(done) = self.execute_batch(&batch)
            {
                self.maybe_purge();
                batch.drain(..).zip(done).for_each(|(job, d)| job.answer(d));
                continue;
            }
            for job in batch.drain(..) {
                let done = self.execute(&job);
                // Outside a transaction, each job's statement commits on
                // its own.
                self.committed();
                self.maybe_purge();
                job.answer(done);
            }
        }
    }

    /// Runs `batch` in one transaction; `None` when anything failed, with
    /// the transaction rolled back.
    fn execute_batch(&mut self, batch: &[Job]) -> Option<Vec<Done>> {
        // IMMEDIATE: the write lock is taken (or waited for, up to the busy
        // timeout) before any job runs, not halfway through.
        self.conn.execute_batch("BEGIN IMMEDIATE").ok()?;
        let mut done = Vec::with_capacity(batch.len());
        for job in batch {
            let d = self.execute(job);
            if !d.is_ok() {
                let _ = self.conn.execute_batch("ROLLBACK");
                return None;
            }
            done.push(d);
        }
        if self.conn.execute_batch("COMMIT").is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
            return None;
        }
        self.committed();
        Some(done)
    }

    /// Counts one committed transaction where a test can see it; nothing
    /// outside tests.
    fn committed(&self) {
        #[cfg(test)]
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn execute(&mut self, job: &Job) -> Done {
        match job {
            Job::Consume { key, ttl, .. } => Done::Consume(self.consume(key, *ttl)),
            Job::PutResult {
                key,
                owner,
                result,
                ttl,
                ..
            } => Done::Put(self.put_result(key, owner, result, *ttl)),
            Job::GetResult { key, .. } => Done::Get(self.get_result(key)),
        }
    }

    fn consume(&mut self, key: &ConsumeKey, ttl: Duration) -> Result<Consumed, StoreError> {
        let now = unix_millis()?;
        let exp = now.saturating_add(millis(ttl));
        let changed = self
            .conn
            .prepare_cached(CONSUME)
            .and_then(|mut stmt| stmt.execute(params![&key.as_bytes()[..], exp, now]))
            .map_err(store_error)?;
        Ok(if changed == 1 {
            Consumed::FirstUse
        } else {
            Consumed::AlreadyUsed
        })
    }

    fn put_result(
        &mut self,
        key: &ConsumeKey,
        owner: &[u8; 32],
        result: &[u8],
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let now = unix_millis()?;
        let exp = now.saturating_add(millis(ttl));
        self.conn
            .prepare_cached(PUT_RESULT)
            .and_then(|mut stmt| {
                stmt.execute(params![&key.as_bytes()[..], &owner[..], result, exp])
            })
            .map_err(store_error)?;
        Ok(())
    }

    fn get_result(&mut self, key: &ConsumeKey) -> Result<Option<StoredResult>, StoreError> {
        let now = unix_millis()?;
        let row: Option<(Vec<u8>, Vec<u8>)> = self
            .conn
            .prepare_cached(GET_RESULT)
            .and_then(|mut stmt| {
                stmt.query_row(params![&key.as_bytes()[..], now], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
            })
            .map_err(store_error)?;
        row.map(|(owner, result)| {
            // A row this store did not write (or a damaged file): failing
            // closed beats handing a result to an owner it cannot name.
            let owner = <[u8; 32]>::try_from(owner.as_slice()).map_err(|_| {
                StoreError::Unavailable(format!(
                    "sqlite: stored result owner is {} bytes, not 32",
                    owner.len()
                ))
            })?;
            Ok(StoredResult { owner, result })
        })
        .transpose()
    }

    /// Deletes long-expired markers and results when a purge is due. Runs
    /// after the callers' own writes are committed, outside their
    /// transaction and before they are answered.
    fn maybe_purge(&mut self) {
        if let Some(before) = self.purge.due() {
            let _ = self.conn.execute(PURGE, params![before]);
            let _ = self.conn.execute(PURGE_RESULTS, params![before]);
        }
    }
}

/// Maps SQLite's failures onto the contract: every one fails closed.
pub(crate) fn store_error(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Timeout(format!("sqlite: {e}"))
        }
        Some(ErrorCode::DiskFull) => StoreError::Full(format!("sqlite: {e}")),
        _ => StoreError::Unavailable(format!("sqlite: {e}")),
    }
}

/// Whole milliseconds, rounded up so a marker never lives shorter than asked,
/// saturating far beyond any real TTL.
pub(crate) fn millis(d: Duration) -> i64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The store's own clock: Unix milliseconds. A clock before 1970 fails
/// closed: markers written then would expire at once when it is corrected.
/// The task store counts its TTLs on the same clock.
#[expect(
    clippy::disallowed_methods,
    reason = "the SQLite stores count marker and task TTLs on their own clock (SECURITY.md §3.9)"
)]
pub(crate) fn unix_millis() -> Result<i64, StoreError> {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| StoreError::Unavailable("system clock is before 1970".into()))?;
    Ok(millis(since))
}

#[cfg(test)]
mod tests;
