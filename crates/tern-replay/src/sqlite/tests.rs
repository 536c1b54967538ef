//! The SQLite store's own tests: what only its worker can show.

use super::*;

use std::sync::atomic::Ordering;

/// A directory of its own under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("tern-replay-unit-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&path).expect("temp dir is writable");
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn queued_consumes_share_one_transaction() {
    let dir = Scratch::new("group-commit");
    let db = dir.0.join("replay.db");
    let options = SqliteOptions::default().busy_timeout(Duration::from_secs(10));
    let store = SqliteReplayStore::open(&db, options).expect("opens");
    // Another connection holds the write lock for a moment, so the jobs
    // queue up behind it.
    let holder = Connection::open(&db).expect("second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let release = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        holder.execute_batch("ROLLBACK").expect("releases the lock");
    });
    let keys: Vec<_> = (0..64)
        .map(|i| ConsumeKey::business("tern-replay/unit", &i.to_string()))
        .collect();
    let ttl = Duration::from_secs(600);
    let answers = futures_util::future::join_all(keys.iter().map(|&k| store.consume(k, ttl))).await;
    release.join().expect("holder thread");
    assert!(
        answers.iter().all(|a| *a == Ok(Consumed::FirstUse)),
        "{answers:?}"
    );
    // The worker may take the first job before the others are queued;
    // every later one is queued while it waits for the lock, and all of
    // them go in the next transaction. A commit per job would be 64.
    let commits = store.commits.load(Ordering::Relaxed);
    assert!(
        (1..=2).contains(&commits),
        "64 consumes in {commits} transactions"
    );
}

#[test]
fn millis_round_up_and_saturate() {
    assert_eq!(millis(Duration::from_nanos(1)), 1);
    assert_eq!(millis(Duration::from_millis(5)), 5);
    assert_eq!(millis(Duration::MAX), i64::MAX);
}

#[test]
fn busy_and_full_map_to_their_errors() {
    let busy =
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY), None);
    assert!(matches!(store_error(busy), StoreError::Timeout(_)));
    let full =
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None);
    assert!(matches!(store_error(full), StoreError::Full(_)));
    let io = rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR),
        None,
    );
    assert!(matches!(store_error(io), StoreError::Unavailable(_)));
}
