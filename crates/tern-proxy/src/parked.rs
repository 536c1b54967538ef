//! What waits in the proxy for a client's retry: calls to 2025-11-25
//! upstreams (the upstream sent a request in the middle of a call, the
//! proxy answered its own client with `input_required`, and the upstream
//! call is held here until the retry brings the answer), and 2026-07-28
//! upstream rounds too large to seal. Both are bounded per principal and
//! in total, and dropped when their lifetime ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tern_client::{BoxFuture, CancelToken, InputContext, InputKinds, InputProvider, Refusal};
use tern_proto::Principal;
use tern_server::clock::Clock;
use tern_types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestUrlParams, ElicitResult, ListRootsResult,
};
use tokio::sync::{mpsc, oneshot};

/// What a running upstream call reports to the handler waiting on it.
pub(crate) enum Event {
    /// The upstream asked for input (`method` and `params`); the answer goes
    /// back through `reply`.
    Asked {
        request: Value,
        reply: oneshot::Sender<Value>,
    },
    /// The call ended: the result object, or the failure.
    Done(Result<Value, tern_client::Error>),
}

tokio::task_local! {
    /// Where the requests of the upstream call running in this task go.
    pub(crate) static EVENTS: mpsc::Sender<Event>;
}

/// The input provider of every upstream client: it declares every kind
/// (the upstream session is opened declaring all the proxy can bridge) and
/// hands each request to the handler of the call it arrived in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Relaying;

async fn relay<R: DeserializeOwned>(method: &str, params: Value) -> Result<R, Refusal> {
    let events = EVENTS
        .try_with(Clone::clone)
        .map_err(|_| Refusal::new("no call to relay this request to"))?;
    let (reply, answer) = oneshot::channel();
    let request = json!({"method": method, "params": params});
    events
        .send(Event::Asked { request, reply })
        .await
        .map_err(|_| Refusal::new("the call ended"))?;
    let answer = answer
        .await
        .map_err(|_| Refusal::new("the client did not answer"))?;
    serde_json::from_value(answer)
        .map_err(|e| Refusal::new(format!("the client's answer does not fit the request: {e}")))
}

fn params<T: serde::Serialize>(p: &T) -> Value {
    serde_json::to_value(p).unwrap_or_else(|_| json!({}))
}

impl InputProvider for Relaying {
    fn kinds(&self) -> InputKinds {
        InputKinds::ALL
    }

    fn elicit_form(
        &self,
        _cx: InputContext,
        p: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(
            async move { relay("elicitation/create", params(&ElicitRequestParams::Form(p))).await },
        )
    }

    fn elicit_url(
        &self,
        _cx: InputContext,
        p: ElicitRequestUrlParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(
            async move { relay("elicitation/create", params(&ElicitRequestParams::Url(p))).await },
        )
    }

    fn sample(
        &self,
        _cx: InputContext,
        p: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, Refusal>> {
        Box::pin(async move { relay("sampling/createMessage", params(&p)).await })
    }

    fn list_roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        Box::pin(async move { relay("roots/list", json!({})).await })
    }
}

/// One upstream call running in its own task.
pub(crate) struct Call {
    /// Random, secret: it travels only inside the proxy's sealed state.
    pub(crate) id: String,
    pub(crate) upstream: String,
    /// The client the call runs on (forgotten if the upstream is lost).
    pub(crate) live: crate::upstream::Live,
    /// How many requests the upstream has sent in this call.
    pub(crate) asked: u32,
    /// The open request: its key downstream, and the request.
    pub(crate) key: String,
    pub(crate) request: Value,
    pub(crate) reply: Option<oneshot::Sender<Value>>,
    pub(crate) events: mpsc::Receiver<Event>,
    pub(crate) cancel: CancelToken,
}

impl Drop for Call {
    /// A call that is dropped (its lifetime ended, its client went away,
    /// the answer was refused) is cancelled upstream: the open request is
    /// answered with an error and the call ends.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A 2026-07-28 upstream's round too large for the proxy's sealed state:
/// what the retry needs besides what it carries itself (its parameters).
pub(crate) struct KeptRound {
    pub(crate) upstream: String,
    /// The digest the sealed state names, over `round`.
    pub(crate) digest: String,
    pub(crate) round: crate::relay::UpRound,
}

/// What the proxy holds for a client between two of its rounds.
pub(crate) enum Kept {
    /// A 2025-11-25 upstream's call waiting for an answer.
    Call(Call),
    /// A 2026-07-28 upstream's round waiting for the retry.
    Round(KeptRound),
}

impl Kept {
    fn upstream(&self) -> &str {
        match self {
            Kept::Call(c) => &c.upstream,
            Kept::Round(r) => &r.upstream,
        }
    }
}

/// Which budget refused to hold one more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// The caller holds its share already.
    Principal,
    /// The proxy holds as many as it may for everyone.
    Total,
}

struct Slot {
    principal: Principal,
    /// On the server's clock (Unix seconds).
    expires: u64,
    kept: Kept,
}

#[derive(Default)]
struct Table {
    slots: HashMap<String, Slot>,
    /// How many slots each principal holds.
    counts: HashMap<Principal, usize>,
}

impl Table {
    fn remove(&mut self, id: &str) -> Option<Slot> {
        let slot = self.slots.remove(id)?;
        if let Some(n) = self.counts.get_mut(&slot.principal) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&slot.principal);
            }
        }
        Some(slot)
    }
}

/// What the proxy holds between rounds, bounded in total and per
/// principal, each entry for a lifetime after which it is dropped.
pub(crate) struct Parked {
    table: Mutex<Table>,
    max: usize,
    per_principal: usize,
    /// The lifetime in whole seconds, rounded up.
    ttl: u64,
    clock: Arc<dyn Clock>,
}

impl Parked {
    pub(crate) fn new(
        max: usize,
        per_principal: usize,
        ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Parked {
            table: Mutex::default(),
            max,
            per_principal,
            ttl: ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0),
            clock,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().slots.len()
    }

    /// How many entries `principal` holds.
    pub(crate) fn held_by(&self, principal: &Principal) -> usize {
        self.lock().counts.get(principal).copied().unwrap_or(0)
    }

    /// Holds `kept` under `id` for `principal`, for the lifetime; refused
    /// when an identified principal's share or the whole table is full (the entry is
    /// dropped, and a call so cancelled).
    pub(crate) fn hold(&self, id: String, principal: &Principal, kept: Kept) -> Result<(), Full> {
        let mut table = self.lock();
        let mine = table.counts.get(principal).copied().unwrap_or(0);
        // Without authentication every caller is the one anonymous
        // principal: the total bounds it, as the server's own budgets do.
        let full = if mine >= self.per_principal && *principal != Principal::Anonymous {
            Some(Full::Principal)
        } else if table.slots.len() >= self.max {
            Some(Full::Total)
        } else {
            None
        };
        if let Some(full) = full {
            drop(table);
            drop(kept);
            return Err(full);
        }
        *table.counts.entry(principal.clone()).or_default() += 1;
        let slot = Slot {
            principal: principal.clone(),
            expires: self.clock.now().saturating_add(self.ttl),
            kept,
        };
        table.slots.insert(id, slot);
        Ok(())
    }

    /// Takes the entry `id` out, if it is still held, alive and
    /// `principal`'s. Another principal's entry stays where it is.
    pub(crate) fn take(&self, id: &str, principal: &Principal) -> Option<Kept> {
        let slot = {
            let mut table = self.lock();
            if table.slots.get(id)?.principal != *principal {
                return None;
            }
            table.remove(id)?
        };
        (slot.expires > self.clock.now()).then_some(slot.kept)
    }

    /// Drops (and so cancels) every entry past its lifetime.
    pub(crate) fn sweep(&self) {
        let now = self.clock.now();
        let expired: Vec<Slot> = {
            let mut table = self.lock();
            let ids: Vec<String> = table
                .slots
                .iter()
                .filter(|(_, s)| s.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| table.remove(id)).collect()
        };
        for slot in expired {
            tracing::info!(upstream = %slot.kept.upstream(), "a pending upstream call expired and was dropped");
        }
    }
}
