//! End to end with a real authorization server nobody here wrote:
//! `oidc-provider` from npm (pinned in `interop/as`), with its interactions
//! scripted to log in as `alice` and grant what is asked. `tern serve` is its
//! resource server (JWTs from its JWKS, audience = the endpoint, RFC 8707);
//! `tern login` signs in through it in a terminal while the test plays the
//! person's browser; `tern call` then uses, refreshes and steps up the
//! token (DIGEST §8). Compiled as ignored where the server is not installed
//! (see build.rs); CI installs it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use rexpect::session::{Options, PtySession, spawn_with_options};
use serde_json::Value;
use tempfile::TempDir;

use super::common::{Server, run, tern_bin};

/// The authorization server, killed on drop.
struct Issuer {
    child: Child,
    url: String,
}

impl Issuer {
    fn start(access_ttl: u64) -> Issuer {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/as/server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .args(["0", "--access-ttl", &access_ttl.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the authorization server did not start: {line:?}"))
            .to_owned();
        Issuer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `tern serve` protected by `issuer`, at a fixed port so its public URL
/// (the tokens' audience) is known before it starts.
fn resource_server(issuer: &Issuer) -> Server {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}/mcp");
    let jwks = format!("jwks:{}/jwks", issuer.url);
    let s = Server::start_at(
        &format!("127.0.0.1:{port}"),
        &[
            "--auth",
            &jwks,
            "--issuer",
            &issuer.url,
            "--public-url",
            &public,
            "--scope",
            "mcp",
            "--tool-scope",
            "deploy=deploy:write",
        ],
        &[],
    );
    assert_eq!(s.url, public);
    s
}

/// The person's browser: follows the authorization server's redirects,
/// keeping its cookies, until one leads back to tern's loopback redirect,
/// which it then opens.
fn browse(link: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut cookies: BTreeMap<String, String> = BTreeMap::new();
        let mut url = reqwest::Url::parse(link).unwrap();
        for _ in 0..20 {
            let jar: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let resp = http
                .get(url.clone())
                .header("cookie", jar.join("; "))
                .send()
                .await
                .unwrap();
            for c in resp.headers().get_all("set-cookie") {
                let c = c.to_str().unwrap();
                let pair = c.split(';').next().unwrap();
                if let Some((k, v)) = pair.split_once('=') {
                    cookies.insert(k.trim().to_owned(), v.trim().to_owned());
                }
            }
            let Some(next) = resp.headers().get("location") else {
                return resp.text().await.unwrap();
            };
            url = url.join(next.to_str().unwrap()).unwrap();
        }
        panic!("too many redirects");
    })
}

fn pty(args: &[&str], home: &TempDir) -> PtySession {
    let mut cmd = Command::new(tern_bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("TERN_NO_BROWSER", "1")
        .env("XDG_DATA_HOME", home.path())
        .env("XDG_CACHE_HOME", home.path().join("cache"));
    spawn_with_options(
        cmd,
        Options::new()
            .timeout_ms(Some(30_000))
            .strip_ansi_escape_codes(true),
    )
    .unwrap()
}

/// Signs in on the terminal `p`: the issuer's host shown, the link printed,
/// the browser played.
fn sign_in(p: &mut PtySession, issuer: &Issuer) {
    p.exp_string("Sign in at 127.0.0.1").unwrap();
    p.exp_string(&format!("authorization server {}", issuer.url))
        .unwrap();
    p.exp_string("Open this link in your browser:").unwrap();
    let (_, link) = p.exp_regex(r"http://\S+").unwrap();
    let page = browse(link.trim());
    assert!(page.contains("Signed in"), "{page}");
}

fn tokens(home: &TempDir) -> Value {
    let path = home.path().join("tern/tokens.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn call(home: &TempDir, args: &[&str]) -> super::common::Run {
    let mut cmd = Command::new(tern_bin());
    cmd.arg("call")
        .args(args)
        .env("XDG_DATA_HOME", home.path())
        .env("XDG_CACHE_HOME", home.path().join("cache"));
    run(cmd)
}

#[test]
#[cfg_attr(tern_no_as, ignore = "the authorization server peer is not installed")]
fn login_call_refresh_and_step_up_through_a_real_authorization_server() {
    let issuer = Issuer::start(3);
    let rs = resource_server(&issuer);
    let home = TempDir::new().unwrap();

    // tern login: the flow in a terminal, the token kept 0600.
    let mut p = pty(&["login", &rs.url], &home);
    sign_in(&mut p, &issuer);
    p.exp_string(&format!("signed in to {} at 127.0.0.1", rs.url))
        .unwrap();
    p.exp_eof().unwrap();
    let kept = tokens(&home);
    let token = &kept[&rs.url];
    assert_eq!(token["issuer"], issuer.url.as_str());
    assert!(token["refresh_token"].is_string(), "{kept}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(home.path().join("tern/tokens.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // tern call uses it without asking.
    call(&home, &[&rs.url, "tool", "echo", "text=hi"])
        .ok()
        .says("hi");

    // Expired: refreshed before use, and the call still works.
    std::thread::sleep(std::time::Duration::from_secs(4));
    call(&home, &[&rs.url, "tool", "echo", "text=again"])
        .ok()
        .says("again");
    let refreshed = tokens(&home);
    assert_ne!(
        refreshed[&rs.url]["access_token"], token["access_token"],
        "a new access token"
    );

    // A token for this server is refused by another (its audience).
    let other = resource_server(&issuer);
    let mut cmd = Command::new(tern_bin());
    cmd.args([
        "call",
        &other.url,
        "--bearer-env",
        "TOK",
        "tool",
        "echo",
        "text=x",
    ])
    .env("TOK", refreshed[&rs.url]["access_token"].as_str().unwrap());
    run(cmd).failed(3).says("401");

    // deploy needs deploy:write: 403, and the call steps up in the terminal.
    let mut p = pty(
        &[
            "call",
            &rs.url,
            "tool",
            "deploy",
            "environment=staging",
            "--yes",
        ],
        &home,
    );
    sign_in(&mut p, &issuer);
    p.exp_string("deployed to staging").unwrap();
    p.exp_eof().unwrap();
    let scopes = tokens(&home)[&rs.url]["scopes"].clone();
    assert!(
        scopes
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "deploy:write"),
        "{scopes}"
    );
}
