//! The pieces a form is built from: primitive fields and enums (DIGEST
//! §5.1). `#[derive(ElicitForm)]` asks every field type for its schema
//! through [`FormField`]; a type without an impl is a compile-time error.
