//! The tasks one server instance holds: their status, their open round,
//! their result, and the budgets of SECURITY.md ("Budgets", tasks).
//!
//! One lock guards the table; nothing slow runs under it (answers are
//! checked outside, [`Tasks::update`]). Time comes from the server's
//! [`Clock`], so expiry is tested by moving a manual clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tern_proto::{McpError, Principal};
use tokio::sync::oneshot;

use tern_seal::{TaskStore, hex};

use super::TaskLimits;
use super::shared::{self, Shared};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::state::principal_fingerprint;
pub(crate) use records::Status;
use records::Table;

mod records;

/// A task id: 128 random bits in hex, unguessable (the tasks extension's
/// ids are bearer references; they are also bound to their principal).
pub(crate) type TaskId = String;

/// Checks one answer against the question asked under the handler's `key`;
/// `Err` names the key it came under on the wire (`wire`), the one the
/// client sent, as a fleet's other instances name it.
pub(crate) type Check = Arc<dyn Fn(&str, &str, &Value) -> Result<(), McpError> + Send + Sync>;

/// One question of an open round: the key on the wire (never reused within
/// a task), the handler's key, and the request.
struct Question {
    wire: String,
    key: String,
    request: Value,
}

/// A round waiting for `tasks/update`.
struct Open {
    /// Bumped per round, so an update checked against one round is not
    /// applied to the next.
    n: u32,
    questions: Vec<Question>,
    /// The answers so far, under the handler's keys.
    answers: Map<String, Value>,
    check: Check,
    wake: Option<oneshot::Sender<Map<String, Value>>>,
}

struct Record {
    principal: Principal,
    /// The principal's fingerprint, hex: what a fleet's store records.
    fingerprint: String,
    /// Held while the record is written to a fleet's store, so writes of
    /// one task do not overtake each other.
    publishing: Arc<tokio::sync::Mutex<()>>,
    status: Status,
    message: Option<String>,
    created: u64,
    updated: u64,
    expires: u64,
    /// `result` when completed, `error` when failed.
    outcome: Option<(&'static str, Value)>,
    open: Option<Open>,
    rounds: u32,
    /// Every wire key this task has used.
    used: Vec<String>,
    abort: Option<tokio::task::AbortHandle>,
}

/// What `tasks/update` found to check, outside the lock.
pub(crate) struct ToCheck {
    n: u32,
    merged: Map<String, Value>,
    check: Check,
    /// The handler's key and the wire key of each answer this update gave.
    answered: Vec<(String, String)>,
}

/// The tasks of one server.
pub(crate) struct Tasks {
    table: Mutex<Table>,
    /// The clock's second of the last sweep, read and written under the
    /// table's lock.
    swept_at: AtomicU64,
    limits: TaskLimits,
    clock: Arc<dyn Clock>,
    /// A fleet's store, when tasks are shared across instances.
    shared: Option<Shared>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("limits", &self.limits)
            .field("shared", &self.shared)
            .finish()
    }
}

/// -32602 for a task id that is unknown, expired or another principal's:
/// the three are not told apart.
pub(crate) fn unknown() -> McpError {
    McpError::invalid_params("Unknown task")
}

/// An ISO 8601 UTC timestamp of Unix seconds (`createdAt`).
pub(crate) fn iso8601(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Days to a civil date (the proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl Tasks {
    pub(crate) fn new(
        limits: TaskLimits,
        clock: Arc<dyn Clock>,
        store: Option<Arc<dyn TaskStore>>,
    ) -> Self {
        Tasks {
            table: Mutex::new(Table::default()),
            swept_at: AtomicU64::new(u64::MAX),
            limits,
            clock,
            shared: store.map(|store| Shared { store }),
        }
    }

    /// The fleet's store, when there is one.
    pub(crate) fn shared(&self) -> Option<&Shared> {
        self.shared.as_ref()
    }

    pub(crate) fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The table, rid of what outlived its time to live, and the time.
    ///
    /// Swept at most once per second of the clock, not on every request
    /// (a full table is thousands of records): within one second nothing
    /// new can lapse, since the sweep at `now` kept only records living
    /// past `now` and a record made at `now` lives to `now + 1` at least.
    /// A clock that steps back is a new second like any other.
    fn swept(&self, metrics: &Metrics) -> (MutexGuard<'_, Table>, u64) {
        let now = self.clock.now();
        let mut table = self.lock();
        if self.swept_at.swap(now, Ordering::Relaxed) != now {
            Self::sweep(&mut table, now, metrics);
        }
        (table, now)
    }

    /// Drops what outlived its time to live; a task still running is
    /// cancelled.
    fn sweep(table: &mut Table, now: u64, metrics: &Metrics) {
        table.retain(|r| {
            if r.expires > now {
                return true;
            }
            if !r.status.terminal() {
                if let Some(a) = r.abort.take() {
                    a.abort();
                }
                metrics.task_ended("expired", secs(now.saturating_sub(r.created)));
            }
            false
        });
    }

    /// Creates a task for `principal`, `working`; the returned
    /// `CreateTaskResult` fields are true before the reply leaves (a
    /// `tasks/get` right after it finds the task).
    pub(crate) fn create(
        &self,
        id: &str,
        principal: &Principal,
        metrics: &Metrics,
    ) -> Result<Map<String, Value>, McpError> {
        let (mut table, now) = self.swept(metrics);
        let fingerprint = hex(&principal_fingerprint(principal));
        let live = table.live(&fingerprint);
        if live >= self.limits.max_live_per_principal {
            metrics.limit_reached("tasks_per_principal");
            return Err(McpError::busy(
                "tasks_per_principal",
                format!(
                    "this client has {live} unfinished tasks, as many as one client may; wait for one to end or cancel one"
                ),
                None,
            ));
        }
        // Full: the finished task that ended first makes room.
        if table.len() >= self.limits.max_kept && !table.drop_oldest_ended() {
            metrics.limit_reached("tasks_total");
            return Err(McpError::busy(
                "tasks_total",
                "the server holds as many unfinished tasks as it may; try again later",
                None,
            ));
        }
        let ttl = self.limits.ttl.as_secs().max(1);
        table.insert(
            id.to_owned(),
            Record {
                principal: principal.clone(),
                fingerprint,
                publishing: Arc::default(),
                status: Status::Working,
                message: None,
                created: now,
                updated: now,
                expires: now.saturating_add(ttl),
                outcome: None,
                open: None,
                rounds: 0,
                used: Vec::new(),
                abort: None,
            },
        );
        metrics.task_created();
        let mut r = envelope(id, &table[id], &self.limits);
        r.insert("resultType".into(), json!("task"));
        Ok(r)
    }

    /// Records how to stop the task's body (a cancel, an expiry).
    pub(crate) fn set_abort(&self, id: &str, abort: tokio::task::AbortHandle) {
        let mut table = self.lock();
        match table.get_mut(id) {
            Some(r) if !r.status.terminal() => r.abort = Some(abort),
            // Ended before it was recorded: nothing left to stop.
            _ => abort.abort(),
        }
    }

    /// The task as `tasks/get` shows it, for its own principal only: from
    /// the fleet's store when there is one (answers posted on any instance
    /// count), else from this instance's table.
    pub(crate) async fn get(
        &self,
        id: &str,
        principal: &Principal,
        metrics: &Metrics,
    ) -> Result<Map<String, Value>, McpError> {
        match &self.shared {
            Some(shared) => {
                // The store's record lapses with the task; this instance's
                // own tasks lapse with it, a running one stopped.
                let (table, now) = self.swept(metrics);
                drop(table);
                let fp = hex(&principal_fingerprint(principal));
                Ok(shared.seen(id, &fp, now).await?.view(now))
            }
            None => self.local_get(id, principal, metrics),
        }
    }

    fn local_get(
        &self,
        id: &str,
        principal: &Principal,
        metrics: &Metrics,
    ) -> Result<Map<String, Value>, McpError> {
        let (table, _) = self.swept(metrics);
        let r = owned(&table, id, principal)?;
        let mut out = envelope(id, r, &self.limits);
        if let Some(open) = r
            .open
            .as_ref()
            .filter(|_| r.status == Status::InputRequired)
        {
            let requests: Map<String, Value> = open
                .questions
                .iter()
                .filter(|q| !open.answers.contains_key(&q.key))
                .map(|q| (q.wire.clone(), q.request.clone()))
                .collect();
            out.insert("inputRequests".into(), Value::Object(requests));
        }
        if let Some((field, value)) = &r.outcome {
            out.insert((*field).into(), value.clone());
        }
        Ok(out)
    }

    /// Opens a round of `questions` (handler keys); the task is
    /// `input_required` until every one is answered. The wire keys are the
    /// handler's, suffixed when a key was used before in this task.
    pub(crate) fn open_round(
        &self,
        id: &str,
        asked: Vec<(String, Value)>,
        check: Check,
    ) -> Result<oneshot::Receiver<Map<String, Value>>, McpError> {
        let mut table = self.lock();
        let r = table.get_mut(id).ok_or_else(unknown)?;
        if r.status.terminal() {
            return Err(McpError::Internal("the task ended".into()));
        }
        r.rounds += 1;
        let mut questions = Vec::with_capacity(asked.len());
        for (key, request) in asked {
            let mut wire = key.clone();
            let mut n = 1;
            while r.used.contains(&wire) {
                n += 1;
                wire = format!("{key}#{n}");
            }
            r.used.push(wire.clone());
            questions.push(Question { wire, key, request });
        }
        let (tx, rx) = oneshot::channel();
        r.open = Some(Open {
            n: r.rounds,
            questions,
            answers: Map::new(),
            check,
            wake: Some(tx),
        });
        r.status = Status::InputRequired;
        r.updated = self.clock.now();
        Ok(rx)
    }

    /// `tasks/update`: answers to open keys are checked and recorded before
    /// this returns (a `tasks/get` right after sees them), on the instance
    /// that runs the task or, in a fleet, posted for it.
    pub(crate) async fn update(
        &self,
        id: &str,
        principal: &Principal,
        responses: &Map<String, Value>,
        cfg: &crate::Config,
        metrics: &Metrics,
    ) -> Result<(), McpError> {
        let local = {
            // Swept first: a task past its time to live is unknown here as
            // on `tasks/get`, and an answer never wakes it (SECURITY.md
            // "Tasks").
            let (table, _) = self.swept(metrics);
            match owned(&table, id, principal) {
                Ok(r) => {
                    let open = r.open.iter().flat_map(|o| &o.questions);
                    let samples = open.filter(|q| crate::round::asks_sample(&q.request));
                    let is_sample = |wire: &str| samples.clone().any(|q| q.wire == wire);
                    crate::round::check_answer_kinds(responses, cfg, is_sample)?;
                    Ok(Self::to_check(r, responses))
                }
                Err(e) => Err(e),
            }
        };
        match (local, &self.shared) {
            (Ok(check), _) => {
                if let Some(c) = check {
                    self.apply(id, c)?;
                    self.publish(id).await?;
                }
                Ok(())
            }
            (Err(_), Some(shared)) => {
                let now = self.clock.now();
                let fp = hex(&principal_fingerprint(principal));
                let seen = shared.seen(id, &fp, now).await?;
                shared.update(id, &seen, responses, cfg, now).await
            }
            (Err(e), None) => Err(e),
        }
    }

    /// Answers posted for a task this instance runs, by another instance
    /// of the fleet (already checked there, checked again here): applied
    /// when they answer open keys. Whether anything changed.
    pub(crate) fn take_posted(&self, id: &str, posted: &[(String, Vec<u8>)]) -> bool {
        let responses: Map<String, Value> = posted
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), serde_json::from_slice(v).ok()?)))
            .collect();
        let check = {
            let table = self.lock();
            table.get(id).and_then(|r| Self::to_check(r, &responses))
        };
        let Some(c) = check else {
            return false;
        };
        match self.apply(id, c) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "an answer posted for the task was refused");
                false
            }
        }
    }

    /// First half of an update: the answers to keys still open, merged
    /// with those already in, to be checked outside the lock. `None` when
    /// nothing applies (no open round, a finished task, no open key): the
    /// update is acknowledged and ignored.
    fn to_check(r: &Record, responses: &Map<String, Value>) -> Option<ToCheck> {
        let open = r
            .open
            .as_ref()
            .filter(|_| r.status == Status::InputRequired)?;
        let mut merged = open.answers.clone();
        let mut answered = Vec::new();
        for q in &open.questions {
            if merged.contains_key(&q.key) {
                continue;
            }
            if let Some(a) = responses.get(&q.wire) {
                merged.insert(q.key.clone(), a.clone());
                answered.push((q.key.clone(), q.wire.clone()));
            }
        }
        if answered.is_empty() {
            return None;
        }
        Some(ToCheck {
            n: open.n,
            merged,
            check: open.check.clone(),
            answered,
        })
    }

    /// Second half of an update: checks the answers, then records them;
    /// when the round is complete the body wakes with them.
    fn apply(&self, id: &str, c: ToCheck) -> Result<(), McpError> {
        // Each answer this update gives, under the key the client sent it
        // (answers kept from earlier updates were checked when they came).
        for (key, wire) in &c.answered {
            if let Some(a) = c.merged.get(key) {
                (c.check)(key, wire, a)?;
            }
        }
        let mut table = self.lock();
        let Some(r) = table.get_mut(id) else {
            return Ok(());
        };
        let now = self.clock.now();
        let Some(open) = r.open.as_mut().filter(|o| o.n == c.n) else {
            // The round moved on while this was checked: stale, ignored.
            return Ok(());
        };
        for (key, _) in &c.answered {
            if let Some(a) = c.merged.get(key) {
                // The first answer to land wins, as in a fleet's store: an
                // update checked beside this one is ignored for its keys.
                open.answers.entry(key.clone()).or_insert_with(|| a.clone());
            }
        }
        r.updated = now;
        if open
            .questions
            .iter()
            .all(|q| open.answers.contains_key(&q.key))
        {
            let answers = std::mem::take(&mut open.answers);
            if let Some(wake) = open.wake.take() {
                let _ = wake.send(answers);
            }
            r.open = None;
            r.status = Status::Working;
        }
        Ok(())
    }

    /// `tasks/cancel`: a running task ends `cancelled` and its body stops;
    /// a finished one is left as it is. In a fleet, a task another
    /// instance runs gets the cancel flag its owner looks for.
    pub(crate) async fn cancel(
        &self,
        id: &str,
        principal: &Principal,
        metrics: &Metrics,
    ) -> Result<(), McpError> {
        let local = {
            let (table, _) = self.swept(metrics);
            owned(&table, id, principal).map(drop)
        };
        match (local, &self.shared) {
            (Ok(()), _) => {
                self.cancel_owned(id, metrics);
                self.publish(id).await
            }
            (Err(_), Some(shared)) => {
                let now = self.clock.now();
                let fp = hex(&principal_fingerprint(principal));
                let seen = shared.seen(id, &fp, now).await?;
                shared.cancel(id, &seen, now).await
            }
            (Err(e), None) => Err(e),
        }
    }

    /// Ends a task this instance runs `cancelled`, unless it has ended.
    pub(crate) fn cancel_owned(&self, id: &str, metrics: &Metrics) {
        let now = self.clock.now();
        let mut table = self.lock();
        if let Some(r) = table.end(id, Status::Cancelled, now) {
            if let Some(a) = r.abort.take() {
                a.abort();
            }
            metrics.task_ended("cancelled", secs(now.saturating_sub(r.created)));
        }
    }

    /// Whether this instance runs `id` and it has not ended (`None`
    /// otherwise), and if so the number of the round that waits for
    /// answers, when one does.
    pub(crate) fn running(&self, id: &str) -> Option<Option<u32>> {
        let table = self.lock();
        let r = table.get(id).filter(|r| !r.status.terminal())?;
        Some(
            r.open
                .as_ref()
                .filter(|_| r.status == Status::InputRequired)
                .map(|o| o.n),
        )
    }

    /// Writes the task's record to the fleet's store (nothing without
    /// one). Awaited before a change is acknowledged, so every instance
    /// sees it; the record is read when the write starts, so of writes
    /// racing the last one carries the latest state.
    pub(crate) async fn publish(&self, id: &str) -> Result<(), McpError> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let Some(lock) = self.lock().get(id).map(|r| r.publishing.clone()) else {
            return Ok(());
        };
        let _held = lock.lock().await;
        let Some((record, ttl)) = self.record(id) else {
            return Ok(());
        };
        shared
            .store
            .put(id, record, ttl)
            .await
            .map_err(shared::store_error)
    }

    /// The record of `id` as a fleet's store keeps it, and its time left.
    fn record(&self, id: &str) -> Option<(Vec<u8>, Duration)> {
        let now = self.clock.now();
        let table = self.lock();
        let r = table.get(id)?;
        let mut task = envelope(id, r, &self.limits);
        if let Some((field, value)) = &r.outcome {
            task.insert((*field).into(), value.clone());
        }
        let open = r
            .open
            .as_ref()
            .filter(|_| r.status == Status::InputRequired)
            .map(|open| {
                open.questions
                    .iter()
                    .filter(|q| !open.answers.contains_key(&q.key))
                    .map(|q| (q.wire.clone(), q.request.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let lease = self.limits.lease.as_secs().max(1);
        let record = shared::Record {
            principal: r.fingerprint.clone(),
            lease: now.saturating_add(lease),
            expires: r.expires,
            task,
            open,
        };
        Some((record.encode(), shared::remaining(r.expires, now)))
    }

    /// Sets the status message of a task that has not ended (an ended
    /// task's record, its time of ending included, stays as it ended).
    pub(crate) fn set_message(&self, id: &str, message: String) {
        if let Some(r) = self.lock().get_mut(id).filter(|r| !r.status.terminal()) {
            r.message = Some(message);
            r.updated = self.clock.now();
        }
    }

    /// Ends a task with its body's outcome: `result` (completed) or `error`
    /// (failed). A task already ended (cancelled, expired) keeps its end.
    pub(crate) fn finish(&self, id: &str, field: &'static str, value: Value, metrics: &Metrics) {
        let now = self.clock.now();
        let mut table = self.lock();
        let status = if field == "result" {
            Status::Completed
        } else {
            Status::Failed
        };
        let Some(r) = table.end(id, status, now) else {
            return;
        };
        r.outcome = Some((field, value));
        r.abort = None;
        metrics.task_ended(status.as_str(), secs(now.saturating_sub(r.created)));
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The record of `id` if `principal` owns it; an unknown id and another's
/// get the same -32602.
fn owned<'t>(table: &'t Table, id: &str, principal: &Principal) -> Result<&'t Record, McpError> {
    table
        .get(id)
        .filter(|r| r.principal == *principal)
        .ok_or_else(unknown)
}

/// The `Task` fields every answer about a task carries.
fn envelope(id: &str, r: &Record, limits: &TaskLimits) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("taskId".into(), json!(id));
    m.insert("status".into(), json!(r.status.as_str()));
    if let Some(msg) = &r.message {
        m.insert("statusMessage".into(), json!(msg));
    }
    m.insert("createdAt".into(), json!(iso8601(r.created)));
    m.insert("lastUpdatedAt".into(), json!(iso8601(r.updated)));
    let ttl_ms = u64::try_from(limits.ttl.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    m.insert("ttlMs".into(), json!(ttl_ms));
    if !r.status.terminal() {
        let poll = u64::try_from(limits.poll_interval.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        m.insert("pollIntervalMs".into(), json!(poll));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_796_428_800 + 3_723), "2026-12-05T01:02:03Z");
    }

    fn static_principal(name: &str) -> Principal {
        Principal::Static {
            secret_id: name.into(),
        }
    }

    /// Two updates checked at once for one key (each outside the lock):
    /// the first to land is the answer, as a fleet's store keeps the first.
    #[test]
    fn of_two_racing_answers_to_one_key_the_first_to_land_is_kept() {
        let clock = crate::clock::ManualClock::new(1_000);
        let tasks = Tasks::new(TaskLimits::default(), Arc::new(clock), None);
        let metrics = Metrics::default();
        let alice = static_principal("alice");
        tasks.create("t", &alice, &metrics).unwrap();
        let check: Check = Arc::new(|_: &str, _: &str, _: &Value| Ok(()));
        let asked = vec![("a".to_owned(), json!({})), ("b".to_owned(), json!({}))];
        let mut rx = tasks.open_round("t", asked, check).unwrap();
        let checked = |answer: Value| {
            let responses = serde_json::from_value(answer).unwrap();
            Tasks::to_check(&tasks.lock()["t"], &responses).unwrap()
        };
        let first = checked(json!({"a": {"action": "accept"}}));
        let second = checked(json!({"a": {"action": "decline"}}));
        tasks.apply("t", first).unwrap();
        tasks.apply("t", second).unwrap();
        assert!(rx.try_recv().is_err(), "b is still open");
        tasks
            .apply("t", checked(json!({"b": {"action": "cancel"}})))
            .unwrap();
        let answers = rx.try_recv().unwrap();
        assert_eq!(
            Value::Object(answers),
            json!({"a": {"action": "accept"}, "b": {"action": "cancel"}})
        );
    }

    /// A create reads the indexes, not the records: after every kind of
    /// change (create, finish, cancel, expiry, making room) they say what
    /// a scan says, and the budgets they give are the same.
    #[test]
    fn the_indexes_agree_with_the_records_through_every_change() {
        let clock = crate::clock::ManualClock::new(1_000);
        let limits = TaskLimits {
            max_live_per_principal: 3,
            max_kept: 6,
            ttl: Duration::from_secs(10),
            ..TaskLimits::default()
        };
        let tasks = Tasks::new(limits, Arc::new(clock.clone()), None);
        let metrics = Metrics::default();
        let (alice, bob) = (static_principal("alice"), static_principal("bob"));
        let check = |tasks: &Tasks| assert!(tasks.lock().consistent());

        for n in 0..3 {
            tasks.create(&format!("a{n}"), &alice, &metrics).unwrap();
            check(&tasks);
        }
        // Alice's three are her budget; Bob's is his own.
        assert!(tasks.create("a3", &alice, &metrics).is_err());
        tasks.create("b0", &bob, &metrics).unwrap();
        // Ending one (finished, then cancelled) gives a place back.
        tasks.finish("a0", "result", json!({}), &metrics);
        check(&tasks);
        tasks.create("a3", &alice, &metrics).unwrap();
        clock.advance(1);
        tasks.cancel_owned("a1", &metrics);
        tasks.cancel_owned("a1", &metrics);
        tasks.finish("a1", "result", json!({}), &metrics);
        check(&tasks);
        assert_eq!(tasks.lock()["a1"].status, Status::Cancelled);
        tasks.create("a4", &alice, &metrics).unwrap();
        check(&tasks);
        // Six kept, two of them ended: a create drops the one that ended
        // first (a0), then the next (a1); then none has ended.
        assert_eq!(tasks.lock().len(), 6);
        tasks.create("b1", &bob, &metrics).unwrap();
        assert!(!tasks.lock().contains_key("a0"));
        assert!(tasks.lock().contains_key("a1"));
        tasks.create("b2", &bob, &metrics).unwrap();
        assert!(!tasks.lock().contains_key("a1"));
        check(&tasks);
        let carol = static_principal("carol");
        assert!(tasks.create("c0", &carol, &metrics).is_err());
        assert_eq!(metrics.limits_reached("tasks_total"), 1);
        assert_eq!(metrics.limits_reached("tasks_per_principal"), 1);
        // Expiry drops records unfinished and finished alike, and their
        // places with them.
        tasks.finish("b0", "error", json!({}), &metrics);
        clock.advance(9);
        tasks.create("a5", &alice, &metrics).unwrap();
        check(&tasks);
        let mut kept: Vec<String> = tasks.lock().keys().cloned().collect();
        kept.sort();
        assert_eq!(kept, ["a4", "a5", "b1", "b2"]);
        let fingerprint = |p: &Principal| hex(&principal_fingerprint(p));
        assert_eq!(tasks.lock().live(&fingerprint(&alice)), 2);
        assert_eq!(tasks.lock().live(&fingerprint(&bob)), 2);
    }
}
