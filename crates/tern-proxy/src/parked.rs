//! Calls to 2025-11-25 upstreams that wait for the client: the upstream
//! sent a request in the middle of a call, the proxy answered its own
//! client with `input_required`, and the upstream call is held here until
//! the retry brings the answer (or its lifetime ends).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tern_client::{BoxFuture, CancelToken, InputContext, InputKinds, InputProvider, Refusal};
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
    pub(crate) expires: Instant,
}

impl Drop for Call {
    /// A call that is dropped (its lifetime ended, its client went away,
    /// the answer was refused) is cancelled upstream: the open request is
    /// answered with an error and the call ends.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The pending calls, bounded.
pub(crate) struct Parked {
    calls: Mutex<HashMap<String, Call>>,
    max: usize,
}

impl Parked {
    pub(crate) fn new(max: usize) -> Self {
        Parked {
            calls: Mutex::new(HashMap::new()),
            max,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Holds `call`; false when the table is full (the call is dropped, and
    /// so cancelled).
    pub(crate) fn hold(&self, call: Call) -> bool {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if calls.len() >= self.max {
            drop(calls);
            drop(call);
            return false;
        }
        calls.insert(call.id.clone(), call);
        true
    }

    /// Takes the call `id` out, if it is still held and alive.
    pub(crate) fn take(&self, id: &str) -> Option<Call> {
        let call = self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)?;
        (call.expires > now()).then_some(call)
    }

    /// Drops (and so cancels) every call past its lifetime.
    pub(crate) fn sweep(&self) {
        let now = now();
        let expired: Vec<Call> = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            let ids: Vec<String> = calls
                .iter()
                .filter(|(_, c)| c.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| calls.remove(id)).collect()
        };
        for call in expired {
            tracing::info!(upstream = %call.upstream, "a pending upstream call expired and was cancelled");
        }
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "pending calls live in this process; their lifetime is monotonic time"
)]
pub(crate) fn now() -> Instant {
    Instant::now()
}
