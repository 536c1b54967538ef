//! Sealed, bound, expiring state envelopes.
//!
//! Knows nothing about MCP: it seals any serde payload with
//! XChaCha20-Poly1305 under a rotating key ring, computes canonical JSON
//! digests, and defines the replay-store contract for single use
//! (SECURITY.md §3).
