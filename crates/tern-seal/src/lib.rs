//! Sealed, bound, expiring state envelopes.
//!
//! Knows nothing about MCP: it seals any serde payload with
//! XChaCha20-Poly1305 under a rotating key ring, computes canonical JSON
//! digests, and defines the replay-store contract for single use
//! (SECURITY.md §3).
//!
//! The pieces:
//!
//! - [`KeyRing`] seals [`Claims`] into a compact text token
//!   ([`KeyRing::seal_at`]) and opens it again ([`KeyRing::open_at`]) into an
//!   [`Opened`] proof, checking the key, the tag, the payload, the lifetime
//!   and the [`Binding`] (SECURITY.md §3.1, §3.5).
//! - [`MasterSecret`], [`KeySpec`] and [`KeyFile`] describe where the keys
//!   come from and how a fleet rotates them (SECURITY.md §3.3).
//! - [`canonical`] turns JSON into one byte string per value, so that a
//!   digest of request parameters survives re-serialisation by a client
//!   (SECURITY.md §3.4).
//! - [`ReplayStore`] is the single-use contract, with [`MemoryReplayStore`]
//!   as the in-process backend (SECURITY.md §3.9).
//! - [`TaskStore`] is the shared task directory of a fleet (tasks run on
//!   one instance, any instance answers for them), with
//!   [`MemoryTaskStore`] as the in-process backend.
//!
//! Every function that depends on time takes `now` as an argument; the only
//! clock read in this crate is the replay store's own marker clock.
//!
//! ```
//! use tern_seal::{Binding, Claims, KeyRing, OpenPolicy};
//!
//! let ring = KeyRing::ephemeral().expect("the OS random source works");
//! let binding = Binding::digest(&[b"principal", b"alice"]);
//! let claims = Claims { issued_at: 1_000, expires_at: 1_600, binding, body: 42u32 };
//! let token = ring.seal_at("https://mcp.example.com", &claims).expect("small payload");
//!
//! let opened = ring
//!     .open_at::<u32>("https://mcp.example.com", &token, &binding, 1_100, &OpenPolicy::default())
//!     .expect("fresh, bound token");
//! assert_eq!(*opened.body(), 42);
//! ```

pub mod canonical;
mod envelope;
mod guard;
mod hex;
mod keyfile;
mod keys;
mod random;
mod replay;
mod tasks;

// The public surface, one name per type.
pub use envelope::{Binding, Claims, MAX_TOKEN_CHARS, OpenError, OpenPolicy, Opened, SealError};
pub use guard::{Deployment, GuardError, check_deployment};
pub use hex::{hex, random_id};
pub use keyfile::{DEFAULT_GRACE_SECS, KeyFile, KeyFileEntry, KeyFileError};
pub use keys::{KeyRing, KeyRingError, KeyRole, KeySpec, MasterSecret, SecretError};
pub use random::random_bytes;
pub use replay::{
    BoxFuture, ConsumeKey, Consumed, DEFAULT_MEMORY_CAPACITY, DEFAULT_MEMORY_RESULT_BUDGET,
    Durability, MAX_RESULT_BYTES, MemoryReplayStore, ReplayStore, StoreError, StoredResult,
    check_result_size,
};
pub use tasks::{
    DEFAULT_MEMORY_TASKS, MAX_TASK_ANSWERS, MAX_TASK_ID_BYTES, MemoryTaskStore, TaskEntry,
    TaskStore,
};
