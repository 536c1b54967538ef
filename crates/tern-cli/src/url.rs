//! URL-mode consent in the terminal (DIGEST §5.1 "Client URL handling",
//! SECURITY.md §3.10): the URL is shown with its host picked out and what
//! could deceive named, before the person agrees to open it; nothing is
//! fetched to show it. The URL and its message are the server's text:
//! shown safe, the URL whole up to [`safe::MAX_URL_CHARS`] (a longer one
//! says so).

use inquire::{InquireError, Select};
use tern::types::{ElicitAction, ElicitResult};

use crate::form::{Stop, block, header};
use crate::safe;
use crate::ui::{bold, highlight, warn};

/// A URL as the person should see it before consenting: normalised, with
/// its host picked out and warnings about forms that deceive (DIGEST §5.1
/// "Client URL handling", SECURITY.md §3.10).
pub(crate) struct UrlView {
    /// The URL as it would be opened.
    pub(crate) url: String,
    /// The host (and port), shown prominently.
    pub(crate) host: String,
    /// The URL with its host highlighted.
    pub(crate) shown: String,
    /// Reasons for caution.
    pub(crate) warnings: Vec<String>,
    /// Whether the system browser may be asked to open it (http and https
    /// only).
    pub(crate) openable: bool,
}

/// Inspects a URL without fetching anything (no prefetch).
pub(crate) fn inspect_url(raw: &str) -> UrlView {
    let Ok(u) = reqwest::Url::parse(raw) else {
        return UrlView {
            url: raw.to_owned(),
            host: "(not a valid URL)".to_owned(),
            shown: safe::url(raw),
            warnings: vec!["this is not a valid URL; it cannot be opened".to_owned()],
            openable: false,
        };
    };
    let host = u.host_str().unwrap_or("").to_owned();
    let hostport = u.port().map_or(host.clone(), |p| format!("{host}:{p}"));
    let mut warnings = Vec::new();
    let openable = matches!(u.scheme(), "http" | "https") && !host.is_empty();
    if !openable {
        warnings.push(format!(
            "the scheme {:?} is not a web page; it will not be opened",
            u.scheme()
        ));
    }
    if host.split('.').any(|l| l.starts_with("xn--")) {
        warnings.push(
            "the domain is written in punycode (xn--…): it may imitate a familiar name".to_owned(),
        );
    }
    if !u.username().is_empty() || u.password().is_some() {
        warnings.push(format!(
            "the URL has a user name before '@': the site is really {hostport}"
        ));
    }
    let loopback = host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if u.scheme() == "http" && !loopback {
        warnings.push("not HTTPS: the page is not encrypted".to_owned());
    }
    if !loopback
        && host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok()
    {
        warnings.push("the site is a bare IP address, not a domain name".to_owned());
    }
    let url = u.to_string();
    let length = url.chars().count();
    if length > safe::MAX_URL_CHARS {
        warnings.push(format!(
            "the URL is {length} characters long; only the first {} are shown",
            safe::MAX_URL_CHARS
        ));
    }
    // The parser percent-encodes what it keeps of controls and non-ASCII,
    // and the pieces are shown safe all the same.
    let shown = match url.split_once(&hostport) {
        Some((before, after)) => format!(
            "{}{}{}",
            safe::url(before),
            highlight(&safe::line(&hostport)),
            safe::url(after)
        ),
        None => safe::url(&url),
    };
    UrlView {
        url,
        host: hostport,
        shown,
        warnings,
        openable,
    }
}

/// Shows a URL request block: message, full URL, host, warnings.
pub(crate) fn show_url(view: &UrlView, message: &str) {
    block(message);
    eprintln!("{} URL:  {}", bold("│"), view.shown);
    eprintln!("{} Site: {}", bold("│"), highlight(&safe::line(&view.host)));
    for w in &view.warnings {
        eprintln!("{} {}", bold("│"), warn(&format!("⚠ {w}")));
    }
}

/// Opens `url` in the system browser, never in anything this process can
/// observe; prints the link instead when there is no opener.
pub(crate) fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(opener).is_file()));
    if found {
        let spawned = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if spawned.is_ok() {
            eprintln!("{} opened in your browser", bold("│"));
            return;
        }
    }
    eprintln!(
        "{} open this link in your browser: {}",
        bold("│"),
        safe::url(url)
    );
}

/// The URL-mode dialog: consent, open, then done or cancel (ELIC-10,
/// ELIC-C11). `accept` is sent only after the person says done.
pub(crate) fn ask_url(
    server: &str,
    key: &str,
    message: &str,
    url: &str,
) -> Result<ElicitResult, Stop> {
    header("to open a web page", server, key);
    let view = inspect_url(url);
    show_url(&view, message);
    let mut choices = vec!["Decline", "Cancel"];
    if view.openable {
        choices.insert(0, "Open it in my browser");
    }
    let first = Select::new("Open this page?", choices)
        .with_help_message("nothing is fetched unless you choose to open it")
        .prompt();
    match first {
        Ok("Open it in my browser") => {}
        Ok("Decline") => return Ok(ElicitResult::new(ElicitAction::Decline)),
        Ok(_) | Err(InquireError::OperationCanceled) => {
            return Ok(ElicitResult::new(ElicitAction::Cancel));
        }
        Err(e) => return Err(e.into()),
    }
    open_in_browser(&view.url);
    let done = Select::new(
        "When you have finished in the browser:",
        vec!["Done", "Cancel"],
    )
    .prompt();
    match done {
        Ok("Done") => Ok(ElicitResult::new(ElicitAction::Accept)),
        Ok(_) | Err(InquireError::OperationCanceled) => Ok(ElicitResult::new(ElicitAction::Cancel)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_inspected_without_fetching() {
        let v = inspect_url("https://xn--pypal-4ve.com/login");
        assert_eq!(v.host, "xn--pypal-4ve.com");
        assert!(v.warnings.iter().any(|w| w.contains("punycode")));
        let v = inspect_url("http://user@evil.example:8443/x");
        assert_eq!(v.host, "evil.example:8443");
        assert!(v.warnings.iter().any(|w| w.contains("user name")));
        assert!(v.warnings.iter().any(|w| w.contains("not HTTPS")));
        assert!(
            inspect_url("http://127.0.0.1:8080/login/ab")
                .warnings
                .is_empty()
        );
        assert!(!inspect_url("javascript:alert(1)").openable);
    }
}
