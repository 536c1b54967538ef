//! The `tern` binary driven as a person or a script would, one test binary:
//! every command, `tern call` against `tern serve` over HTTP and stdio, and
//! the interactive forms in a pseudo-terminal.

mod api {
    mod call;
    mod commands;
    mod common;
    mod interop;
    mod pty;
}
