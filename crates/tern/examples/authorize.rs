//! A custom authorization hook: who may call what, decided on every
//! request and again on every round of a flow, with the principal the
//! transport authenticated.
//!
//! ```sh
//! cargo run --release -p tern --example authorize
//! ```
//!
//! The hook sees the principal and the accepted request (method, tool
//! name, `_meta`). A flow that started while the caller was allowed stops
//! at the next round once they are not: authorization is current, never
//! carried in the state (SECURITY.md §3.7). Here the caller is anonymous
//! (no `Authenticate` on the endpoint), and the hook allows `book_room`
//! only while the booking desk is open.

// An example says what it does.
#![allow(clippy::print_stderr)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tern::server::Error;

#[path = "stdio_form_confirm.rs"]
#[allow(dead_code)] // its `main`
mod rooms;

/// This server's error code for a refused booking.
pub(crate) const DESK_CLOSED: i64 = -30001;

/// Builds the rooms server with a hook that refuses `book_room` while
/// `open` is false.
pub(crate) fn server(open: Arc<AtomicBool>) -> tern::server::Server {
    rooms::builder()
        .authorize(move |principal, request| {
            let booking = request.params.get("name").and_then(|n| n.as_str()) == Some("book_room");
            if booking && !open.load(Ordering::SeqCst) {
                // The peer sees this server's own code (outside the
                // reserved ranges, ERR-5) and text; the log has who.
                tracing::info!(?principal, "booking refused: the desk is closed");
                return Err(Error::application(
                    DESK_CLOSED,
                    "the booking desk is closed",
                ));
            }
            Ok(())
        })
        .build()
        .expect("a valid server")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let open = Arc::new(AtomicBool::new(false));
    let server = server(open.clone());
    let (addr, _serving) = tern::http::spawn(
        "127.0.0.1:0".parse()?,
        server,
        tern::http::HttpOptions::default(),
    )
    .await?;
    eprintln!("serving http://{addr}/mcp; the booking desk is closed for 30 s");
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    open.store(true, Ordering::SeqCst);
    eprintln!("the booking desk is open");
    std::future::pending::<()>().await;
    Ok(())
}
