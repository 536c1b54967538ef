//! Form-mode elicitation: typed forms and server-side validation of the
//! answers against the schema that was asked (ELIC-S7, SECURITY.md §3.8).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_proto::finish::encoded_len;

/// A Rust type that form-mode elicitation can ask for.
///
/// Derive it with `#[derive(ElicitForm)]`; the derive refuses at compile
/// time any shape form mode cannot express (nested objects, arrays other
/// than multi-select enums). Implement it by hand only for schemas built at
/// run time.
pub trait ElicitForm: DeserializeOwned + Send + 'static {
    /// The restricted schema: `{"type":"object","properties":{…},
    /// "required":[…]}` with primitive properties only (DIGEST §5.1). It
    /// must be the same on every call: the framework builds it once per type.
    fn requested_schema() -> Value;

    /// The schema built, checked and compiled once for the type. The derive
    /// keeps it in a static of the type; by hand it is registered by type.
    #[doc(hidden)]
    fn __typed() -> &'static crate::ask::TypedSchema
    where
        Self: Sized,
    {
        crate::ask::TypedSchema::registered::<Self>()
    }
}

/// Keywords a restricted property schema may use (DIGEST §5.1). Anything
/// else is refused when the schema is built, so validation never depends on
/// keywords a client may ignore (SECURITY.md §3.8).
const PROPERTY_KEYWORDS: &[&str] = &[
    "type",
    "title",
    "description",
    "minLength",
    "maxLength",
    "format",
    "default",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
    "oneOf",
    "items",
    "minItems",
    "maxItems",
];

/// Checks that a schema is a flat form schema as form mode allows.
pub fn check_form_schema(schema: &Value) -> Result<(), String> {
    let obj = schema
        .as_object()
        .ok_or("a form schema must be an object")?;
    if obj.get("type") != Some(&json!("object")) {
        return Err("a form schema must have type \"object\"".into());
    }
    let props = obj
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("a form schema needs a properties object")?;
    for (name, p) in props {
        let p = p
            .as_object()
            .ok_or_else(|| format!("property {name} must be an object"))?;
        for k in p.keys() {
            if !PROPERTY_KEYWORDS.contains(&k.as_str()) {
                return Err(format!(
                    "property {name}: keyword {k} is not allowed in form mode"
                ));
            }
        }
        match p.get("type").and_then(Value::as_str) {
            Some("string" | "number" | "integer" | "boolean") => {}
            Some("array") if p.contains_key("items") => {}
            _ => {
                return Err(format!(
                    "property {name}: form mode allows only primitive types and multi-select enums"
                ));
            }
        }
    }
    Ok(())
}

/// A structural hash of a JSON value, allocation-free: the validator cache
/// is looked up on every accepted form, and printing the schema to a string
/// for a key was a tenth of a round.
fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for i in items {
                hash_value(i, h);
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            for (k, i) in map {
                k.hash(h);
                hash_value(i, h);
            }
        }
    }
}

type ValidatorCache = HashMap<u64, Vec<(Value, Arc<jsonschema::Validator>)>>;

/// Schemas kept compiled, at most; forms from code are a handful.
const CACHED_SCHEMAS: usize = 1024;

/// A schema larger than this as JSON is compiled for its answer and not
/// kept: a handler building forms from run-time data, or an upstream whose
/// questions a proxy relays, could otherwise park [`CACHED_SCHEMAS`] schemas
/// of a whole message each in the process (a form from code is a few
/// hundred bytes).
const MAX_CACHED_SCHEMA_BYTES: usize = 16 * 1024;

/// Compiled validators of run-time schemas, by structural hash.
static CACHE: OnceLock<Mutex<ValidatorCache>> = OnceLock::new();

/// Compiles a form schema's validator (formats checked).
pub(crate) fn compile(schema: &Value) -> Result<Arc<jsonschema::Validator>, McpError> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map(Arc::new)
        .map_err(|e| McpError::Internal(format!("form schema does not compile: {e}")))
}

fn validator(schema: &Value) -> Result<Arc<jsonschema::Validator>, McpError> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hash_value(schema, &mut hasher);
    let key = hasher.finish();
    let cache = CACHE.get_or_init(Default::default);
    // Equal hashes are confirmed by comparing the schemas themselves.
    if let Some((_, v)) = cache
        .lock()
        .map_err(|_| McpError::Internal("validator cache poisoned".into()))?
        .get(&key)
        .and_then(|entries| entries.iter().find(|(s, _)| s == schema))
    {
        return Ok(v.clone());
    }
    let v = compile(schema)?;
    if let Ok(mut c) = cache.lock() {
        // Forms come from code, so the set of schemas is small; the
        // bounds keep run-time schemas from growing it without end.
        if c.len() < CACHED_SCHEMAS && encoded_len(schema) <= MAX_CACHED_SCHEMA_BYTES {
            let entries = c.entry(key).or_default();
            if !entries.iter().any(|(s, _)| s == schema) {
                entries.push((schema.clone(), v.clone()));
            }
        }
    }
    Ok(v)
}

/// Validates accepted form content against the schema that was asked and
/// returns it with unknown properties removed (SECURITY.md §3.8). A
/// violation is -32602 naming the key, the JSON pointer and the rule
/// (MRTR-E-A2).
pub fn validate_content(
    key: &str,
    schema: &Value,
    content: &Value,
) -> Result<Map<String, Value>, McpError> {
    validate_with(key, schema, content, None)
}

/// [`validate_content`] with the schema's validator when the caller keeps
/// it (a typed form does), so the schema is not hashed and compared with
/// the cache's on every answer.
pub(crate) fn validate_with(
    key: &str,
    schema: &Value,
    content: &Value,
    known: Option<Arc<jsonschema::Validator>>,
) -> Result<Map<String, Value>, McpError> {
    let invalid = |pointer: String, rule: String, message: String| McpError::InvalidParams {
        message,
        data: Some(json!({"key": key, "pointer": pointer, "rule": rule})),
    };
    let Value::Object(content) = content else {
        return Err(invalid(
            String::new(),
            "type".into(),
            format!("inputResponses.{key}: accepted content must be an object"),
        ));
    };
    let named = schema.get("properties").and_then(Value::as_object);
    let kept: Map<String, Value> = content
        .iter()
        .filter(|(k, _)| named.is_some_and(|n| n.contains_key(*k)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let instance = Value::Object(kept);
    let v = match known {
        Some(v) => v,
        None => validator(schema)?,
    };
    if let Some(err) = v.iter_errors(&instance).next() {
        let rule = err
            .schema_path()
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_owned();
        return Err(invalid(
            err.instance_path().as_str().to_owned(),
            rule,
            format!("inputResponses.{key}: {err}"),
        ));
    }
    match instance {
        Value::Object(kept) => Ok(kept),
        _ => Err(McpError::Internal("form content lost its shape".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(schema: &Value) -> bool {
        CACHE.get().is_some_and(|c| {
            c.lock()
                .unwrap()
                .values()
                .any(|entries| entries.iter().any(|(s, _)| s == schema))
        })
    }

    #[test]
    fn only_schemas_of_a_form_s_size_are_kept_compiled() {
        let small = json!({"type": "object",
            "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
        let ok = validate_content("k", &small, &json!({"ok": true})).unwrap();
        assert_eq!(Value::Object(ok), json!({"ok": true}));
        assert!(cached(&small));
        // 2,000 choices: a whole schema's worth of run-time data, checked
        // as any other and compiled for each answer, never parked.
        let choices: Vec<String> = (0..2_000).map(|n| format!("choice-{n:05}")).collect();
        let big = json!({"type": "object",
            "properties": {"pick": {"type": "string", "enum": choices}}});
        assert!(encoded_len(&big) > MAX_CACHED_SCHEMA_BYTES);
        for _ in 0..2 {
            let ok = validate_content("k", &big, &json!({"pick": "choice-01999"})).unwrap();
            assert_eq!(Value::Object(ok), json!({"pick": "choice-01999"}));
            assert!(!cached(&big));
        }
        let e = validate_content("k", &big, &json!({"pick": "choice-02000"})).unwrap_err();
        assert_eq!(e.code(), tern_types::ErrorCode::INVALID_PARAMS, "{e}");
    }
}
