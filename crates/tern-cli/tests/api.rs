//! The `tern` binary driven as a person or a script would, one test binary:
//! every command, `tern call` against `tern serve` over HTTP and stdio, and
//! the interactive forms in a pseudo-terminal, and the SDK peers of both
//! eras (TypeScript and Python clients against `tern serve`, `tern call`
//! against a TypeScript 2025-11-25 server), and `tern proxy` between
//! them.

mod api {
    mod auth;
    mod call;
    mod commands;
    mod common;
    mod edges;
    mod examples;
    mod hostile;
    mod interop;
    mod interop_py;
    mod legacy_server;
    mod oauth_e2e;
    mod operator;
    mod probe;
    mod proxy;
    mod pty;
    mod tasks;
}
