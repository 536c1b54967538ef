//! serde's `rename_all` rules, copied in behaviour from serde_derive so the
//! names in the schema are exactly the keys serde deserialises.

/// One `rename_all` style.
#[derive(Clone, Copy)]
pub(crate) enum Rule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl Rule {
    /// The rule for a `rename_all` value, as serde spells them.
    pub(crate) fn parse(s: &str) -> Option<Rule> {
        Some(match s {
            "lowercase" => Rule::Lower,
            "UPPERCASE" => Rule::Upper,
            "PascalCase" => Rule::Pascal,
            "camelCase" => Rule::Camel,
            "snake_case" => Rule::Snake,
            "SCREAMING_SNAKE_CASE" => Rule::ScreamingSnake,
            "kebab-case" => Rule::Kebab,
            "SCREAMING-KEBAB-CASE" => Rule::ScreamingKebab,
            _ => return None,
        })
    }

    /// Renames a field (a snake_case identifier).
    pub(crate) fn field(self, field: &str) -> String {
        match self {
            Rule::Lower | Rule::Snake => field.to_owned(),
            Rule::Upper | Rule::ScreamingSnake => field.to_ascii_uppercase(),
            Rule::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            Rule::Camel => lower_first(&Rule::Pascal.field(field)),
            Rule::Kebab => field.replace('_', "-"),
            Rule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// Renames a variant (a PascalCase identifier).
    pub(crate) fn variant(self, variant: &str) -> String {
        match self {
            Rule::Pascal => variant.to_owned(),
            Rule::Lower => variant.to_ascii_lowercase(),
            Rule::Upper => variant.to_ascii_uppercase(),
            Rule::Camel => lower_first(variant),
            Rule::Snake => {
                let mut out = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        out.push('_');
                    }
                    out.push(ch.to_ascii_lowercase());
                }
                out
            }
            Rule::ScreamingSnake => Rule::Snake.variant(variant).to_ascii_uppercase(),
            Rule::Kebab => Rule::Snake.variant(variant).replace('_', "-"),
            Rule::ScreamingKebab => Rule::ScreamingSnake.variant(variant).replace('_', "-"),
        }
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    #[test]
    fn fields_follow_serde() {
        let f = "first_name";
        let cases = [
            ("lowercase", "first_name"),
            ("UPPERCASE", "FIRST_NAME"),
            ("PascalCase", "FirstName"),
            ("camelCase", "firstName"),
            ("snake_case", "first_name"),
            ("SCREAMING_SNAKE_CASE", "FIRST_NAME"),
            ("kebab-case", "first-name"),
            ("SCREAMING-KEBAB-CASE", "FIRST-NAME"),
        ];
        for (rule, want) in cases {
            assert_eq!(
                Rule::parse(rule).map(|r| r.field(f)).as_deref(),
                Some(want),
                "{rule}"
            );
        }
    }

    #[test]
    fn variants_follow_serde() {
        let v = "DarkMode";
        let cases = [
            ("lowercase", "darkmode"),
            ("UPPERCASE", "DARKMODE"),
            ("PascalCase", "DarkMode"),
            ("camelCase", "darkMode"),
            ("snake_case", "dark_mode"),
            ("SCREAMING_SNAKE_CASE", "DARK_MODE"),
            ("kebab-case", "dark-mode"),
            ("SCREAMING-KEBAB-CASE", "DARK-MODE"),
        ];
        for (rule, want) in cases {
            assert_eq!(
                Rule::parse(rule).map(|r| r.variant(v)).as_deref(),
                Some(want),
                "{rule}"
            );
        }
    }

    #[test]
    fn unknown_rule_is_refused() {
        assert!(Rule::parse("Title Case").is_none());
    }
}
