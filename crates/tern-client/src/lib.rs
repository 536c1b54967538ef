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

mod cancel;
mod client;
mod error;
mod mrtr;
mod provider;
mod race;
mod transport;
mod xmh;

pub use cancel::CancelToken;
pub use client::{CallOptions, Client, ClientBuilder, NotificationHandler};
pub use error::Error;
pub use mrtr::{
    FlowResult, MAX_INPUT_REQUESTS, MAX_REQUEST_STATE, MAX_STATE_ONLY_ROUNDS, PendingCall, Step,
};
pub use provider::{InputContext, InputKinds, InputProvider, NoInput, Refusal};
pub use transport::{BoxFuture, Frames, OutboundNotification, OutboundRequest, Transport};
