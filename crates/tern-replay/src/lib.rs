//! Replay-store backends that do I/O.
//!
//! [`tern_seal::ReplayStore`] is the contract: an atomic insert-if-absent that
//! answers *first use* or *already used*. This crate holds the backends that
//! talk to a database: SQLite (the embedded default for one host) and Redis
//! (shared by many instances). Both fail closed: a store that is down never
//! lets an irreversible effect through (SECURITY.md §3.9).
