//! The probe's cases as data: one row per case, in the order they run and
//! are reported. Each row names its family and case, how binding its rule
//! is and the rule's DIGEST id, what the probe sends (the one thing wrong)
//! and what counts as a pass. [`super::engine::run`] plays the rows.

use serde_json::{Value, json};

use super::engine::Level::{Advice, Must, Should};
use super::engine::{Answers, Each, Pass, Row, Send, Status, When, row};

/// A method a tool's state must not open: the list that names a target,
/// the result field and key of its entries, the method, and what the
/// target is called.
#[derive(Debug)]
pub(super) struct CrossUse {
    pub(super) list: &'static str,
    pub(super) field: &'static str,
    pub(super) key: &'static str,
    pub(super) method: &'static str,
    pub(super) noun: &'static str,
}

const PROMPTS: CrossUse = CrossUse {
    list: "prompts/list",
    field: "prompts",
    key: "name",
    method: "prompts/get",
    noun: "prompt",
};

const RESOURCES: CrossUse = CrossUse {
    list: "resources/list",
    field: "resources",
    key: "uri",
    method: "resources/read",
    noun: "resource",
};

/// Every case, in order.
#[rustfmt::skip]
pub(super) const ROWS: &[Row] = &[
    // The baseline: the flow completes with good answers. A flow the probe
    // cannot finish (a URL-mode step) is a SKIP, and nothing else runs.
    row("baseline", "flow completes", Must, "MRTR-S3", Send::Flow, Pass::Completes)
        .ends_on(Status::Skip),
    row("baseline", "round 1 asks", Must, "MRTR-S4", Send::Prelude, Pass::Asks)
        .quiet()
        .ends_on(Status::Fail),
    // Integrity (MRTR-SEC1, MRTR-SEC2, MRTR-E-A1): the prelude's state
    // altered, good answers.
    row("integrity", "bit flip at the start", Must, "MRTR-SEC2", Send::State(flip_start), Pass::Refused),
    row("integrity", "bit flip in the middle", Must, "MRTR-SEC2", Send::State(flip_middle), Pass::Refused),
    row("integrity", "bit flip at the end", Must, "MRTR-SEC2", Send::State(flip_end), Pass::Refused),
    row("integrity", "truncated to half", Must, "MRTR-SEC2", Send::State(half), Pass::Refused),
    // The same authentic bytes in another encoding breach nothing;
    // accepting them is malleability, worth fixing but not a MUST.
    row("integrity", "re-encoded as standard base64", Advice, "MRTR-SEC2", Send::State(standard_base64), Pass::Refused),
    row("integrity", "forged", Must, "MRTR-SEC2", Send::State(forged), Pass::Refused),
    row("integrity", "empty", Must, "MRTR-SEC2", Send::State(|_| json!("")), Pass::Refused),
    row("integrity", "a number", Must, "MRTR-SEC2", Send::State(|_| json!(42)), Pass::Refused),
    row("integrity", "an object", Must, "MRTR-SEC2", Send::State(|s| json!({"state": s})), Pass::Refused),
    row("integrity", "oversized (1 MiB)", Must, "MRTR-SEC2", Send::State(|_| json!("A".repeat(1 << 20))), Pass::Refused),
    // Bindings (MRTR-SEC3): a fresh state, good answers, something else.
    row("bindings", "other arguments", Should, "MRTR-SEC3", Send::OtherArguments, Pass::Refused),
    row("bindings", "another method (prompts/get)", Should, "MRTR-SEC3", Send::OtherMethod(&PROMPTS), Pass::Refused),
    row("bindings", "another tool name", Should, "MRTR-SEC3", Send::OtherTool, Pass::Refused),
    row("bindings", "another method (resources/read)", Should, "MRTR-SEC3", Send::OtherMethod(&RESOURCES), Pass::Refused),
    // The state is bound to the principal it was issued to.
    row("bindings", "another principal", Should, "MRTR-SEC3", Send::OtherPrincipal, Pass::Refused)
        .only(When::OtherPrincipal, Some("give --other-bearer-env VAR (another client's token) where the server authenticates")),
    // Answers (MRTR-E2, MRTR-E3, MRTR-E-A2): a fresh state, wrong answers.
    row("answers", "only an answer never asked", Should, "MRTR-E2", Send::Answers(Answers::Unasked), Pass::NotCompleted),
    row("answers", "missing answers are asked again", Should, "MRTR-E3", Send::Answers(Answers::Empty), Pass::AskedAgain),
    row("answers", "inputResponses null", Should, "MRTR-E-A2", Send::Answers(Answers::Null), Pass::Refused),
    // Per input request, in the order the server keyed them (MRTR-E-A2,
    // MRTR-E4, ROOT-1).
    row("answers", "content against the schema", Must, "MRTR-E-A2", Send::Answers(Answers::Replace(violating_content)), Pass::NotCompleted)
        .each(Each::Form),
    row("answers", "an answer of the wrong kind", Must, "MRTR-E-A2", Send::Answers(Answers::Replace(|_| Some(json!({"roots": []})))), Pass::NotCompleted)
        .each(Each::FirstForm),
    row("answers", "decline and cancel told apart", Advice, "MRTR-E4", Send::DeclineAndCancel, Pass::Differ)
        .each(Each::FirstForm),
    row("answers", "a sample without a model", Must, "MRTR-E-A2", Send::Answers(Answers::Replace(sample_without_model)), Pass::NotCompleted)
        .each(Each::Sampling),
    row("answers", "a root that is not a file URI", Should, "ROOT-1", Send::Answers(Answers::Replace(roots_not_files)), Pass::NotCompleted)
        .each(Each::Roots),
    // Replay of a single-use tool (MRTR-SEC4), never of any other: the
    // baseline's own final state (a single-use effect may allow no second
    // flow at all), then two retries of one state at once.
    row("replay", "the final state replayed", Must, "MRTR-SEC4", Send::FinalState, Pass::NotCompleted)
        .only(When::SingleUse, Some("not declared single use (--single-use TOOL)")),
    row("replay", "two retries of one state at once", Must, "MRTR-SEC4", Send::TwoAtOnce, Pass::AtMostOneCompletes)
        .only(When::SingleUse, None),
    // The round ceiling: answers withheld, the server asked again and again.
    row("rounds", "a round ceiling", Should, "MRTR-SEC3", Send::Withheld(64), Pass::RefusedInTime),
    // Gates (MRTR-S8, MRTR-S-A3, HTTP-S11).
    row("gates", "no capability declared", Must, "MRTR-S8", Send::RoundOneNoCapabilities, Pass::NothingAsked),
    row("gates", "inputResponses on tools/list", Advice, "MRTR-S-A3", Send::ListWithAnswers, Pass::Refused),
    row("gates", "Mcp-Name header unlike the body", Must, "HTTP-S11", Send::RoundOneOtherNameHeader, Pass::Refused)
        .only(When::Http, Some("stdio has no headers")),
    // Expiry, when the lifetime is known (MRTR-SEC3).
    row("expiry", "a state past its lifetime", Should, "MRTR-SEC3", Send::Expired, Pass::Refused)
        .only(When::StateTtl, Some("give --state-ttl SECS to wait it out")),
    // Still alive after all that.
    row("liveness", "the server still answers", Must, "SECURITY", Send::RoundOne, Pass::Asks),
];

fn flip_start(s: &str) -> Value {
    json!(flipped(s, 0.0))
}

fn flip_middle(s: &str) -> Value {
    json!(flipped(s, 0.5))
}

fn flip_end(s: &str) -> Value {
    json!(flipped(s, 1.0))
}

fn half(s: &str) -> Value {
    json!(s.chars().take(s.chars().count() / 2).collect::<String>())
}

fn standard_base64(s: &str) -> Value {
    json!(s.replace('-', "+").replace('_', "/") + "==")
}

const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// 48 random bytes' worth of base64url: a state no server issued.
fn forged(_: &str) -> Value {
    let s: String = tern::seal::random_bytes::<48>()
        .iter()
        .map(|b| char::from(B64URL[usize::from(*b % 64)]))
        .collect();
    json!(s)
}

/// A state changed in one character at `at` (a fraction of its length).
fn flipped(state: &str, at: f64) -> String {
    let mut b = state.as_bytes().to_vec();
    if b.is_empty() {
        return "A".to_owned();
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a position within a short string"
    )]
    let i = ((b.len() - 1) as f64 * at) as usize;
    // In base64 the last character may carry unused low bits that a lenient
    // decoder ignores; flipping the character's high bit always changes the
    // bytes it encodes.
    b[i] = match B64URL.iter().position(|c| *c == b[i]) {
        Some(v) => B64URL[v ^ 0x20],
        None if b[i] == b'A' => b'B',
        None => b'A',
    };
    String::from_utf8_lossy(&b).into_owned()
}

/// Form content that breaks every property's type (none when the form
/// has no properties).
fn violating_content(request: &Value) -> Option<Value> {
    let props = request
        .pointer("/params/requestedSchema/properties")?
        .as_object()?;
    let content: serde_json::Map<String, Value> = props
        .iter()
        .map(|(k, v)| {
            let bad = match v.get("type").and_then(Value::as_str) {
                Some("string") => json!(12345),
                _ => json!({"not": "valid"}),
            };
            (k.clone(), bad)
        })
        .collect();
    (!content.is_empty()).then(|| json!({"action": "accept", "content": content}))
}

fn sample_without_model(_: &Value) -> Option<Value> {
    Some(json!({"role": "assistant", "content": {"type": "text", "text": "x"}}))
}

fn roots_not_files(_: &Value) -> Option<Value> {
    Some(json!({"roots": [{"uri": "https://evil.example/"}, {"uri": "file:///tmp/caf\u{e9}"}]}))
}

#[cfg(test)]
mod tests {
    use super::super::engine::{Outcome, judge};
    use super::*;
    use crate::probe::wire::Reply;

    /// What each kind of send comes back with, so every row's pass can be
    /// checked to read it.
    fn sample(send: Send) -> Outcome {
        match send {
            Send::Flow => Outcome::Ended(Ok(Reply::Refused(-32602, "x".into()))),
            Send::Prelude | Send::RoundOne => Outcome::Started(Ok(())),
            Send::TwoAtOnce | Send::DeclineAndCancel => Outcome::Two(
                Reply::Refused(-32602, "x".into()),
                Reply::Refused(-32602, "y".into()),
            ),
            Send::Withheld(n) => Outcome::Rounds(n, None),
            _ => Outcome::One(Reply::Refused(-32602, "x".into())),
        }
    }

    #[test]
    fn every_row_is_judged_by_what_it_sends() {
        for r in ROWS {
            let (status, reason) = judge(r.pass, sample(r.send));
            assert!(
                !reason.starts_with("not judged"),
                "{}: {}: {reason}",
                r.family,
                r.name
            );
            assert_ne!(status, Status::Skip, "{}: {}", r.family, r.name);
        }
    }

    #[test]
    fn case_names_are_unique_and_fit_the_table() {
        let mut seen = std::collections::HashSet::new();
        for r in ROWS {
            assert!(seen.insert((r.family, r.name)), "{}: {}", r.family, r.name);
            assert!(r.family.len() <= 11 && r.rule.len() <= 11, "{r:?}");
        }
    }

    #[test]
    fn a_flipped_state_differs_in_the_bits_it_encodes() {
        let s = "AAAAQQ";
        for at in [0.0, 0.5, 1.0] {
            let f = flipped(s, at);
            assert_ne!(f, s);
            assert_eq!(f.len(), s.len());
        }
        assert_eq!(flipped("", 0.5), "A");
        assert_eq!(flipped("AAAA", 1.0), "AAAg");
    }
}
