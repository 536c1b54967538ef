//! The public API of tern-replay, one module per behaviour (SECURITY.md §3.9).
//!
//! Every backend runs the same suite ([`suite`]); each backend's module adds
//! the failures only it can have. The task stores likewise share
//! [`tasks_suite`], which `MemoryTaskStore` passes too. Redis tests start
//! their own `redis-server`.

#[path = "api/memory.rs"]
mod memory;
#[path = "api/redis_backend.rs"]
mod redis_backend;
use tern_testkit::redis as redis_server;
#[path = "api/sqlite.rs"]
mod sqlite;
#[path = "api/suite.rs"]
mod suite;
#[path = "api/tasks_memory.rs"]
mod tasks_memory;
#[path = "api/tasks_redis.rs"]
mod tasks_redis;
#[path = "api/tasks_sqlite.rs"]
mod tasks_sqlite;
#[path = "api/tasks_suite.rs"]
mod tasks_suite;
#[path = "api/util.rs"]
mod util;
