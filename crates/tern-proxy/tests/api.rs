//! The proxy driven in memory: its downstream side through
//! `Server::handle` / `Server::handle_in`, its upstreams real tern-server
//! instances (a 2026-07-28 one through `Direct`, a 2025-11-25 session
//! through `Sessioned`) or scripted peers that misbehave.

mod api {
    mod budgets;
    mod catalog;
    mod common;
    mod failures;
    mod large;
    mod notifications;
    mod relay;
    mod task_gate;
}
