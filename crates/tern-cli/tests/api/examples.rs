//! The facade's examples as a user runs them: `stdio_form_confirm`'s
//! binary driven by `tern call --cmd` over stdio through both rounds, and
//! three more end to end over Streamable HTTP on loopback, in-process:
//! `client_provider` books a room on the `stdio_form_confirm` server
//! through its own provider, answering both rounds; `http_sqlite` keeps
//! its key file (0600) and replay store on disk; `authorize` refuses the
//! booking while its desk is closed. They live here rather than in a test
//! binary of the facade's own, because every test binary is one more thin
//! LTO link (Cargo.toml).

// Each example is a program of its own that includes the rooms server;
// this module includes three of them, so the server's file thrice.
#![allow(clippy::duplicate_mod)]

use super::common::{Run, run, tern_bin};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[path = "../../../tern/examples/client_provider.rs"]
#[allow(dead_code)] // its `main`
mod client_provider;

#[path = "../../../tern/examples/http_sqlite.rs"]
#[allow(dead_code)]
mod http_sqlite;

#[path = "../../../tern/examples/authorize.rs"]
#[allow(dead_code)]
mod authorize;

use client_provider::{Ada, book};

/// The example's binary: `cargo test` (and so the README's test command)
/// builds every example of the workspace beside the binaries.
fn example() -> std::path::PathBuf {
    let bin = std::path::Path::new(tern_bin())
        .with_file_name("examples")
        .join("stdio_form_confirm");
    assert!(
        bin.exists(),
        "{} is missing: `cargo nextest run --workspace` builds it",
        bin.display()
    );
    bin
}

fn book_over_stdio(server: &std::path::Path, answers: &str) -> Run {
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("answers.json");
    std::fs::write(&file, answers).unwrap();
    let mut cmd = Command::new(tern_bin());
    cmd.arg("call")
        .arg("--cmd")
        .arg(server)
        .arg("--answers")
        .arg(&file)
        .args(["tool", "book_room", "city=Lisbon"]);
    run(cmd)
}

#[test]
fn the_stdio_example_asks_then_books() {
    let server = example();
    book_over_stdio(
        &server,
        r#"{"stay": {"action": "accept", "content": {"guest": "Ada", "nights": 2}},
            "confirm": {"action": "accept", "content": {"confirm": true}}}"#,
    )
    .ok()
    .says(BOOKED);
    // A "no" at the confirmation books nothing.
    book_over_stdio(
        &server,
        r#"{"stay": {"action": "accept", "content": {"guest": "Ada", "nights": 2}},
            "confirm": {"action": "accept", "content": {"confirm": false}}}"#,
    )
    .failed(1)
    .says("the booking was not confirmed");
}

const BOOKED: &str = "booked 2 night(s) in Lisbon for Ada";

#[tokio::test]
async fn the_client_example_books_a_room_through_its_provider() {
    let ada = Ada::default();
    let server = client_provider::rooms::builder().build().unwrap();
    let text = book(server, ada.clone()).await.unwrap();
    assert_eq!(text, BOOKED);
    // Round 1 asked who stays; round 2 asked to confirm, with the answers
    // of round 1 in its question.
    assert_eq!(
        *ada.asked.lock().unwrap(),
        [
            "stay: Who is staying in Lisbon, and for how many nights?",
            "confirm: Book 2 night(s) in Lisbon for Ada?",
        ]
    );
}

#[tokio::test]
async fn the_http_sqlite_example_keeps_its_keys_and_store_on_disk() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::TempDir::new().unwrap();
    let text = book(http_sqlite::server(dir.path()).unwrap(), Ada::default())
        .await
        .unwrap();
    assert_eq!(text, BOOKED);
    let keys = dir.path().join("keys.json");
    let mode = std::fs::metadata(&keys).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(dir.path().join("replay.db").exists());
    // A second start reads the same key file rather than making another.
    let before = std::fs::read_to_string(&keys).unwrap();
    let text = book(http_sqlite::server(dir.path()).unwrap(), Ada::default())
        .await
        .unwrap();
    assert_eq!(text, BOOKED);
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), before);
}

#[tokio::test]
async fn the_authorize_example_refuses_while_the_desk_is_closed() {
    let open = Arc::new(AtomicBool::new(false));
    let ada = Ada::default();
    let e = book(authorize::server(open.clone()), ada.clone())
        .await
        .unwrap_err();
    let e = e.downcast::<tern::client::Error>().unwrap();
    let o = e.remote_error().unwrap();
    assert_eq!(
        (o.code.0, o.message.as_str()),
        (authorize::DESK_CLOSED, "the booking desk is closed")
    );
    // Refused before the handler ran: nobody was asked anything.
    assert!(ada.asked.lock().unwrap().is_empty());
    open.store(true, Ordering::SeqCst);
    let text = book(authorize::server(open), Ada::default()).await.unwrap();
    assert_eq!(text, BOOKED);
}
