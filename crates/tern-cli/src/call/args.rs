//! The words of `tern call`: the operation (`tool NAME`, `prompt NAME`,
//! `read URI`) and its `key=value`, `key:=JSON` and `--args` arguments.

use serde_json::Value;

/// What `tern call` was asked to do.
#[derive(Debug)]
pub(super) enum What {
    Tool(String, Vec<(String, Arg)>),
    Prompt(String, Vec<(String, Arg)>),
    Read(String),
}

/// One argument from the command line.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Arg {
    /// `key=value`: coerced by the schema.
    Text(String),
    /// `key:=JSON` (or a member of `--args`): taken as it is.
    Json(Value),
}

/// One `key=value` or `key:=JSON` word.
pub(super) fn parse_pair(kv: &str) -> Result<(String, Arg), String> {
    let (k, v) = kv
        .split_once('=')
        .filter(|(k, _)| !k.is_empty() && *k != ":")
        .ok_or_else(|| format!("expected key=value or key:=JSON, found {kv:?}"))?;
    match k.strip_suffix(':') {
        Some(k) => serde_json::from_str(v)
            .map(|j| (k.to_owned(), Arg::Json(j)))
            .map_err(|e| format!("argument {k}: {v:?} is not JSON: {e}")),
        None => Ok((k.to_owned(), Arg::Text(v.to_owned()))),
    }
}

/// `--args JSON`: an object of arguments, before the `key=value` words.
pub(super) fn parse_args_json(text: &str) -> Result<Vec<(String, Arg)>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m.into_iter().map(|(k, v)| (k, Arg::Json(v))).collect()),
        Ok(_) => Err("--args must be a JSON object".to_owned()),
        Err(e) => Err(format!("--args is not JSON: {e}")),
    }
}

/// Splits WHAT into the operation and its `key=value` pairs.
pub(super) fn parse_what(words: &[String]) -> Result<What, String> {
    let [kind, name, rest @ ..] = words else {
        return Err("expected `tool NAME`, `prompt NAME` or `read URI`".to_owned());
    };
    let pairs = || {
        rest.iter()
            .map(|kv| parse_pair(kv))
            .collect::<Result<Vec<_>, String>>()
    };
    match kind.as_str() {
        "tool" => Ok(What::Tool(name.clone(), pairs()?)),
        "prompt" => Ok(What::Prompt(name.clone(), pairs()?)),
        "read" if rest.is_empty() => Ok(What::Read(name.clone())),
        "read" => Err("`read URI` takes no key=value arguments".to_owned()),
        other => Err(format!(
            "unknown {other:?}: expected `tool NAME`, `prompt NAME` or `read URI`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_is_parsed() {
        let w = |s: &[&str]| parse_what(&s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>());
        assert!(matches!(
            w(&["tool", "echo", "text=hi"]),
            Ok(What::Tool(..))
        ));
        assert!(matches!(w(&["read", "config://secret"]), Ok(What::Read(_))));
        assert!(w(&["tool", "echo", "oops"]).is_err());
        assert!(w(&["read", "x", "a=b"]).is_err());
        assert!(w(&["frob", "x"]).is_err());
        assert!(w(&["tool", "x", "k:=nope"]).is_err());
        assert_eq!(
            parse_pair("k:=[1,2]").unwrap(),
            ("k".to_owned(), Arg::Json(json!([1, 2])))
        );
        assert_eq!(
            parse_pair("k=a=b").unwrap(),
            ("k".to_owned(), Arg::Text("a=b".to_owned()))
        );
    }
}
