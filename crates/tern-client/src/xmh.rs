//! `x-mcp-header`: tool arguments mirrored into `Mcp-Param-*` headers
//! (DIGEST §7.3, HTTP-XMH-*; DIGEST §11 A14).

use std::collections::HashSet;

use serde_json::{Map, Value};
use tern_proto::headers::argument_header_value;

use crate::Error;

const KEY: &str = "x-mcp-header";
/// The largest integer magnitude a header may carry (±(2^53−1), A14).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One annotated argument: the header name part and the property path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    pub(crate) header: String,
    pub(crate) path: Vec<String>,
}

/// The annotations of a tool's `inputSchema`, or why they are invalid
/// (HTTP-XMH-2): empty, not an HTTP token, duplicated case-insensitively, on
/// a property whose type is not exactly `string`, `integer` or `boolean`,
/// or reached through anything but `properties`.
pub(crate) fn annotations(schema: &Map<String, Value>) -> Result<Vec<HeaderParam>, String> {
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut out)?;
    // A set, not a comparison with every earlier name: the server picks how
    // many annotations a page carries (a 4 MiB page holds some 75,000), and
    // this runs inside `tools/list`. `walk` let only HTTP tokens through,
    // which are ASCII, so ASCII lowercase is the case-insensitive
    // comparison header names get (HTTP-XMH-2).
    let mut seen = HashSet::with_capacity(out.len());
    for a in &out {
        if !seen.insert(a.header.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} is not unique", a.header));
        }
    }
    Ok(out)
}

fn walk(
    node: &Map<String, Value>,
    path: &mut Vec<String>,
    reachable: bool,
    out: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    if let Some(name) = node.get(KEY) {
        if path.is_empty() || !reachable {
            return Err("x-mcp-header outside a property reached through `properties`".into());
        }
        let Value::String(name) = name else {
            return Err("x-mcp-header must be a string".into());
        };
        if name.is_empty() {
            return Err("x-mcp-header is empty".into());
        }
        if !name.bytes().all(is_tchar) {
            return Err(format!("x-mcp-header {name:?} is not an HTTP token"));
        }
        match node.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            _ => {
                return Err(format!(
                    "x-mcp-header {name:?} sits on a property that is not a string, integer or boolean"
                ));
            }
        }
        out.push(HeaderParam {
            header: name.clone(),
            path: path.clone(),
        });
    }
    for (k, v) in node {
        match (k.as_str(), v) {
            ("properties", Value::Object(props)) => {
                for (name, sub) in props {
                    if let Value::Object(sub) = sub {
                        path.push(name.clone());
                        walk(sub, path, reachable, out)?;
                        path.pop();
                    }
                }
            }
            // Anything else (items, anyOf, $defs, if/then, ...) may hold
            // schemas; an annotation there is invalid.
            (_, Value::Object(sub)) => walk_unreachable(sub)?,
            (_, Value::Array(items)) => {
                for item in items {
                    if let Value::Object(sub) = item {
                        walk_unreachable(sub)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn walk_unreachable(node: &Map<String, Value>) -> Result<(), String> {
    let mut ignored = Vec::new();
    walk(node, &mut vec![String::new()], false, &mut ignored)
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers of one call (HTTP-XMH-C4): the value at each
/// annotated path, encoded (HTTP-C16/C17); null or absent values send no
/// header.
pub(crate) fn param_headers(
    params: &[HeaderParam],
    arguments: Option<&Map<String, Value>>,
) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    let Some(arguments) = arguments else {
        return Ok(out);
    };
    for p in params {
        let mut value = None;
        let mut node = arguments;
        for (i, seg) in p.path.iter().enumerate() {
            match node.get(seg) {
                Some(Value::Object(o)) if i + 1 < p.path.len() => node = o,
                Some(v) if i + 1 == p.path.len() => value = Some(v),
                _ => break,
            }
        }
        let Some(value) = value else { continue };
        if value.is_null() {
            continue;
        }
        if let Some(n) = value.as_i64() {
            if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&n) {
                return Err(Error::usage(format!(
                    "argument for Mcp-Param-{} is outside ±(2^53−1)",
                    p.header
                )));
            }
        } else if value.is_u64() {
            return Err(Error::usage(format!(
                "argument for Mcp-Param-{} is outside ±(2^53−1)",
                p.header
            )));
        }
        let Some(encoded) = argument_header_value(value) else {
            return Err(Error::usage(format!(
                "argument for Mcp-Param-{} is not a string, integer or boolean",
                p.header
            )));
        };
        out.push((p.header.clone(), encoded));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ann(schema: Value) -> Result<Vec<HeaderParam>, String> {
        annotations(schema.as_object().unwrap())
    }

    #[test]
    fn valid_annotations_are_found_through_properties() {
        let a = ann(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {
                "n": {"type": "integer", "x-mcp-header": "N"}}}}}))
        .unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].header, "N");
        assert_eq!(a[0].path, ["nested", "n"]);
        assert_eq!(a[1].path, ["region"]);
    }

    #[test]
    fn invalid_annotations_are_refused() {
        for bad in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "null", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "My Region"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "R:P"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Région"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "R\t1"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                  "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "array", "items":
                {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
        ] {
            assert!(ann(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_name_repeated_in_another_case_is_refused_by_its_later_use() {
        let schema = json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "Zone"},
            "c": {"type": "string", "x-mcp-header": "REGION"},
            "d": {"type": "string", "x-mcp-header": "zone"}}});
        assert_eq!(
            ann(schema).unwrap_err(),
            "x-mcp-header \"REGION\" is not unique"
        );
    }

    #[test]
    fn a_hundred_thousand_annotations_are_checked_with_one_set() {
        let mut props: Map<String, Value> = (0..100_000)
            .map(|i| {
                let p = json!({"type": "integer", "x-mcp-header": format!("H{i}")});
                (format!("p{i:06}"), p)
            })
            .collect();
        let schema = json!({"type": "object", "properties": props.clone()});
        let a = ann(schema).unwrap();
        assert_eq!(a.len(), 100_000);
        assert_eq!(a[0].header, "H0");
        assert_eq!(a[0].path, ["p000000"]);
        assert_eq!(a[99_999].header, "H99999");
        assert_eq!(a[99_999].path, ["p099999"]);
        // The same page with one name repeated at the very end.
        props.insert("q".into(), json!({"type": "boolean", "x-mcp-header": "h0"}));
        let schema = json!({"type": "object", "properties": props});
        assert_eq!(
            ann(schema).unwrap_err(),
            "x-mcp-header \"h0\" is not unique"
        );
    }

    #[test]
    fn headers_follow_the_encoding_rules() {
        let a = ann(json!({"properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "n": {"type": "string", "x-mcp-header": "N"}}}))
        .unwrap();
        let args = json!({"s": "Hello, 世界", "i": 42, "b": false, "n": null});
        let h = param_headers(&a, args.as_object()).unwrap();
        assert_eq!(
            h,
            [
                ("B".to_owned(), "false".to_owned()),
                ("I".to_owned(), "42".to_owned()),
                ("S".to_owned(), "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()),
            ]
        );
        let too_big = json!({"i": 9_007_199_254_740_992_i64});
        assert!(
            param_headers(&a, too_big.as_object())
                .unwrap_err()
                .is_usage()
        );
    }
}
