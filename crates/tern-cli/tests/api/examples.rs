//! The facade's `stdio_form_confirm` example, built by cargo as a user
//! would (`cargo run --example`), driven by `tern call --cmd` over stdio
//! through both of its rounds.

use super::common::{Run, run, tern_bin};
use std::process::Command;

/// The example's binary, built as CI's build step builds every example
/// (the same features, so an up-to-date build is not redone).
fn example() -> std::path::PathBuf {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "--workspace",
            "--all-features",
        ])
        .args(["--example", "stdio_form_confirm", "--manifest-path"])
        .arg(format!("{root}/Cargo.toml"))
        .status()
        .unwrap();
    assert!(built.success(), "cargo build --example: {built}");
    let bin = std::path::Path::new(tern_bin()).with_file_name("examples");
    bin.join("stdio_form_confirm")
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
    .says("booking not confirmed");
}
