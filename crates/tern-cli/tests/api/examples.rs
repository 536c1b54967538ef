//! The facade's `stdio_form_confirm` example as a user runs it: its
//! binary driven by `tern call --cmd` over stdio through both rounds.

use super::common::{Run, run, tern_bin};
use std::process::Command;

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

fn book(server: &std::path::Path, answers: &str) -> Run {
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
    book(
        &server,
        r#"{"stay": {"action": "accept", "content": {"guest": "Ada", "nights": 2}},
            "confirm": {"action": "accept", "content": {"confirm": true}}}"#,
    )
    .ok()
    .says("booked 2 night(s) in Lisbon for Ada");
    // A "no" at the confirmation books nothing.
    book(
        &server,
        r#"{"stay": {"action": "accept", "content": {"guest": "Ada", "nights": 2}},
            "confirm": {"action": "accept", "content": {"confirm": false}}}"#,
    )
    .failed(1)
    .says("the booking was not confirmed");
}
