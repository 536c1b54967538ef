//! The client's API tests: the MRTR driver against a real `tern_server`
//! back to back in memory, and against a scripted transport.

mod api {
    mod busy;
    mod flows;
    mod legacy;
    mod observe;
    mod scripted;
    mod support;
    mod tasks;
}
