//! Exit codes, the same for every client command (README, "Exit codes"),
//! and failures explained in words a person can act on.

use std::process::ExitCode;

use tern::client::Error;

/// The call finished and the tool or operation succeeded.
pub(crate) const DONE: u8 = 0;
/// The tool reported an error result, or the server answered the operation
/// with a JSON-RPC error.
pub(crate) const FAILED: u8 = 1;
/// Usage: bad flags or arguments, an unknown tool or prompt, an answers
/// file that does not fit, a question with no terminal to ask it in.
pub(crate) const USAGE: u8 = 2;
/// Protocol or transport: the server cannot be reached, timed out, or broke
/// the protocol.
pub(crate) const PROTOCOL: u8 = 3;
/// The person refused or declined what the server asked, and the operation
/// did not complete.
pub(crate) const REFUSED: u8 = 4;
/// Interrupted by Ctrl-C.
pub(crate) const INTERRUPTED: u8 = 130;

/// `code` as an [`ExitCode`].
pub(crate) fn code(code: u8) -> ExitCode {
    ExitCode::from(code)
}

/// Prints a usage error and gives exit code 2. The message may quote
/// what a server named (a tool, an argument): printed safe.
pub(crate) fn usage(msg: &str) -> ExitCode {
    eprintln!("tern: {}", crate::safe::text(msg));
    ExitCode::from(USAGE)
}

/// The innermost cause of an error: where the operating system or the TLS
/// library says what really failed.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// A failure in words, as one safe line: a server's error message and the
/// causes a transport reports are the server's text.
pub(crate) fn explain(e: &Error, url: Option<&str>) -> String {
    crate::safe::line(&describe(e, url))
}

/// A transport failure in words: what failed, and for a 404 the path that
/// was tried and the usual one.
fn describe(e: &Error, url: Option<&str>) -> String {
    if let Some(o) = e.remote_error() {
        return format!("server error {}: {}", o.code, o.message);
    }
    if e.status() == Some(404) && !e.is_session_expired() {
        let tried = url.unwrap_or("the URL");
        let hint = url
            .and_then(|u| reqwest::Url::parse(u).ok())
            .filter(|u| u.path() != "/mcp")
            .map(|mut u| {
                u.set_path("/mcp");
                format!("; MCP servers usually answer at {u}")
            })
            .unwrap_or_default();
        return format!("nothing is served at {tried} (HTTP 404){hint}");
    }
    if e.is_transport() {
        let cause = root_cause(e);
        let lower = cause.to_ascii_lowercase();
        let what = if lower.contains("connection refused") {
            "connection refused (is the server running, and on this port?)".to_owned()
        } else if lower.contains("failed to lookup address")
            || lower.contains("name or service not known")
            || lower.contains("no address associated")
            || lower.contains("dns error")
        {
            "no such host".to_owned()
        } else if lower.contains("certificate") || lower.contains("tls") || lower.contains("ssl") {
            format!("TLS failed: {cause}")
        } else if lower.contains("timed out") {
            "timed out".to_owned()
        } else {
            cause
        };
        return match url {
            Some(u) => format!("cannot reach {u}: {what}"),
            None => format!("the server's connection failed: {what}"),
        };
    }
    e.to_string()
}

/// Checks a server URL before anything is sent: http or https, with a host.
pub(crate) fn check_url(flag: &str, url: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("{flag} {url:?} is not a URL: {e}"))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(()),
        "http" | "https" => Err(format!("{flag} {url:?} names no host")),
        other => Err(format!(
            "{flag} {url:?}: the scheme {other}:// is not supported; use http:// or https://"
        )),
    }
}

/// Whether `program` can be started: a path to a file, or a name on PATH.
pub(crate) fn find_program(program: &str) -> Result<(), String> {
    let found = if program.contains('/') {
        std::path::Path::new(program).is_file()
    } else {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
    };
    if found {
        Ok(())
    } else {
        Err(format!("--cmd: the program {program:?} was not found"))
    }
}
