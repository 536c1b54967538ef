//! Random identifiers from the OS CSPRNG: the crate is the one home of
//! randomness in Tern (STYLE.md, Habits).

/// `N` random bytes for identifiers (flow ids, state ids, instance ids).
///
/// # Panics
///
/// Panics when the operating system's random source fails, which leaves no
/// safe way to continue: every state id and nonce depends on it.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // No safe fallback exists for a failed OS random source.
    getrandom::fill(&mut out).expect("the OS random source failed");
    out
}
