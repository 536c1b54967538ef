//! A string that matches a JSON Schema `pattern`: the regular expression's
//! shortest path, taking the first choice at every branch and a readable
//! character from every class.

use regex_syntax::hir::{Class, Hir, HirKind};

/// A string `pattern` matches (a JSON Schema pattern is unanchored, so a
/// whole string built from it matches), at most `max` bytes long; `Err`
/// says why there is none the probe can make.
pub(super) fn matching(pattern: &str, max: usize) -> Result<String, String> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|_| format!("its pattern {pattern:?} is one the probe cannot read"))?;
    let mut w = Walk {
        out: String::new(),
        max,
        // Every step either writes or leads to one that does, except in a
        // repetition of the empty string: fuel bounds those too.
        fuel: max.saturating_mul(4).saturating_add(1024),
    };
    w.walk(&hir).ok_or_else(|| {
        format!("the probe finds no string its pattern {pattern:?} matches within {max} bytes")
    })?;
    Ok(w.out)
}

/// The string being built and what it may still take.
struct Walk {
    out: String,
    max: usize,
    fuel: usize,
}

impl Walk {
    /// Appends the shortest match of `hir`; `None` when there is none (an
    /// empty class) or it would pass `max` bytes or the fuel.
    fn walk(&mut self, hir: &Hir) -> Option<()> {
        self.fuel = self.fuel.checked_sub(1)?;
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(lit) => self.out.push_str(std::str::from_utf8(&lit.0).ok()?),
            HirKind::Class(class) => self.out.push(pick(class)?),
            HirKind::Repetition(rep) => {
                for _ in 0..rep.min {
                    self.walk(&rep.sub)?;
                }
            }
            HirKind::Capture(cap) => self.walk(&cap.sub)?,
            HirKind::Concat(subs) => {
                for sub in subs {
                    self.walk(sub)?;
                }
            }
            HirKind::Alternation(subs) => self.walk(subs.first()?)?,
        }
        (self.out.len() <= self.max).then_some(())
    }
}

/// A character of `class`: a letter or digit when it has one, else a
/// printable ASCII character, else its first.
fn pick(class: &Class) -> Option<char> {
    let chars: Vec<(char, char)> = match class {
        Class::Unicode(c) => c.ranges().iter().map(|r| (r.start(), r.end())).collect(),
        Class::Bytes(c) => c
            .ranges()
            .iter()
            .filter(|r| r.start().is_ascii())
            .map(|r| (char::from(r.start()), char::from(r.end().min(0x7f))))
            .collect(),
    };
    let within = |want: fn(&char) -> bool| {
        chars
            .iter()
            .find_map(|&(lo, hi)| (lo..=hi.min('\u{7f}')).find(want))
    };
    within(char::is_ascii_alphanumeric)
        .or_else(|| within(char::is_ascii_graphic))
        .or_else(|| chars.first().map(|&(lo, _)| lo))
}

#[cfg(test)]
mod tests {
    use super::matching;

    #[test]
    fn patterns_get_a_matching_string() {
        for (pattern, want) in [
            ("^[0-9]{4}-[A-Z]{2}$", "0000-AA"),
            ("^[a-z]+(-[a-z]+)*$", "a"),
            (r"^\d{3}$", "000"),
            ("^(prod|staging)$", "prod"),
            (r"^[^/]+\.txt$", "0.txt"),
            ("abc", "abc"),
            (r"^\w+@\w+\.com$", "0@0.com"),
        ] {
            assert_eq!(matching(pattern, 64).as_deref(), Ok(want), "{pattern}");
        }
    }

    #[test]
    fn patterns_it_cannot_satisfy_say_so() {
        // Look-around is not a regular language the probe walks.
        assert_eq!(
            matching("^(?=a)a$", 64),
            Err("its pattern \"^(?=a)a$\" is one the probe cannot read".to_owned())
        );
        // An empty class matches nothing.
        assert!(matching("^[^\\s\\S]$", 64).is_err());
        // Longer than allowed, even nested, and endless repetitions of
        // nothing.
        assert!(matching("^(a{100}){100}$", 4096).is_err());
        assert_eq!(
            matching("^(?:a?){4000000000}$", 4096),
            Err("the probe finds no string its pattern \"^(?:a?){4000000000}$\" matches within 4096 bytes".to_owned())
        );
        assert_eq!(matching("^a{100}$", 100).map(|s| s.len()), Ok(100));
    }
}
