//! The smallest form-then-confirm server, served over stdio.
//!
//! ```sh
//! cargo build --release -p tern --example stdio_form_confirm
//! tern call --cmd target/release/examples/stdio_form_confirm tool book_room city=Lisbon
//! ```
//!
//! A handler runs again from the top on every round of its flow: each run
//! asks for what it needs, and the answers given so far come back typed.
//! So the pattern is: ask first, act after the last answer. The booking is
//! irreversible, so the route is single use: every state it issues opens
//! once, and a replayed final retry is refused instead of booking twice.
//!
//! Ask the same question the same way on every round: an answer is pinned
//! to the exact question it answers, so a message that changes between
//! rounds (a clock, a counter) is a new question, asked again.

use serde::Deserialize;
use tern::prelude::*;
use tern::server::ServerBuilder;

/// What `book_room` takes.
#[derive(Deserialize, schemars::JsonSchema)]
struct Booking {
    /// The city to book a room in.
    city: String,
}

/// Round 1: who stays, and for how long.
#[derive(Deserialize, ElicitForm)]
struct Stay {
    /// The guest's name
    guest: String,
    /// How many nights
    nights: u8,
}

async fn book_room(Args(b): Args<Booking>, ask: Ask) -> Result<ToolResult, Error> {
    // Round 1: who stays. A decline or a cancel ends the call with a tool
    // error that says which.
    let message = format!("Who is staying in {}, and for how many nights?", b.city);
    let stay = ask
        .form::<Stay>("stay", &message)?
        .or_tool_error("the booking")?;
    // Round 2: a yes or no on the whole booking.
    let message = format!(
        "Book {} night(s) in {} for {}?",
        stay.nights, b.city, stay.guest
    );
    ask.confirm("confirm", &message)?.confirmed("the booking")?;
    // The last answer is in: only now does anything happen.
    Ok(ToolResult::text(format!(
        "booked {} night(s) in {} for {}",
        stay.nights, b.city, stay.guest
    )))
}

/// The server's registrations: one tool, single use. Keys and the replay
/// store are the deployment's choice (see the `http_sqlite` example); over
/// stdio the defaults fit: a key that lives as long as the process, and
/// single use remembered in memory for as long.
pub(crate) fn builder() -> ServerBuilder {
    Server::builder("rooms", "1.0.0").tool_def(
        ToolDef::new(
            "book_room",
            "Books a room after asking who stays and confirming",
            book_room,
        )
        .single_use(),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    // Stdout carries the protocol; nothing else may be printed there.
    let server = builder().build().expect("a valid server");
    tern::stdio::serve(server, tern::stdio::StdioOptions::default()).await
}
