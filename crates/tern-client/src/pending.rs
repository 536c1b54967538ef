//! A call waiting for input between two rounds: what a client keeps, or
//! hands to another process, to send the next one (MRTR-C5, MRTR-C7).

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tern_types::InputRequests;

use crate::mrtr::FlowResult;

/// A call waiting for input: the method, the caller's parameters, the
/// round that asked, the state to echo and the open requests. Serialisable,
/// so another process can finish the flow with [`Client::resume`](crate::Client::resume); the
/// state travels with it byte for byte (MRTR-C5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "", rename_all = "camelCase")]
pub struct PendingCall<T> {
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
    pub(crate) round: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<String>,
    #[serde(default)]
    pub(crate) input_requests: InputRequests,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server_info: Option<Value>,
    /// Seconds the server gives for the answers (its hint), if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer_within_secs: Option<u64>,
    #[serde(skip)]
    pub(crate) _result: PhantomData<fn() -> T>,
}

impl<T> PendingCall<T> {
    /// The method (`tools/call`, `prompts/get` or `resources/read`).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The caller's parameters (`name` and `arguments`, or `uri`), exactly
    /// as first sent, without `_meta` (MRTR-C7).
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The round that returned this interim result (1 for the first
    /// request).
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The opaque state to echo, if the server sent one (MRTR-C5).
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// What the server asks for, by key. Empty for a state-only round:
    /// resume with no answers.
    pub fn input_requests(&self) -> &InputRequests {
        &self.input_requests
    }

    /// The server's identity from the interim result, for display (META-11).
    pub fn server_info(&self) -> Option<&Value> {
        self.server_info.as_ref()
    }

    /// A pending call rebuilt from parts its holder kept (a gateway's own
    /// sealed state): resuming it sends `params` with the answers to
    /// `input_requests` and `request_state` byte for byte (MRTR-C5), as
    /// round `round + 1`.
    pub fn from_parts(
        params: Map<String, Value>,
        round: u32,
        request_state: Option<String>,
        input_requests: InputRequests,
    ) -> Self
    where
        T: FlowResult,
    {
        Self::new(
            T::METHOD,
            params,
            round,
            request_state,
            input_requests,
            None,
            None,
        )
    }

    /// The parts [`PendingCall::from_parts`] takes: the params, the round,
    /// the state and the input requests.
    pub fn into_parts(self) -> (Map<String, Value>, u32, Option<String>, InputRequests) {
        (
            self.params,
            self.round,
            self.request_state,
            self.input_requests,
        )
    }

    /// The open questions of a task, answered like a round's.
    pub(crate) fn in_task(
        method: &str,
        params: Map<String, Value>,
        round: u32,
        input_requests: InputRequests,
        server_info: Option<Value>,
    ) -> Self {
        Self::new(
            method,
            params,
            round,
            None,
            input_requests,
            server_info,
            None,
        )
    }

    /// The one constructor the others go through.
    pub(crate) fn new(
        method: &str,
        params: Map<String, Value>,
        round: u32,
        request_state: Option<String>,
        input_requests: InputRequests,
        server_info: Option<Value>,
        answer_within_secs: Option<u64>,
    ) -> Self {
        PendingCall {
            method: method.to_owned(),
            params,
            round,
            request_state,
            input_requests,
            server_info,
            answer_within_secs,
            _result: PhantomData,
        }
    }
}
