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
use tern::server::{Args, Ask, ElicitForm, Elicited, Error, Server, ToolDef, ToolResult};

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

/// Round 2: a yes or no on the whole booking.
#[derive(Deserialize, ElicitForm)]
struct Confirm {
    /// Book it?
    confirm: bool,
}

async fn book_room(Args(b): Args<Booking>, ask: Ask) -> Result<ToolResult, Error> {
    let message = format!("Who is staying in {}, and for how many nights?", b.city);
    let stay = match ask.form::<Stay>("stay", &message)? {
        Elicited::Accepted(stay) => stay,
        Elicited::Declined => return Err(Error::tool("booking declined")),
        Elicited::Cancelled => return Err(Error::tool("booking cancelled")),
    };
    let message = format!(
        "Book {} night(s) in {} for {}?",
        stay.nights, b.city, stay.guest
    );
    match ask.form::<Confirm>("confirm", &message)? {
        // The last answer is in: only now does anything happen.
        Elicited::Accepted(Confirm { confirm: true }) => Ok(ToolResult::text(format!(
            "booked {} night(s) in {} for {}",
            stay.nights, b.city, stay.guest
        ))),
        Elicited::Accepted(_) | Elicited::Declined => Err(Error::tool("booking not confirmed")),
        Elicited::Cancelled => Err(Error::tool("booking cancelled")),
    }
}

/// The server: one tool, single use.
pub(crate) fn server() -> Server {
    Server::builder("rooms", "1.0.0")
        .tool_def(
            ToolDef::new(
                "book_room",
                "Books a room after asking who stays and confirming",
                book_room,
            )
            .single_use(),
        )
        .build()
        .expect("a valid server")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    // Stdout carries the protocol; nothing else may be printed there.
    tern::stdio::serve(server(), tern::stdio::StdioOptions::default()).await
}
