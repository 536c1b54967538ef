//! Arguments checked against what the server declares before anything is
//! sent: a tool's `inputSchema` (values coerced by it, unknown and missing
//! names refused, missing ones asked for in a terminal) and a prompt's
//! declared arguments. Every name the server lists is server text: shown
//! through [`safe`](crate::safe), and only a few of them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tern::client::{Client, Error};

use super::Early;
use super::args::Arg;
use crate::discover::MAX_PAGES;
use crate::{provider, safe};

/// Why a tool's schema or a prompt's arguments could not be had.
pub(super) enum Lookup {
    Usage(String),
    Failed(Error),
}

/// A tool's arguments from the words, checked against its `inputSchema`;
/// missing required ones are asked for in a terminal.
pub(super) async fn tool_arguments(
    client: &Client,
    name: &str,
    what: &str,
    mut pairs: Vec<(String, Arg)>,
) -> Result<Map<String, Value>, Early> {
    let schema = tool_schema(client, name)
        .await
        .map_err(|e| Early::lookup(e, what.to_owned()))?;
    let arguments = coerce_args(&schema, &pairs)?;
    let check = check_args(&schema, &arguments);
    if let Some(k) = check.unknown.first() {
        return Err(Early::Usage(format!(
            "the tool {name:?} takes no argument {k:?}; it takes: {}",
            property_names(&schema)
        )));
    }
    let Some(first) = check.missing.first() else {
        return Ok(arguments);
    };
    if !provider::stdin_is_terminal() {
        let first = safe::line(first);
        return Err(Early::Usage(format!(
            "the tool {name:?} needs the argument {first:?} (give {first}=VALUE)"
        )));
    }
    match ask_missing(&schema, check.missing).await {
        Ok(more) => pairs.extend(more),
        Err(e) if e == provider::INTERRUPTED => return Err(Early::Interrupted),
        Err(e) => return Err(Early::Usage(e)),
    }
    Ok(coerce_args(&schema, &pairs)?)
}

/// A prompt's arguments from the words: only those it declares, and every
/// required one.
pub(super) fn check_prompt_args(
    name: &str,
    declared: &[tern::types::PromptArgument],
    pairs: Vec<(String, Arg)>,
) -> Result<BTreeMap<String, String>, Early> {
    let mut arguments = BTreeMap::new();
    for (k, v) in pairs {
        if !declared.iter().any(|a| a.name == k) {
            let names: Vec<&str> = declared.iter().map(|a| a.name.as_str()).collect();
            return Err(Early::Usage(format!(
                "the prompt {name:?} takes no argument {k:?}; it takes: {}",
                safe::names(&names)
            )));
        }
        let text = match v {
            Arg::Text(t) | Arg::Json(Value::String(t)) => t,
            Arg::Json(j) => j.to_string(),
        };
        arguments.insert(k, text);
    }
    if let Some(a) = declared
        .iter()
        .find(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
    {
        let missing = safe::line(&a.name);
        return Err(Early::Usage(format!(
            "the prompt {name:?} needs the argument {missing:?} (give {missing}=VALUE)"
        )));
    }
    Ok(arguments)
}

/// The names of a list, as many as a message shows, and how many there
/// are: a server that lists a million holds no more memory than a page.
#[derive(Default)]
struct Seen {
    first: Vec<String>,
    total: usize,
}

impl Seen {
    fn push(&mut self, name: String) {
        self.total += 1;
        if self.first.len() < safe::MAX_NAMES_LISTED {
            self.first.push(name);
        }
    }

    fn shown(&self) -> String {
        let mut s = safe::names(&self.first);
        if self.total > self.first.len() {
            s = format!("{s}, and {} more", self.total - self.first.len());
        }
        s
    }
}

/// The prompt's declared arguments, from `prompts/list` (every page, at
/// most [`MAX_PAGES`]).
pub(super) async fn prompt_arguments(
    client: &Client,
    name: &str,
) -> Result<Vec<tern::types::PromptArgument>, Lookup> {
    let mut cursor: Option<String> = None;
    let mut seen = Seen::default();
    for _ in 0..MAX_PAGES {
        let page = client
            .list_prompts(cursor.as_deref())
            .await
            .map_err(Lookup::Failed)?;
        for p in page.prompts {
            if p.name == name {
                return Ok(p.arguments.unwrap_or_default());
            }
            seen.push(p.name);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    Err(Lookup::Usage(format!(
        "the server has no prompt {name:?}; it has: {}",
        seen.shown()
    )))
}

/// The tool's `inputSchema`, from `tools/list` (every page, at most
/// [`MAX_PAGES`]).
async fn tool_schema(client: &Client, name: &str) -> Result<Map<String, Value>, Lookup> {
    let mut cursor: Option<String> = None;
    let mut seen = Seen::default();
    for _ in 0..MAX_PAGES {
        let page = client
            .list_tools(cursor.as_deref())
            .await
            .map_err(Lookup::Failed)?;
        for t in page.tools {
            if t.name == name {
                return Ok(t.input_schema);
            }
            seen.push(t.name);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    Err(Lookup::Usage(format!(
        "the server has no tool {name:?}; it has: {}",
        seen.shown()
    )))
}

/// Coerces `key=value` arguments by the tool's `inputSchema`: integer,
/// number, boolean, string, or JSON for objects and arrays; `key:=JSON` is
/// taken as it is. A later word wins over an earlier one.
pub(super) fn coerce_args(
    schema: &Map<String, Value>,
    pairs: &[(String, Arg)],
) -> Result<Map<String, Value>, String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for (key, arg) in pairs {
        let v = match arg {
            Arg::Text(raw) => coerce(key, raw, props.and_then(|p| p.get(key)))?,
            Arg::Json(v) => v.clone(),
        };
        out.insert(key.clone(), v);
    }
    Ok(out)
}

/// What the arguments lack or have too many of, by the tool's
/// `inputSchema`: names not among its properties (unless it allows more),
/// then required ones missing.
pub(super) struct ArgCheck {
    pub(super) unknown: Vec<String>,
    pub(super) missing: Vec<String>,
}

pub(super) fn check_args(schema: &Map<String, Value>, args: &Map<String, Value>) -> ArgCheck {
    let props = schema.get("properties").and_then(Value::as_object);
    let open =
        !matches!(schema.get("additionalProperties"), Some(Value::Bool(false))) && props.is_none();
    let unknown = args
        .keys()
        .filter(|k| !open && !props.is_some_and(|p| p.contains_key(k.as_str())))
        .cloned()
        .collect();
    let missing = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|k| !args.contains_key(*k))
        .map(str::to_owned)
        .collect();
    ArgCheck { unknown, missing }
}

/// The property names a schema lists, for messages.
fn property_names(schema: &Map<String, Value>) -> String {
    let names: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    safe::names(&names)
}

/// Asks the person for each missing required argument, coerced like a
/// `key=value` word. Ctrl-C or Esc ends the call. The names, types and
/// descriptions are the server's, shown safe.
async fn ask_missing(
    schema: &Map<String, Value>,
    missing: Vec<String>,
) -> Result<Vec<(String, Arg)>, String> {
    let props = schema.get("properties").and_then(Value::as_object).cloned();
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        for key in missing {
            let prop = props.as_ref().and_then(|p| p.get(&key));
            let kind = prop
                .and_then(|p| p.get("type"))
                .map(|t| t.to_string().replace('"', ""))
                .unwrap_or_else(|| "value".to_owned());
            let label = safe::line(&format!("{key} ({kind}, required):"));
            let help = prop
                .and_then(|p| p.get("description"))
                .and_then(Value::as_str)
                .map(safe::line);
            let mut q = inquire::Text::new(&label);
            if let Some(h) = &help {
                q = q.with_help_message(h);
            }
            match q.prompt() {
                Ok(v) => out.push((key, Arg::Text(v))),
                Err(inquire::InquireError::OperationInterrupted) => {
                    return Err(provider::INTERRUPTED.to_owned());
                }
                Err(e) => {
                    return Err(format!("argument {} was not given: {e}", safe::line(&key)));
                }
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// One value by its property schema; strings are tried last.
fn coerce(key: &str, raw: &str, prop: Option<&Value>) -> Result<Value, String> {
    let mut types: Vec<&str> = match prop.and_then(|p| p.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return Ok(Value::String(raw.to_owned()));
    }
    // Strings take anything: try them last.
    types.sort_by_key(|t| *t == "string");
    for t in &types {
        let v = match *t {
            "null" if raw == "null" => Some(Value::Null),
            "integer" => raw.trim().parse::<i64>().ok().map(Value::from),
            "number" => serde_json::from_str::<serde_json::Number>(raw.trim())
                .ok()
                .map(Value::Number),
            "boolean" => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Some(Value::Bool(true)),
                "false" | "no" | "0" => Some(Value::Bool(false)),
                _ => None,
            },
            "object" => serde_json::from_str::<Value>(raw)
                .ok()
                .filter(Value::is_object),
            "array" => serde_json::from_str::<Value>(raw)
                .ok()
                .filter(Value::is_array),
            "string" => Some(Value::String(raw.to_owned())),
            _ => None,
        };
        if let Some(v) = v {
            return Ok(v);
        }
    }
    Err(format!(
        "argument {key}: {raw:?} is not a {} (JSON for objects and arrays)",
        safe::line(&types.join(" or "))
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::args::parse_pair;
    use super::*;

    #[test]
    fn values_follow_the_schema() {
        let schema = json!({"properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "o": {"type": "object"}, "a": {"type": "array"},
            "u": {"type": ["integer", "string"]}
        }});
        let pairs: Vec<(String, Arg)> = [
            ("n", "5"),
            ("x", "2.5"),
            ("b", "yes"),
            ("s", "5"),
            ("o", r#"{"k":1}"#),
            ("a", "[1,2]"),
            ("u", "abc"),
            ("free", "7"),
        ]
        .iter()
        .map(|(k, v)| parse_pair(&format!("{k}={v}")).unwrap())
        .chain([parse_pair(r#"j:={"x":[1]}"#).unwrap()])
        .collect();
        let out = coerce_args(schema.as_object().unwrap(), &pairs).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"n": 5, "x": 2.5, "b": true, "s": "5", "o": {"k": 1}, "a": [1, 2], "u": "abc", "free": "7", "j": {"x": [1]}})
        );
        let bad = vec![("n".to_owned(), Arg::Text("five".to_owned()))];
        assert!(coerce_args(schema.as_object().unwrap(), &bad).is_err());
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]});
        let schema = schema.as_object().unwrap();
        let c = check_args(schema, json!({"b": 1, "zz": 2}).as_object().unwrap());
        assert_eq!(c.unknown, ["zz"]);
        assert_eq!(c.missing, ["a"]);
        let open = json!({"type": "object"});
        let c = check_args(
            open.as_object().unwrap(),
            json!({"any": 1}).as_object().unwrap(),
        );
        assert!(c.unknown.is_empty() && c.missing.is_empty());
    }

    #[test]
    fn a_long_list_of_names_is_cut() {
        let mut seen = Seen::default();
        for i in 0..1000 {
            seen.push(format!("t{i}\x1b"));
        }
        assert_eq!(seen.first.len(), safe::MAX_NAMES_LISTED);
        let shown = seen.shown();
        assert!(shown.starts_with("t0\\u{1b}, t1\\u{1b}"), "{shown}");
        assert!(shown.ends_with("t19\\u{1b}, and 980 more"), "{shown}");
    }
}
