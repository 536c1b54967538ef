//! The connections of a served endpoint: how many are open, from one
//! address and in all, and how long a request's head may take. Each
//! connection is served by hyper's HTTP/1.1 server with a timer, so a peer
//! that trickles its headers, or holds a keep-alive connection silent, is
//! closed rather than kept for ever (SECURITY.md "Every request").

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tern_server::Server;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::listener::Coalesced;

/// The budgets of one listener's connections.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Connections open at once. At the limit the listener stops accepting
    /// until one closes; those waiting stay in the kernel's backlog.
    pub max_open: usize,
    /// Connections open at once from one IP address; a further one is
    /// closed as soon as it is accepted, so one host cannot hold the
    /// listener against the others.
    pub max_per_address: usize,
    /// How long a request's head may take to arrive, counted from when the
    /// connection is ready for it (just opened, or idle after a response):
    /// a connection past it is closed.
    pub header_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_open: 4_096,
            max_per_address: 1_024,
            header_timeout: Duration::from_secs(30),
        }
    }
}

/// Connections open per address, given back when each closes.
#[derive(Default)]
struct ByAddress(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place under its address, given back on drop.
struct AddressPlace {
    table: Arc<ByAddress>,
    ip: IpAddr,
}

impl ByAddress {
    fn enter(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<AddressPlace> {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = table.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(AddressPlace {
            table: self.clone(),
            ip,
        })
    }
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let mut table = self.table.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = table.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                table.remove(&self.ip);
            }
        }
    }
}

/// Serves `app` on `listener` within `limits` until `stop` completes; then
/// accepts no more connections, lets each open one finish the request it
/// is serving, and returns once all have closed. A limit reached is
/// counted in `server`'s metrics (`tern_limit_reached_total{limit}`:
/// `connections`, `connections_per_address`).
pub async fn serve_router(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    server: Option<Server>,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_open.max(1)));
    let by_address = Arc::new(ByAddress::default());
    let (stopping, stopped) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let counted = |limit: &'static str| {
        if let Some(s) = &server {
            s.metrics().limit_reached(limit);
        }
    };
    let mut stop = std::pin::pin!(stop);
    loop {
        let permit = match open.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                counted("connections");
                tracing::debug!(
                    limit = limits.max_open,
                    "connections at their limit; accepting again when one closes"
                );
                tokio::select! {
                    p = open.clone().acquire_owned() => p.expect("the semaphore is never closed"),
                    () = &mut stop => break,
                }
            }
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before
                    // it was taken: wait a little rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Some(place) = by_address.enter(peer.ip(), limits.max_per_address) else {
            counted("connections_per_address");
            tracing::debug!(%peer, limit = limits.max_per_address, "too many connections from this address; closed");
            continue;
        };
        spawn_connection(&http, &app, tcp, (permit, place), stopped.clone());
    }
    drop(listener);
    drop(stopped);
    let _ = stopping.send(true);
    // Every connection holds a receiver; they are all gone once the last
    // connection has closed.
    stopping.closed().await;
    Ok(())
}

fn spawn_connection(
    http: &hyper::server::conn::http1::Builder,
    app: &Router,
    tcp: tokio::net::TcpStream,
    places: (OwnedSemaphorePermit, AddressPlace),
    mut stopped: watch::Receiver<bool>,
) {
    // Responses go out as soon as they are written (no Nagle delay behind
    // an unacknowledged segment).
    let _ = tcp.set_nodelay(true);
    let io = TokioIo::new(Coalesced::new(tcp));
    let conn = http.serve_connection(io, TowerToHyperService::new(app.clone()));
    tokio::spawn(async move {
        let _places = places;
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended");
                }
                return;
            }
            _ = stopped.wait_for(|s| *s) => {}
        }
        conn.as_mut().graceful_shutdown();
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "connection ended");
        }
    });
}
