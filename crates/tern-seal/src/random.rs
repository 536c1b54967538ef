//! Random identifiers and nonces from the OS CSPRNG: the crate is the one
//! home of randomness in Tern (STYLE.md, Habits).
//!
//! Every flow id, state id and nonce is read from a per-thread pool that is
//! refilled from the OS source 4 KiB at a time. A sealed round needs three
//! of them, and one `getrandom` call per value was a system call
//! per value on the request path. The bytes are the kernel's own, unchanged;
//! each is handed out once. A process that forks without `exec` would share
//! the pool's unread bytes with its child, so neither may seal after such a
//! fork (Tern only spawns children that `exec`).

use std::cell::RefCell;

/// Bytes read from the OS per refill: some seventy sealed rounds' worth.
const POOL: usize = 4096;

struct Pool {
    buf: Box<[u8; POOL]>,
    /// The first byte not handed out yet.
    next: usize,
}

thread_local! {
    static LOCAL: RefCell<Pool> = RefCell::new(Pool { buf: Box::new([0; POOL]), next: POOL });
}

/// Fills `out` with bytes from the OS CSPRNG, through this thread's pool.
///
/// # Errors
///
/// The OS random source failed; `out` must not be used.
pub(crate) fn fill(out: &mut [u8]) -> Result<(), getrandom::Error> {
    if out.len() > POOL / 4 {
        return getrandom::fill(out);
    }
    LOCAL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if POOL - pool.next < out.len() {
            getrandom::fill(pool.buf.as_mut_slice())?;
            pool.next = 0;
        }
        let at = pool.next;
        let taken = &mut pool.buf[at..at + out.len()];
        out.copy_from_slice(taken);
        // Handed out once: what a later reader of this memory sees is not
        // what anyone was given.
        taken.fill(0);
        pool.next = at + out.len();
        Ok(())
    })
}

/// `N` random bytes for identifiers (flow ids, state ids, instance ids).
///
/// # Panics
///
/// Panics when the operating system's random source fails, which leaves no
/// safe way to continue: every state id and nonce depends on it.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // No safe fallback exists for a failed OS random source.
    fill(&mut out).expect("the OS random source failed");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_never_repeat_across_refills() {
        // Past several refills of the pool, no 16-byte value comes twice.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..(3 * POOL / 16 + 7) {
            assert!(seen.insert(random_bytes::<16>()), "a value repeated");
        }
    }

    #[test]
    fn large_requests_bypass_the_pool() {
        let mut big = vec![0u8; POOL];
        fill(&mut big).expect("random");
        assert!(big.iter().any(|b| *b != 0));
    }
}
