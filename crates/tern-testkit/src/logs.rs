//! Log lines captured in a test, to assert what an operator would read.

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// The text of every line logged on this thread while its guard lives.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Starts capturing this thread's lines (info and above, no colour) until
    /// the returned guard drops. A current-thread runtime's tasks run on
    /// the test's thread, so their lines are captured too.
    pub fn start() -> (Self, DefaultGuard) {
        let logs = Self::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }

    /// The first line containing `needle`, or a panic that shows them all.
    pub fn line(&self, needle: &str) -> String {
        let text = self.text();
        text.lines()
            .find(|l| l.contains(needle))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
