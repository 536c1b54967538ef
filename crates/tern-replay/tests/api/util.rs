//! Keys and scratch directories for the tests.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tern_seal::ConsumeKey;

/// A key no other test in this process uses.
pub(crate) fn fresh_key() -> ConsumeKey {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    ConsumeKey::business("tern-replay/tests", &format!("{}-{n}", std::process::id()))
}

/// A directory of its own under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("tern-replay-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).expect("temp dir is writable");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Each file exists and only its owner may read or write it (mode 0600).
pub(crate) fn assert_private(files: &[PathBuf]) {
    for file in files {
        let mode = std::fs::metadata(file)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
}
