//! `SqliteReplayStore`: the suite with 32 handles on one file, restart
//! survival, the file's mode, the results table, and failing closed for
//! markers and results alike (SECURITY.md §3.9).

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::Connection;
use tern_replay::{SqliteOpenError, SqliteOptions, SqliteReplayStore, Synchronous};
use tern_seal::{Consumed, Durability, ReplayStore, StoreError};

use crate::suite::{ALICE, Fixture, TTL};
use crate::util::{TempDir, assert_private, fresh_key};

/// One database file in a scratch directory; each handle opens it anew.
pub(crate) struct Sqlite<const NORMAL: bool> {
    dir: TempDir,
}

impl<const NORMAL: bool> Sqlite<NORMAL> {
    fn db(&self) -> PathBuf {
        self.dir.path().join("replay.db")
    }

    fn options() -> SqliteOptions {
        let sync = if NORMAL {
            Synchronous::Normal
        } else {
            Synchronous::Full
        };
        // 32 writers queue on one lock; give the last one time to commit.
        SqliteOptions::default()
            .synchronous(sync)
            .busy_timeout(Duration::from_secs(10))
    }
}

impl<const NORMAL: bool> Fixture for Sqlite<NORMAL> {
    type Store = SqliteReplayStore;

    async fn start() -> Self {
        Self {
            dir: TempDir::new(),
        }
    }

    async fn handle(&self) -> SqliteReplayStore {
        SqliteReplayStore::open(self.db(), Self::options()).expect("scratch database opens")
    }
}

mod full {
    crate::suite::replay_suite!(super::Sqlite<false>);
    crate::suite::restart_suite!(super::Sqlite<false>);
}

mod normal {
    crate::suite::replay_suite!(super::Sqlite<true>);
    crate::suite::restart_suite!(super::Sqlite<true>);
}

fn open(path: &std::path::Path) -> Result<SqliteReplayStore, SqliteOpenError> {
    SqliteReplayStore::open(path, SqliteOptions::default())
}

#[tokio::test]
async fn the_file_and_its_wal_are_owner_only() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let store = open(&db).expect("opens");
    assert_eq!(store.durability(), Durability::LocalDurable);
    assert_eq!(store.synchronous(), Synchronous::Full);
    assert_eq!(
        store.consume(fresh_key(), TTL).await,
        Ok(Consumed::FirstUse)
    );
    assert_private(&[db.clone(), dir.path().join("replay.db-wal")]);
}

#[test]
fn a_file_others_can_write_is_refused() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    std::fs::write(&db, b"").expect("scratch file");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    assert!(matches!(
        open(&db),
        Err(SqliteOpenError::Permissions { mode: 0o666, .. })
    ));
}

#[test]
fn an_unwritable_path_fails_at_open() {
    // Permission bits do not stop root, so use paths no one can create.
    let dir = TempDir::new();
    let missing = dir.path().join("no-such-dir").join("replay.db");
    assert!(matches!(open(&missing), Err(SqliteOpenError::Io { .. })));
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"").expect("scratch file");
    assert!(matches!(
        open(&file.join("replay.db")),
        Err(SqliteOpenError::Io { .. })
    ));
}

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    std::fs::write(&db, vec![0xA5; 4096]).expect("scratch file");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert!(matches!(open(&db), Err(SqliteOpenError::Database { .. })));
}

#[tokio::test]
async fn a_broken_store_fails_closed_at_consume() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let store = open(&db).expect("opens");
    Connection::open(&db)
        .and_then(|c| c.execute_batch("DROP TABLE markers"))
        .expect("table dropped behind the store's back");
    let answer = store.consume(fresh_key(), TTL).await;
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{answer:?}"
    );
}

#[tokio::test]
async fn a_held_write_lock_times_out_and_consumes_nothing() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let options = SqliteOptions::default().busy_timeout(Duration::from_millis(50));
    let store = SqliteReplayStore::open(&db, options).expect("opens");
    let holder = Connection::open(&db).expect("second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let key = fresh_key();
    let answer = store.consume(key, TTL).await;
    assert!(matches!(answer, Err(StoreError::Timeout(_))), "{answer:?}");
    holder.execute_batch("ROLLBACK").expect("releases the lock");
    assert_eq!(
        store.consume(key, TTL).await,
        Ok(Consumed::FirstUse),
        "a timed-out consume that never wrote leaves the key unused"
    );
}

/// The WAL file's size after `commits` consumes, each its own commit, on
/// a store that checkpoints every `pages` WAL pages.
async fn wal_after(pages: u32, commits: usize) -> u64 {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let options = SqliteOptions::default()
        .synchronous(Synchronous::Normal)
        .wal_autocheckpoint(pages);
    let store = SqliteReplayStore::open(&db, options).expect("opens");
    for _ in 0..commits {
        assert_eq!(
            store.consume(fresh_key(), TTL).await,
            Ok(Consumed::FirstUse)
        );
    }
    std::fs::metadata(dir.path().join("replay.db-wal"))
        .expect("the WAL exists while the store is open")
        .len()
}

#[tokio::test]
async fn the_wal_is_copied_back_every_so_many_pages() {
    // A WAL page is a 24-byte frame header and a 4 KiB page, after a
    // 32-byte file header.
    let frame = 24 + 4096;
    // Checkpointed every 16 pages, the WAL is reused from its start and
    // holds at most those and one commit's pages.
    let bounded = wal_after(16, 300).await;
    assert!(bounded <= 32 + 32 * frame, "{bounded} bytes");
    // Without automatic checkpoints every commit's pages stay in it.
    let unbounded = wal_after(0, 300).await;
    assert!(unbounded >= 32 + 300 * frame, "{unbounded} bytes");
    assert_eq!(
        SqliteOptions::default().wal_autocheckpoint,
        tern_replay::DEFAULT_WAL_AUTOCHECKPOINT
    );
}

#[tokio::test]
async fn consume_purges_long_expired_markers() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let options = SqliteOptions::default()
        .purge_interval(Duration::ZERO)
        .purge_skew(Duration::from_millis(50));
    let store = SqliteReplayStore::open(&db, options).expect("opens");
    let short = fresh_key();
    let live = fresh_key();
    assert_eq!(
        store.consume(short, Duration::from_millis(1)).await,
        Ok(Consumed::FirstUse)
    );
    assert_eq!(store.consume(live, TTL).await, Ok(Consumed::FirstUse));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        store.consume(fresh_key(), TTL).await,
        Ok(Consumed::FirstUse)
    );
    let rows: i64 = Connection::open(&db)
        .and_then(|c| c.query_row("SELECT count(*) FROM markers", [], |r| r.get(0)))
        .expect("counts");
    assert_eq!(rows, 2, "only the expired marker is gone");
    assert_eq!(store.consume(live, TTL).await, Ok(Consumed::AlreadyUsed));
}

#[tokio::test]
async fn a_broken_results_table_fails_closed() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let store = open(&db).expect("opens");
    assert!(store.keeps_results());
    Connection::open(&db)
        .and_then(|c| c.execute_batch("DROP TABLE results"))
        .expect("table dropped behind the store's back");
    // A store that cannot read answers an error, never "no result".
    let read = store.get_result(fresh_key()).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    let write = store
        .put_result(fresh_key(), ALICE, b"lost".to_vec(), TTL)
        .await;
    assert!(
        matches!(write, Err(StoreError::Unavailable(_))),
        "{write:?}"
    );
}

/// A result row whose owner is 31 bytes, written behind the store's back.
fn write_malformed_owner(db: &std::path::Path, key: tern_seal::ConsumeKey) {
    Connection::open(db)
        .and_then(|c| {
            c.execute(
                "INSERT INTO results (id, owner, result, exp) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![&key.as_bytes()[..], &[0xA1_u8; 31][..], &b"x"[..], i64::MAX],
            )
        })
        .expect("row written behind the store's back");
}

#[tokio::test]
async fn a_row_with_a_malformed_owner_fails_closed() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let store = open(&db).expect("opens");
    let key = fresh_key();
    write_malformed_owner(&db, key);
    let read = store.get_result(key).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
}

#[tokio::test]
async fn a_held_write_lock_times_out_a_result_but_not_a_read() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let options = SqliteOptions::default().busy_timeout(Duration::from_millis(50));
    let store = SqliteReplayStore::open(&db, options).expect("opens");
    let kept = fresh_key();
    store
        .put_result(kept, ALICE, b"kept".to_vec(), TTL)
        .await
        .expect("stored");
    let holder = Connection::open(&db).expect("second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let key = fresh_key();
    let write = store.put_result(key, ALICE, b"late".to_vec(), TTL).await;
    assert!(matches!(write, Err(StoreError::Timeout(_))), "{write:?}");
    // WAL readers do not wait for the writer.
    assert!(store.get_result(kept).await.expect("reads").is_some());
    holder.execute_batch("ROLLBACK").expect("releases the lock");
    assert_eq!(store.get_result(key).await, Ok(None), "nothing was written");
}

#[tokio::test]
async fn results_are_purged_with_the_markers() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let options = SqliteOptions::default()
        .purge_interval(Duration::ZERO)
        .purge_skew(Duration::from_millis(50));
    let store = SqliteReplayStore::open(&db, options).expect("opens");
    let short = fresh_key();
    let live = fresh_key();
    store
        .put_result(short, ALICE, b"short".to_vec(), Duration::from_millis(1))
        .await
        .expect("stored");
    store
        .put_result(live, ALICE, b"live".to_vec(), TTL)
        .await
        .expect("stored");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Any write runs the purge.
    assert_eq!(
        store.consume(fresh_key(), TTL).await,
        Ok(Consumed::FirstUse)
    );
    let rows: i64 = Connection::open(&db)
        .and_then(|c| c.query_row("SELECT count(*) FROM results", [], |r| r.get(0)))
        .expect("counts");
    assert_eq!(rows, 1, "only the expired result is gone");
    assert!(store.get_result(live).await.expect("reads").is_some());
}

#[tokio::test]
async fn a_file_from_before_results_gains_the_table() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    std::fs::write(&db, b"").expect("scratch file");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let key = fresh_key();
    Connection::open(&db)
        .and_then(|c| {
            c.execute_batch(
                "CREATE TABLE markers (id BLOB PRIMARY KEY NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID",
            )?;
            c.execute(
                "INSERT INTO markers (id, exp) VALUES (?1, ?2)",
                rusqlite::params![&key.as_bytes()[..], i64::MAX],
            )
        })
        .expect("an old-schema store");
    let store = open(&db).expect("opens");
    assert_eq!(store.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
    assert_eq!(store.get_result(key).await, Ok(None));
    store
        .put_result(key, ALICE, b"now kept".to_vec(), TTL)
        .await
        .expect("stored");
    assert!(store.get_result(key).await.expect("reads").is_some());
}

/// A store that waits out [`hold_write_lock`] instead of timing out.
fn patient(db: &std::path::Path) -> SqliteReplayStore {
    let options = SqliteOptions::default().busy_timeout(Duration::from_secs(10));
    SqliteReplayStore::open(db, options).expect("opens")
}

/// Holds the file's write lock for a moment from another connection, so
/// the handle's jobs queue up behind it and are committed together.
fn hold_write_lock(db: &std::path::Path) -> std::thread::JoinHandle<()> {
    let holder = Connection::open(db).expect("second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        holder.execute_batch("ROLLBACK").expect("releases the lock");
    })
}

/// Through a batch, each caller gets its own key's answer. That the batch
/// was one transaction is counted by the unit test
/// `sqlite::tests::queued_consumes_share_one_transaction`, which sees the
/// worker's commits.
#[tokio::test]
async fn queued_consumes_each_get_their_own_answer_from_a_batch() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let store = patient(&db);
    let used: Vec<_> = (0..32).map(|_| fresh_key()).collect();
    for &k in &used {
        assert_eq!(store.consume(k, TTL).await, Ok(Consumed::FirstUse));
    }
    let fresh: Vec<_> = (0..32).map(|_| fresh_key()).collect();
    let release = hold_write_lock(&db);
    // Fresh and used keys interleaved in one queue: an answer sent to the
    // wrong caller would show as a fresh key refused or a used one let in.
    let answers = futures_util::future::join_all(
        fresh
            .iter()
            .zip(&used)
            .flat_map(|(&f, &u)| [(f, true), (u, false)])
            .map(|(k, is_fresh)| {
                let store = &store;
                async move { (is_fresh, store.consume(k, TTL).await) }
            }),
    )
    .await;
    release.join().expect("holder thread");
    for (is_fresh, answer) in &answers {
        let want = if *is_fresh {
            Consumed::FirstUse
        } else {
            Consumed::AlreadyUsed
        };
        assert_eq!(*answer, Ok(want));
    }
    // Committed: a new handle sees every fresh key as used.
    let reopened = patient(&db);
    for &k in &fresh {
        assert_eq!(reopened.consume(k, TTL).await, Ok(Consumed::AlreadyUsed));
    }
}

#[tokio::test]
async fn a_failing_job_fails_alone_when_its_batch_is_run_again() {
    let dir = TempDir::new();
    let db = dir.path().join("replay.db");
    let store = patient(&db);
    let bad = fresh_key();
    write_malformed_owner(&db, bad);
    let (a, b) = (fresh_key(), fresh_key());
    let release = hold_write_lock(&db);
    let (first, read, second) = tokio::join!(
        store.consume(a, TTL),
        store.get_result(bad),
        store.consume(b, TTL)
    );
    release.join().expect("holder thread");
    assert_eq!(first, Ok(Consumed::FirstUse));
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    assert_eq!(second, Ok(Consumed::FirstUse));
    let reopened = patient(&db);
    assert_eq!(reopened.consume(a, TTL).await, Ok(Consumed::AlreadyUsed));
    assert_eq!(reopened.consume(b, TTL).await, Ok(Consumed::AlreadyUsed));
}
