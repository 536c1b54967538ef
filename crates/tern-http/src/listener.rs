//! The TCP listener of [`crate::serve`] and `tern serve`.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A [`TcpListener`] for [`axum::serve()`] whose connections set
/// `TCP_NODELAY` and coalesce their writes: each connection's response
/// write first waits for the other connections that are ready to run, so
/// responses finished in one turn of the runtime leave together.
///
/// On loopback and in virtual machines much of a response's cost after the
/// server's own work is waking the peer that sleeps on it. When many
/// connections are busy, sending their responses back to back lets one
/// wake-up serve several of them. Deferring a write behind the other ready
/// tasks costs one extra poll of the connection and no timer, so a lone
/// connection's latency does not change.
#[derive(Debug)]
pub struct CoalescingListener {
    inner: TcpListener,
}

impl CoalescingListener {
    /// Wraps a bound listener.
    pub fn new(inner: TcpListener) -> Self {
        CoalescingListener { inner }
    }
}

impl axum::serve::Listener for CoalescingListener {
    type Io = Coalesced;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Coalesced, SocketAddr) {
        let (tcp, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        // Responses go out as soon as they are written (no Nagle delay
        // behind an unacknowledged segment).
        let _ = tcp.set_nodelay(true);
        (Coalesced::new(tcp), addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// One accepted connection of a [`CoalescingListener`]: each write yields
/// once to the other ready tasks before it goes out.
#[derive(Debug)]
pub struct Coalesced {
    io: TcpStream,
    /// Set when a write has yielded and not yet gone out, so it yields
    /// once per write, never twice.
    yielded: bool,
}

impl Coalesced {
    /// Wraps an accepted connection.
    pub fn new(io: TcpStream) -> Self {
        Coalesced { io, yielded: false }
    }

    /// Yields once before a write: waking itself puts this task behind the
    /// ones already queued, which run (and write) before it is polled
    /// again.
    fn defer(&mut self, cx: &mut Context<'_>) -> bool {
        if self.yielded {
            return false;
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        true
    }

    fn wrote<T>(&mut self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.yielded = false;
        }
        r
    }
}

impl AsyncRead for Coalesced {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Coalesced {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.defer(cx) {
            return Poll::Pending;
        }
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.defer(cx) {
            return Poll::Pending;
        }
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
