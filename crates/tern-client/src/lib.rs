//! The Tern MCP client.
//!
//! Typed calls (`call_tool`, `get_prompt`, `read_resource`) drive the
//! multi round-trip loop: each `input_required` round is fulfilled through an
//! `InputProvider` and retried as a new request with the same parameters,
//! `inputResponses` under the server's keys and the exact `requestState`
//! (DIGEST MRTR-C1..C10). `*_once` calls hand back a serialisable pending call
//! instead. The client knows nothing about sockets: a `Transport` moves the
//! bytes.
