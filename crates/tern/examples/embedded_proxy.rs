//! `tern proxy` inside your own program: one endpoint in front of an MCP
//! server of either era, for clients of either era.
//!
//! ```sh
//! tern serve --http 127.0.0.1:8080 &                         # any MCP server over HTTP
//! cargo run --release -p tern --example embedded_proxy -- http://127.0.0.1:8080/mcp
//! tern call --url http://127.0.0.1:8091/mcp tool deploy environment=prod
//! tern call --era legacy --url http://127.0.0.1:8091/mcp tool deploy environment=prod
//! ```
//!
//! The proxy is a server whose tools, prompts and resources are its
//! upstream's, listed at start and again when the upstream changes them or
//! comes back. A 2026-07-28 client's rounds and a 2025-11-25 client's
//! server-initiated requests are relayed to whichever era the upstream
//! speaks; the upstream's state travels sealed in the proxy's own, bound
//! to the client. Every budget of the proxy's server and of
//! [`ProxyOptions`] applies at the edge.

// An example says what it does.
#![allow(clippy::print_stderr)]

use std::error::Error;
use std::sync::Arc;

use tern::client::Client;
use tern::http::HttpTransport;
use tern::proxy::{Connect, Proxy, ProxyOptions};
use tern::server::Server;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let upstream = std::env::args()
        .nth(1)
        .ok_or("usage: embedded_proxy UPSTREAM_URL")?;
    // Called on first use and again after the upstream was lost.
    let connect: Connect = Arc::new(move || {
        let url = upstream.clone();
        Box::pin(async move {
            let transport = HttpTransport::new(&url).map_err(|e| format!("{url}: {e}"))?;
            Ok(Client::builder(transport))
        })
    });
    let proxy = Proxy::builder(Server::builder("my-gateway", "1.0.0"))
        .upstream("tools", connect)
        .options(ProxyOptions::default())
        .build()?;
    for (name, why) in proxy.sync().await {
        eprintln!("upstream {name} is not reachable yet ({why}); retried in the background");
    }
    // Lists an upstream again when it comes back; ends pending calls past
    // their lifetime.
    tokio::spawn(proxy.clone().maintain());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8091").await?;
    eprintln!("proxying at http://127.0.0.1:8091/mcp");
    tern::http::serve(listener, proxy.server(), tern::http::HttpOptions::default()).await?;
    Ok(())
}
