//! p50 and p99 of one first-use consume per backend (SECURITY.md §3.9,
//! backends): 2 000 sequential consumes of fresh keys after 200 warm-up
//! ones, each timed on its own. Criterion (`benches/consume.rs`) gives
//! means only.

use std::time::{Duration, Instant};

#[path = "support/backends.rs"]
mod backends;
use tern_testkit::redis as redis_server;

const WARM_UP: usize = 200;
const SAMPLES: usize = 2_000;

#[expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its table"
)]
fn main() {
    // `cargo bench -- <filter>` and `--list` pass arguments; honour a filter
    // the way criterion does, and print nothing for `--list`.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let filter = args.iter().find(|a| !a.starts_with('-')).cloned();
    let rt = backends::runtime();
    let (all, skipped) = backends::backends(&rt);
    if let Some(why) = skipped {
        eprintln!("{why}");
    }
    println!(
        "{:<14} {:>9} {:>9} {:>9}",
        "backend", "p50 µs", "p99 µs", "max µs"
    );
    for backend in &all {
        if filter.as_deref().is_some_and(|f| !backend.name.contains(f)) {
            continue;
        }
        let keys: Vec<_> = (0..WARM_UP + SAMPLES)
            .map(|_| backends::fresh_key())
            .collect();
        let mut samples = Vec::with_capacity(SAMPLES);
        for (i, key) in keys.into_iter().enumerate() {
            let elapsed = time(|| {
                rt.block_on(backend.store.consume(key, backend.ttl))
                    .expect("the store answers")
            });
            if i >= WARM_UP {
                samples.push(elapsed);
            }
        }
        samples.sort_unstable();
        println!(
            "{:<14} {:>9.1} {:>9.1} {:>9.1}",
            backend.name,
            micros(samples[SAMPLES / 2]),
            micros(samples[SAMPLES * 99 / 100]),
            micros(samples[SAMPLES - 1]),
        );
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "a latency bench reads the monotonic clock around each call"
)]
fn time<T>(f: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    std::hint::black_box(f());
    start.elapsed()
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
