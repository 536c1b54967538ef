//! The Tern MCP client.
//!
//! Typed calls ([`Client::call_tool`], [`Client::get_prompt`],
//! [`Client::read_resource`]) drive the multi round-trip loop: each
//! `input_required` round is fulfilled through an [`InputProvider`] and
//! retried as a new request with the same parameters, `inputResponses`
//! under the server's keys and the exact `requestState` (DIGEST
//! MRTR-C1..C10). `*_once` calls hand back a serialisable [`PendingCall`]
//! instead, which [`Client::resume`] continues, in this process or another.
//!
//! The client knows nothing about sockets: a [`Transport`] moves the bytes
//! (`tern-http` and `tern-stdio` provide the real ones).
//!
//! Every request carries `protocolVersion`, `clientCapabilities` and
//! `clientInfo` in `_meta` (META-C6, META-C8); the capabilities are what the
//! provider can do (META-A1). A `-32022` answer is retried once with a
//! version both sides speak (VER-C3).
//!
//! The same client calls 2025-11-25 servers: under [`EraPolicy::Auto`] it probes with
//! `server/discover` and, when the server is not modern, opens an
//! `initialize` session and answers the server's own requests through the
//! provider (see [`EraPolicy`]; DIGEST COMPAT-C5..C10).
//!
//! What a program that relays another server's flows needs besides (a
//! gateway such as `tern proxy`) is in [`relay`], apart from the caller's
//! API.

mod budget;
mod busy;
mod cancel;
mod client;
mod encode;
mod era;
mod error;
mod legacy;
mod mrtr;
mod options;
mod pending;
mod provider;
mod race;
pub mod relay;
mod task;
mod transport;
mod xmh;

pub use budget::MAX_OTHER_SERVER_REQUESTS;
pub use busy::MAX_BUSY_RETRIES;
pub use cancel::CancelToken;
pub use client::{Client, ClientBuilder};
pub use era::EraPolicy;
pub use error::Error;
pub use mrtr::{FlowResult, MAX_INPUT_REQUESTS, MAX_REQUEST_STATE, MAX_STATE_ONLY_ROUNDS, Step};
pub use options::{CallOptions, NotificationHandler, RoundEvent, RoundObserver};
pub use pending::PendingCall;
pub use provider::{InputContext, InputKinds, InputProvider, NoInput, Refusal};
pub use task::{MAX_POLL_INTERVAL, MIN_POLL_INTERVAL, PendingTask, TaskStatus};
pub use tern_types::legacy::Era;
pub use transport::{
    BoxFuture, Frames, OutboundNotification, OutboundRequest, OutboundResponse, Transport,
};

/// Entry points for the fuzz harnesses (`tern-fuzz`); not an API.
#[doc(hidden)]
pub mod fuzzing {
    use serde_json::{Map, Value};

    /// Runs a server's result through the checks the driver applies before
    /// acting on it (MRTR-C-A2, SECURITY.md §3.10): its `resultType`, and
    /// for an interim result its requests and state, with every kind
    /// declared. Returns the number of input requests, or the refusal.
    pub fn check_result(result: &Map<String, Value>) -> Result<usize, crate::Error> {
        match crate::client::result_type(result)? {
            tern_types::ResultType::InputRequired => {
                crate::mrtr::interim(result, crate::InputKinds::ALL).map(|(r, _, _, _)| r.len())
            }
            _ => Ok(0),
        }
    }
}
