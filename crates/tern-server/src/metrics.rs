//! What an operator counts and the peer is never told (SECURITY.md §3.5):
//! requests by method and outcome, why states were refused, sealed state
//! sizes, the replay store's latency and errors, open sessions. Rendered in
//! the Prometheus text format by [`Metrics::render_prometheus`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// How one request ended, as counted and logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum RequestOutcome {
    /// A complete result.
    Complete,
    /// An `input_required` round.
    InputRequired,
    /// The uniform refusal of a `requestState` (the reason is counted apart).
    Rejected,
    /// Any other JSON-RPC error.
    Error,
    /// The stream closed before a response.
    Closed,
}

impl RequestOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestOutcome::Complete => "complete",
            RequestOutcome::InputRequired => "input_required",
            RequestOutcome::Rejected => "rejected",
            RequestOutcome::Error => "error",
            RequestOutcome::Closed => "closed",
        }
    }
}

/// A histogram with fixed upper bounds, counted with atomics.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    /// The sum, in units of `scale` (integers keep it atomic).
    sum: AtomicU64,
    scale: f64,
}

impl Histogram {
    fn new(bounds: &'static [f64], scale: f64) -> Self {
        Self {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            scale,
        }
    }

    fn observe(&self, v: f64) {
        // Buckets are cumulative when rendered; here each value lands once.
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        // Past the last bound: counted in +Inf only, through the total.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "observations are small and non-negative"
        )]
        let units = (v * self.scale) as u64;
        self.sum.fetch_add(units, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str, total: u64) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cum = 0;
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            cum += c.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cum}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}");
        #[expect(
            clippy::cast_precision_loss,
            reason = "a metric's sum is a float by definition"
        )]
        let sum = self.sum.load(Ordering::Relaxed) as f64 / self.scale;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {total}");
    }
}

/// Counters and histograms of one server, shared by its transports.
#[derive(Debug)]
pub struct Metrics {
    rejected: Mutex<BTreeMap<&'static str, u64>>,
    failed: Mutex<BTreeMap<&'static str, u64>>,
    requests: Mutex<BTreeMap<(&'static str, RequestOutcome), u64>>,
    durations: Histogram,
    durations_total: AtomicU64,
    state_bytes: Histogram,
    state_bytes_total: AtomicU64,
    replay: Histogram,
    replay_total: AtomicU64,
    replay_errors: AtomicU64,
    sessions: AtomicI64,
    sessions_closed: Mutex<BTreeMap<&'static str, u64>>,
    limits: Mutex<BTreeMap<&'static str, u64>>,
    refused: Mutex<BTreeMap<&'static str, u64>>,
    tasks_ended: Mutex<BTreeMap<&'static str, u64>>,
    task_durations: Histogram,
    task_durations_total: AtomicU64,
    tasks_live: AtomicI64,
}

const SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
const TASK_SECONDS: &[f64] = &[0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];
const BYTES: &[f64] = &[
    128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 65536.0,
];

impl Default for Metrics {
    fn default() -> Self {
        Self {
            rejected: Mutex::default(),
            failed: Mutex::default(),
            requests: Mutex::default(),
            durations: Histogram::new(SECONDS, 1e9),
            durations_total: AtomicU64::new(0),
            state_bytes: Histogram::new(BYTES, 1.0),
            state_bytes_total: AtomicU64::new(0),
            replay: Histogram::new(SECONDS, 1e9),
            replay_total: AtomicU64::new(0),
            replay_errors: AtomicU64::new(0),
            sessions: AtomicI64::new(0),
            sessions_closed: Mutex::default(),
            limits: Mutex::default(),
            refused: Mutex::default(),
            tasks_ended: Mutex::default(),
            task_durations: Histogram::new(TASK_SECONDS, 1e3),
            task_durations_total: AtomicU64::new(0),
            tasks_live: AtomicI64::new(0),
        }
    }
}

fn bump<K: Ord>(m: &Mutex<BTreeMap<K, u64>>, key: K) {
    let mut m = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    *m.entry(key).or_default() += 1;
}

fn read(m: &Mutex<BTreeMap<&'static str, u64>>, key: &str) -> u64 {
    let m = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    m.get(key).copied().unwrap_or(0)
}

/// A method label from a fixed set, so a peer cannot grow the label space.
pub(crate) fn method_label(method: &str) -> &'static str {
    tern_types::methods::Method::parse(method).map_or("other", |m| m.as_str())
}

impl Metrics {
    pub(crate) fn reject(&self, reason: &'static str) {
        bump(&self.rejected, reason);
    }

    pub(crate) fn fail(&self, kind: &'static str) {
        bump(&self.failed, kind);
    }

    /// Counts a request; `method` comes from [`method_label`].
    pub(crate) fn request(&self, method: &'static str, outcome: RequestOutcome, took: Duration) {
        bump(&self.requests, (method, outcome));
        self.durations.observe(took.as_secs_f64());
        self.durations_total.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn state_sealed(&self, bytes: usize) {
        #[expect(clippy::cast_precision_loss, reason = "state sizes are far below 2^52")]
        self.state_bytes.observe(bytes as f64);
        self.state_bytes_total.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn replay_call(&self, took: Duration, ok: bool) {
        self.replay.observe(took.as_secs_f64());
        self.replay_total.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.replay_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sets the number of open 2025-11-25 sessions (the HTTP transport
    /// keeps them).
    pub fn set_sessions(&self, open: usize) {
        self.sessions
            .store(i64::try_from(open).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    /// Counts a 2025-11-25 session that ended for `reason`: `"deleted"`
    /// (the client's `DELETE`), `"idle"` (unused past the idle timeout) or
    /// `"evicted"` (its principal opened one past its quota, or the table
    /// was full).
    pub fn session_closed(&self, reason: &'static str) {
        bump(&self.sessions_closed, reason);
    }

    /// How many sessions ended for `reason`.
    pub fn sessions_closed(&self, reason: &str) -> u64 {
        read(&self.sessions_closed, reason)
    }

    /// Counts a peer held at one of the budgets of SECURITY.md ("Budgets"),
    /// named by `limit` (for example `"sessions_per_principal"`): what was
    /// refused or evicted there. The peer sees only the refusal.
    pub fn limit_reached(&self, limit: &'static str) {
        bump(&self.limits, limit);
    }

    /// How often the budget `limit` was reached.
    pub fn limits_reached(&self, limit: &str) -> u64 {
        read(&self.limits, limit)
    }

    /// Counts a request a transport refused before the server saw it, for
    /// `reason` (`origin`, `unauthorized`, `forbidden`,
    /// `insufficient_scope`, `too_large`): the peer gets one uniform
    /// refusal per kind; the operator sees why here and in the log.
    pub fn refused(&self, reason: &'static str) {
        bump(&self.refused, reason);
    }

    /// How many requests a transport refused for `reason`.
    pub fn refusals(&self, reason: &str) -> u64 {
        read(&self.refused, reason)
    }

    /// Counts a task created (the tasks extension); it is live until
    /// [`Metrics::task_ended`].
    pub(crate) fn task_created(&self) {
        self.tasks_live.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a task that reached `status` (`completed`, `failed`,
    /// `cancelled`, or `expired` for one dropped at its time to live while
    /// still running) after `took`.
    pub(crate) fn task_ended(&self, status: &'static str, took: Duration) {
        self.tasks_live.fetch_sub(1, Ordering::Relaxed);
        bump(&self.tasks_ended, status);
        self.task_durations.observe(took.as_secs_f64());
        self.task_durations_total.fetch_add(1, Ordering::Relaxed);
    }

    /// How many tasks ended with `status`.
    pub fn tasks_ended(&self, status: &str) -> u64 {
        read(&self.tasks_ended, status)
    }

    /// How many states were refused for `reason` (e.g. `"bad_tag"`).
    pub fn rejected(&self, reason: &str) -> u64 {
        read(&self.rejected, reason)
    }

    /// How many requests ended in an internal failure of `kind`: `"panic"`
    /// (a handler, extractor or the framework panicked) or `"internal"` (an
    /// error the peer saw only as -32603).
    pub fn failed(&self, kind: &str) -> u64 {
        read(&self.failed, kind)
    }

    /// How many requests of `method` ended with `outcome`.
    pub fn requests(&self, method: &str, outcome: RequestOutcome) -> u64 {
        let m = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        m.get(&(method_label(method), outcome))
            .copied()
            .unwrap_or(0)
    }

    /// Everything, in the Prometheus text exposition format (version 0.0.4).
    pub fn render_prometheus(&self) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str(
            "# HELP tern_requests_total Requests by method and outcome.\n\
             # TYPE tern_requests_total counter\n",
        );
        let requests = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for ((method, outcome), n) in requests {
            let _ = writeln!(
                out,
                "tern_requests_total{{method=\"{method}\",outcome=\"{}\"}} {n}",
                outcome.as_str()
            );
        }
        self.durations.render(
            &mut out,
            "tern_request_duration_seconds",
            "Time from a decoded request to its response.",
            self.durations_total.load(Ordering::Relaxed),
        );
        labelled(
            &mut out,
            "tern_state_rejected_total",
            "requestState refusals by reason (the peer sees one uniform error).",
            "reason",
            &self.rejected,
        );
        labelled(
            &mut out,
            "tern_http_refused_total",
            "Requests refused by the HTTP transport before the server saw them, by reason.",
            "reason",
            &self.refused,
        );
        labelled(
            &mut out,
            "tern_request_failures_total",
            "Requests that failed inside the server, by kind.",
            "kind",
            &self.failed,
        );
        self.state_bytes.render(
            &mut out,
            "tern_state_bytes",
            "Size of each sealed requestState.",
            self.state_bytes_total.load(Ordering::Relaxed),
        );
        self.replay.render(
            &mut out,
            "tern_replay_store_seconds",
            "Latency of each replay store call.",
            self.replay_total.load(Ordering::Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP tern_replay_store_errors_total Replay store calls that failed (the request failed closed).\n\
             # TYPE tern_replay_store_errors_total counter\n\
             tern_replay_store_errors_total {}",
            self.replay_errors.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP tern_sessions_open Open 2025-11-25 sessions.\n\
             # TYPE tern_sessions_open gauge\n\
             tern_sessions_open {}",
            self.sessions.load(Ordering::Relaxed)
        );
        labelled(
            &mut out,
            "tern_sessions_closed_total",
            "2025-11-25 sessions ended, by reason.",
            "reason",
            &self.sessions_closed,
        );
        let _ = writeln!(
            out,
            "# HELP tern_tasks_live Tasks created and not yet ended.\n\
             # TYPE tern_tasks_live gauge\n\
             tern_tasks_live {}",
            self.tasks_live.load(Ordering::Relaxed)
        );
        labelled(
            &mut out,
            "tern_tasks_ended_total",
            "Tasks ended, by final status.",
            "status",
            &self.tasks_ended,
        );
        self.task_durations.render(
            &mut out,
            "tern_task_duration_seconds",
            "Time from a task's creation to its end.",
            self.task_durations_total.load(Ordering::Relaxed),
        );
        labelled(
            &mut out,
            "tern_limit_reached_total",
            "Refusals and evictions at a budget, by budget.",
            "limit",
            &self.limits,
        );
        out
    }
}

/// A counter with one label, `name{label="value"} n` per value.
fn labelled(
    out: &mut String,
    name: &str,
    help: &str,
    label: &str,
    counts: &Mutex<BTreeMap<&'static str, u64>>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    let counts = counts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    for (value, n) in counts {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {n}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_cumulative_buckets_and_labels() {
        let m = Metrics::default();
        m.request(
            "tools/call",
            RequestOutcome::InputRequired,
            Duration::from_micros(80),
        );
        m.request(
            "tools/call",
            RequestOutcome::Complete,
            Duration::from_millis(2),
        );
        m.request(
            method_label("no/such"),
            RequestOutcome::Error,
            Duration::from_millis(1),
        );
        m.reject("bad_tag");
        m.state_sealed(300);
        m.state_sealed(100_000);
        let text = m.render_prometheus();
        for line in [
            "tern_requests_total{method=\"tools/call\",outcome=\"complete\"} 1",
            "tern_requests_total{method=\"tools/call\",outcome=\"input_required\"} 1",
            "tern_requests_total{method=\"other\",outcome=\"error\"} 1",
            "tern_state_rejected_total{reason=\"bad_tag\"} 1",
            "tern_request_duration_seconds_bucket{le=\"0.0001\"} 1",
            "tern_request_duration_seconds_bucket{le=\"0.001\"} 2",
            "tern_request_duration_seconds_bucket{le=\"0.0025\"} 3",
            "tern_request_duration_seconds_count 3",
            "tern_state_bytes_bucket{le=\"256\"} 0",
            "tern_state_bytes_bucket{le=\"512\"} 1",
            "tern_state_bytes_bucket{le=\"65536\"} 1",
            "tern_state_bytes_bucket{le=\"+Inf\"} 2",
            "tern_state_bytes_sum 100300",
            "tern_sessions_open 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
