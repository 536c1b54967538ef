//! Fuzz harnesses for every parser a peer can reach, on the stable
//! toolchain (STYLE.md, Habits).
//!
//! Each target is a function from bytes to nothing that panics when an
//! invariant breaks: no input may panic the code under test, hostile input
//! never turns into a -32603 (that would be a server bug, not a refusal), a
//! mutated sealed state never opens, and every line a server writes is one
//! JSON object. The same functions run three ways:
//!
//! - in the test suite, a few seconds per target: the checked-in corpus
//!   (`corpus/<target>/`) plus generated and mutated cases ([`run`]);
//! - as a long run with `tern-fuzz <target> --cases N`, the same generator
//!   for as many cases as you like (the README gives the command).
//!
//! The generators know the shapes peers send (envelopes, `_meta`, answers
//! of each kind, sealed states, event streams), so most cases get past the
//! first parse; the mutator then breaks them at the byte level.

mod generate;
mod session;
#[cfg(test)]
mod short;
mod targets;

pub use generate::{Rng, mutate, value_from};
pub use targets::TARGETS;

/// One fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Its name, also the corpus folder's.
    pub name: &'static str,
    /// What it checks.
    pub about: &'static str,
    /// Runs one input; panics when an invariant breaks.
    pub run: fn(&[u8]),
    /// Makes a structured input from random bytes (valid-looking messages,
    /// states, answers), so cases reach past the first parse.
    pub generate: fn(&mut Rng) -> Vec<u8>,
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Inputs run, corpus included.
    pub cases: u64,
    /// Of which from the corpus.
    pub corpus: u64,
}

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Runs `target` on its corpus, then on `cases` inputs: generated ones, and
/// corpus entries or generated ones mutated, from `seed`. Panics (naming the
/// input) on the first broken invariant.
pub fn run(target: &Target, cases: u64, seed: u64) -> Report {
    let corpus = corpus(target.name);
    for (path, bytes) in &corpus {
        check(target, bytes, &format!("corpus file {path}"));
    }
    let mut rng = Rng::new(seed);
    for i in 0..cases {
        let input = match (i % 3, corpus.is_empty()) {
            (0, _) | (_, true) => (target.generate)(&mut rng),
            (1, false) => {
                let pick = rng.below(corpus.len() as u64) as usize;
                mutate(&corpus[pick].1, &mut rng)
            }
            _ => {
                let fresh = (target.generate)(&mut rng);
                mutate(&fresh, &mut rng)
            }
        };
        check(target, &input, &format!("case {i} of seed {seed}"));
    }
    Report {
        cases: cases + corpus.len() as u64,
        corpus: corpus.len() as u64,
    }
}

fn check(target: &Target, input: &[u8], what: &str) {
    let outcome = std::panic::catch_unwind(|| (target.run)(input));
    if let Err(panic) = outcome {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        panic!(
            "fuzz target {} failed on {what}: {text}\ninput ({} bytes): {:?}",
            target.name,
            input.len(),
            String::from_utf8_lossy(input)
        );
    }
}

/// The checked-in corpus of `name`, sorted by file name.
pub fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            let bytes = std::fs::read(e.path()).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), bytes))
        })
        .collect();
    out.sort();
    out
}
