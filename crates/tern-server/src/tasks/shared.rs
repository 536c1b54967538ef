//! Tasks across a fleet: a task runs on the instance that created it (its
//! owner), and any instance answers `tasks/*` for it through a shared
//! [`TaskStore`] (ARCHITECTURE.md "Tasks", SECURITY.md "Budgets").
//!
//! The owner writes the task's record after every change and before the
//! change is acknowledged, so a `tasks/get` on any instance right after
//! sees it. Another instance never changes the record: it posts answers
//! (checked first, by the same parser the owner uses) and the cancel flag;
//! the owner's watcher picks them up. The record carries a lease the owner
//! renews; a task whose owner died reads as `failed` once its lease lapses,
//! never `working` forever.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_seal::{StoreError, TaskEntry, TaskStore};
use tracing::Instrument as _;

use super::table::{Status, unknown};
use crate::ask::check_relayed;
use crate::metrics::Metrics;

/// How soon an owner looks for answers and a cancel posted elsewhere,
/// after the task's open round changed or the last look found something.
const WATCH_TICK: Duration = Duration::from_millis(100);

/// The longest wait between two looks: each look that finds nothing new
/// doubles the wait up to this. A task that waits ten minutes for a person
/// costs its store a read a second, not ten (with thousands of tasks held,
/// the difference is the store's whole load).
const WATCH_TICK_MAX: Duration = Duration::from_secs(1);

/// The record's encoding version.
const VERSION: u64 = 1;

/// A fleet's shared store, as one instance uses it.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn TaskStore>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("durability", &self.store.durability())
            .finish()
    }
}

/// A store that could not answer: the request fails, the reason logged.
pub(crate) fn store_error(e: StoreError) -> McpError {
    McpError::Internal(format!("task store: {e}"))
}

/// The owner's record of a task, as the store keeps it.
pub(crate) struct Record {
    /// The creating principal's fingerprint, hex.
    pub(crate) principal: String,
    /// Unix seconds until which the owner vouches for the task.
    pub(crate) lease: u64,
    /// Unix seconds after which the task is gone.
    pub(crate) expires: u64,
    /// The task as `tasks/get` shows it, without `inputRequests`.
    pub(crate) task: Map<String, Value>,
    /// Open questions: wire key to request.
    pub(crate) open: Map<String, Value>,
}

impl Record {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let v = json!({
            "v": VERSION,
            "p": self.principal,
            "lease": self.lease,
            "expires": self.expires,
            "task": self.task,
            "open": self.open,
        });
        serde_json::to_vec(&v).unwrap_or_default()
    }

    fn decode(bytes: &[u8]) -> Option<Record> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        if v.get("v")?.as_u64()? != VERSION {
            return None;
        }
        Some(Record {
            principal: v.get("p")?.as_str()?.to_owned(),
            lease: v.get("lease")?.as_u64()?,
            expires: v.get("expires")?.as_u64()?,
            task: v.get("task")?.as_object()?.clone(),
            open: v.get("open")?.as_object()?.clone(),
        })
    }

    fn status(&self) -> Option<Status> {
        Status::parse(self.task.get("status")?.as_str()?)
    }
}

/// A task as another instance sees it: its record and what was posted.
pub(crate) struct Seen {
    record: Record,
    entry: TaskEntry,
}

impl Seen {
    /// The questions still open: asked, not answered by any instance.
    fn open(&self) -> Map<String, Value> {
        self.record
            .open
            .iter()
            .filter(|(k, _)| !self.entry.answers.iter().any(|(a, _)| a == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The status as `tasks/get` reports it now: a cancel posted wins over
    /// a running owner; a lapsed lease means the owner is gone.
    fn status(&self, now: u64) -> Status {
        let status = self.record.status().unwrap_or(Status::Failed);
        if status.terminal() {
            status
        } else if self.entry.cancelled {
            Status::Cancelled
        } else if self.record.lease < now {
            Status::Failed
        } else if status == Status::InputRequired && self.open().is_empty() {
            // Every answer is in; the owner has not picked them up yet.
            Status::Working
        } else {
            status
        }
    }

    /// `tasks/get`'s answer.
    pub(crate) fn view(&self, now: u64) -> Map<String, Value> {
        let mut task = self.record.task.clone();
        let status = self.status(now);
        task.insert("status".into(), json!(status.as_str()));
        if status.terminal() {
            task.remove("pollIntervalMs");
        }
        let was = self.record.status();
        if status == Status::Failed && was != Some(Status::Failed) {
            task.insert(
                "error".into(),
                json!({"code": -32603, "message": "the server running this task stopped"}),
            );
        }
        if status == Status::InputRequired {
            task.insert("inputRequests".into(), Value::Object(self.open()));
        }
        task
    }
}

impl Shared {
    /// The task `id` if it is `principal`'s and not expired; an unknown id
    /// and another's are not told apart.
    pub(crate) async fn seen(&self, id: &str, principal: &str, now: u64) -> Result<Seen, McpError> {
        let entry = self.store.get(id).await.map_err(store_error)?;
        let seen = entry.and_then(|entry| {
            let record = Record::decode(&entry.record)?;
            Some(Seen { record, entry })
        });
        match seen {
            Some(s) if s.record.principal == principal && s.record.expires > now => Ok(s),
            _ => Err(unknown()),
        }
    }

    /// `tasks/update` on an instance that does not run the task: each
    /// answer to an open question is checked against it (the parser the
    /// owner uses, MRTR-S8's pinning by key), then posted for the owner.
    /// Keys not open are ignored; one bad answer refuses the update whole.
    pub(crate) async fn update(
        &self,
        id: &str,
        seen: &Seen,
        responses: &Map<String, Value>,
        cfg: &crate::Config,
        now: u64,
    ) -> Result<(), McpError> {
        if seen.status(now) != Status::InputRequired {
            return Ok(());
        }
        let open = seen.open();
        crate::round::check_answer_kinds(responses, cfg, |wire| {
            open.get(wire).is_some_and(crate::round::asks_sample)
        })?;
        let mut posted = Vec::new();
        for (wire, answer) in responses {
            let Some(request) = open.get(wire) else {
                continue;
            };
            check_relayed(wire, request, answer)?;
            posted.push((wire.clone(), serde_json::to_vec(answer).unwrap_or_default()));
        }
        if posted.is_empty() {
            return Ok(());
        }
        let ttl = remaining(seen.record.expires, now);
        self.store
            .answer(id, posted, ttl)
            .await
            .map_err(store_error)
    }

    /// `tasks/cancel` on an instance that does not run the task: the flag
    /// is posted unless the task has ended.
    pub(crate) async fn cancel(&self, id: &str, seen: &Seen, now: u64) -> Result<(), McpError> {
        if seen.status(now).terminal() {
            return Ok(());
        }
        let ttl = remaining(seen.record.expires, now);
        self.store.cancel(id, ttl).await.map_err(store_error)
    }
}

/// What is left of a task's time, at least a second.
pub(crate) fn remaining(expires: u64, now: u64) -> Duration {
    Duration::from_secs(expires.saturating_sub(now).max(1))
}

/// The owner's side: until the task ends, looks for a cancel and answers
/// posted on other instances, and renews the lease. It looks often while
/// something happens and less often while nothing does
/// ([`WATCH_TICK`] to [`WATCH_TICK_MAX`]).
pub(crate) fn watch(server: crate::server::Server, id: String) {
    let span = tracing::info_span!("task", task = %id);
    tokio::spawn(
        async move {
            let tasks = &server.inner.tasks;
            let Some(shared) = tasks.shared() else {
                return;
            };
            // A third of the lease, so two renewals can be late (or fall
            // either side of a second, the lease's grain) before the
            // task reads as failed elsewhere.
            let renew = (tasks.limits().lease / 3).max(WATCH_TICK);
            let clock = server.clock();
            let since = |at: tokio::time::Instant| clock.instant().saturating_duration_since(at);
            let mut renewed = clock.instant();
            let (mut tick, mut asking) = (WATCH_TICK, None);
            loop {
                // Never past the next renewal: the looks' own time (a
                // remote store's reads) counts towards it too.
                let due = renew.saturating_sub(since(renewed));
                tokio::time::sleep(tick.min(due).max(WATCH_TICK)).await;
                let Some(now_asking) = tasks.running(&id) else {
                    return;
                };
                // A round opened or closed since the last look: answers
                // to it may come soon.
                let mut moved = now_asking != asking;
                asking = now_asking;
                let metrics: &Metrics = server.metrics();
                match shared.store.get(&id).await {
                    Ok(Some(entry)) => {
                        if entry.cancelled {
                            tasks.cancel_owned(&id, metrics);
                            publish_or_log(tasks, &id).await;
                            return;
                        }
                        if tasks.take_posted(&id, &entry.answers) {
                            publish_or_log(tasks, &id).await;
                            renewed = clock.instant();
                            moved = true;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "task store unreadable"),
                }
                if since(renewed) >= renew {
                    publish_or_log(tasks, &id).await;
                    renewed = clock.instant();
                }
                tick = if moved {
                    WATCH_TICK
                } else {
                    (tick * 2).min(WATCH_TICK_MAX)
                };
            }
        }
        .instrument(span),
    );
}

async fn publish_or_log(tasks: &super::Tasks, id: &str) {
    if let Err(e) = tasks.publish(id).await {
        tracing::warn!(error = %e, "task record not written");
    }
}
