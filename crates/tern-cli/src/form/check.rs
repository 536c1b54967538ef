//! The checks of a form's answer against its schema (ELIC-C6), shared by
//! the person's typing, scripted answers and `--yes`: types, lengths,
//! formats, ranges, choices, required fields.

use serde_json::Number;
use tern::types::{
    ElicitValue, ElicitationSchema, NumberType, PrimitiveSchemaDefinition as Field, StringFormat,
};

use super::{Values, is_required, raw_options};

/// Parses typed text for a string or number field, checking its
/// constraints (ELIC-C6).
pub(super) fn parse_text(
    field: &Field,
    required: bool,
    input: &str,
) -> Result<Option<ElicitValue>, String> {
    if input.is_empty() {
        return if required {
            Err("this field is required".to_owned())
        } else {
            Ok(None)
        };
    }
    let value = match field {
        Field::Number(n) => {
            let num = match n.number_type {
                NumberType::Integer => input
                    .trim()
                    .parse::<i64>()
                    .map(Number::from)
                    .map_err(|_| "enter a whole number".to_owned())?,
                NumberType::Number => match input.trim().parse::<i64>() {
                    Ok(i) => Number::from(i),
                    Err(_) => input
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .and_then(Number::from_f64)
                        .ok_or("enter a number")?,
                },
            };
            ElicitValue::Number(num)
        }
        _ => ElicitValue::String(input.to_owned()),
    };
    check_value(field, &value)?;
    Ok(Some(value))
}

/// Checks one value against its field (ELIC-C6).
pub(crate) fn check_value(field: &Field, value: &ElicitValue) -> Result<(), String> {
    match (field, value) {
        (Field::String(s), ElicitValue::String(v)) => {
            let n = v.chars().count() as u64;
            if let Some(m) = s.min_length
                && n < m
            {
                return Err(format!("at least {m} characters, please ({n} now)"));
            }
            if let Some(m) = s.max_length
                && n > m
            {
                return Err(format!("at most {m} characters, please ({n} now)"));
            }
            if let Some(f) = s.format
                && !format_ok(f, v)
            {
                return Err(format!("not a valid {}", format_name(f)));
            }
            Ok(())
        }
        (Field::Number(s), ElicitValue::Number(v)) => {
            let x = v.as_f64().unwrap_or(f64::NAN);
            if s.number_type == NumberType::Integer && !(v.is_i64() || v.is_u64()) {
                return Err("a whole number is needed".to_owned());
            }
            if let Some(m) = s.minimum.as_ref().and_then(Number::as_f64)
                && x < m
            {
                return Err(format!("must be at least {m}"));
            }
            if let Some(m) = s.maximum.as_ref().and_then(Number::as_f64)
                && x > m
            {
                return Err(format!("must be at most {m}"));
            }
            Ok(())
        }
        (Field::Boolean(_), ElicitValue::Bool(_)) => Ok(()),
        (
            Field::UntitledSingleSelect(_)
            | Field::TitledSingleSelect(_)
            | Field::LegacyTitledEnum(_),
            ElicitValue::String(v),
        ) => {
            if raw_options(field).iter().any(|(o, _)| o == v) {
                Ok(())
            } else {
                Err(format!("{v:?} is not one of the choices"))
            }
        }
        (
            Field::UntitledMultiSelect(_) | Field::TitledMultiSelect(_),
            ElicitValue::StringArray(a),
        ) => {
            let opts = raw_options(field);
            if let Some(bad) = a.iter().find(|v| !opts.iter().any(|(o, _)| o == *v)) {
                return Err(format!("{bad:?} is not one of the choices"));
            }
            let (min, max) = match field {
                Field::UntitledMultiSelect(s) => (s.min_items, s.max_items),
                Field::TitledMultiSelect(s) => (s.min_items, s.max_items),
                _ => (None, None),
            };
            let n = a.len() as u64;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(format!("{n} choices is outside the allowed count"));
            }
            Ok(())
        }
        _ => Err("the value has the wrong type for this field".to_owned()),
    }
}

/// Whether `v` has string format `f` (a light check: the server
/// validates too, ELIC-S7).
fn format_ok(f: StringFormat, v: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let date = |s: &str| {
        let p: Vec<&str> = s.split('-').collect();
        p.len() == 3
            && p[0].len() == 4
            && p[1].len() == 2
            && p[2].len() == 2
            && p.iter().all(|x| digits(x))
            && (1..=12).contains(&p[1].parse::<u32>().unwrap_or(0))
            && (1..=31).contains(&p[2].parse::<u32>().unwrap_or(0))
    };
    match f {
        StringFormat::Email => v.split_once('@').is_some_and(|(a, d)| {
            !a.is_empty()
                && d.contains('.')
                && !d.starts_with('.')
                && !d.ends_with('.')
                && !v.contains(char::is_whitespace)
        }),
        StringFormat::Uri => reqwest::Url::parse(v).is_ok(),
        StringFormat::Date => date(v),
        StringFormat::DateTime => {
            let Some((d, t)) = v.split_once(['T', 't']) else {
                return false;
            };
            let hms = t.get(..8).unwrap_or("");
            let zone = t.get(8..).unwrap_or("");
            let zone = zone.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
            date(d)
                && hms.len() == 8
                && hms.split(':').count() == 3
                && hms.split(':').all(digits)
                && (zone.eq_ignore_ascii_case("z")
                    || ((zone.starts_with('+') || zone.starts_with('-')) && zone.len() == 6))
        }
    }
}

/// Checks a whole scripted answer against the form (ELIC-C6): required
/// fields present, no unknown fields, every value valid.
pub(crate) fn check_content(schema: &ElicitationSchema, content: &Values) -> Result<(), String> {
    for name in schema.required.iter().flatten() {
        if !content.contains_key(name) {
            return Err(format!("the required field {name:?} is missing"));
        }
    }
    for (name, value) in content {
        let field = schema
            .properties
            .get(name)
            .ok_or_else(|| format!("the form has no field {name:?}"))?;
        check_value(field, value).map_err(|e| format!("field {name:?}: {e}"))?;
    }
    Ok(())
}

/// What `--yes` answers: every default, required booleans true; a required
/// field with neither is refused.
pub(crate) fn yes_content(schema: &ElicitationSchema) -> Result<Values, String> {
    let mut out = Values::new();
    for (name, field) in &schema.properties {
        let default = match field {
            Field::String(s) => s.default.clone().map(ElicitValue::String),
            Field::Number(s) => s.default.clone().map(ElicitValue::Number),
            Field::Boolean(s) => s.default.map(ElicitValue::Bool),
            Field::UntitledSingleSelect(s) => s.default.clone().map(ElicitValue::String),
            Field::TitledSingleSelect(s) => s.default.clone().map(ElicitValue::String),
            Field::LegacyTitledEnum(s) => s.default.clone().map(ElicitValue::String),
            Field::UntitledMultiSelect(s) => s.default.clone().map(ElicitValue::StringArray),
            Field::TitledMultiSelect(s) => s.default.clone().map(ElicitValue::StringArray),
        };
        let required = is_required(schema, name);
        match (default, field) {
            (Some(v), _) => {
                out.insert(name.clone(), v);
            }
            (None, Field::Boolean(_)) if required => {
                out.insert(name.clone(), ElicitValue::Bool(true));
            }
            (None, _) if required => {
                return Err(format!(
                    "--yes cannot fill the required field {name:?}, which has no default: give it in --answers"
                ));
            }
            (None, _) => {}
        }
    }
    check_content(schema, &out)?;
    Ok(out)
}

/// A string format in words.
pub(super) fn format_name(f: StringFormat) -> &'static str {
    match f {
        StringFormat::Email => "e-mail address",
        StringFormat::Uri => "URI",
        StringFormat::Date => "date (YYYY-MM-DD)",
        StringFormat::DateTime => "date-time (RFC 3339)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: serde_json::Value) -> ElicitationSchema {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn yes_fills_defaults_and_required_booleans_only() {
        let s = schema(serde_json::json!({"type": "object", "properties": {
            "ok": {"type": "boolean"},
            "env": {"type": "string", "enum": ["a", "b"], "default": "b"},
            "note": {"type": "string"}
        }, "required": ["ok"]}));
        let v = yes_content(&s).unwrap();
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            serde_json::json!({"ok": true, "env": "b"})
        );
        let s = schema(serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string"}
        }, "required": ["name"]}));
        assert!(yes_content(&s).unwrap_err().contains("name"));
    }

    #[test]
    fn scripted_answers_are_checked_against_the_schema() {
        let s = schema(serde_json::json!({"type": "object", "properties": {
            "email": {"type": "string", "format": "email", "maxLength": 20},
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 1}
        }, "required": ["email"]}));
        let ok = |v: serde_json::Value| check_content(&s, &serde_json::from_value(v).unwrap());
        assert!(ok(serde_json::json!({"email": "a@b.example", "n": 3, "tags": ["x"]})).is_ok());
        assert!(ok(serde_json::json!({"n": 3})).is_err());
        assert!(ok(serde_json::json!({"email": "nope"})).is_err());
        assert!(ok(serde_json::json!({"email": "a@b.example", "n": 9})).is_err());
        assert!(ok(serde_json::json!({"email": "a@b.example", "n": 2.5})).is_err());
        assert!(ok(serde_json::json!({"email": "a@b.example", "tags": ["x", "y"]})).is_err());
        assert!(ok(serde_json::json!({"email": "a@b.example", "other": 1})).is_err());
    }

    #[test]
    fn formats() {
        assert!(format_ok(StringFormat::Date, "2026-07-28"));
        assert!(!format_ok(StringFormat::Date, "2026-13-01"));
        assert!(format_ok(StringFormat::DateTime, "2026-07-28T10:00:00Z"));
        assert!(format_ok(
            StringFormat::DateTime,
            "2026-07-28T10:00:00.5+02:00"
        ));
        assert!(!format_ok(StringFormat::DateTime, "2026-07-28 10:00"));
        assert!(format_ok(StringFormat::Uri, "https://example.com/x"));
        assert!(!format_ok(StringFormat::Email, "a b@c.d"));
    }
}
