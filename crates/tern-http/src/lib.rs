//! Streamable HTTP for Tern (DIGEST §7.3).
//!
//! With the `server` feature it serves a `tern-server` `Server`
//! on hyper/axum: POST only, JSON or SSE responses (SSE exactly when the
//! handler sends notifications before its result and the client accepts
//! it), header validation against the body, `Origin` checks and an
//! authentication hook. With `client` it is a client transport that sends
//! the mirrored headers and decides on the JSON-RPC body.

#[cfg(feature = "server")]
mod auth;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod conn;
#[cfg(feature = "server")]
mod listener;
#[cfg(feature = "client")]
pub mod oauth;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use client::{HttpClientOptions, HttpTransport};

/// Entry points for the fuzz harnesses (`tern-fuzz`); not an API.
#[cfg(feature = "client")]
#[doc(hidden)]
pub mod fuzzing {
    /// Feeds `chunks` to a fresh SSE decoder capped at `max` bytes per
    /// event, as a response body would arrive, and returns every event's
    /// data, or the first error.
    pub fn sse_events(chunks: &[&[u8]], max: usize) -> Result<Vec<String>, tern_client::Error> {
        let mut d = tern_proto::sse::Decoder::new(max);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(
                d.feed(c)
                    .map_err(crate::client::sse_error)?
                    .into_iter()
                    .map(|e| e.data),
            );
        }
        Ok(out)
    }
}

#[cfg(feature = "server")]
pub use auth::{
    AnyOf, DEFAULT_LEEWAY, DEFAULT_MAX_TOKEN_BYTES, JwtAuthenticator, JwtKeys, TokenFile,
    TokenTypes,
};
#[cfg(feature = "server")]
pub use conn::{ConnectionLimits, serve_router};
#[cfg(feature = "server")]
pub use listener::{Coalesced, CoalescingListener};
#[cfg(feature = "server")]
pub use server::{
    Anonymous, Authenticate, HttpOptions, ProtectedResource, Refusal, router, serve, spawn,
};
