//! RFC 6570 URI templates, levels 1 to 3, read in reverse: the pieces of
//! a template and where each expression's text ends in a URI
//! ([`crate::registry::TemplateDef`] matches a `resources/read` URI with
//! them).

use std::collections::HashMap;

/// A piece of a URI template.
pub(crate) enum Part<'t> {
    Literal(&'t str),
    /// An expression: its operator (`\0` for none) and variable names.
    Expr {
        op: char,
        names: Vec<&'t str>,
    },
}

pub(crate) fn template_parts(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut tpl = template;
    while !tpl.is_empty() {
        if let Some(after) = tpl.strip_prefix('{') {
            let end = after.find('}')?;
            let body = &after[..end];
            let (op, list) = match body.chars().next() {
                Some(c @ ('+' | '#' | '/' | '.' | ';' | '?' | '&')) => (c, &body[1..]),
                _ => ('\0', body),
            };
            let names: Vec<&str> = list
                .split(',')
                .map(|v| v.split([':', '*']).next().unwrap_or(v))
                .collect();
            if names.iter().any(|n| n.is_empty()) {
                return None;
            }
            parts.push(Part::Expr { op, names });
            tpl = &after[end + 1..];
        } else {
            let len = tpl.find('{').unwrap_or(tpl.len());
            parts.push(Part::Literal(&tpl[..len]));
            tpl = &tpl[len..];
        }
    }
    Some(parts)
}

/// Where an expression's text ends in `rest`: at the next literal, at the
/// character that opens the next expression, or at the end.
pub(crate) fn expression_end(rest: &str, op: char, next: Option<&Part<'_>>) -> Option<usize> {
    let limit = match next {
        None => rest.len(),
        Some(Part::Literal(lit)) => {
            // An optional query may be absent: the literal can come first.
            if matches!(op, '?' | '&') && rest.starts_with(lit) {
                return Some(0);
            }
            rest.find(lit)?
        }
        Some(Part::Expr { op: next_op, .. }) => match next_op {
            '\0' | '+' => rest.len(),
            c => rest.find(*c).unwrap_or(rest.len()),
        },
    };
    // Simple values never span `/`, `?` or `#` (a segment's, label's or
    // parameter's are checked when read; reserved ones may hold them).
    if op == '\0' {
        return Some(rest[..limit].find(['/', '?', '#']).unwrap_or(limit));
    }
    Some(limit)
}

pub(crate) fn read_expression(
    op: char,
    names: &[&str],
    text: &str,
    vars: &mut HashMap<String, String>,
) -> Option<()> {
    let mut put = |name: &str, value: &str| {
        vars.insert(name.to_owned(), value.to_owned());
    };
    match op {
        '\0' | '+' | '#' => {
            let text = if op == '#' {
                text.strip_prefix('#')?
            } else {
                text
            };
            if text.is_empty() {
                return None;
            }
            // Several names share the text, comma-separated (RFC 6570
            // §3.2.2); with one name, a comma is part of its value.
            if names.len() == 1 {
                put(names[0], text);
            } else {
                let values: Vec<&str> = text.split(',').collect();
                if values.len() != names.len() || values.iter().any(|v| v.is_empty()) {
                    return None;
                }
                names.iter().zip(values).for_each(|(n, v)| put(n, v));
            }
        }
        '/' | '.' => {
            let body = text.strip_prefix(op)?;
            let values: Vec<&str> = body.split(op).collect();
            if values.len() != names.len() || values.iter().any(|v| v.is_empty() || v.contains('/'))
            {
                return None;
            }
            names.iter().zip(values).for_each(|(n, v)| put(n, v));
        }
        ';' | '?' | '&' => {
            if text.is_empty() && op != ';' {
                return Some(());
            }
            let body = text.strip_prefix(op)?;
            let sep = if op == ';' { ';' } else { '&' };
            for pair in body.split(sep) {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                if !names.contains(&name) || value.contains(['/', '#']) {
                    return None;
                }
                put(name, value);
            }
        }
        _ => return None,
    }
    Some(())
}
