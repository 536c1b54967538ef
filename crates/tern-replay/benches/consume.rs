//! Mean latency of one first-use consume per backend (SECURITY.md §3.9,
//! backends): in-memory, SQLite WAL with `synchronous=FULL` and `NORMAL`, and
//! Redis `SET NX PX` against a `redis-server` this bench starts on loopback.
//!
//! Criterion reports means; `benches/percentiles.rs` gives p50 and p99.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

#[path = "support/backends.rs"]
mod backends;
use tern_testkit::redis as redis_server;

fn consume(c: &mut Criterion) {
    let rt = backends::runtime();
    let (all, skipped) = backends::backends(&rt);
    if let Some(why) = skipped {
        #[expect(
            clippy::print_stderr,
            reason = "a bench says which backend it left out"
        )]
        {
            eprintln!("{why}");
        }
    }
    let mut group = c.benchmark_group("consume");
    for backend in &all {
        group.bench_function(backend.name, |b| {
            b.iter_batched(
                backends::fresh_key,
                |key| {
                    black_box(
                        rt.block_on(backend.store.consume(key, backend.ttl))
                            .expect("the store answers"),
                    )
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = consume
}
criterion_main!(benches);
