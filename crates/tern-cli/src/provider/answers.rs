//! Scripted answers (`--answers FILE`, README "Answers files"): read and
//! checked whole before anything is sent, then handed out by input key or
//! method name.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tern::client::Refusal;

/// Scripted answers by input key (`--answers`), or by method name
/// (`"elicitation/create"`) for questions with no entry of their own and for
/// 2025-11-25 servers, whose requests have no keys. A value is the answer
/// for every time the key is asked; an array gives one answer per ask, in
/// order.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    by_key: Mutex<BTreeMap<String, Entry>>,
}

#[derive(Debug)]
/// One key's scripted answers.
enum Entry {
    Always(Value),
    Sequence(VecDeque<Value>),
}

impl Answers {
    /// Reads an answers file (README, "Answers files"): a JSON object from
    /// input key, or method name, to an answer or a list of answers. Every
    /// entry is checked here, before anything is sent, and a problem names
    /// the key.
    pub(crate) fn load(path: &Path) -> Result<Answers, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --answers {}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--answers {}: not valid JSON: {e}", path.display()))?;
        let Value::Object(map) = value else {
            return Err(format!(
                "--answers {}: expected a JSON object of answers by input key, e.g. {{\"approval\": {{\"action\": \"accept\", \"content\": {{\"confirm\": true}}}}}}",
                path.display()
            ));
        };
        let mut by_key = BTreeMap::new();
        for (k, v) in map {
            let bad = |why: String| format!("--answers {}: the entry {k:?}: {why}", path.display());
            let entry = match v {
                Value::Array(a) if a.is_empty() => {
                    return Err(bad(
                        "an empty list holds no answers (for no roots, write {\"roots\": []})"
                            .to_owned(),
                    ));
                }
                Value::Array(a) => {
                    for (i, one) in a.iter().enumerate() {
                        check_answer(&k, one).map_err(|e| bad(format!("answer {}: {e}", i + 1)))?;
                    }
                    Entry::Sequence(a.into())
                }
                v => {
                    check_answer(&k, &v).map_err(bad)?;
                    Entry::Always(v)
                }
            };
            by_key.insert(k, entry);
        }
        Ok(Answers {
            by_key: Mutex::new(by_key),
        })
    }

    /// Whether the file answers a roots question: its entry for
    /// `roots/list`, or any entry that is a roots answer. Roots are
    /// declared from it without a terminal (META-A1).
    pub(crate) fn has_roots(&self) -> bool {
        let map = self
            .by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.iter().any(|(k, e)| {
            k == "roots/list"
                || match e {
                    Entry::Always(v) => v.get("roots").is_some(),
                    Entry::Sequence(q) => q.iter().any(|v| v.get("roots").is_some()),
                }
        })
    }

    /// The keys of the file, for a message about a key it lacks.
    pub(super) fn keys(&self) -> Vec<String> {
        self.by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The next answer for `key`, parsed as `T`.
    pub(super) fn take<T: DeserializeOwned>(
        &self,
        key: &str,
        method: &str,
    ) -> Result<Option<T>, Refusal> {
        let raw = {
            let mut map = self
                .by_key
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match map.get_mut(key) {
                None => None,
                Some(Entry::Always(v)) => Some(v.clone()),
                Some(Entry::Sequence(q)) => q.pop_front(),
            }
        };
        raw.map(|v| {
            serde_json::from_value(v).map_err(|e| {
                tracing::debug!(error = %e, "a scripted answer of another kind");
                Refusal::new(format!(
                    "the --answers entry for {key:?} is not an answer to {}",
                    match method {
                        "elicitation/create" => "a form or a link (give {\"action\": ...})",
                        "roots/list" => "a roots question (give {\"roots\": [...]})",
                        _ => "a sampling request (give {\"role\", \"content\", \"model\"})",
                    }
                ))
            })
        })
        .transpose()
    }
}

/// Checks one scripted answer's shape, in the words of the answers file
/// format: an elicitation answer, a roots answer or a sampling answer (by
/// its key's method when the key is a method name).
fn check_answer(key: &str, v: &Value) -> Result<(), String> {
    let Value::Object(o) = v else {
        return Err(format!("expected an object, found {v}"));
    };
    let kind = match key {
        "elicitation/create" => "elicitation",
        "roots/list" => "roots",
        "sampling/createMessage" => "sampling",
        _ if o.contains_key("action") => "elicitation",
        _ if o.contains_key("roots") => "roots",
        _ if o.contains_key("content") && o.contains_key("model") => "sampling",
        _ => {
            return Err(
                "expected an elicitation answer {\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": {...}}, a roots answer {\"roots\": [{\"uri\": \"file:///...\"}]} or a sampling answer {\"role\": \"assistant\", \"content\": {\"type\": \"text\", \"text\": \"...\"}, \"model\": \"...\"}"
                    .to_owned(),
            );
        }
    };
    match kind {
        "elicitation" => {
            match o.get("action").and_then(Value::as_str) {
                Some("accept" | "decline" | "cancel") => {}
                Some(other) => {
                    return Err(format!(
                        "\"action\" is {other:?}; it must be \"accept\", \"decline\" or \"cancel\""
                    ));
                }
                None => return Err(
                    "an elicitation answer needs \"action\": \"accept\", \"decline\" or \"cancel\""
                        .to_owned(),
                ),
            }
            if let Some(c) = o.get("content").filter(|c| !c.is_object() && !c.is_null()) {
                return Err(format!(
                    "\"content\" must be an object of form fields, found {c}"
                ));
            }
            if let Some(extra) = o.keys().find(|k| *k != "action" && *k != "content") {
                return Err(format!(
                    "unknown member {extra:?} (an elicitation answer has \"action\" and \"content\")"
                ));
            }
        }
        "roots" => {
            let Some(roots) = o.get("roots").and_then(Value::as_array) else {
                return Err(
                    "a roots answer needs \"roots\": [{\"uri\": \"file:///...\"}]".to_owned(),
                );
            };
            for r in roots {
                match r.get("uri").and_then(Value::as_str) {
                    Some(u) if u.starts_with("file://") => {}
                    Some(u) => return Err(format!("the root {u:?} is not a file:// URI")),
                    None => return Err(format!("a root needs a \"uri\", found {r}")),
                }
            }
        }
        _ => {
            let text = o
                .get("content")
                .and_then(|c| c.get("text"))
                .and_then(Value::as_str);
            if o.get("model").and_then(Value::as_str).is_none() {
                return Err("a sampling answer needs \"model\"".to_owned());
            }
            if text.is_none_or(|t| t.trim().is_empty()) {
                return Err("a sampling answer needs \"content\": {\"type\": \"text\", \"text\": \"...\"} with some text".to_owned());
            }
        }
    }
    Ok(())
}
