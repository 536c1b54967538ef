//! Cost of sealing and opening a realistic state (SECURITY.md §3.1, §3.4).
//!
//! The body mirrors the payload v1 shape: two random ids, an expiry, a
//! method byte, a params digest, a round counter, two expected input keys
//! and a 64-byte continuation, sealed with a 32-byte binding.
//!
//! `replay/full_steady` consumes a new key in a memory store kept full at
//! a steady rate: each key lapses as the next arrives, the worst case of
//! dropping what has lapsed (SECURITY.md §3.9).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tern_seal::{
    Binding, Claims, ConsumeKey, DEFAULT_MEMORY_CAPACITY, KeyRing, KeyRole, KeySpec, MasterSecret,
    MemoryReplayStore, OpenPolicy, ReplayStore,
};

const RID: &str = "https://mcp.example.com/mcp";
const NOW: u64 = 1_800_000_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Expected {
    key: String,
    kind: u8,
    digest: [u8; 16],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    version: u8,
    state_id: [u8; 16],
    flow_id: [u8; 16],
    flow_expires_at: u64,
    method: u8,
    params_digest: [u8; 32],
    round: u8,
    once: bool,
    expect: Vec<Expected>,
    app: Vec<u8>,
}

fn fixture() -> (KeyRing, Claims<State>) {
    let secret: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    let ring = KeyRing::new(vec![
        KeySpec {
            kid: 7,
            secret: MasterSecret::from_bytes(&secret).expect("32 distinct bytes"),
            role: KeyRole::Active,
            verify_until: None,
        },
        KeySpec {
            kid: 6,
            secret: MasterSecret::from_bytes(&secret).expect("32 distinct bytes"),
            role: KeyRole::VerifyOnly,
            verify_until: Some(NOW + 690),
        },
    ])
    .expect("one active key");
    let claims = Claims {
        issued_at: NOW,
        expires_at: NOW + 600,
        binding: Binding::digest(&[b"oauth", b"https://issuer.example", b"alice", b"client"]),
        body: State {
            version: 1,
            state_id: [0x11; 16],
            flow_id: [0x22; 16],
            flow_expires_at: NOW + 3600,
            method: 1,
            params_digest: [0x33; 32],
            round: 1,
            once: true,
            expect: vec![
                Expected {
                    key: "confirm".into(),
                    kind: 1,
                    digest: [0x44; 16],
                },
                Expected {
                    key: "account".into(),
                    kind: 1,
                    digest: [0x55; 16],
                },
            ],
            app: vec![0x66; 64],
        },
    };
    (ring, claims)
}

fn seal_open(c: &mut Criterion) {
    let (ring, claims) = fixture();
    let token = ring.seal_at(RID, &claims).expect("fits the cap");
    let payload = postcard::to_allocvec(&claims).expect("encodes");
    #[expect(
        clippy::print_stdout,
        reason = "the bench reports the sizes it measures"
    )]
    {
        println!(
            "postcard payload: {} bytes; token: {} chars",
            payload.len(),
            token.len()
        );
    }

    c.bench_function("seal_at", |b| {
        b.iter(|| ring.seal_at(black_box(RID), black_box(&claims)));
    });
    let policy = OpenPolicy::default();
    c.bench_function("open_at", |b| {
        b.iter(|| {
            ring.open_at::<State>(
                black_box(RID),
                black_box(&token),
                black_box(&claims.binding),
                NOW,
                &policy,
            )
        });
    });
}

/// The memory store answers at once; its future is ready on first poll.
fn now<T>(f: impl Future<Output = T>) -> T {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the memory store never waits"),
    }
}

fn replay(c: &mut Criterion) {
    let store = MemoryReplayStore::new();
    let key = |n: u64| ConsumeKey::business("bench", &n.to_string());
    let hour = Duration::from_secs(3600);
    for n in 0..DEFAULT_MEMORY_CAPACITY as u64 - 1 {
        now(store.consume(key(n), hour)).expect("room");
    }
    let mut n = DEFAULT_MEMORY_CAPACITY as u64;
    c.bench_function("replay/full_steady", |b| {
        b.iter(|| {
            n += 1;
            // Lapses at once: the next consume finds the store full with
            // exactly this one marker to drop.
            now(store.consume(black_box(key(n)), Duration::ZERO))
                .expect("the lapsed one is dropped")
        });
    });
}

criterion_group!(benches, seal_open, replay);
criterion_main!(benches);
