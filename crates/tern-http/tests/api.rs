//! tern-http over real loopback sockets, one test binary: the client
//! transport against `tern_http::spawn`, and the server against raw HTTP.

mod api {
    mod busy;
    mod busy_client;
    mod client;
    mod connections;
    mod listener;
    mod oauth;
    mod running;
    mod server;
    mod sessions;
    mod signin;
    mod tokens;
}
