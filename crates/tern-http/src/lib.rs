//! Streamable HTTP for Tern (DIGEST §7.3).
//!
//! With the `server` feature it serves a `tern-server` router on hyper/axum:
//! POST only, JSON or SSE responses, header validation against the body,
//! `Origin` checks and a principal hook. With `client` it is a client
//! transport that sends the mirrored headers and decides on the JSON-RPC body.
