//! `JwtAuthenticator` as a resource server over real HTTP, against hostile
//! tokens (issue 27 point 8, DIGEST §8, RFC 9068, RFC 8725): `nbf`, `iat`
//! and `exp` under one skew, `typ` checked, a subject required, sizes
//! bounded, `alg: none` and algorithm confusion refused.
#![cfg(all(feature = "server", feature = "client"))]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tern_http::{
    DEFAULT_MAX_TOKEN_BYTES, HttpOptions, JwtAuthenticator, JwtKeys, TokenTypes, router,
};
use tern_server::{Caller, Server, ToolResult};

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "https://mcp.example/mcp";
const METADATA: &str = "https://mcp.example/.well-known/oauth-protected-resource/mcp";

/// Ed25519 test key (PKCS #8 DER, base64) and its public `x`, for the
/// JWKS cases.
const ED_PKCS8: &str = "MC4CAQAwBQYDK2VwBCIEIKkU2ICoaOBe/gcY33myaP8cxo5NdOOQ2xFB0hqVr7Q1";
const ED_X: &str = "OBNO9sdRvJJ32cfc9vcKa548oHR2ipG4zHhFjLzFRFQ";

/// Says who the server took the caller for.
async fn whoami(Caller(p): Caller) -> ToolResult {
    ToolResult::text(format!("{p:?}"))
}

async fn start(auth: JwtAuthenticator) -> SocketAddr {
    let server = Server::builder("t", "1")
        .tool("whoami", "Names the caller", whoami)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(
        server,
        HttpOptions::default(),
        Arc::new(auth.resource_metadata(METADATA)),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn hs256_auth() -> JwtAuthenticator {
    JwtAuthenticator::new(JwtKeys::Hs256(SECRET.to_vec()), ISSUER, RESOURCE)
}

fn now() -> u64 {
    get_current_timestamp()
}

/// Claims every accepted token has, with `more` merged over them (a
/// `null` removes one).
fn claims(more: Value) -> Value {
    let mut c = json!({"iss": ISSUER, "aud": RESOURCE, "exp": now() + 600,
                       "sub": "alice", "client_id": "app"});
    for (k, v) in more.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

fn signed(typ: Option<&str>, claims: &Value) -> String {
    let mut head = Header::new(Algorithm::HS256);
    head.typ = typ.map(str::to_owned);
    encode(&head, claims, &EncodingKey::from_secret(SECRET).unwrap()).unwrap()
}

fn token(more: Value) -> String {
    signed(Some("at+jwt"), &claims(more))
}

/// Calls `whoami` with `token`: the status, and the principal served or
/// the challenge.
async fn call(addr: SocketAddr, token: &str) -> (StatusCode, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "whoami", "arguments": {}}});
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "whoami")
        .bearer_auth(token)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status();
    if status != StatusCode::OK {
        let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
        return (status, challenge);
    }
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    (
        status,
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn principal(subject: &str, client_id: &str) -> String {
    format!(
        "OAuth {{ issuer: {ISSUER:?}, subject: {subject:?}, client_id: {client_id:?}, resource: {RESOURCE:?} }}"
    )
}

/// Asserts `token` is refused with a 401 and the invalid_token challenge.
async fn refused(addr: SocketAddr, token: &str, why: &str) {
    let (status, challenge) = call(addr, token).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{why}: {challenge}");
    assert_eq!(
        challenge,
        format!("Bearer error=\"invalid_token\", resource_metadata=\"{METADATA}\""),
        "{why}"
    );
}

async fn served(addr: SocketAddr, token: &str, why: &str) -> String {
    let (status, who) = call(addr, token).await;
    assert_eq!(status, StatusCode::OK, "{why}: {who}");
    who
}

#[tokio::test]
async fn an_access_token_is_served_as_its_principal() {
    let addr = start(hs256_auth()).await;
    for typ in ["at+jwt", "application/at+jwt", "AT+JWT"] {
        let who = served(addr, &signed(Some(typ), &claims(json!({}))), typ).await;
        assert_eq!(who, principal("alice", "app"));
    }
    // client_credentials: no sub, so the client id is the subject; a
    // client id given as azp counts.
    let who = served(addr, &token(json!({"sub": null})), "no sub").await;
    assert_eq!(who, principal("app", "app"));
    let azp = token(json!({"sub": null, "client_id": null, "azp": "svc"}));
    assert_eq!(served(addr, &azp, "azp").await, principal("svc", "svc"));
}

/// `nbf` an hour ahead is refused, as an `exp` an hour past is; within
/// the 60 s skew both are served. `iat` in the future is held to the same.
#[tokio::test]
async fn nbf_iat_and_exp_share_one_skew() {
    let addr = start(hs256_auth()).await;
    let t = now();
    refused(addr, &token(json!({"nbf": t + 3600})), "nbf in an hour").await;
    served(addr, &token(json!({"nbf": t + 30})), "nbf in 30 s").await;
    refused(
        addr,
        &token(json!({"exp": t - 3600})),
        "expired an hour ago",
    )
    .await;
    served(addr, &token(json!({"exp": t - 30})), "expired 30 s ago").await;
    refused(addr, &token(json!({"iat": t + 3600})), "issued in an hour").await;
    served(addr, &token(json!({"iat": t + 30})), "issued in 30 s").await;
    refused(addr, &token(json!({"nbf": "soon"})), "nbf not a date").await;
    refused(addr, &token(json!({"exp": null})), "no exp").await;

    let strict = start(hs256_auth().leeway(Duration::ZERO)).await;
    refused(strict, &token(json!({"nbf": t + 30})), "no skew").await;
}

/// RFC 9068 §4: `typ` must be `at+jwt`. `JWT`, another JWT type, or none
/// is refused unless the issuer's type is named explicitly; `Any` turns
/// the check off.
#[tokio::test]
async fn the_typ_header_must_name_an_access_token() {
    let c = claims(json!({}));
    let addr = start(hs256_auth()).await;
    for typ in [Some("JWT"), Some("id_token+jwt"), Some("jwt+at"), None] {
        refused(addr, &signed(typ, &c), &format!("{typ:?}")).await;
    }
    let also = start(hs256_auth().token_types(TokenTypes::Also(vec!["JWT".into()]))).await;
    served(also, &signed(Some("jwt"), &c), "JWT named").await;
    served(also, &signed(Some("at+jwt"), &c), "at+jwt still").await;
    refused(also, &signed(None, &c), "no typ").await;
    let any = start(hs256_auth().token_types(TokenTypes::Any)).await;
    served(any, &signed(None, &c), "no typ, check off").await;
}

/// A token with neither `sub` nor a client id is refused: served, every
/// such token would be one principal (one state, one session binding).
#[tokio::test]
async fn a_token_without_a_subject_is_refused() {
    let addr = start(hs256_auth()).await;
    let none = token(json!({"sub": null, "client_id": null}));
    refused(addr, &none, "neither").await;
    let empty = token(json!({"sub": "", "client_id": ""}));
    refused(addr, &empty, "empty").await;
    refused(addr, &token(json!({"sub": 7})), "not a string").await;
}

fn unsigned(header: &Value, claims: &Value) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.", part(header), part(claims))
}

/// Hostile tokens: `alg: none`, garbage, a bad signature, the wrong
/// audience or issuer, and tokens over the size limit (a signed, valid
/// one just under it is served, so the size is the only reason).
#[tokio::test]
async fn hostile_tokens_are_refused() {
    let addr = start(hs256_auth()).await;
    let c = claims(json!({}));
    for alg in ["none", "None", "NONE"] {
        let t = unsigned(&json!({"alg": alg, "typ": "at+jwt"}), &c);
        refused(addr, &t, alg).await;
    }
    for garbage in ["a", "a.b", "a.b.c", "...", "%%.%%.%%", "e30.e30.e30"] {
        refused(addr, garbage, garbage).await;
    }
    // An empty token is no credential at all: a challenge without an
    // error code (RFC 6750 §3.1).
    let (status, challenge) = call(addr, "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );
    let good = token(json!({}));
    let (head, rest) = good.split_once('.').unwrap();
    let (body, sig) = rest.split_once('.').unwrap();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    refused(
        addr,
        &format!("{head}.{body}.{flipped}{}", &sig[1..]),
        "signature",
    )
    .await;
    refused(
        addr,
        &token(json!({"aud": "https://elsewhere/mcp"})),
        "audience",
    )
    .await;
    refused(
        addr,
        &token(json!({"aud": [RESOURCE, "x"], "iss": "https://evil"})),
        "issuer",
    )
    .await;
    served(
        addr,
        &token(json!({"aud": ["https://other", RESOURCE]})),
        "one of",
    )
    .await;

    let padded = |n: usize| token(json!({"pad": "p".repeat(n)}));
    let base = padded(0).len();
    // Base64 grows the claims by 4/3.
    let under = padded((DEFAULT_MAX_TOKEN_BYTES - base) * 3 / 4 - 8);
    assert!(under.len() <= DEFAULT_MAX_TOKEN_BYTES);
    served(addr, &under, "just under the limit").await;
    let over = padded((DEFAULT_MAX_TOKEN_BYTES - base) * 3 / 4 + 8);
    assert!(over.len() > DEFAULT_MAX_TOKEN_BYTES);
    refused(addr, &over, "over the limit").await;
    let exact = start(hs256_auth().max_token_bytes(good.len())).await;
    served(exact, &good, "at a lowered limit").await;
    let small = start(hs256_auth().max_token_bytes(good.len() - 1)).await;
    refused(small, &good, "over a lowered limit").await;
}

fn jwks(jwk: Value) -> JwtKeys {
    JwtAuthenticator::jwks(&json!({ "keys": [jwk] }).to_string()).unwrap()
}

fn ed_jwk() -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "ed", "alg": "EdDSA", "use": "sig"})
}

fn ed_signed(kid: Option<&str>, claims: &Value) -> String {
    let mut head = Header::new(Algorithm::EdDSA);
    head.typ = Some("at+jwt".into());
    head.kid = kid.map(str::to_owned);
    let der = base64::engine::general_purpose::STANDARD
        .decode(ED_PKCS8)
        .unwrap();
    let key = EncodingKey::from_ed_der(&der);
    encode(&head, claims, &key).unwrap()
}

/// A JWKS key is used only with the algorithm it declares and only for
/// signatures: an HS256 token keyed with the public key's bytes
/// (algorithm confusion), a key marked for encryption, an unknown or
/// missing `kid` are all refused.
#[tokio::test]
async fn jwks_keys_are_used_only_as_declared() {
    let c = claims(json!({}));
    let addr = start(JwtAuthenticator::new(jwks(ed_jwk()), ISSUER, RESOURCE)).await;
    let who = served(addr, &ed_signed(Some("ed"), &c), "EdDSA").await;
    assert_eq!(who, principal("alice", "app"));
    refused(addr, &ed_signed(Some("other"), &c), "unknown kid").await;
    refused(addr, &ed_signed(None, &c), "no kid").await;

    let mut head = Header::new(Algorithm::HS256);
    head.typ = Some("at+jwt".into());
    head.kid = Some("ed".into());
    let public = URL_SAFE_NO_PAD.decode(ED_X).unwrap();
    let confused = encode(&head, &c, &EncodingKey::from_secret(&public).unwrap()).unwrap();
    refused(addr, &confused, "HS256 with the public key").await;

    let mut enc = ed_jwk();
    enc["use"] = json!("enc");
    let enc_only = start(JwtAuthenticator::new(jwks(enc), ISSUER, RESOURCE)).await;
    refused(enc_only, &ed_signed(Some("ed"), &c), "encryption key").await;
}

/// A refused token's reason goes to the log, which a peer could try to
/// write lines into: the reason is recorded escaped and cut to 200
/// characters, so nothing in a token starts a line of its own.
#[tokio::test]
async fn a_refused_token_cannot_write_lines_into_the_log() {
    let (logs, _guard) = tern_testkit::logs::Captured::start();
    let addr = start(hs256_auth()).await;
    let forged = format!(
        "x\n2026-01-01T00:00:00.000000Z  INFO tern::serve: FORGED {}",
        "y".repeat(2_000)
    );
    let t = unsigned(&json!({"alg": forged, "typ": "at+jwt"}), &claims(json!({})));
    refused(addr, &t, "forging").await;
    let text = logs.text();
    assert!(!text.lines().any(|l| l.starts_with("2026-01-01")), "{text}");
    let line = logs.line("bearer token refused");
    assert!(
        line.contains(r"x\n2026-01-01") && line.contains("FORGED"),
        "{line}"
    );
    assert!(line.len() < 400, "{line}");
}

/// Two `Authorization` headers: which one counts would be up to each hop
/// on the way, so neither does, even when both are valid.
#[tokio::test]
async fn two_authorization_headers_are_no_credential() {
    let addr = start(hs256_auth()).await;
    let good = token(json!({}));
    for second in [good.clone(), "junk".to_owned()] {
        let r = reqwest::Client::new()
            .post(format!("http://{addr}/mcp"))
            .header("authorization", format!("Bearer {good}"))
            .header("authorization", format!("Bearer {second}"))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers()["www-authenticate"],
            format!("Bearer resource_metadata=\"{METADATA}\"").as_str()
        );
    }
    served(addr, &good, "one header").await;
}
