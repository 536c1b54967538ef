//! Fixtures shared by the API tests.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use tern_seal::{Binding, Claims, KeyRing, KeyRole, KeySpec, MasterSecret};

/// Resource id every fixture token is sealed for.
pub(crate) const RID: &str = "https://mcp.example.com";
/// A fixed "now", in unix seconds.
pub(crate) const T0: u64 = 1_800_000_000;
/// Lifetime of fixture tokens.
pub(crate) const TTL: u64 = 600;

/// A valid secret: 32 distinct bytes starting at `seed`.
pub(crate) fn secret(seed: u8) -> MasterSecret {
    let bytes: Vec<u8> = (0..32u8).map(|i| seed.wrapping_add(i)).collect();
    MasterSecret::from_bytes(&bytes).unwrap()
}

/// A spec for `kid` in `role`, with a per-kid secret.
pub(crate) fn spec(kid: u32, role: KeyRole, verify_until: Option<u64>) -> KeySpec {
    KeySpec {
        kid,
        secret: secret(kid as u8),
        role,
        verify_until,
    }
}

/// A ring of one Active key.
pub(crate) fn ring(kid: u32) -> KeyRing {
    KeyRing::new(vec![spec(kid, KeyRole::Active, None)]).unwrap()
}

/// The binding fixture tokens carry.
pub(crate) fn binding() -> Binding {
    Binding::digest(&[b"oauth", b"https://issuer.example", b"alice", b"client-1"])
}

/// Claims issued at [`T0`] for [`TTL`] seconds, bound to [`binding`].
pub(crate) fn claims<T>(body: T) -> Claims<T> {
    Claims {
        issued_at: T0,
        expires_at: T0 + TTL,
        binding: binding(),
        body,
    }
}

/// Runs a future to completion on this thread. Enough for stores whose
/// futures are ready at once or wake promptly.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}
