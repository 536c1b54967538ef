//! Where a client command connects: a Streamable HTTP URL, or a command
//! spawned as a stdio server (DIGEST §7.2, §7.3).

use std::sync::Arc;

use tern::client::{Client, InputProvider};
use tern::http::HttpTransport;
use tern::stdio::StdioTransport;
use tern::types::Implementation;

use crate::TargetArgs;

/// A connected client, and the child process behind it when the target is a
/// command (shut down politely at the end, STDIO-C8).
pub(crate) struct Connected {
    /// The client.
    pub(crate) client: Client,
    /// The stdio child, if any.
    stdio: Option<Arc<StdioTransport>>,
    /// What to show as "the server" before it names itself.
    pub(crate) label: String,
}

impl Connected {
    /// Closes the child's stdin and waits for it to exit (STDIO-C8).
    pub(crate) async fn close(self) {
        if let Some(t) = self.stdio {
            let _ = t.shutdown().await;
        }
    }
}

/// Settles what clap cannot: with `--cmd`, a word it took for the URL is
/// really the first word of `tern call`'s WHAT (`tool`, `prompt`, `read`),
/// moved back into `what`; a real URL together with `--cmd` is an error.
pub(crate) fn settle(
    target: &mut TargetArgs,
    what: Option<&mut Vec<String>>,
) -> Result<(), String> {
    if target.cmd.is_none() {
        return Ok(());
    }
    match (target.url.take(), what) {
        (None, _) => Ok(()),
        (Some(word), Some(what)) if matches!(word.as_str(), "tool" | "prompt" | "read") => {
            what.insert(0, word);
            Ok(())
        }
        (Some(url), _) => Err(format!(
            "give the server's URL or --cmd, not both (found URL {url:?})"
        )),
    }
}

/// Connects to `target`, declaring what `provider` can do (META-A1).
pub(crate) fn connect(
    target: &TargetArgs,
    provider: impl InputProvider,
) -> Result<Connected, String> {
    let info = Implementation::new("tern", env!("CARGO_PKG_VERSION"));
    if let Some(cmd) = &target.cmd {
        let words = split_command(cmd)?;
        let (program, args) = words
            .split_first()
            .ok_or("--cmd is empty: give the command that starts the server")?;
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        let transport = Arc::new(
            StdioTransport::spawn(command).map_err(|e| format!("cannot start {program:?}: {e}"))?,
        );
        let client = Client::builder(transport.clone())
            .info(info)
            .provider(provider)
            .build();
        return Ok(Connected {
            client,
            stdio: Some(transport),
            label: program.clone(),
        });
    }
    let url = target
        .url
        .as_deref()
        .ok_or("give the server's URL or --cmd 'COMMAND ARGS'")?;
    let transport = HttpTransport::new(url).map_err(|e| format!("{url}: {e}"))?;
    let label = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| u.port().map_or(h.to_owned(), |p| format!("{h}:{p}")))
        })
        .unwrap_or_else(|| url.to_owned());
    Ok(Connected {
        client: Client::builder(transport)
            .info(info)
            .provider(provider)
            .build(),
        stdio: None,
        label,
    })
}

/// Splits `--cmd` into words the way a POSIX shell would for a simple
/// command: whitespace separates, single quotes are literal, double quotes
/// allow `\"` and `\\`, a backslash outside quotes escapes one character.
/// No expansion happens, and the child is spawned directly so that ending
/// the client ends the server.
pub(crate) fn split_command(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(format!("unclosed ' in --cmd {s:?}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err(format!("unclosed \" in --cmd {s:?}")),
                        },
                        Some(x) => cur.push(x),
                        None => return Err(format!("unclosed \" in --cmd {s:?}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split_command;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_command(r#"tern serve  --stdio 'a b' "c \"d\"" e\ f"#).unwrap(),
            ["tern", "serve", "--stdio", "a b", "c \"d\"", "e f"]
        );
        assert!(split_command("x 'y").is_err());
        assert!(split_command("").unwrap().is_empty());
    }
}
