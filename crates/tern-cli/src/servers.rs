//! Named servers: `tern call NAME ...` and `tern discover NAME` resolve NAME
//! from a config file in the `mcpServers` format that MCP hosts share:
//!
//! ```json
//! { "mcpServers": {
//!     "files": { "command": "npx", "args": ["-y", "some-server"], "env": { "ROOT": "/tmp" } },
//!     "deploy": { "url": "https://mcp.example.com/mcp", "headers": { "X-Team": "infra" } }
//! } }
//! ```
//!
//! The file is `--config FILE` (a host's own file works: only `mcpServers`
//! is read), else tern's config file (`$TERN_CONFIG`, else
//! `tern/config.json` in the platform config directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;

use crate::TargetArgs;

/// One server of `mcpServers`: a command to spawn, or a URL.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Named {
    /// Spawned as a stdio server.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// Reached over Streamable HTTP.
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

/// A named stdio server's command line and environment.
#[derive(Debug, Clone)]
pub(crate) struct Spawn {
    /// The program.
    pub(crate) program: String,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// Variables added to its environment.
    pub(crate) env: Vec<(String, String)>,
}

/// The file named servers are read from.
fn config_path(given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(crate::signin::Config::path)
}

/// Every named server of the file; a missing default file has none.
pub(crate) fn load(
    given: Option<&Path>,
) -> Result<(Option<PathBuf>, BTreeMap<String, Named>), String> {
    let Some(path) = config_path(given) else {
        return Ok((None, BTreeMap::new()));
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && given.is_none() => {
            return Ok((Some(path), BTreeMap::new()));
        }
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    if let Some(servers) = doc.get("mcpServers") {
        let Some(servers) = servers.as_object() else {
            return Err(format!(
                "{}: \"mcpServers\" must be an object",
                path.display()
            ));
        };
        for (name, entry) in servers {
            let named = serde_json::from_value::<Named>(entry.clone()).map_err(|_| {
                format!(
                    "{}: the server {name:?} needs \"command\" (with optional \"args\" and \"env\") or \"url\" (with optional \"headers\")",
                    path.display()
                )
            })?;
            out.insert(name.clone(), named);
        }
    }
    Ok((Some(path), out))
}

/// Resolves a target word that is not a URL as a server name.
pub(crate) fn resolve(target: &mut TargetArgs) -> Result<(), String> {
    let Some(word) = target.url.clone() else {
        return Ok(());
    };
    if target.cmd.is_some() || word.contains("://") {
        return Ok(());
    }
    let (path, all) = load(target.config.as_deref())?;
    let Some(named) = all.get(&word) else {
        let from = path.map_or_else(|| "no config file".to_owned(), |p| p.display().to_string());
        let names: Vec<&str> = all.keys().map(String::as_str).collect();
        return Err(if names.is_empty() {
            format!("{word:?} is neither a URL nor a server named in {from} (it names none)")
        } else {
            format!(
                "{word:?} is neither a URL nor a server named in {from} (it names: {})",
                names.join(", ")
            )
        });
    };
    match named.clone() {
        Named::Stdio { command, args, env } => {
            target.url = None;
            target.spawn = Some(Spawn {
                program: command,
                args,
                env: env.into_iter().collect(),
            });
        }
        Named::Http { url, headers } => {
            target.url = Some(url);
            // Flags come after the file's headers, so a flag wins.
            let mut all: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            all.append(&mut target.auth.headers);
            target.auth.headers = all;
        }
    }
    target.name = Some(word);
    Ok(())
}

/// `tern servers`: the named servers and how each is reached.
pub(crate) fn list(config: Option<&Path>) -> Result<ExitCode, String> {
    let (path, all) = load(config)?;
    let from = path.as_ref().map_or_else(
        || "no config file (set HOME, XDG_CONFIG_HOME or TERN_CONFIG, or pass --config)".to_owned(),
        |p| format!("servers in {}:", p.display()),
    );
    println!("{from}");
    if all.is_empty() {
        println!("  none (add them under \"mcpServers\")");
    }
    for (name, s) in &all {
        match s {
            Named::Stdio { command, args, env } => {
                let env = if env.is_empty() {
                    String::new()
                } else {
                    format!(
                        "  (env {})",
                        env.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                };
                println!("  {name}  stdio: {command} {}{env}", args.join(" "));
            }
            Named::Http { url, .. } => println!("  {name}  http: {url}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
