//! Text from a server, made safe before a terminal shows it (SECURITY.md
//! §3.10; STYLE.md, "Text from a peer is data, also on a screen").
//!
//! Every string a server chooses (its name, a form's message and fields, a
//! URL, a sampling request, log and progress lines, tool results, error
//! messages, the names it lists) goes through this module on its way to the
//! terminal, whatever prints it. C0 and C1 control characters are shown
//! escaped the way Rust writes them (`\u{1b}`, `\r`), so no escape sequence
//! survives: the ESC that would start one is shown, and what follows it is
//! plain text. The invisible characters that reorder or hide text (bidi
//! overrides and isolates, zero-width and tag characters) are shown escaped
//! too: in names always, in prose those that no script needs. Newlines stay
//! only where the layout has room for them, and what is shown has a budget.

use serde::Serialize;

/// The most characters one line of server text may take on the screen: a
/// name, a title, a key, a log or progress line, an error message. Longer
/// ones are cut and say how much is left out.
pub(crate) const MAX_LINE_CHARS: usize = 500;
/// The most characters a block of server text may take on the screen: a
/// form's message, a field's description, a sampling request.
pub(crate) const MAX_TEXT_CHARS: usize = 8_000;
/// The most lines a block of server text may take on the screen.
pub(crate) const MAX_TEXT_LINES: usize = 60;
/// The most characters of a URL shown for consent; a longer one is cut and
/// the dialog says so.
pub(crate) const MAX_URL_CHARS: usize = 2_048;
/// The most names listed in one message (the tools a server has, the
/// arguments a tool takes).
pub(crate) const MAX_NAMES_LISTED: usize = 20;

/// One line: every control character (newlines too) and every invisible
/// character escaped, cut at [`MAX_LINE_CHARS`].
pub(crate) fn line(s: &str) -> String {
    clean(s, Layout::Line, MAX_LINE_CHARS, 1)
}

/// A URL shown for consent: as [`line`], cut at [`MAX_URL_CHARS`].
pub(crate) fn url(s: &str) -> String {
    clean(s, Layout::Line, MAX_URL_CHARS, 1)
}

/// A block of prose: newlines and tabs kept, other controls and the
/// characters that hide or reorder text escaped, cut at
/// [`MAX_TEXT_LINES`] lines and [`MAX_TEXT_CHARS`] characters.
pub(crate) fn text(s: &str) -> String {
    clean(s, Layout::Text, MAX_TEXT_CHARS, MAX_TEXT_LINES)
}

/// What the person asked for (a tool's result, a resource, a prompt),
/// printed whole: as [`text`], without the budget.
pub(crate) fn output(s: &str) -> String {
    clean(s, Layout::Text, usize::MAX, usize::MAX)
}

/// `value` as pretty JSON in which every character a terminal could act
/// on is written as a `\u` escape: the same JSON value, safe to print.
/// serde_json escapes C0 controls itself; DEL, C1 controls and the
/// invisible characters it leaves as they are.
pub(crate) fn json(value: &impl Serialize) -> String {
    let raw = serde_json::to_string_pretty(value).unwrap_or_default();
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        // Outside strings JSON has only ASCII punctuation and whitespace,
        // so a character needing an escape is always inside a string.
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || hidden(c) || hidden_in_names(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Names for a message, each as [`line`], at most [`MAX_NAMES_LISTED`]
/// of them, then how many more there are; "none" for no names.
pub(crate) fn names<S: AsRef<str>>(list: &[S]) -> String {
    if list.is_empty() {
        return "none".to_owned();
    }
    let mut shown: Vec<String> = list
        .iter()
        .take(MAX_NAMES_LISTED)
        .map(|n| line(n.as_ref()))
        .collect();
    if list.len() > MAX_NAMES_LISTED {
        shown.push(format!("and {} more", list.len() - MAX_NAMES_LISTED));
    }
    shown.join(", ")
}

/// Where the text goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One line, and a name may be in it.
    Line,
    /// Lines of prose.
    Text,
}

/// Characters that reorder or hide text, escaped wherever they appear:
/// bidi embeddings, overrides and isolates, the zero-width space, the line
/// and paragraph separators, invisible operators and deprecated format
/// characters, the byte order mark, interlinear annotations, tag
/// characters and the supplementary variation selectors (which can carry
/// hidden text).
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200b}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{2060}'..='\u{2064}'
        | '\u{206a}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}'
        | '\u{e0100}'..='\u{e01ef}')
}

/// Characters prose may need (joiners, marks of direction, soft hyphens,
/// fillers) but that let one name pass for another: escaped in lines.
fn hidden_in_names(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200c}'..='\u{200f}'
            | '\u{3164}'
            | '\u{ffa0}'
    )
}

/// How `c` is shown escaped.
fn escaped(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        '\0' => "\\0".to_owned(),
        c => format!("\\u{{{:x}}}", u32::from(c)),
    }
}

/// The one mechanism: escapes what `layout` cannot show, and cuts at
/// `max_chars` characters and `max_lines` lines of output, saying how many
/// characters of the original were left out.
fn clean(s: &str, layout: Layout, max_chars: usize, max_lines: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars.saturating_add(64)));
    let (mut chars, mut lines) = (0usize, 1usize);
    let mut rest = s.chars().peekable();
    while let Some(c) = rest.next() {
        let piece = match c {
            '\r' if layout == Layout::Text && rest.peek() == Some(&'\n') => continue,
            '\n' | '\t' if layout == Layout::Text => c.to_string(),
            c if c.is_control() || hidden(c) => escaped(c),
            c if layout == Layout::Line && hidden_in_names(c) => escaped(c),
            c => c.to_string(),
        };
        let newline = piece == "\n";
        let n = piece.chars().count();
        if chars.saturating_add(n) > max_chars || (newline && lines >= max_lines) {
            let left = 1 + rest.count();
            let sep = if layout == Layout::Text { "\n" } else { " " };
            out.push_str(&format!(
                "{sep}… ({left} more character{} not shown)",
                if left == 1 { "" } else { "s" }
            ));
            return out;
        }
        chars += n;
        lines += usize::from(newline);
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        // OSC 52 writes the clipboard; cursor-up and erase-line repaint.
        let osc = "copy\x1b]52;c;aGk=\x07 then\x1b[1A\x1b[2K";
        assert_eq!(
            line(osc),
            "copy\\u{1b}]52;c;aGk=\\u{7} then\\u{1b}[1A\\u{1b}[2K"
        );
        assert_eq!(text(osc), line(osc));
        // C1 controls (CSI as one character), DEL and NUL.
        assert_eq!(line("a\u{9b}2Jb\u{7f}\0"), "a\\u{9b}2Jb\\u{7f}\\0");
        // Escaping is idempotent: shown text never changes when shown again.
        assert_eq!(line(&line(osc)), line(osc));
    }

    #[test]
    fn newlines_only_where_the_layout_allows() {
        assert_eq!(line("one\ntwo\r\nthree\tx"), "one\\ntwo\\r\\nthree\\tx");
        assert_eq!(text("one\ntwo\r\nthree\tx"), "one\ntwo\nthree\tx");
        // A lone carriage return would overwrite the line: shown.
        assert_eq!(text("safe\rEVIL"), "safe\\rEVIL");
    }

    #[test]
    fn invisible_characters_are_shown() {
        // Bidi override: "txt.exe" that reads "exe.txt".
        assert_eq!(line("a\u{202e}txe.txt"), "a\\u{202e}txe.txt");
        assert_eq!(text("a\u{2067}b\u{2069}"), "a\\u{2067}b\\u{2069}");
        // Zero-width characters in a name: "pay\u{200b}pal" is not "paypal".
        assert_eq!(line("pay\u{200b}pal"), "pay\\u{200b}pal");
        assert_eq!(line("pay\u{200d}pal\u{ad}"), "pay\\u{200d}pal\\u{ad}");
        // Prose keeps the joiners scripts need (ZWNJ in Persian, ZWJ in
        // emoji), but never tag characters, which can carry hidden text.
        assert_eq!(text("می\u{200c}خواهم"), "می\u{200c}خواهم");
        assert_eq!(text("👩\u{200d}💻"), "👩\u{200d}💻");
        assert_eq!(text("hi\u{e0041}\u{e0042}"), "hi\\u{e0041}\\u{e0042}");
        // Ordinary text of every script is left alone.
        assert_eq!(line("Déploiement → 生产 ✓"), "Déploiement → 生产 ✓");
    }

    #[test]
    fn what_is_shown_has_a_budget() {
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let shown = line(&long);
        assert_eq!(
            shown,
            format!("{} … (10 more characters not shown)", "x".repeat(500))
        );
        // Escapes count as what they take on the screen.
        let escapes = "\x1b".repeat(200);
        let shown = line(&escapes);
        let fit = MAX_LINE_CHARS / "\\u{1b}".len();
        assert_eq!(
            shown,
            format!(
                "{} … ({} more characters not shown)",
                "\\u{1b}".repeat(fit),
                200 - fit
            )
        );
        let many = "line\n".repeat(MAX_TEXT_LINES + 5);
        let shown = text(&many);
        assert_eq!(shown.lines().count(), MAX_TEXT_LINES + 1);
        assert!(
            shown.ends_with("line\n… (26 more characters not shown)"),
            "{shown}"
        );
        let huge = "y".repeat(MAX_TEXT_CHARS * 3);
        assert!(text(&huge).chars().count() < MAX_TEXT_CHARS + 64);
        // A result is printed whole, made safe all the same.
        assert_eq!(output(&huge).len(), huge.len());
        assert_eq!(output("a\x1b[2Jb\n"), "a\\u{1b}[2Jb\n");
        assert_eq!(
            url(&"u".repeat(3000)),
            format!("{} … (952 more characters not shown)", "u".repeat(2048))
        );
    }

    #[test]
    fn json_is_the_same_value_with_nothing_to_obey() {
        let v = serde_json::json!({"text": "a\x1b]52;c;aGk=\x07\u{9b}\u{7f}\u{202e}\u{200b}\u{e0041}z"});
        let shown = json(&v);
        assert!(
            shown.contains(r"a\u001b]52;c;aGk=\u0007\u009b\u007f\u202e\u200b\udb40\udc41z"),
            "{shown}"
        );
        assert!(
            shown.chars().all(|c| c == '\n' || !c.is_control()),
            "{shown}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            v
        );
    }

    #[test]
    fn names_are_listed_within_a_budget() {
        let many: Vec<String> = (0..25).map(|i| format!("t{i}")).collect();
        let shown = names(&many);
        assert!(shown.starts_with("t0, t1, "), "{shown}");
        assert!(shown.ends_with("t19, and 5 more"), "{shown}");
        assert_eq!(names::<&str>(&[]), "none");
        assert_eq!(names(&["a\x1bb"]), "a\\u{1b}b");
    }
}
