//! Where a client command connects: a Streamable HTTP URL, or a command
//! spawned as a stdio server (DIGEST §7.2, §7.3).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use tern::client::{Client, ClientBuilder, Era, EraPolicy, InputProvider};
use tern::http::HttpTransport;
use tern::stdio::StdioTransport;
use tern::types::Implementation;

use crate::{EraArg, TargetArgs};

/// A connected client, and the child process behind it when the target is a
/// command (shut down politely at the end, STDIO-C8).
pub(crate) struct Connected {
    /// The client.
    pub(crate) client: Client,
    /// The stdio child, if any.
    stdio: Option<Arc<StdioTransport>>,
    /// What to show as "the server" before it names itself.
    pub(crate) label: String,
    /// The server's entry in the era cache (under `--era auto`).
    cache_key: Option<String>,
}

impl Connected {
    /// Ends the legacy session (HTTP `DELETE`), remembers the server's era
    /// for the next run (COMPAT-C10), then closes the child's stdin and
    /// waits for it to exit (STDIO-C8).
    pub(crate) async fn close(self) {
        if let (Some(key), Some(era)) = (&self.cache_key, self.client.era()) {
            EraCache::record(key, era);
        }
        if let Err(e) = self.client.close().await {
            tracing::debug!(error = %e, "ending the session failed");
        }
        if let Some(t) = self.stdio {
            let _ = t.shutdown().await;
        }
    }
}

/// The era of each server seen, across runs: `eras.json` in the cache
/// directory, keyed by endpoint URL or command line (COMPAT-C10, A27). Only
/// a hint: a wrong entry costs a re-probe, never a failure.
struct EraCache;

impl EraCache {
    fn path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("tern").join("eras.json"))
    }

    fn load() -> BTreeMap<String, String> {
        Self::path()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn lookup(key: &str) -> Option<Era> {
        match Self::load().get(key).map(String::as_str) {
            Some("legacy") => Some(Era::Legacy),
            Some("modern") => Some(Era::Modern),
            _ => None,
        }
    }

    fn record(key: &str, era: Era) {
        let Some(path) = Self::path() else { return };
        let mut all = Self::load();
        let name = if era == Era::Legacy {
            "legacy"
        } else {
            "modern"
        };
        if all.get(key).map(String::as_str) == Some(name) {
            return;
        }
        all.insert(key.to_owned(), name.to_owned());
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::write(&path, serde_json::to_vec_pretty(&all).unwrap_or_default())
            });
        if let Err(e) = written {
            tracing::debug!(path = %path.display(), error = %e, "cannot write the era cache");
        }
    }
}

/// The era settings of `--era` on a builder.
fn with_era(builder: ClientBuilder, target: &TargetArgs, key: &str) -> ClientBuilder {
    match target.era {
        EraArg::Modern => builder.era(EraPolicy::Modern),
        EraArg::Legacy => builder.era(EraPolicy::Legacy),
        EraArg::Auto => builder.era(EraPolicy::Auto).era_hint(EraCache::lookup(key)),
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

/// Connects to `target`, declaring what `provider` can do (META-A1). Under
/// `--era modern` a child process is probed first all the same, so a
/// 2025-11-25 server fails cleanly instead of running a call with its own
/// meaning (COMPAT-C7).
pub(crate) async fn connect(
    target: &TargetArgs,
    provider: impl InputProvider,
) -> Result<Connected, String> {
    connect_with(target, provider, |b| b).await
}

/// [`connect`], with the client's settings (its limits) adjusted by
/// `tune`.
pub(crate) async fn connect_with(
    target: &TargetArgs,
    provider: impl InputProvider,
    tune: impl Fn(ClientBuilder) -> ClientBuilder,
) -> Result<Connected, String> {
    let info = Implementation::new("tern", env!("CARGO_PKG_VERSION"));
    let spawn = match (&target.spawn, &target.cmd) {
        (Some(s), _) => Some((
            s.program.clone(),
            s.args.clone(),
            s.env.clone(),
            format!("{} {}", s.program, s.args.join(" ")),
        )),
        (None, Some(cmd)) => {
            let words = split_command(cmd)?;
            let (program, args) = words
                .split_first()
                .ok_or("--cmd is empty: give the command that starts the server")?;
            Some((program.clone(), args.to_vec(), Vec::new(), cmd.clone()))
        }
        (None, None) => None,
    };
    if let Some((program, args, env, cmd)) = spawn {
        let program = &program;
        crate::exit::find_program(program)?;
        let mut command = tokio::process::Command::new(program);
        command.args(&args).envs(env);
        let transport = Arc::new(
            StdioTransport::spawn(command).map_err(|e| format!("cannot start {program:?}: {e}"))?,
        );
        let key = format!("cmd:{cmd}");
        if target.era == EraArg::Modern {
            // Probed all the same, so a 2025-11-25 server fails cleanly; a
            // server that answers neither probe is then spoken to in
            // 2026-07-28, as asked.
            let probe = Client::builder(transport.clone())
                .era(EraPolicy::Auto)
                .info(info.clone())
                .build();
            if probe.connect().await.ok() == Some(Era::Legacy) {
                let _ = probe.close().await;
                let _ = transport.shutdown().await;
                return Err(format!(
                    "{program} speaks 2025-11-25 only, and --era modern refuses it (use --era auto)"
                ));
            }
        }
        let client = tune(with_era(Client::builder(transport.clone()), target, &key))
            .info(info)
            .provider(provider)
            .build();
        return Ok(Connected {
            client,
            stdio: Some(transport),
            label: target.name.clone().unwrap_or_else(|| program.clone()),
            cache_key: (target.era == EraArg::Auto).then_some(key),
        });
    }
    let url = target
        .url
        .as_deref()
        .ok_or("give the server's URL or --cmd 'COMMAND ARGS'")?;
    crate::exit::check_url("the server URL", url)?;
    // A 401 starts the sign-in in a terminal; elsewhere it says to log in.
    let options =
        crate::signin::http_options(url, &target.auth, crate::provider::stdin_is_terminal())?;
    let transport = HttpTransport::with_options(url, options).map_err(|e| format!("{url}: {e}"))?;
    let label = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| u.port().map_or(h.to_owned(), |p| format!("{h}:{p}")))
        })
        .unwrap_or_else(|| url.to_owned());
    let key = format!("url:{url}");
    Ok(Connected {
        client: tune(with_era(Client::builder(transport), target, &key))
            .info(info)
            .provider(provider)
            .build(),
        stdio: None,
        label,
        cache_key: (target.era == EraArg::Auto).then_some(key),
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
