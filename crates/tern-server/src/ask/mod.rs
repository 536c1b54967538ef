//! The Ask API: how a handler asks the client for input in a multi
//! round-trip request (DIGEST §4, ARCHITECTURE.md "The handler API").
//!
//! A handler re-runs from the top on every round (MRTR-S-A2). Each time it
//! declares what it needs; answers already given come back typed, and
//! everything still missing goes out in one `input_required` result. An
//! answer counts only when it arrives with a verified state from the round
//! that asked it, and only for the exact question asked (a digest of the
//! request travels in the state), so a client cannot answer a question that
//! was never asked (SECURITY.md §3.8).

//! - [`need`]: what a handler can ask ([`Need`] and its combinators);
//! - [`parse`]: the answers' checks, one parser per kind;
//! - [`digest`]: the digests that pin an answer to its question.

mod digest;
mod need;
mod parse;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_types::ClientCapabilities;

pub use digest::TypedSchema;
pub use need::{Either, FormKey, Need, NeedSet, OneOf, Optional};
pub use parse::{Elicited, Root, Sampled};

use crate::form::ElicitForm;
use crate::outcome::{Error, Pending};

/// The kind of an input request, and so the capability it needs (MRTR-S8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// `elicitation/create` in form mode: needs `elicitation` (or
    /// `elicitation.form`).
    Form,
    /// `elicitation/create` in URL mode: needs `elicitation.url`.
    Url,
    /// `sampling/createMessage`: needs `sampling`.
    Sampling,
    /// `roots/list`: needs `roots`.
    Roots,
}

impl InputKind {
    pub(crate) fn code(self) -> u8 {
        match self {
            InputKind::Form => 1,
            InputKind::Url => 2,
            InputKind::Sampling => 3,
            InputKind::Roots => 4,
        }
    }

    /// Whether the client declared this kind in this request (ELIC-S3,
    /// MRTR-S8).
    pub fn declared(self, caps: &ClientCapabilities) -> bool {
        match self {
            InputKind::Form => caps.elicitation_form(),
            InputKind::Url => caps.elicitation_url(),
            InputKind::Sampling => caps.sampling(),
            InputKind::Roots => caps.roots(),
        }
    }

    /// The capability in `ClientCapabilities` shape, for
    /// `requiredCapabilities` (META-S10).
    pub(crate) fn capability(self) -> (&'static str, Value) {
        match self {
            InputKind::Form => ("elicitation", json!({"form": {}})),
            InputKind::Url => ("elicitation", json!({"url": {}})),
            InputKind::Sampling => ("sampling", json!({})),
            InputKind::Roots => ("roots", json!({})),
        }
    }
}

/// One input request issued in a round.
#[derive(Clone, Debug)]
pub(crate) struct Asked {
    pub(crate) key: String,
    pub(crate) kind: InputKind,
    pub(crate) request: Value,
    pub(crate) rdig: [u8; 16],
}

impl Asked {
    /// What the next round expects an answer to.
    pub(crate) fn expect(&self) -> Expect {
        Expect {
            key: self.key.clone(),
            kind: self.kind.code(),
            rdig: self.rdig,
        }
    }
}

/// Checks `answer` as the answer to `request` asked under `key` (the key
/// it came under, named in a refusal), by its kind's parser as a handler's
/// round does (a form's schema, a URL step's outcome, a sample's content,
/// the roots) without typing it: what a task's round or a fleet's store
/// delivered outside a handler's run is checked before it is kept.
pub(crate) fn check_relayed(key: &str, request: &Value, answer: &Value) -> Result<(), McpError> {
    let question = need::Question::Built(request.clone());
    parse::parse_relayed(key, &question, answer).map(drop)
}

/// An input key the previous round asked, as its state records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Expect {
    pub(crate) key: String,
    pub(crate) kind: u8,
    pub(crate) rdig: [u8; 16],
}

/// An answer accepted in an earlier round, carried in the state (MRTR-E3).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Done {
    pub(crate) key: String,
    pub(crate) rdig: [u8; 16],
    /// The answer's JSON text.
    pub(crate) answer: Vec<u8>,
}

/// What the framework knows about the answers of this round.
#[derive(Debug, Default)]
pub(crate) struct AskContext {
    pub(crate) caps: ClientCapabilities,
    /// Whether a state from an earlier round was opened and verified.
    pub(crate) verified: bool,
    pub(crate) expect: Vec<Expect>,
    pub(crate) done: Vec<Done>,
    /// `inputResponses`, read only when `verified`.
    pub(crate) responses: Map<String, Value>,
    /// The keys (and request digests) of `responses` accepted during this
    /// run, carried into the next state. Their text is written only if a
    /// next state is sealed: most runs complete.
    pub(crate) accepted: Mutex<Vec<(String, [u8; 16])>>,
}

impl AskContext {
    /// No answers: a first run, or a request that cannot carry any.
    pub(crate) fn unanswered(caps: ClientCapabilities) -> Self {
        AskContext {
            caps,
            ..AskContext::default()
        }
    }

    /// The answers to the round that asked `expect`, with those `done` in
    /// earlier rounds: from a verified state, or in-process.
    pub(crate) fn answered(
        caps: ClientCapabilities,
        expect: Vec<Expect>,
        done: Vec<Done>,
        responses: Map<String, Value>,
    ) -> Self {
        AskContext {
            caps,
            verified: true,
            expect,
            done,
            responses,
            accepted: Mutex::default(),
        }
    }

    fn find_done(&self, key: &str, rdig: &[u8; 16]) -> Option<Value> {
        self.done
            .iter()
            .find(|d| d.key == key && d.rdig == *rdig)
            .and_then(|d| serde_json::from_slice(&d.answer).ok())
    }

    fn expected(&self, key: &str, kind: InputKind, rdig: &[u8; 16]) -> bool {
        self.expect
            .iter()
            .any(|e| e.key == key && e.kind == kind.code() && e.rdig == *rdig)
    }

    fn asked_before(&self, key: &str) -> bool {
        self.expect.iter().any(|e| e.key == key)
    }

    /// Records that `responses[key]` was accepted.
    fn accept(&self, key: &str, rdig: [u8; 16]) {
        if let Ok(mut a) = self.accepted.lock() {
            a.retain(|(k, _)| k != key);
            a.push((key.to_owned(), rdig));
        }
    }

    /// The answers to carry into the next round, less those of keys asked
    /// again in it (a re-asked key drops its old answer).
    pub(crate) fn carried_except(&self, asked: &[Asked]) -> Vec<Done> {
        self.carried()
            .into_iter()
            .filter(|d| !asked.iter().any(|r| r.key == d.key))
            .collect()
    }

    /// The answers to carry into the next state: earlier ones, replaced by
    /// any accepted again in this run.
    pub(crate) fn carried(&self) -> Vec<Done> {
        let accepted: Vec<Done> = self
            .accepted
            .lock()
            .map(|a| {
                a.iter()
                    .filter_map(|(key, rdig)| {
                        let answer = self.responses.get(key)?;
                        Some(Done {
                            key: key.clone(),
                            rdig: *rdig,
                            answer: serde_json::to_vec(answer).ok()?,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut out: Vec<Done> = self
            .done
            .iter()
            .filter(|d| !accepted.iter().any(|a| a.key == d.key))
            .cloned()
            .collect();
        out.extend(accepted);
        out
    }
}

/// The handle a handler asks through. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Ask {
    pub(crate) cx: Arc<AskContext>,
}

impl Ask {
    /// Asks for everything in `needs` in one round: a single need, or a
    /// tuple of needs. Returns the answers when all required ones are in;
    /// otherwise [`Error::Input`] with every missing request of the round,
    /// or -32021 when a required kind was not declared (MRTR-S9).
    pub fn all<N: NeedSet>(&self, needs: N) -> Result<N::Output, Error> {
        let mut round = Round {
            cx: &self.cx,
            missing: Vec::new(),
            undeclared: Vec::new(),
        };
        let out = needs.evaluate(&mut round)?;
        round.finish()?;
        out.ok_or_else(|| Error::Protocol(McpError::Internal("an answer went missing".into())))
    }

    /// Asks for one typed form (form-mode elicitation).
    pub fn form<T: ElicitForm>(&self, key: &str, message: &str) -> Result<Elicited<T>, Error> {
        self.all(Need::form::<T>(key, message))
    }

    /// Asks one yes-or-no question ([`Need::confirm`]).
    pub fn confirm(&self, key: &str, message: &str) -> Result<Elicited<bool>, Error> {
        self.all(Need::confirm(key, message))
    }

    /// Asks `need` again whatever was answered before: for a URL-mode
    /// interaction whose out-of-band step has not finished (ELIC-10), or to
    /// re-ask after an answer the handler cannot use (MRTR-S10). The round
    /// ceiling bounds how often this can happen.
    pub fn again<T>(&self, need: Need<T>) -> Error {
        self.again_all(vec![need])
    }

    /// Asks every need in `needs` as a new round, whatever was answered
    /// before ([`Ask::again`] for one; [`crate::relay::ask_again`] for a
    /// relayed round).
    pub(crate) fn again_all<T>(&self, needs: Vec<Need<T>>) -> Error {
        let mut round = Round {
            cx: &self.cx,
            missing: Vec::new(),
            undeclared: Vec::new(),
        };
        for need in needs {
            if let Err(e) = need.check() {
                return Error::Protocol(e);
            }
            if need.kind.declared(&self.cx.caps) {
                let rdig = match need.digest() {
                    Ok(rdig) => rdig,
                    Err(e) => return Error::Protocol(e),
                };
                round.missing.push(Asked {
                    key: need.key,
                    kind: need.kind,
                    request: need.request.into_value(),
                    rdig,
                });
            } else {
                round.undeclared.push(need.kind);
            }
        }
        match round.finish() {
            Err(e) => e,
            Ok(()) => Error::Protocol(McpError::Internal("nothing to ask".into())),
        }
    }

    /// The client's capabilities for this request.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.cx.caps
    }
}

/// Collects the evaluation of one round's needs.
pub struct Round<'a> {
    cx: &'a AskContext,
    missing: Vec<Asked>,
    undeclared: Vec<InputKind>,
}

impl Round<'_> {
    fn finish(self) -> Result<(), Error> {
        if !self.undeclared.is_empty() {
            let mut required = Map::new();
            let mut names = Vec::new();
            for k in &self.undeclared {
                let (cap, v) = k.capability();
                names.push(cap);
                match (required.get_mut(cap), v) {
                    (Some(Value::Object(have)), Value::Object(more)) => have.extend(more),
                    (_, v) => {
                        required.insert(cap.to_owned(), v);
                    }
                }
            }
            names.dedup();
            let required = serde_json::from_value(Value::Object(required))
                .map_err(|e| McpError::Internal(e.to_string()))?;
            return Err(Error::Protocol(McpError::MissingCapability {
                required: Box::new(required),
                message: format!(
                    "This request needs the client capability: {}",
                    names.join(", ")
                ),
            }));
        }
        // One key, one question: the client answers each key once, so two
        // questions under one key would share one answer (a handler bug).
        let earlier = |i: usize, a: &Asked| self.missing[..i].iter().any(|b| b.key == a.key);
        if let Some((_, dup)) = self
            .missing
            .iter()
            .enumerate()
            .find(|(i, a)| earlier(*i, a))
        {
            return Err(Error::Protocol(McpError::Internal(format!(
                "two questions of one round share the input key {}",
                dup.key
            ))));
        }
        if !self.missing.is_empty() {
            return Err(Error::Input(Pending {
                requests: self.missing,
                ..Pending::default()
            }));
        }
        Ok(())
    }
}
