//! The API test binary of tern-types: one module per behaviour.

mod api {
    mod busy;
    mod capabilities;
    mod error_codes;
    mod examples;
    mod legacy;
    mod mrtr;
    mod outcome;
    mod schema;
    mod support;
}
