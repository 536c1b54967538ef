//! The Tern MCP server framework.
//!
//! Handlers are plain async functions whose arguments are extractors. The
//! `Ask` API lets a handler ask the client for input (form or URL elicitation,
//! sampling, roots) in multi round-trip requests; this crate is the one place
//! that seals and opens `requestState` and consults the replay store.
