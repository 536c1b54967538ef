//! `SqliteTaskStore`: the task suite with a handle per connection on one
//! file, then what only SQLite has: the file's mode, sharing the replay
//! store's file, the row layout, the purge, and failing closed on a broken
//! table or a held write lock.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use tern_replay::{
    SqliteOpenError, SqliteOptions, SqliteReplayStore, SqliteTaskStore, Synchronous,
};
use tern_seal::{Consumed, Durability, ReplayStore, StoreError, TaskEntry, TaskStore};

use crate::tasks_suite::{TTL, TaskFixture, answer, fresh_id};
use crate::util::{TempDir, assert_private, fresh_key};

/// One database file in a scratch directory; each handle opens it anew.
pub(crate) struct Sqlite {
    dir: TempDir,
}

impl Sqlite {
    fn db(&self) -> PathBuf {
        self.dir.path().join("tasks.db")
    }
}

impl TaskFixture for Sqlite {
    type Store = SqliteTaskStore;
    const SORTED_BY_KEY: bool = false;

    async fn start() -> Self {
        Self {
            dir: TempDir::new(),
        }
    }

    async fn handle(&self) -> SqliteTaskStore {
        // Handles of one test may queue on the write lock; give them time.
        let options = SqliteOptions::default().busy_timeout(Duration::from_secs(10));
        SqliteTaskStore::open(self.db(), options).expect("scratch database opens")
    }
}

crate::tasks_suite::task_suite!(Sqlite);
crate::tasks_suite::bounds_suite!(Sqlite);

fn open(path: &Path) -> SqliteTaskStore {
    SqliteTaskStore::open(path, SqliteOptions::default()).expect("opens")
}

fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .expect("counts")
}

#[tokio::test]
async fn the_task_file_and_its_wal_are_owner_only() {
    let dir = TempDir::new();
    let db = dir.path().join("tasks.db");
    let store = open(&db);
    assert_eq!(store.durability(), Durability::LocalDurable);
    assert_eq!(store.synchronous(), Synchronous::Full);
    assert_eq!(store.path(), db.as_path());
    store
        .put(&fresh_id(), b"r".to_vec(), TTL)
        .await
        .expect("put");
    assert_private(&[db.clone(), dir.path().join("tasks.db-wal")]);
}

#[test]
fn a_task_file_others_can_write_is_refused() {
    let dir = TempDir::new();
    let db = dir.path().join("tasks.db");
    std::fs::write(&db, b"").expect("scratch file");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    assert!(matches!(
        SqliteTaskStore::open(&db, SqliteOptions::default()),
        Err(SqliteOpenError::Permissions { mode: 0o666, .. })
    ));
}

#[tokio::test]
async fn tasks_share_a_file_with_the_replay_store() {
    let dir = TempDir::new();
    let db = dir.path().join("shared.db");
    let replay = SqliteReplayStore::open(&db, SqliteOptions::default()).expect("opens");
    let tasks = open(&db);
    let key = fresh_key();
    assert_eq!(replay.consume(key, TTL).await, Ok(Consumed::FirstUse));
    let id = fresh_id();
    tasks.put(&id, b"r".to_vec(), TTL).await.expect("put");
    assert_eq!(replay.consume(key, TTL).await, Ok(Consumed::AlreadyUsed));
    assert_eq!(
        tasks.get(&id).await,
        Ok(Some(TaskEntry {
            record: b"r".to_vec(),
            answers: Vec::new(),
            cancelled: false,
        }))
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN \
             ('markers', 'results', 'tern_tasks', 'tern_task_answers')"
        ),
        4
    );
}

#[tokio::test]
async fn rows_are_one_per_task_and_one_per_answer() {
    let dir = TempDir::new();
    let db = dir.path().join("tasks.db");
    let store = open(&db);
    let id = fresh_id();
    store
        .answer(&id, vec![answer("b", b"1"), answer("a", b"2")], TTL)
        .await
        .expect("answer");
    let conn = Connection::open(&db).expect("second connection");
    let (record, cancelled, expires_ms): (Option<Vec<u8>>, i64, i64) = conn
        .query_row(
            "SELECT record, cancelled, expires_ms FROM tern_tasks WHERE id = ?1",
            [&id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("a row before any record");
    assert_eq!((record, cancelled), (None, 0));
    let now_ms = i64::try_from(
        std::time::UNIX_EPOCH
            .elapsed()
            .expect("clock after 1970")
            .as_millis(),
    )
    .expect("small");
    let ttl_ms = i64::try_from(TTL.as_millis()).expect("small");
    // The store rounds its clock up to the next millisecond, so a TTL is
    // never shortened; this reading rounds down.
    assert!(
        expires_ms > now_ms + ttl_ms - 5_000 && expires_ms <= now_ms + ttl_ms + 1,
        "expires_ms {expires_ms} for a {ttl_ms} ms task at {now_ms}"
    );
    let rows: Vec<(String, i64, Vec<u8>)> = conn
        .prepare("SELECT key, seq, answer FROM tern_task_answers WHERE id = ?1 ORDER BY seq")
        .and_then(|mut s| {
            s.query_map([&id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .expect("answers");
    assert_eq!(
        rows,
        vec![
            ("b".into(), 0, b"1".to_vec()),
            ("a".into(), 1, b"2".to_vec())
        ]
    );
    store.put(&id, b"rec".to_vec(), TTL).await.expect("put");
    store.cancel(&id, TTL).await.expect("cancel");
    let (record, cancelled): (Option<Vec<u8>>, i64) = conn
        .query_row(
            "SELECT record, cancelled FROM tern_tasks WHERE id = ?1",
            [&id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the row");
    assert_eq!((record, cancelled), (Some(b"rec".to_vec()), 1));
    assert_eq!(count(&db, "SELECT count(*) FROM tern_tasks"), 1);
}

#[tokio::test]
async fn expired_tasks_are_purged_with_their_answers() {
    let dir = TempDir::new();
    let db = dir.path().join("tasks.db");
    let options = SqliteOptions::default()
        .purge_interval(Duration::ZERO)
        .purge_skew(Duration::from_millis(50));
    let store = SqliteTaskStore::open(&db, options).expect("opens");
    let (short, live) = (fresh_id(), fresh_id());
    let one_ms = Duration::from_millis(1);
    store.put(&short, b"r".to_vec(), one_ms).await.expect("put");
    store
        .answer(&short, vec![answer("a", b"1"), answer("b", b"2")], one_ms)
        .await
        .expect("answer");
    store.put(&live, b"r".to_vec(), TTL).await.expect("put");
    store
        .answer(&live, vec![answer("a", b"1")], TTL)
        .await
        .expect("answer");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Any call runs the purge first, reads included.
    assert_eq!(store.get(&short).await, Ok(None));
    assert_eq!(count(&db, "SELECT count(*) FROM tern_tasks"), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM tern_task_answers"), 1);
    assert_eq!(
        store.get(&live).await,
        Ok(Some(TaskEntry {
            record: b"r".to_vec(),
            answers: vec![answer("a", b"1")],
            cancelled: false,
        }))
    );
}

#[tokio::test]
async fn a_broken_task_table_fails_closed() {
    let dir = TempDir::new();
    let db = dir.path().join("tasks.db");
    let store = open(&db);
    let id = fresh_id();
    store.put(&id, b"r".to_vec(), TTL).await.expect("put");
    Connection::open(&db)
        .and_then(|c| c.execute_batch("DROP TABLE tern_task_answers"))
        .expect("table dropped behind the store's back");
    let read = store.get(&id).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    let write = store.answer(&id, vec![answer("a", b"1")], TTL).await;
    assert!(
        matches!(write, Err(StoreError::Unavailable(_))),
        "{write:?}"
    );
    Connection::open(&db)
        .and_then(|c| c.execute_batch("DROP TABLE tern_tasks"))
        .expect("table dropped behind the store's back");
    // A store that cannot read answers an error, never "no such task".
    let read = store.get(&fresh_id()).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    for write in [
        store.put(&id, b"r".to_vec(), TTL).await,
        store.cancel(&id, TTL).await,
    ] {
        assert!(
            matches!(write, Err(StoreError::Unavailable(_))),
            "{write:?}"
        );
    }
}

#[tokio::test]
async fn a_held_write_lock_times_out_writes_but_not_reads() {
    let dir = TempDir::new();
    let db = dir.path().join("tasks.db");
    let options = SqliteOptions::default().busy_timeout(Duration::from_millis(50));
    let store = SqliteTaskStore::open(&db, options).expect("opens");
    let kept = fresh_id();
    store.put(&kept, b"kept".to_vec(), TTL).await.expect("put");
    let holder = Connection::open(&db).expect("second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let id = fresh_id();
    for write in [
        store.put(&id, b"late".to_vec(), TTL).await,
        store.answer(&id, vec![answer("a", b"1")], TTL).await,
        store.cancel(&id, TTL).await,
    ] {
        assert!(matches!(write, Err(StoreError::Timeout(_))), "{write:?}");
    }
    // WAL readers do not wait for the writer.
    assert_eq!(
        store.get(&kept).await.map(|e| e.map(|e| e.record)),
        Ok(Some(b"kept".to_vec()))
    );
    holder.execute_batch("ROLLBACK").expect("releases the lock");
    assert_eq!(store.get(&id).await, Ok(None), "nothing was written");
    assert_eq!(count(&db, "SELECT count(*) FROM tern_task_answers"), 0);
}
