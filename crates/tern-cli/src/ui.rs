//! Terminal presentation shared by the client commands: styles (only on a
//! terminal, and never with `NO_COLOR`), the spinner shown while a server
//! works, and the rendering of results, which are the server's text and so
//! are rendered safe (see [`safe`](crate::safe)).

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tern::types::{
    CallToolResult, ContentBlock, GetPromptResult, ReadResourceResult, ResourceContents, Role,
};

use crate::safe;

/// Whether stderr takes ANSI styles.
pub(crate) fn colour() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
}

/// `s` in an ANSI style, when styles are on.
fn paint(code: &str, s: &str) -> String {
    if colour() {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_owned()
    }
}

/// Bold text.
pub(crate) fn bold(s: &str) -> String {
    paint("1", s)
}

/// Dim text, for secondary details.
pub(crate) fn dim(s: &str) -> String {
    paint("2", s)
}

/// Highlighted text: the domain of a URL, the server's name.
pub(crate) fn highlight(s: &str) -> String {
    paint("1;4;36", s)
}

/// Warnings.
pub(crate) fn warn(s: &str) -> String {
    paint("1;33", s)
}

/// The time now, for display only: round timings and the spinner. No
/// decision about the protocol reads it, so it needs no injectable clock.
#[expect(
    clippy::disallowed_methods,
    reason = "display-only timing in a terminal program"
)]
pub(crate) fn now() -> Instant {
    Instant::now()
}

/// A spinner on stderr while the server works; nothing when stderr is not
/// a terminal. Dropping it clears the line.
pub(crate) struct Spinner {
    stop: Arc<AtomicBool>,
    task: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    /// Starts spinning with `label`, unless `quiet` or stderr is no terminal.
    pub(crate) fn start(label: &str, quiet: bool) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet || !std::io::stderr().is_terminal() {
            return Spinner { stop, task: None };
        }
        let flag = stop.clone();
        let label = label.to_owned();
        let task = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let t0 = now();
            // Stay silent for quick answers: a flicker helps nobody.
            let mut i = 0;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(80));
                if t0.elapsed() < Duration::from_millis(250) || flag.load(Ordering::Relaxed) {
                    continue;
                }
                let mut e = std::io::stderr().lock();
                let _ = write!(
                    e,
                    "\r\x1b[2K{} {label} {:.1}s",
                    FRAMES[i % FRAMES.len()],
                    t0.elapsed().as_secs_f32()
                );
                let _ = e.flush();
                i += 1;
            }
            if i > 0 {
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "\r\x1b[2K");
                let _ = e.flush();
            }
        });
        Spinner {
            stop,
            task: Some(task),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.task.take() {
            let _ = t.join();
        }
    }
}

/// A content block as safe text for a person: text whole, other kinds
/// named in one line.
pub(crate) fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => safe::output(&t.text),
        ContentBlock::Image(i) => safe::line(&format!(
            "[image {}, {} base64 chars]",
            i.mime_type,
            i.data.len()
        )),
        ContentBlock::Audio(a) => safe::line(&format!(
            "[audio {}, {} base64 chars]",
            a.mime_type,
            a.data.len()
        )),
        ContentBlock::ResourceLink(r) => safe::line(&format!("[link {} {}]", r.uri, r.name)),
        ContentBlock::Resource(e) => contents_text(&e.resource),
    }
}

/// Resource contents as safe text for a person.
fn contents_text(c: &ResourceContents) -> String {
    match c {
        ResourceContents::Text(t) => safe::output(&t.text),
        ResourceContents::Blob(b) => safe::line(&format!(
            "[blob {} {}, {} base64 chars]",
            b.uri,
            b.mime_type.as_deref().unwrap_or("application/octet-stream"),
            b.blob.len()
        )),
    }
}

/// The text of a tool result: its content blocks, then its structured
/// content when there is no text.
pub(crate) fn tool_text(r: &CallToolResult) -> String {
    let mut out: Vec<String> = r.content.iter().map(content_text).collect();
    if let Some(s) = &r.structured_content
        && !r.content.iter().any(|b| matches!(b, ContentBlock::Text(_)))
    {
        out.push(safe::json(s));
    }
    out.join("\n")
}

/// The messages of a prompt, one `[role] text` per block.
pub(crate) fn prompt_text(r: &GetPromptResult) -> String {
    let mut out = Vec::new();
    if let Some(d) = &r.description {
        out.push(dim(&safe::text(d)));
    }
    for m in &r.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        out.push(format!("[{role}] {}", content_text(&m.content)));
    }
    out.join("\n")
}

/// The contents of a resource read.
pub(crate) fn resource_text(r: &ReadResourceResult) -> String {
    r.contents
        .iter()
        .map(contents_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The server's display name from a `serverInfo` value (META-11): title,
/// else name and version, as one safe line (the server chose every
/// character of it).
pub(crate) fn server_name(info: Option<&Value>) -> Option<String> {
    let info = info?;
    let name = info.get("name").and_then(Value::as_str)?;
    let version = info.get("version").and_then(Value::as_str).unwrap_or("");
    Some(safe::line(
        &match info.get("title").and_then(Value::as_str) {
            Some(t) => format!("{t} ({name} {version})"),
            None => format!("{name} {version}").trim().to_owned(),
        },
    ))
}

/// Gives the terminal back as it was when a dialog is left waiting (the
/// whole call's time ran out): out of raw mode, cursor shown.
pub(crate) fn give_back_terminal() {
    if std::io::stdin().is_terminal() {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = crossterm::execute!(std::io::stderr(), crossterm::cursor::Show);
        eprintln!();
    }
}

/// One progress line: a 20-cell bar and the percentage when the total is
/// known, the count otherwise, then the server's message.
pub(crate) fn progress_bar(done: f64, total: Option<f64>, message: &str) -> String {
    const CELLS: usize = 20;
    match total.filter(|t| *t > 0.0) {
        Some(t) => {
            let frac = (done / t).clamp(0.0, 1.0);
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a fraction of 20 cells"
            )]
            let full = (frac * CELLS as f64).round() as usize;
            format!(
                "[{}{}] {:>3.0}% {message}",
                "#".repeat(full),
                " ".repeat(CELLS - full),
                frac * 100.0
            )
        }
        None => format!("[{done}] {message}"),
    }
}

#[cfg(test)]
mod progress_tests {
    #[test]
    fn bars_fill_with_the_fraction() {
        assert_eq!(
            super::progress_bar(5.0, Some(10.0), "half"),
            "[##########          ]  50% half"
        );
        assert_eq!(super::progress_bar(3.0, None, "three"), "[3] three");
        assert_eq!(
            super::progress_bar(12.0, Some(10.0), ""),
            "[####################] 100% "
        );
    }
}
