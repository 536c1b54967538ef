//! Derive macros for Tern.
//!
//! `#[derive(ElicitForm)]` turns a flat Rust struct into the restricted JSON
//! Schema that form-mode elicitation accepts (DIGEST §5.1), and refuses at
//! compile time any shape form mode cannot express.
