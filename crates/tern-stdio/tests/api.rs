//! tern-stdio, one test binary: the client transport against real children,
//! the server as a real child process, and `serve_io` over in-memory pipes.

mod api {
    mod busy;
    mod client;
    mod server;
    mod server_io;
}
