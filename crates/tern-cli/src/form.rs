//! Forms and consent dialogs in the terminal (DIGEST §5.1), and the checks
//! shared with scripted answers.
//!
//! A form is filled field by field from `requestedSchema`: defaults
//! pre-filled (ELIC-C5), enums as selects with their titles, multi-selects,
//! and the schema's constraints checked as each field is entered (ELIC-C6).
//! It opens with the server's name and a choice to answer, decline or
//! cancel, and ends on a review screen where any field can be edited before
//! submitting (ELIC-C9). The dialogs block: callers run them on a blocking
//! thread, one at a time.

use std::collections::BTreeMap;

use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use serde_json::Number;
use tern::types::{
    ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue, ElicitationSchema,
    NumberType, PrimitiveSchemaDefinition as Field, StringFormat,
};

use crate::ui::{bold, dim, highlight};

/// Why a dialog stopped without an answer.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The person pressed Esc: the form is dismissed (`cancel`).
    Dismissed,
    /// Ctrl-C, or the terminal failed: end the call locally.
    Abort(String),
}

impl From<InquireError> for Stop {
    fn from(e: InquireError) -> Self {
        match e {
            InquireError::OperationCanceled => Stop::Dismissed,
            InquireError::OperationInterrupted => {
                Stop::Abort(crate::provider::INTERRUPTED.to_owned())
            }
            other => Stop::Abort(format!("the terminal failed: {other}")),
        }
    }
}

/// The header every dialog starts with: who asks, and under which key
/// (ELIC-C9).
pub(crate) fn header(kind: &str, server: &str, key: &str) {
    eprintln!();
    eprintln!(
        "{} {} {}",
        bold("┌─"),
        highlight(server),
        bold(&format!("asks: {kind}"))
    );
    eprintln!("{} {}", bold("│"), dim(&format!("input key {key}")));
}

/// A form's values by field name.
type Values = BTreeMap<String, ElicitValue>;

/// Shows a form and returns the person's answer (ELIC-C9).
pub(crate) fn ask_form(
    server: &str,
    key: &str,
    params: &ElicitRequestFormParams,
) -> Result<ElicitResult, Stop> {
    header("a form", server, key);
    for line in params.message.lines() {
        eprintln!("{} {}", bold("│"), line);
    }
    let schema = &params.requested_schema;
    // A form of one yes/no field is answered in one step.
    if let [(name, field @ Field::Boolean(_))] = schema.properties.iter().collect::<Vec<_>>()[..] {
        let label = label(name, field);
        let yes = format!("Yes: {label}");
        let no = format!("No: {label}");
        let choice = Select::new(
            "Your choice:",
            vec![yes.as_str(), no.as_str(), "Decline", "Cancel"],
        )
        .with_help_message("↑↓ to move, Enter to choose, Esc to cancel")
        .prompt();
        let answer = |v: bool| ElicitResult {
            action: ElicitAction::Accept,
            content: Some(Values::from([(name.clone(), ElicitValue::Bool(v))])),
        };
        return match choice {
            Ok(c) if c == yes => Ok(answer(true)),
            Ok(c) if c == no => Ok(answer(false)),
            Ok("Decline") => Ok(ElicitResult::new(ElicitAction::Decline)),
            Ok(_) | Err(InquireError::OperationCanceled) => {
                Ok(ElicitResult::new(ElicitAction::Cancel))
            }
            Err(e) => Err(e.into()),
        };
    }
    let first = Select::new("Your choice:", vec!["Answer the form", "Decline", "Cancel"])
        .with_help_message("↑↓ to move, Enter to choose, Esc to cancel")
        .prompt();
    match first {
        Ok("Answer the form") => {}
        Ok("Decline") => return Ok(ElicitResult::new(ElicitAction::Decline)),
        Ok(_) | Err(InquireError::OperationCanceled) => {
            return Ok(ElicitResult::new(ElicitAction::Cancel));
        }
        Err(e) => return Err(e.into()),
    }
    let mut values = Values::new();
    for (name, field) in &schema.properties {
        match ask_field(name, field, is_required(schema, name), None) {
            Ok(Some(v)) => {
                values.insert(name.clone(), v);
            }
            Ok(None) => {}
            Err(Stop::Dismissed) => return Ok(ElicitResult::new(ElicitAction::Cancel)),
            Err(e) => return Err(e),
        }
    }
    loop {
        eprintln!(
            "{} {}",
            bold("│"),
            bold("Review your answer before it is sent:")
        );
        for (name, field) in &schema.properties {
            let shown = values
                .get(name)
                .map_or_else(|| dim("(empty)"), |v| show_value(field, v));
            eprintln!("{}   {}: {shown}", bold("│"), label(name, field));
        }
        let choice = Select::new(
            "Send it?",
            vec!["Submit (accept)", "Edit a field", "Decline", "Cancel"],
        )
        .prompt();
        match choice {
            Ok("Submit (accept)") => {
                return Ok(ElicitResult {
                    action: ElicitAction::Accept,
                    content: Some(values),
                });
            }
            Ok("Edit a field") => {
                let names: Vec<String> = schema.properties.keys().cloned().collect();
                let pick = match Select::new("Which field?", names).prompt() {
                    Ok(p) => p,
                    Err(InquireError::OperationCanceled) => continue,
                    Err(e) => return Err(e.into()),
                };
                let Some(field) = schema.properties.get(&pick) else {
                    continue;
                };
                match ask_field(&pick, field, is_required(schema, &pick), values.get(&pick)) {
                    Ok(Some(v)) => {
                        values.insert(pick, v);
                    }
                    Ok(None) => {
                        values.remove(&pick);
                    }
                    Err(Stop::Dismissed) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok("Decline") => return Ok(ElicitResult::new(ElicitAction::Decline)),
            Ok(_) | Err(InquireError::OperationCanceled) => {
                return Ok(ElicitResult::new(ElicitAction::Cancel));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether the form requires `name`.
fn is_required(schema: &ElicitationSchema, name: &str) -> bool {
    schema
        .required
        .as_ref()
        .is_some_and(|r| r.iter().any(|n| n == name))
}

/// A field's `title`.
fn title_of(field: &Field) -> Option<&str> {
    match field {
        Field::String(s) => s.title.as_deref(),
        Field::Number(s) => s.title.as_deref(),
        Field::Boolean(s) => s.title.as_deref(),
        Field::UntitledSingleSelect(s) => s.title.as_deref(),
        Field::TitledSingleSelect(s) => s.title.as_deref(),
        Field::UntitledMultiSelect(s) => s.title.as_deref(),
        Field::TitledMultiSelect(s) => s.title.as_deref(),
        Field::LegacyTitledEnum(s) => s.title.as_deref(),
    }
}

/// A field's `description`.
fn description_of(field: &Field) -> Option<&str> {
    match field {
        Field::String(s) => s.description.as_deref(),
        Field::Number(s) => s.description.as_deref(),
        Field::Boolean(s) => s.description.as_deref(),
        Field::UntitledSingleSelect(s) => s.description.as_deref(),
        Field::TitledSingleSelect(s) => s.description.as_deref(),
        Field::UntitledMultiSelect(s) => s.description.as_deref(),
        Field::TitledMultiSelect(s) => s.description.as_deref(),
        Field::LegacyTitledEnum(s) => s.description.as_deref(),
    }
}

/// The field's title; else a short description (servers often describe a
/// field in one line and give no title); else its name.
fn label(name: &str, field: &Field) -> String {
    let short = description_of(field).filter(|d| !d.is_empty() && d.chars().count() <= 60);
    match title_of(field).or(short) {
        Some(t) if t != name => format!("{t} ({name})"),
        _ => name.to_owned(),
    }
}

/// The options of a select: `(value, shown)`.
fn options(field: &Field) -> Vec<(String, String)> {
    match field {
        Field::UntitledSingleSelect(s) => s.values.iter().map(|v| (v.clone(), v.clone())).collect(),
        Field::TitledSingleSelect(s) => s
            .one_of
            .iter()
            .map(|o| (o.value.clone(), o.title.clone()))
            .collect(),
        Field::LegacyTitledEnum(s) => s
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let title = s
                    .enum_names
                    .as_ref()
                    .and_then(|n| n.get(i))
                    .cloned()
                    .unwrap_or_else(|| v.clone());
                (v.clone(), title)
            })
            .collect(),
        Field::UntitledMultiSelect(s) => s
            .items
            .values
            .iter()
            .map(|v| (v.clone(), v.clone()))
            .collect(),
        Field::TitledMultiSelect(s) => s
            .items
            .any_of
            .iter()
            .map(|o| (o.value.clone(), o.title.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// A value as the review screen shows it (titles for choices).
fn show_value(field: &Field, v: &ElicitValue) -> String {
    let opts = options(field);
    let title = |x: &str| {
        opts.iter()
            .find(|(v, _)| v == x)
            .map_or_else(|| x.to_owned(), |(_, t)| t.clone())
    };
    match v {
        ElicitValue::String(s) if !opts.is_empty() => title(s),
        ElicitValue::String(s) => format!("{s:?}"),
        ElicitValue::Number(n) => n.to_string(),
        ElicitValue::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        ElicitValue::StringArray(a) => a.iter().map(|x| title(x)).collect::<Vec<_>>().join(", "),
    }
}

/// What the person is told about a field's constraints.
fn help(field: &Field, required: bool) -> String {
    let mut parts = Vec::new();
    // A description already used as the label is not repeated.
    if let Some(d) =
        description_of(field).filter(|d| title_of(field).is_some() || d.chars().count() > 60)
    {
        parts.push(d.to_owned());
    }
    parts.push(
        if required {
            "required"
        } else {
            "optional: leave empty to skip"
        }
        .to_owned(),
    );
    match field {
        Field::String(s) => {
            match (s.min_length, s.max_length) {
                (Some(a), Some(b)) => parts.push(format!("{a} to {b} characters")),
                (Some(a), None) => parts.push(format!("at least {a} characters")),
                (None, Some(b)) => parts.push(format!("at most {b} characters")),
                (None, None) => {}
            }
            if let Some(f) = s.format {
                parts.push(format!("format: {}", format_name(f)));
            }
        }
        Field::Number(n) => {
            parts.push(match n.number_type {
                NumberType::Integer => "a whole number".to_owned(),
                NumberType::Number => "a number".to_owned(),
            });
            if let Some(m) = &n.minimum {
                parts.push(format!("≥ {m}"));
            }
            if let Some(m) = &n.maximum {
                parts.push(format!("≤ {m}"));
            }
        }
        Field::UntitledMultiSelect(_) | Field::TitledMultiSelect(_) => {
            parts.push("Space to toggle, Enter to confirm".to_owned());
        }
        _ => {}
    }
    parts.join(" · ")
}

/// A string format in words.
fn format_name(f: StringFormat) -> &'static str {
    match f {
        StringFormat::Email => "e-mail address",
        StringFormat::Uri => "URI",
        StringFormat::Date => "date (YYYY-MM-DD)",
        StringFormat::DateTime => "date-time (RFC 3339)",
    }
}

/// Asks one field; `None` leaves an optional field empty.
fn ask_field(
    name: &str,
    field: &Field,
    required: bool,
    current: Option<&ElicitValue>,
) -> Result<Option<ElicitValue>, Stop> {
    let label = format!("{}:", label(name, field));
    let help = help(field, required);
    const EMPTY: &str = "(leave empty)";
    match field {
        Field::String(_) | Field::Number(_) => {
            let initial = match (current, field) {
                (Some(ElicitValue::String(s)), _) => s.clone(),
                (Some(ElicitValue::Number(n)), _) => n.to_string(),
                (_, Field::String(s)) => s.default.clone().unwrap_or_default(),
                (_, Field::Number(n)) => n
                    .default
                    .as_ref()
                    .map(Number::to_string)
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let f = field.clone();
            let validator = move |input: &str| {
                Ok(match parse_text(&f, required, input) {
                    Ok(_) => Validation::Valid,
                    Err(e) => Validation::Invalid(e.into()),
                })
            };
            let text = Text::new(&label)
                .with_initial_value(&initial)
                .with_help_message(&help)
                .with_validator(validator)
                .prompt()?;
            parse_text(field, required, &text).map_err(Stop::Abort)
        }
        Field::Boolean(b) => {
            let start = match current {
                Some(ElicitValue::Bool(v)) => Some(*v),
                _ => b.default,
            };
            if required || start.is_some() {
                let mut c = Confirm::new(&label).with_help_message(&help);
                if let Some(d) = start {
                    c = c.with_default(d);
                }
                Ok(Some(ElicitValue::Bool(c.prompt()?)))
            } else {
                let pick = Select::new(&label, vec!["yes", "no", EMPTY])
                    .with_help_message(&help)
                    .prompt()?;
                Ok(match pick {
                    "yes" => Some(ElicitValue::Bool(true)),
                    "no" => Some(ElicitValue::Bool(false)),
                    _ => None,
                })
            }
        }
        Field::UntitledSingleSelect(_)
        | Field::TitledSingleSelect(_)
        | Field::LegacyTitledEnum(_) => {
            let opts = options(field);
            let default = match (current, field) {
                (Some(ElicitValue::String(s)), _) => Some(s.clone()),
                (_, Field::UntitledSingleSelect(s)) => s.default.clone(),
                (_, Field::TitledSingleSelect(s)) => s.default.clone(),
                (_, Field::LegacyTitledEnum(s)) => s.default.clone(),
                _ => None,
            };
            let mut shown: Vec<String> = opts.iter().map(|(_, t)| t.clone()).collect();
            if !required {
                shown.push(EMPTY.to_owned());
            }
            let cursor = default
                .and_then(|d| opts.iter().position(|(v, _)| *v == d))
                .unwrap_or(0);
            let pick = Select::new(&label, shown)
                .with_help_message(&help)
                .with_starting_cursor(cursor)
                .raw_prompt()?;
            Ok(opts
                .get(pick.index)
                .map(|(v, _)| ElicitValue::String(v.clone())))
        }
        Field::UntitledMultiSelect(_) | Field::TitledMultiSelect(_) => {
            let opts = options(field);
            let (min, max, default) = match field {
                Field::UntitledMultiSelect(s) => (s.min_items, s.max_items, s.default.clone()),
                Field::TitledMultiSelect(s) => (s.min_items, s.max_items, s.default.clone()),
                _ => (None, None, None),
            };
            let chosen = match current {
                Some(ElicitValue::StringArray(a)) => Some(a.clone()),
                _ => default,
            }
            .unwrap_or_default();
            let defaults: Vec<usize> = opts
                .iter()
                .enumerate()
                .filter(|(_, (v, _))| chosen.contains(v))
                .map(|(i, _)| i)
                .collect();
            let shown: Vec<String> = opts.iter().map(|(_, t)| t.clone()).collect();
            let validator = move |picked: &[inquire::list_option::ListOption<&String>]| {
                let n = picked.len() as u64;
                Ok(match (min, max) {
                    (Some(a), _) if n < a => {
                        Validation::Invalid(format!("choose at least {a}").into())
                    }
                    (_, Some(b)) if n > b => {
                        Validation::Invalid(format!("choose at most {b}").into())
                    }
                    _ => Validation::Valid,
                })
            };
            let picked = MultiSelect::new(&label, shown)
                .with_help_message(&help)
                .with_default(&defaults)
                .with_validator(validator)
                .raw_prompt()?;
            if picked.is_empty() && !required {
                return Ok(None);
            }
            Ok(Some(ElicitValue::StringArray(
                picked
                    .iter()
                    .filter_map(|p| opts.get(p.index).map(|(v, _)| v.clone()))
                    .collect(),
            )))
        }
    }
}

/// Parses typed text for a string or number field, checking its
/// constraints (ELIC-C6).
fn parse_text(field: &Field, required: bool, input: &str) -> Result<Option<ElicitValue>, String> {
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
            if options(field).iter().any(|(o, _)| o == v) {
                Ok(())
            } else {
                Err(format!("{v:?} is not one of the choices"))
            }
        }
        (
            Field::UntitledMultiSelect(_) | Field::TitledMultiSelect(_),
            ElicitValue::StringArray(a),
        ) => {
            let opts = options(field);
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

/// A yes/no question with no default: the person must type the answer.
pub(crate) fn confirm(question: &str, default: Option<bool>) -> Result<bool, Stop> {
    // The hint shows from the first question on, default or not.
    let mut c = Confirm::new(question).with_placeholder("y/n");
    if let Some(d) = default {
        c = c.with_default(d);
    }
    Ok(c.prompt()?)
}

/// Free text typed by the person (a reply written in place of a model).
pub(crate) fn text(question: &str, help: &str) -> Result<String, Stop> {
    Ok(Text::new(question).with_help_message(help).prompt()?)
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
