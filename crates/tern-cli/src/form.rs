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

use crate::safe;
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
        highlight(&safe::line(server)),
        bold(&format!("asks: {kind}"))
    );
    eprintln!(
        "{} {}",
        bold("│"),
        dim(&format!("input key {}", safe::line(key)))
    );
}

/// A form's values by field name.
type Values = BTreeMap<String, ElicitValue>;

/// Prints a block of server text inside a dialog: each line after the
/// dialog's bar, made safe and within the display budget.
pub(crate) fn block(text: &str) {
    for line in safe::text(text).lines() {
        eprintln!("{} {}", bold("│"), line);
    }
}

/// Shows a form and returns the person's answer (ELIC-C9).
pub(crate) fn ask_form(
    server: &str,
    key: &str,
    params: &ElicitRequestFormParams,
) -> Result<ElicitResult, Stop> {
    header("a form", server, key);
    block(&params.message);
    let schema = &params.requested_schema;
    // A form of one yes/no field is answered in one step.
    if let [(name, field @ Field::Boolean(_))] = schema.properties.iter().collect::<Vec<_>>()[..] {
        return ask_yes_no(name, field);
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
    review(schema, values)
}

/// A form of one yes/no field: yes, no, decline or cancel in one choice.
fn ask_yes_no(name: &str, field: &Field) -> Result<ElicitResult, Stop> {
    let label = label(name, field);
    let yes = format!("Yes: {label}");
    let no = format!("No: {label}");
    let choice = Select::new(
        "Your choice:",
        vec![yes.as_str(), no.as_str(), "Decline", "Cancel"],
    )
    .with_help_message("↑↓ to move, Enter to choose, Esc to cancel")
    .raw_prompt();
    let answer = |v: bool| ElicitResult {
        action: ElicitAction::Accept,
        content: Some(Values::from([(name.to_owned(), ElicitValue::Bool(v))])),
    };
    match choice {
        Ok(c) if c.index == 0 => Ok(answer(true)),
        Ok(c) if c.index == 1 => Ok(answer(false)),
        Ok(c) if c.index == 2 => Ok(ElicitResult::new(ElicitAction::Decline)),
        Ok(_) | Err(InquireError::OperationCanceled) => Ok(ElicitResult::new(ElicitAction::Cancel)),
        Err(e) => Err(e.into()),
    }
}

/// The review screen (ELIC-C9): every field as it would be sent, then
/// submit, edit a field, decline or cancel.
fn review(schema: &ElicitationSchema, mut values: Values) -> Result<ElicitResult, Stop> {
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
            Ok("Edit a field") => edit_one(schema, &mut values)?,
            Ok("Decline") => return Ok(ElicitResult::new(ElicitAction::Decline)),
            Ok(_) | Err(InquireError::OperationCanceled) => {
                return Ok(ElicitResult::new(ElicitAction::Cancel));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Picks a field and asks it again; Esc leaves the values as they were.
fn edit_one(schema: &ElicitationSchema, values: &mut Values) -> Result<(), Stop> {
    let names: Vec<&String> = schema.properties.keys().collect();
    let shown: Vec<String> = schema
        .properties
        .iter()
        .map(|(name, field)| label(name, field))
        .collect();
    let pick = match Select::new("Which field?", shown).raw_prompt() {
        Ok(p) => p.index,
        Err(InquireError::OperationCanceled) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let Some((name, field)) = names
        .get(pick)
        .and_then(|n| schema.properties.get_key_value(n.as_str()))
    else {
        return Ok(());
    };
    match ask_field(name, field, is_required(schema, name), values.get(name)) {
        Ok(Some(v)) => {
            values.insert(name.clone(), v);
        }
        Ok(None) => {
            values.remove(name);
        }
        Err(Stop::Dismissed) => {}
        Err(e) => return Err(e),
    }
    Ok(())
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
    safe::line(&match title_of(field).or(short) {
        Some(t) if t != name => format!("{t} ({name})"),
        _ => name.to_owned(),
    })
}

/// The options of a select: `(value, shown)`, shown as safe text.
fn options(field: &Field) -> Vec<(String, String)> {
    raw_options(field)
        .into_iter()
        .map(|(v, t)| (v, safe::line(&t)))
        .collect()
}

/// The options of a select: `(value, title)` as the server gave them.
fn raw_options(field: &Field) -> Vec<(String, String)> {
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
            .map_or_else(|| safe::line(x), |(_, t)| t.clone())
    };
    match v {
        ElicitValue::String(s) if !opts.is_empty() => title(s),
        ElicitValue::String(s) => format!("\"{}\"", safe::line(s)),
        ElicitValue::Number(n) => n.to_string(),
        ElicitValue::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        ElicitValue::StringArray(a) => {
            safe::line(&a.iter().map(|x| title(x)).collect::<Vec<_>>().join(", "))
        }
    }
}

/// What the person is told about a field's constraints.
fn help(field: &Field, required: bool) -> String {
    let mut parts = Vec::new();
    // A description already used as the label is not repeated.
    if let Some(d) =
        description_of(field).filter(|d| title_of(field).is_some() || d.chars().count() > 60)
    {
        parts.push(safe::line(d));
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

/// What an optional field offers for "no value".
const EMPTY: &str = "(leave empty)";

/// Asks one field; `None` leaves an optional field empty. The label, help
/// and choices are the server's text, shown safe.
fn ask_field(
    name: &str,
    field: &Field,
    required: bool,
    current: Option<&ElicitValue>,
) -> Result<Option<ElicitValue>, Stop> {
    let label = format!("{}:", label(name, field));
    let help = help(field, required);
    match field {
        Field::String(_) | Field::Number(_) => ask_text(&label, &help, field, required, current),
        Field::Boolean(b) => {
            let start = match current {
                Some(ElicitValue::Bool(v)) => Some(*v),
                _ => b.default,
            };
            ask_bool(&label, &help, required, start)
        }
        Field::UntitledSingleSelect(_)
        | Field::TitledSingleSelect(_)
        | Field::LegacyTitledEnum(_) => ask_select(&label, &help, field, required, current),
        Field::UntitledMultiSelect(_) | Field::TitledMultiSelect(_) => {
            ask_multi(&label, &help, field, required, current)
        }
    }
}

/// A string or number field, typed and checked as it is typed (ELIC-C6).
/// A server's default is pre-filled as safe text: what the person sees is
/// what is sent.
fn ask_text(
    label: &str,
    help: &str,
    field: &Field,
    required: bool,
    current: Option<&ElicitValue>,
) -> Result<Option<ElicitValue>, Stop> {
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
    let initial = safe::line(&initial);
    let f = field.clone();
    let validator = move |input: &str| {
        Ok(match parse_text(&f, required, input) {
            Ok(_) => Validation::Valid,
            Err(e) => Validation::Invalid(e.into()),
        })
    };
    let text = Text::new(label)
        .with_initial_value(&initial)
        .with_help_message(help)
        .with_validator(validator)
        .prompt()?;
    parse_text(field, required, &text).map_err(Stop::Abort)
}

/// A yes/no field: a confirm when it needs an answer or has a default,
/// else yes, no or empty.
fn ask_bool(
    label: &str,
    help: &str,
    required: bool,
    start: Option<bool>,
) -> Result<Option<ElicitValue>, Stop> {
    if required || start.is_some() {
        let mut c = Confirm::new(label).with_help_message(help);
        if let Some(d) = start {
            c = c.with_default(d);
        }
        return Ok(Some(ElicitValue::Bool(c.prompt()?)));
    }
    let pick = Select::new(label, vec!["yes", "no", EMPTY])
        .with_help_message(help)
        .prompt()?;
    Ok(match pick {
        "yes" => Some(ElicitValue::Bool(true)),
        "no" => Some(ElicitValue::Bool(false)),
        _ => None,
    })
}

/// A single-select field, by the titles of its choices; the value sent is
/// the choice's own, found by position.
fn ask_select(
    label: &str,
    help: &str,
    field: &Field,
    required: bool,
    current: Option<&ElicitValue>,
) -> Result<Option<ElicitValue>, Stop> {
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
    let pick = Select::new(label, shown)
        .with_help_message(help)
        .with_starting_cursor(cursor)
        .raw_prompt()?;
    Ok(opts
        .get(pick.index)
        .map(|(v, _)| ElicitValue::String(v.clone())))
}

/// A multi-select field, within its `minItems` and `maxItems`.
fn ask_multi(
    label: &str,
    help: &str,
    field: &Field,
    required: bool,
    current: Option<&ElicitValue>,
) -> Result<Option<ElicitValue>, Stop> {
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
            (Some(a), _) if n < a => Validation::Invalid(format!("choose at least {a}").into()),
            (_, Some(b)) if n > b => Validation::Invalid(format!("choose at most {b}").into()),
            _ => Validation::Valid,
        })
    };
    let picked = MultiSelect::new(label, shown)
        .with_help_message(help)
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
