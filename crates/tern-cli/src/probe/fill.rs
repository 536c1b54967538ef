//! Arguments the probe makes up for a tool's required parameters from its
//! `inputSchema` (TOOL-4: any JSON Schema 2020-12 keyword may appear), so
//! that a tool which takes arguments has a flow to probe. The smallest
//! value each schema allows is built, then the whole is checked against the
//! schema itself before anything is sent: a schema the probe cannot
//! satisfy is reported with the reason, never guessed at.

use serde_json::{Map, Value, json};

/// How deeply a made-up value may nest. A deeper schema (or a `$ref` cycle
/// through required properties) is one the probe cannot satisfy.
pub(super) const FILL_DEPTH: usize = 32;

/// Schemas the probe may visit per byte of `--max-fill-bytes` while it
/// looks for a value: alternatives that fail deep down (an `anyOf` of
/// `$ref`s back to itself) would otherwise take exponential time.
pub(super) const STEPS_PER_BYTE: usize = 4;

/// Arguments for a tool whose `inputSchema` is `schema`: its required
/// properties, each with the smallest value its schema allows, at most
/// `max_bytes` of JSON in all (`--max-fill-bytes`), found within
/// [`STEPS_PER_BYTE`] × `max_bytes` steps. Made-up strings carry
/// `token`, unique to the run, so a tool keyed on its arguments (a one-time
/// code) meets a value it has not seen before. `Err` says why no value
/// fits.
pub(super) fn arguments(
    schema: &Value,
    token: &str,
    max_bytes: usize,
) -> Result<Map<String, Value>, String> {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| format!("its inputSchema does not compile: {}", clip(&e.to_string())))?;
    let mut f = Filler {
        root: schema,
        token,
        max: max_bytes,
        left: max_bytes,
        steps: max_bytes.saturating_mul(STEPS_PER_BYTE),
    };
    let value = f.value(schema, 0)?;
    if !value.is_object() {
        return Err(format!(
            "its inputSchema describes {}, not an object (TOOL-4)",
            clip(&value.to_string())
        ));
    }
    let text = value.to_string();
    if text.len() > max_bytes {
        return Err(f.too_big());
    }
    if let Some(e) = validator.iter_errors(&value).next() {
        return Err(format!(
            "the arguments the probe made up, {}, do not satisfy its inputSchema: {}",
            clip(&text),
            clip(&e.to_string())
        ));
    }
    match value {
        Value::Object(args) => Ok(args),
        _ => Err("not an object".to_owned()),
    }
}

/// `s`, cut to a length a report line can hold.
fn clip(s: &str) -> String {
    const MAX: usize = 160;
    if s.chars().count() <= MAX {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(MAX).collect();
    out.push('…');
    out
}

/// Builds values for one schema document.
struct Filler<'a> {
    /// The whole schema, where local `$ref`s point.
    root: &'a Value,
    token: &'a str,
    max: usize,
    /// Bytes the value may still take (counted as it is built, so a
    /// schema asking for a huge value stops early).
    left: usize,
    /// Schemas it may still visit.
    steps: usize,
}

impl Filler<'_> {
    fn too_big(&self) -> String {
        format!(
            "it asks for more than {} bytes of made-up arguments (--max-fill-bytes)",
            self.max
        )
    }

    /// Counts `n` bytes against the budget.
    fn spend_bytes(&mut self, n: usize) -> Result<(), String> {
        self.left = self.left.checked_sub(n).ok_or_else(|| self.too_big())?;
        Ok(())
    }

    /// `v`, counted against the budget.
    fn spend(&mut self, v: Value) -> Result<Value, String> {
        self.spend_bytes(v.to_string().len())?;
        Ok(v)
    }

    /// The smallest value `schema` allows.
    fn value(&mut self, schema: &Value, depth: usize) -> Result<Value, String> {
        if depth > FILL_DEPTH {
            return Err(format!("it nests deeper than {FILL_DEPTH} levels"));
        }
        self.steps = self.steps.checked_sub(1).ok_or_else(|| {
            format!(
                "no value found within {} steps (--max-fill-bytes)",
                self.max.saturating_mul(STEPS_PER_BYTE)
            )
        })?;
        let obj = match schema {
            Value::Bool(true) => return self.string(&Map::new()),
            Value::Bool(false) => return Err("its schema is false: no value is valid".to_owned()),
            Value::Object(o) => o,
            _ => return Err("it is not a JSON Schema".to_owned()),
        };
        if obj.contains_key("$ref") {
            let merged = self.deref(obj)?;
            return self.value(&Value::Object(merged), depth + 1);
        }
        for key in ["const", "default"] {
            if let Some(v) = obj.get(key) {
                return self.spend(v.clone());
            }
        }
        if let Some(v) = obj
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return self.spend(v.clone());
        }
        if let Some(e) = obj.get("enum") {
            return match e.as_array().and_then(|e| e.first()) {
                Some(v) => self.spend(v.clone()),
                None => Err("its enum lists no value".to_owned()),
            };
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
            let mut merged = without(obj, "allOf");
            for sub in all {
                let sub = match sub {
                    Value::Object(s) => self.deref(s)?,
                    Value::Bool(true) => continue,
                    _ => return Err("its allOf holds a schema no value satisfies".to_owned()),
                };
                merged = merge(merged, &sub);
            }
            return self.value(&Value::Object(merged), depth + 1);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alts) = obj.get(key).and_then(Value::as_array) {
                return self.first_fitting(obj, key, alts, depth);
            }
        }
        match kind(obj) {
            "null" => Ok(Value::Null),
            "boolean" => self.spend(Value::Bool(false)),
            "integer" => self.spend(number(obj, true)?),
            "number" => self.spend(number(obj, false)?),
            "array" => self.array(obj, depth),
            "object" => self.object(obj, depth),
            _ => self.string(obj),
        }
    }

    /// The first alternative of `anyOf`/`oneOf` that yields a value (with
    /// the schema's other keywords), non-null ones first.
    fn first_fitting(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        alts: &[Value],
        depth: usize,
    ) -> Result<Value, String> {
        let base = without(obj, key);
        let null = |a: &&Value| a.get("type").and_then(Value::as_str) == Some("null");
        let mut last = format!("its {key} lists no alternative");
        for alt in alts
            .iter()
            .filter(|a| !null(a))
            .chain(alts.iter().filter(null))
        {
            let left = self.left;
            let schema = match alt {
                Value::Object(a) => Value::Object(merge(base.clone(), a)),
                other => other.clone(),
            };
            match self.value(&schema, depth + 1) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    self.left = left;
                    last = e;
                }
            }
        }
        Err(last)
    }

    /// `obj` with its `$ref` replaced by what it points at (local
    /// references only: the probe fetches nothing a schema names).
    fn deref(&self, obj: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        let Some(r) = obj.get("$ref") else {
            return Ok(obj.clone());
        };
        let target = r
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.root.pointer(pointer))
            .ok_or_else(|| {
                format!(
                    "it refers to {}, which the probe does not follow",
                    clip(&r.to_string())
                )
            })?;
        match target {
            Value::Object(t) => Ok(merge(without(obj, "$ref"), t)),
            Value::Bool(true) => Ok(without(obj, "$ref")),
            _ => Err("its $ref points at a schema no value satisfies".to_owned()),
        }
    }

    /// A string: from its pattern or format when it has one, else one
    /// carrying the run's token, within its length bounds.
    fn string(&mut self, obj: &Map<String, Value>) -> Result<Value, String> {
        let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = obj.get("maxLength").and_then(Value::as_u64);
        if let Some(m) = max
            && min > m
        {
            return Err(format!("its minLength {min} is above its maxLength {m}"));
        }
        if !usize::try_from(min).is_ok_and(|m| m <= self.left) {
            return Err(self.too_big());
        }
        let shaped = match (obj.get("pattern").and_then(Value::as_str), format_of(obj)) {
            (Some(p), _) => Some(super::pattern::matching(p, self.left)?),
            (None, Some(f)) => formatted(f, self.token),
            (None, None) => None,
        };
        let fits = |s: &str| {
            let n = s.chars().count() as u64;
            n >= min && max.is_none_or(|m| n <= m)
        };
        let s = match shaped {
            Some(s) if fits(&s) => s,
            Some(_) => {
                return Err(format!(
                    "its pattern or format leaves no value within {min} to {} characters",
                    max.map_or("any".to_owned(), |m| m.to_string())
                ));
            }
            None => {
                let mut s = format!("tern-probe-{}", self.token);
                if max.is_some_and(|m| (s.len() as u64) > m) {
                    s = self.token.to_owned();
                }
                let have = s.len() as u64;
                s.extend(std::iter::repeat_n(
                    'x',
                    usize::try_from(min.saturating_sub(have)).unwrap_or(0),
                ));
                s.chars()
                    .take(max.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX)))
                    .collect()
            }
        };
        self.spend(Value::String(s))
    }

    /// An array of its least number of items (one when it allows that).
    fn array(&mut self, obj: &Map<String, Value>, depth: usize) -> Result<Value, String> {
        let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = obj.get("maxItems").and_then(Value::as_u64);
        if let Some(m) = max
            && min > m
        {
            return Err(format!("its minItems {min} is above its maxItems {m}"));
        }
        let n = max.map_or(min.max(1), |m| min.max(1).min(m));
        let n = usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.left)
            .ok_or_else(|| self.too_big())?;
        let prefix = obj
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let rest = obj.get("items").unwrap_or(&Value::Bool(true));
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            let schema = prefix.get(i).unwrap_or(rest);
            if *schema == Value::Bool(false) && (i as u64) >= min {
                break;
            }
            self.spend_bytes(1)?;
            items.push(
                self.value(schema, depth + 1)
                    .map_err(|e| format!("item {i}: {e}"))?,
            );
        }
        self.spend_bytes(2)?;
        Ok(Value::Array(items))
    }

    /// An object of its required properties (and more when
    /// `minProperties` asks).
    fn object(&mut self, obj: &Map<String, Value>, depth: usize) -> Result<Value, String> {
        let empty = Map::new();
        let props = obj
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let extra = obj
            .get("additionalProperties")
            .unwrap_or(&Value::Bool(true));
        let mut names: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let want = obj
            .get("minProperties")
            .and_then(Value::as_u64)
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        for name in props.keys() {
            if names.len() >= want {
                break;
            }
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        if names.len() < want {
            return Err(format!(
                "its minProperties {want} asks for properties it does not name"
            ));
        }
        let mut out = Map::new();
        for name in names {
            if out.contains_key(&name) {
                continue;
            }
            self.spend_bytes(name.len() + 4)?;
            let schema = props.get(&name).unwrap_or(extra);
            let v = self
                .value(schema, depth + 1)
                .map_err(|e| format!("{name}: {e}"))?;
            out.insert(name, v);
        }
        self.spend_bytes(2)?;
        Ok(Value::Object(out))
    }
}

/// The type a schema asks for: its `type` (the first that is not null),
/// else what its keywords imply, else a string.
fn kind(obj: &Map<String, Value>) -> &str {
    match obj.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or_else(|| ts.iter().filter_map(Value::as_str).next())
            .unwrap_or("string"),
        _ => {
            let has = |keys: &[&str]| keys.iter().any(|k| obj.contains_key(*k));
            if has(&[
                "properties",
                "required",
                "additionalProperties",
                "minProperties",
            ]) {
                "object"
            } else if has(&["items", "prefixItems", "minItems", "maxItems"]) {
                "array"
            } else if has(&[
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
            ]) {
                "number"
            } else {
                "string"
            }
        }
    }
}

fn format_of(obj: &Map<String, Value>) -> Option<&str> {
    obj.get("format").and_then(Value::as_str)
}

/// A value of a string format; `None` for a format the probe does not know
/// (validators ignore those too).
fn formatted(format: &str, token: &str) -> Option<String> {
    Some(match format {
        "email" | "idn-email" => format!("probe-{token}@example.com"),
        "uri" | "iri" | "url" => format!("https://example.com/tern-probe/{token}"),
        "uri-reference" | "iri-reference" => format!("/tern-probe/{token}"),
        "uri-template" => "https://example.com/{id}".to_owned(),
        "hostname" | "idn-hostname" => "example.com".to_owned(),
        "ipv4" => "127.0.0.1".to_owned(),
        "ipv6" => "::1".to_owned(),
        "date" => "2026-01-01".to_owned(),
        "date-time" => "2026-01-01T00:00:00Z".to_owned(),
        "time" => "00:00:00Z".to_owned(),
        "duration" => "P1D".to_owned(),
        "uuid" => format!("{token:0>8.8}-0000-4000-8000-000000000000"),
        "regex" => ".*".to_owned(),
        "json-pointer" => "/tern-probe".to_owned(),
        "relative-json-pointer" => "0".to_owned(),
        _ => return None,
    })
}

/// The number nearest 1 within the schema's bounds (and a multiple of its
/// `multipleOf`).
fn number(obj: &Map<String, Value>, integer: bool) -> Result<Value, String> {
    let get = |k: &str| obj.get(k).and_then(Value::as_f64);
    let (min, xmin) = (get("minimum"), get("exclusiveMinimum"));
    let (max, xmax) = (get("maximum"), get("exclusiveMaximum"));
    let step = if integer { 1.0 } else { 0.5 };
    let lo = match (min, xmin) {
        (Some(m), Some(x)) => Some(m.max(x + step)),
        (Some(m), None) => Some(m),
        (None, Some(x)) => Some(if integer { x.floor() + 1.0 } else { x + step }),
        (None, None) => None,
    };
    let hi = match (max, xmax) {
        (Some(m), Some(x)) => Some(m.min(x - step)),
        (Some(m), None) => Some(m),
        (None, Some(x)) => Some(if integer { x.ceil() - 1.0 } else { x - step }),
        (None, None) => None,
    };
    let mut c: f64 = 1.0;
    if let Some(l) = lo
        && c < l
    {
        c = l;
    }
    if let Some(h) = hi
        && c > h
    {
        c = h;
    }
    if integer {
        c = c.ceil();
    }
    if let Some(m) = get("multipleOf").filter(|m| *m > 0.0) {
        c = (c / m).ceil() * m;
    }
    let within = lo.is_none_or(|l| c >= l) && hi.is_none_or(|h| c <= h) && c.is_finite();
    if !within || (integer && c.fract() != 0.0) {
        return Err(format!(
            "no {} lies within its bounds",
            if integer { "integer" } else { "number" }
        ));
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "c is integral and within ±2^53, checked just before"
    )]
    let whole = (c.fract() == 0.0 && c.abs() < 9_007_199_254_740_992.0).then_some(c as i64);
    Ok(whole.map_or_else(|| json!(c), |i| json!(i)))
}

/// `obj` without `key`.
fn without(obj: &Map<String, Value>, key: &str) -> Map<String, Value> {
    let mut m = obj.clone();
    m.remove(key);
    m
}

/// `base` with `sub`'s keywords added: `properties` and `required` are
/// joined, any other keyword `base` already has stays.
fn merge(mut base: Map<String, Value>, sub: &Map<String, Value>) -> Map<String, Value> {
    for (k, v) in sub {
        match (k.as_str(), base.get_mut(k), v) {
            ("properties", Some(Value::Object(b)), Value::Object(s)) => {
                for (name, schema) in s {
                    b.entry(name.clone()).or_insert_with(|| schema.clone());
                }
            }
            ("required", Some(Value::Array(b)), Value::Array(s)) => {
                for name in s {
                    if !b.contains(name) {
                        b.push(name.clone());
                    }
                }
            }
            (_, None, _) => {
                base.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{FILL_DEPTH, arguments};

    const TOKEN: &str = "0a1b2c3d";

    fn fill(schema: Value) -> Result<Value, String> {
        arguments(&schema, TOKEN, 16 * 1024).map(Value::Object)
    }

    #[test]
    fn required_arguments_get_the_least_their_schema_allows() {
        // The shape schemars gives a Rust argument struct: a $ref into
        // $defs, an unsigned integer, an enum; the optional field is left
        // out.
        let schema = json!({
            "type": "object",
            "properties": {
                "environment": {"type": "string"},
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "region": {"$ref": "#/$defs/Region"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "minItems": 2},
                "note": {"type": ["string", "null"]},
                "dry_run": {"type": "boolean"}
            },
            "required": ["environment", "count", "region", "tags", "dry_run"],
            "$defs": {"Region": {"type": "string", "enum": ["eu", "us"]}}
        });
        assert_eq!(
            fill(schema),
            Ok(json!({
                "environment": "tern-probe-0a1b2c3d",
                "count": 1,
                "region": "eu",
                "tags": ["0a1b", "0a1b"],
                "dry_run": false
            }))
        );
    }

    #[test]
    fn patterns_formats_bounds_and_alternatives_are_met() {
        let schema = json!({
            "type": "object",
            "required": ["code", "email", "id", "at", "port", "ratio", "pick", "both", "padded"],
            "properties": {
                "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
                "email": {"type": "string", "format": "email"},
                "id": {"type": "string", "format": "uuid"},
                "at": {"type": "string", "format": "date-time"},
                "port": {"type": "integer", "minimum": 1024, "maximum": 65535, "multipleOf": 7},
                "ratio": {"type": "number", "exclusiveMaximum": 0.75},
                "pick": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 3}]},
                "both": {"allOf": [
                    {"$ref": "#/$defs/A"},
                    {"type": "object", "properties": {"b": {"const": 2}}, "required": ["b"]}
                ]},
                "padded": {"type": "string", "minLength": 24}
            },
            "$defs": {"A": {"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]}}
        });
        assert_eq!(
            fill(schema),
            Ok(json!({
                "code": "AAA-00",
                "email": "probe-0a1b2c3d@example.com",
                "id": "0a1b2c3d-0000-4000-8000-000000000000",
                "at": "2026-01-01T00:00:00Z",
                "port": 1029,
                "ratio": 0.25,
                "pick": 3,
                "both": {"a": 1, "b": 2},
                "padded": "tern-probe-0a1b2c3dxxxxx"
            }))
        );
    }

    #[test]
    fn a_schema_no_value_satisfies_says_why() {
        let one = |prop: Value| {
            fill(json!({"type": "object", "properties": {"x": prop}, "required": ["x"]}))
        };
        assert_eq!(
            one(json!({"type": "string", "minLength": 5, "maxLength": 2})),
            Err("x: its minLength 5 is above its maxLength 2".to_owned())
        );
        assert_eq!(
            one(json!({"enum": []})),
            Err("x: its enum lists no value".to_owned())
        );
        assert_eq!(
            one(json!({"type": "integer", "exclusiveMinimum": 5, "maximum": 5})),
            Err("x: no integer lies within its bounds".to_owned())
        );
        assert_eq!(
            one(json!({"type": "string", "pattern": "^(?!tern)[a-z]+$"})),
            Err("x: its pattern \"^(?!tern)[a-z]+$\" is one the probe cannot read".to_owned())
        );
        assert_eq!(
            one(json!(false)),
            Err("x: its schema is false: no value is valid".to_owned())
        );
        // What the builder cannot see, the schema's own check catches.
        let not = one(json!({"type": "string", "not": {"type": "string"}})).unwrap_err();
        assert!(
            not.starts_with("the arguments the probe made up, {\"x\":\"tern-probe-0a1b2c3d\"}, do not satisfy its inputSchema: "),
            "{not}"
        );
        // A required property whose schema refers to itself never ends.
        let cycle = fill(json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}}
        }))
        .unwrap_err();
        assert!(
            cycle.ends_with(&format!("it nests deeper than {FILL_DEPTH} levels")),
            "{cycle}"
        );
        // Nothing outside the schema is fetched.
        let remote = one(json!({"$ref": "https://example.com/schema.json"})).unwrap_err();
        assert!(
            remote.starts_with("its inputSchema does not compile: "),
            "{remote}"
        );
        assert_eq!(
            fill(json!({"type": "string"})),
            Err(
                "its inputSchema describes \"tern-probe-0a1b2c3d\", not an object (TOOL-4)"
                    .to_owned()
            )
        );
    }

    #[test]
    fn made_up_arguments_stay_within_the_byte_budget() {
        let too_big = Err(
            "x: it asks for more than 1024 bytes of made-up arguments (--max-fill-bytes)"
                .to_owned(),
        );
        let one = |prop: Value| {
            arguments(
                &json!({"type": "object", "properties": {"x": prop}, "required": ["x"]}),
                TOKEN,
                1024,
            )
            .map(Value::Object)
        };
        assert_eq!(one(json!({"type": "string", "minLength": 2000})), too_big);
        assert_eq!(
            one(
                json!({"type": "array", "minItems": 4_000_000_000_u64, "items": {"type": "integer"}})
            ),
            too_big
        );
        // Small items, but many of them nested: stopped as it grows.
        assert_eq!(
            one(json!({"type": "array", "minItems": 40, "items": {"type": "array", "minItems": 40, "items": {"type": "string"}}})),
            Err("x: item 1: item 6: it asks for more than 1024 bytes of made-up arguments (--max-fill-bytes)".to_owned())
        );
        assert_eq!(
            one(json!({"type": "string", "minLength": 1000}))
                .map(|v| v["x"].as_str().unwrap().len()),
            Ok(1000)
        );
    }
}
