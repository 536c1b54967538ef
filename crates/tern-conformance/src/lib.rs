//! Fixtures for the official MCP conformance suite, written against the
//! public Tern API like any user's server or client
//! (`../shared/conformance/FIXTURES.md`).

pub mod fixtures;
pub mod tasks;
