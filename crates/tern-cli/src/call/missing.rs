//! What a `-32021` asks of `tern call` (META-S10): each client capability
//! or extension the error's `data.requiredCapabilities` names, and the flag
//! that offers it, so that the person reads exactly what to change rather
//! than advice about every kind of input.

use serde_json::Value;
use tern::types::methods::TASKS_EXTENSION;

use crate::safe;

/// The flags of this call that withheld something it could offer: the
/// advice names the one to drop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Withheld {
    /// `--no-tasks`.
    pub(super) tasks: bool,
    /// `--no-elicitation`.
    pub(super) elicitation: bool,
    /// `--form-only` (no URL mode).
    pub(super) url: bool,
    /// `--no-sampling`.
    pub(super) sampling: bool,
    /// `--no-roots`.
    pub(super) roots: bool,
    /// The call went through a 2025-11-25 session, which can take no task
    /// whatever it declares.
    pub(super) session: bool,
}

const SAMPLING: &str = "pass --sampling-cmd COMMAND or --model-url URL (or answer in a terminal)";
const ROOTS: &str = "pass --root DIR to share a directory, or --yes to share the current one (a terminal asks instead)";
const DECLARED: &str = "this call declared it, so the server's error is its own";
const NOT_OFFERED: &str = "tern call does not offer it";

/// One line per capability or extension the server requires: what it is,
/// then how to offer it. `data` is the error's data, `declared` the
/// capabilities this call declared (as JSON). When the data names nothing
/// (no `requiredCapabilities` object, or an empty one), one line says so
/// and names what this call did not offer.
pub(super) fn advice(data: Option<&Value>, declared: &Value, withheld: Withheld) -> Vec<String> {
    let required = data
        .and_then(|d| d.get("requiredCapabilities"))
        .and_then(Value::as_object)
        .filter(|r| !r.is_empty());
    let Some(required) = required else {
        return vec![unnamed(declared, withheld)];
    };
    let has = |key: &str| declared.get(key).is_some();
    let mut lines = Vec::new();
    // In name order, whatever order the server wrote.
    let mut required: Vec<(&String, &Value)> = required.iter().collect();
    required.sort_by_key(|(k, _)| *k);
    for (key, value) in required {
        let (what, how) = match key.as_str() {
            "sampling" => (
                "the sampling capability".to_owned(),
                if withheld.sampling {
                    "drop --no-sampling"
                } else if has("sampling") {
                    DECLARED
                } else {
                    SAMPLING
                },
            ),
            "elicitation" => elicitation(value, declared, withheld),
            "roots" => (
                "the roots capability".to_owned(),
                if withheld.roots {
                    "drop --no-roots (and pass --root DIR or --yes where no terminal asks)"
                } else if has("roots") {
                    DECLARED
                } else {
                    ROOTS
                },
            ),
            "extensions" => {
                let mut exts: Vec<&String> = value
                    .as_object()
                    .into_iter()
                    .flat_map(|e| e.keys())
                    .collect();
                exts.sort();
                for ext in exts {
                    lines.push(extension(ext, declared, withheld));
                }
                continue;
            }
            other => (
                format!("the client capability {}", safe::line(other)),
                NOT_OFFERED,
            ),
        };
        lines.push(format!("the server requires {what}; {how}"));
    }
    if lines.is_empty() {
        lines.push(unnamed(declared, withheld));
    }
    lines
}

/// The elicitation the server requires, by mode (`{"form": {}}`,
/// `{"url": {}}`, or either), and how to offer it.
fn elicitation(value: &Value, declared: &Value, withheld: Withheld) -> (String, &'static str) {
    let wants = |mode: &str| value.get(mode).is_some();
    let what = match (wants("form"), wants("url")) {
        (true, false) => "form-mode elicitation",
        (false, true) => "URL-mode elicitation",
        _ => "the elicitation capability",
    };
    let how = if withheld.elicitation {
        "drop --no-elicitation"
    } else if wants("url") && withheld.url {
        "drop --form-only"
    } else if declared.get("elicitation").is_some() {
        DECLARED
    } else {
        NOT_OFFERED
    };
    (what.to_owned(), how)
}

/// One line about a required extension.
fn extension(ext: &str, declared: &Value, withheld: Withheld) -> String {
    if ext != TASKS_EXTENSION {
        return format!(
            "the server requires the extension {}; {NOT_OFFERED}",
            safe::line(ext)
        );
    }
    let how = if withheld.tasks {
        "drop --no-tasks"
    } else if withheld.session {
        "a 2025-11-25 session cannot take a task: call the server in the 2026-07-28 era (drop --era legacy)"
    } else if declared
        .pointer("/extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
    {
        DECLARED
    } else {
        NOT_OFFERED
    };
    format!("the server requires the tasks extension ({TASKS_EXTENSION}); {how}")
}

/// A `-32021` that names nothing: what this call did not offer, each with
/// its flag.
fn unnamed(declared: &Value, withheld: Withheld) -> String {
    let mut missing = Vec::new();
    if declared.get("sampling").is_none() {
        missing.push(format!(
            "sampling ({})",
            if withheld.sampling {
                "drop --no-sampling"
            } else {
                SAMPLING
            }
        ));
    }
    match declared.get("elicitation") {
        None => missing.push("elicitation (drop --no-elicitation)".to_owned()),
        Some(e) if e.get("url").is_none() => {
            missing.push("URL-mode elicitation (drop --form-only)".to_owned());
        }
        Some(_) => {}
    }
    if declared.get("roots").is_none() {
        missing.push(format!(
            "roots ({})",
            if withheld.roots {
                "drop --no-roots"
            } else {
                ROOTS
            }
        ));
    }
    if declared
        .pointer("/extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_none()
    {
        missing.push(format!(
            "the tasks extension ({TASKS_EXTENSION}; drop --no-tasks)"
        ));
    }
    let offered = if missing.is_empty() {
        "this call offered every kind of input it can and the tasks extension".to_owned()
    } else {
        format!("this call did not offer: {}", missing.join("; "))
    };
    format!(
        "the server requires a client capability or extension its error does not name (no data.requiredCapabilities); {offered}"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lines(data: Value, declared: Value, withheld: Withheld) -> Vec<String> {
        advice(Some(&data), &declared, withheld)
    }

    #[test]
    fn the_tasks_extension_is_named_with_the_flag_that_withheld_it() {
        let data = json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}});
        let no_tasks = Withheld {
            tasks: true,
            ..Withheld::default()
        };
        assert_eq!(
            lines(data.clone(), json!({}), no_tasks),
            [
                "the server requires the tasks extension (io.modelcontextprotocol/tasks); drop --no-tasks"
            ]
        );
        let declared = json!({"extensions": {TASKS_EXTENSION: {}}});
        assert_eq!(
            lines(data.clone(), declared.clone(), Withheld::default()),
            [format!(
                "the server requires the tasks extension (io.modelcontextprotocol/tasks); {DECLARED}"
            )]
        );
        // Declared, but in a 2025-11-25 session, which takes no task.
        let session = Withheld {
            session: true,
            ..Withheld::default()
        };
        assert_eq!(
            lines(data, declared, session),
            [
                "the server requires the tasks extension (io.modelcontextprotocol/tasks); a 2025-11-25 session cannot take a task: call the server in the 2026-07-28 era (drop --era legacy)"
            ]
        );
    }

    #[test]
    fn each_kind_of_input_names_its_own_flag() {
        let all = Withheld {
            tasks: false,
            elicitation: true,
            url: false,
            sampling: true,
            roots: true,
            session: false,
        };
        let data =
            json!({"requiredCapabilities": {"elicitation": {}, "roots": {}, "sampling": {}}});
        assert_eq!(
            lines(data, json!({}), all),
            [
                "the server requires the elicitation capability; drop --no-elicitation",
                "the server requires the roots capability; drop --no-roots (and pass --root DIR or --yes where no terminal asks)",
                "the server requires the sampling capability; drop --no-sampling",
            ]
        );
        let form_only = Withheld {
            url: true,
            ..Withheld::default()
        };
        let data = json!({"requiredCapabilities": {"elicitation": {"url": {}}}});
        assert_eq!(
            lines(data, json!({"elicitation": {"form": {}}}), form_only),
            ["the server requires URL-mode elicitation; drop --form-only"]
        );
        let data = json!({"requiredCapabilities": {"roots": {}}});
        assert_eq!(
            lines(data, json!({}), Withheld::default()),
            [format!("the server requires the roots capability; {ROOTS}")]
        );
    }

    #[test]
    fn what_tern_call_cannot_offer_is_said_and_made_safe() {
        let data = json!({"requiredCapabilities": {"extensions": {"com.example/\u{1b}[2J": {}},
            "experimental": {}}});
        assert_eq!(
            lines(data, json!({}), Withheld::default()),
            [
                "the server requires the client capability experimental; tern call does not offer it",
                "the server requires the extension com.example/\\u{1b}[2J; tern call does not offer it",
            ]
        );
    }

    #[test]
    fn an_error_naming_nothing_lists_what_the_call_did_not_offer() {
        let no_tasks = Withheld {
            tasks: true,
            ..Withheld::default()
        };
        let declared = json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}});
        assert_eq!(
            advice(None, &declared, no_tasks),
            [format!(
                "the server requires a client capability or extension its error does not name (no data.requiredCapabilities); this call did not offer: roots ({ROOTS}); the tasks extension (io.modelcontextprotocol/tasks; drop --no-tasks)"
            )]
        );
    }
}
