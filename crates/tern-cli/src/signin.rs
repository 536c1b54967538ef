//! Signing in to protected servers from the terminal (DIGEST §8): the
//! browser flow with a loopback redirect, the token file, `tern login` and
//! `tern logout`, and the static credentials of `--header` and
//! `--bearer-env`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tern::client::{BoxFuture, Error};
use tern::http::oauth::{OAuthOptions, StoredToken, TokenStore, UserAgent};
use tern::http::{HttpClientOptions, HttpTransport};
use tokio::sync::mpsc;

use crate::ui::{bold, dim};
use crate::{AuthArgs, LoginArgs};

/// How long the browser flow waits for the redirect.
const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// The tokens `tern` holds: `tokens.json` in the platform data directory,
/// mode 0600, one entry per protected resource naming its authorization
/// server. Never printed, never logged.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    lock: Mutex<()>,
}

impl TokenFile {
    pub(crate) fn open() -> Result<Self, String> {
        Ok(TokenFile {
            path: crate::serve::data_dir()?.join("tokens.json"),
            lock: Mutex::new(()),
        })
    }

    fn read(&self) -> BTreeMap<String, StoredToken> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn write(&self, all: &BTreeMap<String, StoredToken>) {
        let Ok(bytes) = serde_json::to_vec_pretty(all) else {
            return;
        };
        if let Err(e) = write_private(&self.path, &bytes) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the token file");
        }
    }
}

/// Writes `bytes` to `path` readable by the owner only, replacing it whole.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

impl TokenStore for TokenFile {
    fn load(&self, resource: &str) -> Option<StoredToken> {
        let _g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.read().remove(resource)
    }

    fn save(&self, token: &StoredToken) {
        let _g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all = self.read();
        all.insert(token.resource.clone(), token.clone());
        self.write(&all);
    }

    fn remove(&self, resource: &str) {
        let _g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all = self.read();
        if all.remove(resource).is_some() {
            self.write(&all);
        }
    }
}

/// The person's browser: the authorization server's host shown
/// prominently, the browser opened (or the link printed), the redirect
/// caught on a loopback port. Without a terminal it refuses: a flow nobody
/// can finish would only hang.
struct Browser {
    listener: Mutex<Option<std::net::TcpListener>>,
    port: u16,
    interactive: bool,
}

impl Browser {
    fn new(interactive: bool) -> Result<Self, String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("cannot listen for the sign-in redirect: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot listen for the sign-in redirect: {e}"))?
            .port();
        Ok(Browser {
            listener: Mutex::new(Some(listener)),
            port,
            interactive,
        })
    }
}

fn host_of(url: &str) -> String {
    crate::safe::line(
        &reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| url.to_owned()),
    )
}

impl UserAgent for Browser {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<String, Error>> {
        Box::pin(async move {
            if !self.interactive {
                return Err(Error::unauthorized(format!(
                    "this server needs you to sign in at {}; run `tern login` with its URL in a terminal",
                    host_of(issuer)
                )));
            }
            // The same port every time: it is the registered redirect.
            let listener = self
                .listener
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .map(std::net::TcpListener::try_clone)
                .ok_or_else(|| Error::unauthorized("the redirect listener is gone"))?
                .map_err(|e| Error::transport_from("the redirect listener", e))?;
            listener
                .set_nonblocking(true)
                .map_err(|e| Error::transport_from("the redirect listener", e))?;
            let listener = tokio::net::TcpListener::from_std(listener)
                .map_err(|e| Error::transport_from("the redirect listener", e))?;
            eprintln!();
            eprintln!("{} {}", bold("Sign in at"), bold(&host_of(issuer)),);
            // The issuer and the link come from the server's metadata.
            eprintln!(
                "{}",
                dim(&format!(
                    "authorization server {}",
                    crate::safe::url(issuer)
                ))
            );
            let opened = std::env::var_os("TERN_NO_BROWSER").is_none_or(|v| v.is_empty())
                && open_browser(authorization_url);
            if opened {
                eprintln!(
                    "{}",
                    dim("Your browser should open; if it does not, open this link:")
                );
            } else {
                eprintln!("Open this link in your browser:");
            }
            eprintln!("  {}", crate::safe::url(authorization_url));
            // The state sent is what tells the person's redirect from any
            // other local process's request to this port.
            let state = reqwest::Url::parse(authorization_url)
                .ok()
                .and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v.into_owned())
                })
                .ok_or_else(|| Error::unauthorized("the authorization URL carries no state"))?;
            wait_for_redirect(listener, self.redirect_uri(), state, SIGN_IN_WAIT).await
        })
    }
}

/// How many requests to the redirect listener without the sign-in's
/// `state` are answered `400` before the sign-in gives up: enough for a
/// reloaded tab or a stale one, few enough that a local process cannot keep
/// the listener busy for the whole wait.
const MAX_STRAY_REDIRECTS: u32 = 16;

/// Serves `/callback` on `listener` until the redirect carrying `state`
/// comes back (its URL, spelled with `redirect`), `wait` runs out, or more
/// than [`MAX_STRAY_REDIRECTS`] others have come. Another local process can
/// reach a loopback port too: a request without the right `state` is
/// answered `400` and does not end the sign-in.
async fn wait_for_redirect(
    listener: tokio::net::TcpListener,
    redirect: String,
    state: String,
    wait: Duration,
) -> Result<String, Error> {
    let (tx, mut rx) = mpsc::channel::<Result<String, Error>>(1);
    let strays = Arc::new(AtomicU32::new(0));
    let app = axum::Router::new().route(
        "/callback",
        axum::routing::get(move |uri: axum::http::Uri| {
            let tx = tx.clone();
            let strays = strays.clone();
            let back = format!("{redirect}?{}", uri.query().unwrap_or_default());
            let right = reqwest::Url::parse(&back).is_ok_and(|u| {
                u.query_pairs()
                    .any(|(k, v)| k == "state" && v == state.as_str())
            });
            async move {
                if right {
                    let _ = tx.send(Ok(back)).await;
                    return (
                        axum::http::StatusCode::OK,
                        axum::response::Html(
                            "<!doctype html><title>tern</title><p>Signed in. You can close this tab and return to the terminal.</p>",
                        ),
                    );
                }
                if strays.fetch_add(1, Ordering::Relaxed) + 1 > MAX_STRAY_REDIRECTS {
                    let _ = tx
                        .send(Err(Error::unauthorized(format!(
                            "more than {MAX_STRAY_REDIRECTS} requests reached the sign-in redirect without its state; giving up"
                        ))))
                        .await;
                }
                (
                    axum::http::StatusCode::BAD_REQUEST,
                    axum::response::Html(
                        "<!doctype html><title>tern</title><p>This is not the sign-in tern is waiting for.</p>",
                    ),
                )
            }
        }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let back = tokio::time::timeout(wait, rx.recv()).await;
    // Let the page reach the browser before the listener goes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.abort();
    match back {
        Ok(Some(outcome)) => outcome,
        _ => Err(Error::unauthorized(format!(
            "no sign-in came back within {} minutes",
            wait.as_secs() / 60
        ))),
    }
}

/// Opens `url` with the platform's opener; false when there is none.
fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// What `tern` is told about servers ahead of time: `config.json` in the
/// platform config directory (`$TERN_CONFIG` names another file). Flags win
/// over it; headers add up.
///
/// ```json
/// {
///   "client_metadata_url": "https://app.example.com/tern-client.json",
///   "servers": {
///     "https://mcp.example.com/mcp": {
///       "client_id": "tern-at-example",
///       "client_secret_env": "EXAMPLE_SECRET",
///       "headers": {"X-Team": "infra"}
///     }
///   }
/// }
/// ```
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// The metadata document URL used wherever a server has none of its own.
    #[serde(default)]
    client_metadata_url: Option<String>,
    /// Per endpoint URL, as given to `tern call`.
    #[serde(default)]
    servers: BTreeMap<String, ServerConfig>,
    /// Named servers, read by `servers.rs`.
    #[serde(default, rename = "mcpServers")]
    _mcp_servers: Option<serde_json::Value>,
}

/// One server's entry in [`Config`].
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerConfig {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret_env: Option<String>,
    #[serde(default)]
    client_metadata_url: Option<String>,
    #[serde(default)]
    bearer_env: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl Config {
    /// The config file: `$TERN_CONFIG`, else `tern/config.json` under
    /// `$XDG_CONFIG_HOME` or `~/.config`.
    pub(crate) fn path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("TERN_CONFIG").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("tern/config.json"))
    }

    /// Reads the config file; none is an empty config, a broken one an
    /// error naming the file and the problem.
    pub(crate) fn load() -> Result<Config, String> {
        let Some(path) = Config::path() else {
            return Ok(Config::default());
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// `auth` completed from the entry for `url`: a flag given wins.
    pub(crate) fn apply(&self, url: &str, auth: &AuthArgs) -> AuthArgs {
        let entry = self
            .servers
            .get(url)
            .or_else(|| self.servers.get(url.trim_end_matches('/')))
            .cloned()
            .unwrap_or_default();
        let mut headers: Vec<String> = entry
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        headers.extend(auth.headers.iter().cloned());
        let client_id = auth.client_id.clone().or(entry.client_id);
        AuthArgs {
            headers,
            bearer_env: auth.bearer_env.clone().or(entry.bearer_env),
            // A secret goes with the id it was given with.
            client_secret_env: if auth.client_id.is_some() {
                auth.client_secret_env.clone()
            } else {
                entry.client_secret_env
            },
            client_id,
            client_metadata_url: auth
                .client_metadata_url
                .clone()
                .or(entry.client_metadata_url)
                .or_else(|| self.client_metadata_url.clone()),
        }
    }
}

/// The HTTP options of `--header`, `--bearer-env` and the sign-in flags,
/// completed from the config file's entry for `url`.
pub(crate) fn http_options(
    url: &str,
    auth: &AuthArgs,
    interactive: bool,
) -> Result<HttpClientOptions, String> {
    let auth = &Config::load()?.apply(url, auth);
    let mut options = HttpClientOptions::default();
    for h in &auth.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("--header {h:?}: expected 'Name: value'"))?;
        let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("--header {h:?}: not a header name"))?;
        let value = reqwest::header::HeaderValue::from_str(value.trim())
            .map_err(|_| format!("--header {h:?}: not a header value (visible ASCII only)"))?;
        options.headers.append(name, value);
    }
    if let Some(var) = &auth.bearer_env {
        let token = std::env::var(var).map_err(|_| format!("--bearer-env: {var} is not set"))?;
        let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| format!("--bearer-env: {var} does not hold a token"))?;
        options
            .headers
            .insert(reqwest::header::AUTHORIZATION, value);
        // A static credential: no sign-in flow on top of it.
        return Ok(options);
    }
    let mut oauth = OAuthOptions::new("tern", Arc::new(Browser::new(interactive)?));
    oauth.registration.client_id = auth.client_id.clone();
    oauth.registration.client_secret = match &auth.client_secret_env {
        Some(var) => {
            Some(std::env::var(var).map_err(|_| format!("--client-secret-env: {var} is not set"))?)
        }
        None => None,
    };
    oauth.registration.metadata_url = auth.client_metadata_url.clone();
    oauth.offline_access = true;
    // Without a data directory tokens last for this run only.
    oauth.store = TokenFile::open()
        .ok()
        .map(|f| Arc::new(f) as Arc<dyn TokenStore>);
    options.oauth = Some(oauth);
    Ok(options)
}

/// `tern login URL`: signs in now and keeps the token.
pub(crate) fn login(args: LoginArgs) -> Result<ExitCode, String> {
    let store = TokenFile::open()?;
    let options = http_options(&args.url, &args.auth, crate::provider::stdin_is_terminal())?;
    let transport = HttpTransport::with_options(&args.url, options).map_err(|e| e.to_string())?;
    let endpoint = transport.url().to_owned();
    crate::call::runtime()?.block_on(async move {
        let client = tern::client::Client::builder(transport)
            .era(tern::client::EraPolicy::Auto)
            .build();
        let r = client.discover().await;
        let _ = client.close().await;
        match (r, store.load(&endpoint)) {
            (Ok(_), Some(t)) => {
                println!("signed in to {} at {}", endpoint, host_of(&t.issuer));
                Ok(ExitCode::SUCCESS)
            }
            (Ok(_), None) => {
                println!("{endpoint} let us in without signing in");
                Ok(ExitCode::SUCCESS)
            }
            (Err(e), _) => {
                eprintln!("tern: {}", crate::safe::line(&e.to_string()));
                Ok(ExitCode::FAILURE)
            }
        }
    })
}

/// `tern logout URL`: forgets the token kept for it.
pub(crate) fn logout(url: &str) -> Result<ExitCode, String> {
    let store = TokenFile::open()?;
    // The key is the endpoint as the transport spells it.
    let endpoint = HttpTransport::new(url)
        .map_err(|e| e.to_string())?
        .url()
        .to_owned();
    if store.load(&endpoint).is_some() {
        store.remove(&endpoint);
        println!("signed out of {endpoint}");
    } else {
        println!("no sign-in was kept for {endpoint}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves a redirect listener waiting for `state` "s3cret"; the address
    /// to reach it at, and the sign-in's outcome.
    async fn listening() -> (String, tokio::task::JoinHandle<Result<String, Error>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let redirect = format!("{base}/callback");
        let wait = tokio::spawn(wait_for_redirect(
            listener,
            redirect,
            "s3cret".into(),
            Duration::from_secs(20),
        ));
        (base, wait)
    }

    async fn status_of(url: &str) -> u16 {
        reqwest::get(url).await.unwrap().status().as_u16()
    }

    #[tokio::test]
    async fn stray_redirects_are_refused_and_the_sign_in_goes_on() {
        let (base, wait) = listening().await;
        for stray in ["state=forged&code=evil", "code=evil", "error=access_denied"] {
            assert_eq!(status_of(&format!("{base}/callback?{stray}")).await, 400);
        }
        let back = format!("{base}/callback?code=c0de&state=s3cret");
        assert_eq!(status_of(&back).await, 200);
        assert_eq!(wait.await.unwrap().unwrap(), back);
    }

    #[tokio::test]
    async fn sixteen_stray_redirects_are_borne_and_the_seventeenth_ends_the_sign_in() {
        let (base, wait) = listening().await;
        for _ in 0..MAX_STRAY_REDIRECTS {
            assert_eq!(status_of(&format!("{base}/callback?state=no")).await, 400);
        }
        assert!(!wait.is_finished(), "sixteen strays do not end it");
        assert_eq!(status_of(&format!("{base}/callback?state=no")).await, 400);
        let err = wait.await.unwrap().unwrap_err();
        assert!(err.is_unauthorized(), "{err}");
        assert_eq!(
            err.to_string(),
            Error::unauthorized(
                "more than 16 requests reached the sign-in redirect without its state; giving up"
            )
            .to_string()
        );
    }
}
