//! `tern serve` as an OAuth protected resource (DIGEST §8, RFC 9728, RFC
//! 6750): the challenge and the metadata document a client signs in from,
//! tokens checked for issuer and audience, per-tool scopes answered with
//! `403 insufficient_scope`; and `tern call --bearer-env` / `--header` with
//! static credentials.

use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};

use super::common::{Server, run, tern_bin};

const SECRET: &str = "an HS256 secret of at least 32 bytes!";
const ISSUER: &str = "https://as.example";

fn protected() -> Server {
    Server::start_with(
        &[
            "--auth",
            "hs256-env:TERN_TEST_SECRET",
            "--issuer",
            ISSUER,
            "--scope",
            "mcp",
            "--tool-scope",
            "deploy=deploy:write",
        ],
        &[("TERN_TEST_SECRET", SECRET)],
    )
}

fn token(audience: &str, scope: &str) -> String {
    // RFC 9068 §4: a JWT access token says so.
    typed_token(audience, scope, "at+jwt")
}

fn typed_token(audience: &str, scope: &str, typ: &str) -> String {
    let claims = json!({"iss": ISSUER, "aud": audience, "sub": "alice", "client_id": "c1",
                        "scope": scope, "exp": 4_102_444_800u64});
    let head = Header {
        typ: Some(typ.to_owned()),
        ..Header::default()
    };
    encode(
        &head,
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn call_with_token(url: &str, token: &str, what: &[&str]) -> super::common::Run {
    let mut cmd = std::process::Command::new(tern_bin());
    cmd.args(["call", url, "--bearer-env", "TOK"])
        .args(what)
        .env("TOK", token);
    run(cmd)
}

#[tokio::test]
async fn a_protected_server_challenges_and_describes_itself() {
    let s = protected();
    let metadata = s
        .url
        .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let r = reqwest::Client::new()
        .post(&s.url)
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.headers()["www-authenticate"],
        format!("Bearer scope=\"mcp\", resource_metadata=\"{metadata}\"").as_str()
    );
    let text = reqwest::get(&metadata).await.unwrap().text().await.unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        doc,
        json!({"resource": s.url, "authorization_servers": [ISSUER],
               "scopes_supported": ["deploy:write", "mcp"],
               "bearer_methods_supported": ["header"]})
    );
}

#[test]
fn tokens_are_checked_for_audience_and_scope() {
    let s = protected();
    call_with_token(&s.url, &token(&s.url, "mcp"), &["tool", "echo", "text=hi"])
        .ok()
        .says("hi");
    // A token for another resource is refused (RFC 8707 audience).
    call_with_token(
        &s.url,
        &token("https://other.example/mcp", "mcp"),
        &["tool", "echo", "text=hi"],
    )
    .failed(3)
    .says("401");
    // The deploy tool needs deploy:write: 403 insufficient_scope.
    call_with_token(
        &s.url,
        &token(&s.url, "mcp"),
        &["tool", "deploy", "environment=staging", "--yes"],
    )
    .failed(3)
    .says("403");
    call_with_token(
        &s.url,
        &token(&s.url, "mcp deploy:write"),
        &["tool", "echo", "text=scoped"],
    )
    .ok()
    .says("scoped");
}

#[test]
fn a_header_flag_carries_a_static_credential() {
    let s = protected();
    let mut cmd = std::process::Command::new(tern_bin());
    cmd.args(["call", &s.url, "--header"])
        .arg(format!("Authorization: Bearer {}", token(&s.url, "mcp")))
        .args(["tool", "echo", "text=via-header"]);
    run(cmd).ok().says("via-header");
    let mut cmd = std::process::Command::new(tern_bin());
    cmd.args(["call", &s.url, "--header", "no colon here", "tool", "echo"]);
    run(cmd).failed(2).says("expected 'Name: value'");
}

#[test]
fn the_config_file_supplies_credentials_per_server_and_flags_win() {
    let s = protected();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"servers": {s.url.as_str(): {"bearer_env": "CONFIGURED"}}}).to_string(),
    )
    .unwrap();
    let call = |extra: &[&str], env: &[(&str, String)]| {
        let mut cmd = std::process::Command::new(tern_bin());
        cmd.args(["call", &s.url])
            .args(extra)
            .args(["tool", "echo", "text=configured"])
            .env("TERN_CONFIG", &config);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run(cmd)
    };
    call(&[], &[("CONFIGURED", token(&s.url, "mcp"))])
        .ok()
        .says("configured");
    // A flag wins over the file: this token is for another audience.
    call(
        &["--bearer-env", "FLAG"],
        &[
            ("CONFIGURED", token(&s.url, "mcp")),
            ("FLAG", token("https://other.example/mcp", "mcp")),
        ],
    )
    .failed(3)
    .says("401");
    // A misspelt key is named, with the file.
    std::fs::write(&config, r#"{"servers": {"x": {"bearer": "V"}}}"#).unwrap();
    call(&[], &[])
        .failed(2)
        .says("unknown field `bearer`")
        .says("config.json");
}

/// RFC 9068 §4 (issue 27 point 8): a token typed `JWT` is refused unless
/// `--jwt-typ JWT` names the issuer's type; `--jwt-typ` means nothing to a
/// token file and is refused there.
#[test]
fn a_jwt_typed_token_is_served_only_when_its_type_is_named() {
    let s = protected();
    let plain = |url: &str| typed_token(url, "mcp", "JWT");
    call_with_token(&s.url, &plain(&s.url), &["tool", "echo", "text=hi"])
        .failed(3)
        .says("401");
    let named = Server::start_with(
        &[
            "--auth",
            "hs256-env:TERN_TEST_SECRET",
            "--issuer",
            ISSUER,
            "--jwt-typ",
            "JWT",
        ],
        &[("TERN_TEST_SECRET", SECRET)],
    );
    call_with_token(
        &named.url,
        &plain(&named.url),
        &["tool", "echo", "text=typed"],
    )
    .ok()
    .says("typed");
    call_with_token(
        &named.url,
        &token(&named.url, "mcp"),
        &["tool", "echo", "text=at"],
    )
    .ok()
    .says("at");
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "alice secret\n").unwrap();
    let mut cmd = std::process::Command::new(tern_bin());
    cmd.args(["serve", "--http", "127.0.0.1:0", "--auth"])
        .arg(format!("tokens:{}", tokens.display()))
        .args(["--jwt-typ", "JWT"])
        .env("XDG_DATA_HOME", dir.path());
    run(cmd)
        .failed(1)
        .says("--jwt-typ applies to JWTs, not to --auth tokens:FILE");
}
