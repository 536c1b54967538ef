//! The task table's records and the indexes kept beside them.

use std::collections::{BTreeSet, HashMap};
use std::ops::Deref;

use super::{Record, TaskId};

/// The records, and what creating a task needs kept beside them so that
/// a create costs the same however full the table is: the table is shared
/// by every principal, and one principal's thousands of records must not
/// slow another's requests under the lock.
///
/// Read through `Deref`; a change goes through the methods below, which
/// keep the two indexes true (`end` is the only way a task ends).
#[derive(Default)]
pub(super) struct Table {
    records: HashMap<TaskId, Record>,
    /// Unfinished tasks per principal (its fingerprint, hex).
    live: HashMap<String, usize>,
    /// Finished tasks by the second they ended (their `updated`, which
    /// does not change after), oldest first: the first to make room.
    ended: BTreeSet<(u64, TaskId)>,
}

impl Deref for Table {
    type Target = HashMap<TaskId, Record>;

    fn deref(&self) -> &Self::Target {
        &self.records
    }
}

impl Table {
    /// A record to change; its status stays unfinished (`end` ends it).
    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut Record> {
        self.records.get_mut(id)
    }

    /// The unfinished tasks `fingerprint` holds.
    pub(super) fn live(&self, fingerprint: &str) -> usize {
        self.live.get(fingerprint).copied().unwrap_or(0)
    }

    pub(super) fn insert(&mut self, id: TaskId, record: Record) {
        debug_assert!(!record.status.terminal());
        *self.live.entry(record.fingerprint.clone()).or_default() += 1;
        self.records.insert(id, record);
    }

    /// Ends the unfinished task `id` with `status` at `now`: the record,
    /// or `None` when it is unknown or already ended.
    pub(super) fn end(&mut self, id: &str, status: Status, now: u64) -> Option<&mut Record> {
        debug_assert!(status.terminal());
        let r = self.records.get_mut(id).filter(|r| !r.status.terminal())?;
        r.status = status;
        r.updated = now;
        r.open = None;
        Self::unlive(&mut self.live, &r.fingerprint);
        self.ended.insert((now, id.to_owned()));
        Some(r)
    }

    fn unlive(live: &mut HashMap<String, usize>, fingerprint: &str) {
        if let Some(n) = live.get_mut(fingerprint) {
            *n -= 1;
            if *n == 0 {
                live.remove(fingerprint);
            }
        }
    }

    /// Drops the finished task that ended first; `false` when none has.
    pub(super) fn drop_oldest_ended(&mut self) -> bool {
        match self.ended.pop_first() {
            Some((_, id)) => {
                self.records.remove(&id);
                true
            }
            None => false,
        }
    }

    /// Drops each record `keep` refuses (it may act on a record first; the
    /// indexes go by the record as it was before).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&mut Record) -> bool) {
        let Table {
            records,
            live,
            ended,
        } = self;
        records.retain(|id, r| {
            let (terminal, updated) = (r.status.terminal(), r.updated);
            if keep(r) {
                return true;
            }
            if terminal {
                ended.remove(&(updated, id.clone()));
            } else {
                Self::unlive(live, &r.fingerprint);
            }
            false
        });
    }

    /// Whether the indexes say what a scan of the records says.
    #[cfg(test)]
    pub(super) fn consistent(&self) -> bool {
        let mut live: HashMap<String, usize> = HashMap::new();
        let mut ended = BTreeSet::new();
        for (id, r) in &self.records {
            if r.status.terminal() {
                ended.insert((r.updated, id.clone()));
            } else {
                *live.entry(r.fingerprint.clone()).or_default() += 1;
            }
        }
        live == self.live && ended == self.ended
    }
}

/// A task's status on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Status> {
        [
            Status::Working,
            Status::InputRequired,
            Status::Completed,
            Status::Failed,
            Status::Cancelled,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    pub(crate) fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}
