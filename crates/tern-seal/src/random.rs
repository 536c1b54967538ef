//! Random identifiers and nonces from the OS CSPRNG: the crate is the one
//! home of randomness in Tern (STYLE.md, Habits).
//!
//! Every flow id, state id and nonce is read from a per-thread pool that is
//! refilled from the OS source 4 KiB at a time. A sealed round needs three
//! of them, and one `getrandom` call per value was a system call
//! per value on the request path. The bytes are the kernel's own, unchanged;
//! each is handed out once.
//!
//! A process that forks without `exec` copies the pool into its child, and
//! both would then hand out the same unread bytes: the same XChaCha20-Poly1305
//! nonce under the same key. A library cannot forbid its users to fork, so
//! the pool records the process id it was filled in, and a draw in any other
//! process discards it and refills from the OS first. The alternatives are
//! worse here: `pthread_atfork` or `MADV_WIPEONFORK` need `unsafe` (forbidden
//! in this workspace), and drawing every value straight from the OS costs a
//! whole `getrandom` call per value. The check is one `getpid` per draw,
//! itself a system call on glibc since 2.25, so it is measured: on the 2-core
//! development VM, 24 bytes cost 120 ns from the pool unchecked, 320-370 ns
//! from the pool with the check, and 480-500 ns straight from the OS. The
//! pid is not cached anywhere, since any cache would be copied by the fork
//! too.
//!
//! What a pid cannot see: a child whose pid equals the one the pool was
//! filled in. That takes a pid reused after its holder exited by a process
//! whose parent never drew after forking, or a child made the first process
//! of a new PID namespace by a parent that was pid 1 of its own; both
//! without `exec`. Neither is something Tern does.

use std::cell::RefCell;

/// Bytes read from the OS per refill: some seventy sealed rounds' worth.
const POOL: usize = 4096;

/// Cloned only by tests, to stand for the copy a fork makes.
#[cfg_attr(test, derive(Clone))]
struct Pool {
    buf: Box<[u8; POOL]>,
    /// The first byte not handed out yet.
    next: usize,
    /// The process the pool was filled in. 0 (no process's id) until the
    /// first fill.
    pid: u32,
}

thread_local! {
    static LOCAL: RefCell<Pool> = RefCell::new(Pool { buf: Box::new([0; POOL]), next: POOL, pid: 0 });
}

/// Fills `out` with bytes from the OS CSPRNG, through this thread's pool.
///
/// # Errors
///
/// The OS random source failed; `out` must not be used.
pub(crate) fn fill(out: &mut [u8]) -> Result<(), getrandom::Error> {
    fill_in(std::process::id(), out)
}

/// [`fill`] as drawn in process `pid`: the pool is used only in the process
/// it was filled in. Tests pass another pid to stand for a forked child.
fn fill_in(pid: u32, out: &mut [u8]) -> Result<(), getrandom::Error> {
    if out.len() > POOL / 4 {
        return getrandom::fill(out);
    }
    LOCAL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.pid != pid || POOL - pool.next < out.len() {
            // Emptied first: a failed refill must not leave another
            // process's bytes to be handed out.
            pool.next = POOL;
            getrandom::fill(pool.buf.as_mut_slice())?;
            pool.next = 0;
            pool.pid = pid;
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

    /// This thread's pool as it is now.
    fn snapshot() -> Pool {
        LOCAL.with(|pool| pool.borrow().clone())
    }

    /// Puts `copy` back as this thread's pool, as a fork copies it.
    fn restore(copy: Pool) {
        LOCAL.with(|pool| *pool.borrow_mut() = copy);
    }

    #[test]
    fn a_forked_child_never_hands_out_its_parents_bytes() {
        const PARENT: u32 = 1000;
        const CHILD: u32 = 1001;
        let mut nonce = [0u8; 24];
        fill_in(PARENT, &mut nonce).expect("random");
        // The fork: the child starts with the parent's pool, unread bytes
        // and all.
        let at_fork = snapshot();
        let mut parents = [0u8; 24];
        fill_in(PARENT, &mut parents).expect("random");
        restore(at_fork);
        let mut childs = [0u8; 24];
        fill_in(CHILD, &mut childs).expect("random");
        assert_ne!(childs, parents, "the child handed out the parent's nonce");
        // The child discarded the copy and refilled: its draw is the first
        // of a pool of its own.
        let after = snapshot();
        assert_eq!((after.pid, after.next), (CHILD, 24));
    }

    #[test]
    fn the_same_process_keeps_drawing_from_its_pool() {
        let mut out = [0u8; 24];
        fill_in(1000, &mut out).expect("random");
        let before = snapshot();
        fill_in(1000, &mut out).expect("random");
        let after = snapshot();
        // No refill: the draw took the next 24 bytes of the same pool.
        assert_eq!((after.pid, after.next), (1000, before.next + 24));
        assert_eq!(out[..], before.buf[before.next..before.next + 24]);
    }

    #[test]
    fn a_draw_records_this_process() {
        let _ = random_bytes::<16>();
        assert_eq!(snapshot().pid, std::process::id());
    }
}
