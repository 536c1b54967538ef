//! The public API of tern-seal, one module per behaviour (SECURITY.md §3).

#[path = "api/canonical.rs"]
mod canonical;
#[path = "api/key_file.rs"]
mod key_file;
#[path = "api/key_ring.rs"]
mod key_ring;
#[path = "api/known_answers.rs"]
mod known_answers;
#[path = "api/lifetime.rs"]
mod lifetime;
#[path = "api/replay.rs"]
mod replay;
#[path = "api/round_trip.rs"]
mod round_trip;
#[path = "api/secrets.rs"]
mod secrets;
#[path = "api/size_limits.rs"]
mod size_limits;
#[path = "api/tampering.rs"]
mod tampering;
#[path = "api/util.rs"]
mod util;
