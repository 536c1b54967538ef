//! tern-server driven in memory: `Server::handle` with no sockets and a
//! manual clock. Modules are named after behaviours; each test cites the
//! DIGEST or SECURITY.md rule it pins.

mod api {
    mod answers;
    mod budgets;
    mod busy;
    mod dispatch;
    mod form_derive;
    mod gates;
    mod hardening;
    mod legacy;
    mod methods;
    mod single_use;
    mod state;
    mod support;
    mod task_fleet;
    mod tasks;
    mod url;
}
