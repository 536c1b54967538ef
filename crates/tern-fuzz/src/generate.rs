//! Deterministic input generation: a small PRNG (no thread-local RNG,
//! STYLE.md), JSON values shaped like what peers send, and byte-level
//! mutations.

use serde_json::{Map, Value, json};

/// A seeded xorshift64* generator: the same seed gives the same cases.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is moved off the fixed point).
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.bits() % n.max(1)
    }

    /// True with probability 1 in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Random bytes, up to `max` of them.
    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max as u64 + 1) as usize;
        (0..n).map(|_| self.bits() as u8).collect()
    }
}

/// Strings a peer might send where text is expected: ASCII, multi-byte
/// characters at every boundary, controls, sentinels and lookalikes.
const STRINGS: &[&str] = &[
    "",
    "a",
    "é",
    "file:/é/abcdef",
    "file:///é",
    "file:///tmp",
    "FILE:///x",
    "https://example.com/",
    "\u{0}",
    "\u{7f}",
    "\u{202e}",
    "😀😀😀😀😀😀😀😀",
    "=?base64?aMOpbGxv?=",
    "=?base64?",
    "accept",
    "decline",
    "cancel",
    "toolUse",
    "endTurn",
    "tool_use",
    "tool_result",
    "text",
    "assistant",
    "user",
    "roots/list",
    "elicitation/create",
    "sampling/createMessage",
    "tools/call",
    "input_required",
    "complete",
    "2026-07-28",
    "2025-11-25",
    "1e999",
    "\\ud800",
];

fn string(rng: &mut Rng) -> String {
    if rng.one_in(4) {
        let b = rng.bytes(24);
        return String::from_utf8_lossy(&b).into_owned();
    }
    let mut s = (*rng.pick(STRINGS)).to_owned();
    if rng.one_in(3) {
        s.push_str(rng.pick::<&str>(STRINGS));
    }
    s
}

/// Keys that matter somewhere in MRTR messages, mixed with junk.
const KEYS: &[&str] = &[
    "action",
    "content",
    "roots",
    "uri",
    "name",
    "role",
    "model",
    "stopReason",
    "type",
    "text",
    "id",
    "input",
    "toolUseId",
    "approved",
    "resultType",
    "inputRequests",
    "requestState",
    "method",
    "params",
    "mode",
    "requestedSchema",
    "_meta",
    "x",
];

/// A JSON value of at most `depth` levels, biased towards MRTR shapes.
pub fn value_from(rng: &mut Rng, depth: u32) -> Value {
    let leaf = depth == 0 || rng.one_in(3);
    match rng.below(if leaf { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => match rng.below(4) {
            0 => json!(rng.bits() as i64),
            1 => json!(rng.below(10)),
            2 => json!(f64::from(rng.bits() as u32) / 7.0),
            _ => json!(u64::MAX),
        },
        3 | 4 => Value::String(string(rng)),
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| value_from(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(5) {
                let k = if rng.one_in(5) {
                    string(rng)
                } else {
                    (*rng.pick(KEYS)).to_owned()
                };
                m.insert(k, value_from(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

/// One to four byte-level edits: bit flips, a truncation, an inserted or
/// deleted run, a duplicated slice, or a splice of interesting bytes.
pub fn mutate(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = out.len() as u64;
        match rng.below(6) {
            0 if len > 0 => {
                let i = rng.below(len) as usize;
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => out.truncate(rng.below(len) as usize),
            2 => {
                let at = rng.below(len + 1) as usize;
                let junk = rng.bytes(8);
                out.splice(at..at, junk);
            }
            3 if len > 1 => {
                let a = rng.below(len) as usize;
                let b = (a + 1 + rng.below(8) as usize).min(out.len());
                out.drain(a..b);
            }
            4 if len > 1 => {
                let a = rng.below(len) as usize;
                let b = (a + 1 + rng.below(16) as usize).min(out.len());
                let copy: Vec<u8> = out[a..b].to_vec();
                let at = rng.below(out.len() as u64 + 1) as usize;
                out.splice(at..at, copy);
            }
            _ => {
                const SPICE: &[&[u8]] = &[
                    b"\"",
                    b"\\",
                    b"{",
                    b"}",
                    b"[",
                    b"\n",
                    b"\r\n",
                    "é".as_bytes(),
                    b"\xff",
                    b"\x00",
                    b"null",
                    b"1e999",
                ];
                let at = rng.below(len + 1) as usize;
                out.splice(at..at, rng.pick(SPICE).iter().copied());
            }
        }
    }
    out
}
