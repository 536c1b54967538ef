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

mod check;

use std::collections::BTreeMap;

use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use serde_json::Number;
use tern::types::{
    ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue, ElicitationSchema,
    NumberType, PrimitiveSchemaDefinition as Field,
};

pub(crate) use self::check::{check_content, yes_content};
use self::check::{format_name, parse_text};
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
