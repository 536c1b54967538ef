//! The public API of tern-replay, one module per behaviour (SECURITY.md §3.9).
//!
//! Every backend runs the same suite ([`suite`]); each backend's module adds
//! the failures only it can have. Redis tests start their own `redis-server`.

#[path = "api/memory.rs"]
mod memory;
#[path = "api/redis_backend.rs"]
mod redis_backend;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "api/sqlite.rs"]
mod sqlite;
#[path = "api/suite.rs"]
mod suite;
#[path = "api/util.rs"]
mod util;
