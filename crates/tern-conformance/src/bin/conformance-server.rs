//! `conformance-server --port P` serves the conformance fixtures at
//! `http://127.0.0.1:P/mcp` (FIXTURES.md Part 1).
#![expect(
    clippy::print_stderr,
    reason = "a command-line program reports to its user on stderr"
)]

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use tern::http::HttpOptions;

fn port_from_args() -> Result<u16, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut port = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(v) = a.strip_prefix("--port=") {
            port = Some(v.to_owned());
        } else if a == "--port" {
            i += 1;
            port = args.get(i).cloned();
        } else {
            return Err(format!("unknown argument: {a}"));
        }
        i += 1;
    }
    let port = port.unwrap_or_else(|| "3000".to_owned());
    port.parse().map_err(|_| format!("not a port: {port}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("warn")
        .init();
    let port = match port_from_args() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("conformance-server: {e}\nusage: conformance-server [--port P]");
            return ExitCode::from(2);
        }
    };
    let server = match tern_conformance::tasks::register(tern_conformance::fixtures::server())
        .resource_id("tern-conformance")
        .build()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("conformance-server: cannot listen on {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("conformance-server: serving http://{addr}/mcp");
    match tern::http::serve(listener, server, HttpOptions::default()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}
