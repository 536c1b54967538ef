//! Cost of reading a hostile server's event stream (HTTP-A3): what it
//! sends is bounded by the decoder's limit, and what reading it costs must
//! stay linear in what it sends, however it is cut.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tern_proto::sse::Decoder;

const MAX: usize = 4 << 20;

fn sse(c: &mut Criterion) {
    // 64 KiB of comment lines arriving as one chunk.
    let comments = b":\n".repeat(32 * 1024);
    c.bench_function("sse/comment_lines_64k_one_chunk", |b| {
        b.iter(|| {
            Decoder::new(MAX)
                .feed(black_box(&comments))
                .map(|e| e.len())
        });
    });
    // One 1 MiB line trickled in 64-byte chunks, then its event's end.
    let piece = [b'x'; 64];
    c.bench_function("sse/line_1m_in_64b_chunks", |b| {
        b.iter(|| {
            let mut d = Decoder::new(MAX);
            d.feed(b"data: ").expect("under the limit");
            for _ in 0..(1 << 20) / piece.len() {
                d.feed(black_box(&piece)).expect("under the limit");
            }
            d.feed(b"\n\n").map(|e| e.len())
        });
    });
}

criterion_group!(benches, sse);
criterion_main!(benches);
