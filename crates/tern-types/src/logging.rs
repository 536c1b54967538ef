//! Log levels (DIGEST §6.9). **Deprecated** in this revision: servers should
//! log to `stderr` or OpenTelemetry instead (MIG-27).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The severity of a log message, ordered from `Debug` (lowest) to
/// `Emergency` (highest), as RFC 5424. Part of the deprecated logging
/// feature. A request opts in with `_meta["io.modelcontextprotocol/logLevel"]`;
/// an unknown value fails to parse, and the server answers `-32602`
/// (LOG-S4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
