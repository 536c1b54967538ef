//! `conformance-server --port P` serves the conformance fixtures at
//! `http://127.0.0.1:P/mcp`.
fn main() {}
