//! The `tern` command.
fn main() {}
