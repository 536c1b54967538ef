//! The OAuth client against hostile or broken authorization servers
//! (DIGEST §8): each case ends the call with a clear authorization error
//! and stores no token. One loopback app plays the protected MCP server, its
//! protected resource metadata and the authorization server; each test
//! picks how the authorization server misbehaves.
#![cfg(all(feature = "client", feature = "server"))]

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tern_client::{BoxFuture, Client, EraPolicy, Error};
use tern_http::oauth::{OAuthOptions, StoredToken, TokenStore, UserAgent};
use tern_http::{HttpClientOptions, HttpTransport};

/// A document the test server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Doc {
    ResourceMetadata,
    ServerMetadata,
    Registration,
    Token,
}

/// How a padded body is sent: with its `Content-Length`, or streamed in
/// 4 KiB chunks without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Delivery {
    Sized,
    Streamed,
}

/// Where a `401`'s `resource_metadata` points instead of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Points {
    /// A cloud metadata service on plain http.
    Ssrf,
    /// A local file.
    File,
    /// The same port at `localhost` rather than `127.0.0.1`: another
    /// origin, on plain http.
    OtherOrigin,
}

/// How the authorization server misbehaves.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Fault {
    /// Everything right: the control case.
    None,
    /// The metadata document names another issuer (AUTH-C5).
    IssuerDiffers,
    /// The token endpoint answers something that is not JSON.
    GarbageToken,
    /// The token endpoint answers JSON without an access token.
    TokenWithoutAccessToken,
    /// The resource names an authorization server on plain non-loopback
    /// http; never contacted.
    PlainHttpIssuer,
    /// The authorization and token endpoints are on plain non-loopback
    /// http.
    PlainHttpEndpoints,
    /// No S256 in `code_challenge_methods_supported` (AUTH-C6).
    NoPkce,
    /// The MCP endpoint asks for no token at all.
    Unprotected,
    /// `Doc` padded with spaces to exactly this many bytes.
    Big(Doc, usize, Delivery),
    /// The resource metadata trickles a space a second, forever.
    TrickleResourceMetadata,
    /// These fields replace the token answer's.
    TokenFields(Value),
    /// The resource metadata's `resource` is the origin plus this path.
    Resource(&'static str),
    /// The challenge's `resource_metadata` points elsewhere.
    ChallengePoints(Points),
    /// The registration endpoint is on plain non-loopback http.
    PlainHttpRegistration,
    /// The MCP endpoint refuses every token with `401`.
    Forever401,
}

/// How the person's browser comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Back {
    Right,
    /// Right, after the person took this long.
    RightAfter(std::time::Duration),
    WrongState,
    WrongIss,
    /// An `error` with a wrong `iss`: the error text must not be shown
    /// (AUTH-C7).
    ErrorWithWrongIss,
}

#[derive(Clone)]
pub(super) struct App {
    pub(super) base: String,
    fault: Fault,
    /// Token requests seen.
    pub(super) token_requests: Arc<Mutex<u32>>,
    /// The form of each token request, in order.
    pub(super) token_forms: Arc<Mutex<Vec<HashMap<String, String>>>>,
    /// Requests the MCP endpoint saw, and registrations.
    pub(super) mcp_requests: Arc<AtomicUsize>,
    pub(super) registrations: Arc<AtomicUsize>,
}

impl App {
    /// The named field of each token request, in order.
    pub(super) fn token_field(&self, name: &str) -> Vec<String> {
        self.token_forms
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.get(name).cloned().unwrap_or_default())
            .collect()
    }

    /// The access token the token endpoint hands out.
    fn issued(&self) -> String {
        match &self.fault {
            Fault::TokenFields(v) => v["access_token"].as_str().unwrap_or("good-token").into(),
            _ => "good-token".into(),
        }
    }
}

fn json_ok(v: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// `v`, padded with spaces to `len` bytes when `app`'s fault says so for
/// `doc`.
fn serve(app: &App, doc: Doc, v: Value) -> Response {
    let Fault::Big(which, len, delivery) = app.fault else {
        return json_ok(v);
    };
    if which != doc {
        return json_ok(v);
    }
    let mut body = v.to_string().into_bytes();
    assert!(body.len() <= len, "{doc:?} is longer than {len} already");
    body.resize(len, b' ');
    let body = match delivery {
        Delivery::Sized => axum::body::Body::from(body),
        Delivery::Streamed => {
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                body.chunks(4096).map(|c| Ok(c.to_vec())).collect();
            axum::body::Body::from_stream(futures_util::stream::iter(chunks))
        }
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

async fn mcp(State(app): State<App>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    app.mcp_requests.fetch_add(1, Ordering::Relaxed);
    let authorized = app.fault == Fault::Unprotected
        || (app.fault != Fault::Forever401
            && headers
                .get(header::AUTHORIZATION)
                .is_some_and(|v| v.as_bytes() == format!("Bearer {}", app.issued()).as_bytes()));
    if !authorized {
        let port = app.base.rsplit(':').next().unwrap_or_default();
        let metadata = match app.fault {
            Fault::ChallengePoints(Points::Ssrf) => {
                "http://169.254.169.254/latest/meta-data/".to_owned()
            }
            Fault::ChallengePoints(Points::File) => "file:///etc/passwd".to_owned(),
            Fault::ChallengePoints(Points::OtherOrigin) => {
                format!("http://localhost:{port}/.well-known/oauth-protected-resource/mcp")
            }
            _ => format!("{}/.well-known/oauth-protected-resource/mcp", app.base),
        };
        let challenge = format!(r#"Bearer resource_metadata="{metadata}", scope="mcp""#);
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    }
    let id = serde_json::from_slice::<Value>(&body).unwrap_or_default()["id"].clone();
    json_ok(json!({"jsonrpc": "2.0", "id": id, "result": {
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "protected", "version": "1"}}
    }}))
}

async fn resource_metadata(State(app): State<App>) -> Response {
    if app.fault == Fault::TrickleResourceMetadata {
        let trickle = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            Some((Ok::<_, std::io::Error>(b" ".to_vec()), ()))
        });
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            axum::body::Body::from_stream(trickle),
        )
            .into_response();
    }
    let issuer = if app.fault == Fault::PlainHttpIssuer {
        "http://auth.example.test".to_owned()
    } else {
        app.base.clone()
    };
    let resource = match app.fault {
        Fault::Resource(path) => format!("{}{path}", app.base),
        _ => format!("{}/mcp", app.base),
    };
    let v = json!({
        "resource": resource,
        "authorization_servers": [issuer],
        "scopes_supported": ["mcp"]
    });
    serve(&app, Doc::ResourceMetadata, v)
}

async fn register(State(app): State<App>) -> Response {
    app.registrations.fetch_add(1, Ordering::Relaxed);
    serve(&app, Doc::Registration, json!({"client_id": "dcr-client"}))
}

async fn server_metadata(State(app): State<App>) -> Response {
    let issuer = if app.fault == Fault::IssuerDiffers {
        "https://elsewhere.example.test".to_owned()
    } else {
        app.base.clone()
    };
    let endpoints = if app.fault == Fault::PlainHttpEndpoints {
        "http://auth.example.test".to_owned()
    } else {
        app.base.clone()
    };
    let pkce = if app.fault == Fault::NoPkce {
        json!(["plain"])
    } else {
        json!(["S256"])
    };
    let registration = if app.fault == Fault::PlainHttpRegistration {
        "http://auth.example.test/register".to_owned()
    } else {
        format!("{}/register", app.base)
    };
    let v = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{endpoints}/authorize"),
        "token_endpoint": format!("{endpoints}/token"),
        "registration_endpoint": registration,
        "code_challenge_methods_supported": pkce,
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true
    });
    serve(&app, Doc::ServerMetadata, v)
}

async fn token(State(app): State<App>, body: axum::body::Bytes) -> Response {
    *app.token_requests.lock().unwrap() += 1;
    let form = url::form_urlencoded::parse(&body).into_owned().collect();
    app.token_forms.lock().unwrap().push(form);
    let mut answer = json!({
        "access_token": "good-token", "token_type": "Bearer", "expires_in": 3600,
        "refresh_token": "refresh-me"
    });
    match &app.fault {
        Fault::GarbageToken => (StatusCode::OK, "<html>oops</html>").into_response(),
        Fault::TokenWithoutAccessToken => {
            json_ok(json!({"token_type": "Bearer", "expires_in": 60}))
        }
        Fault::TokenFields(fields) => {
            for (k, v) in fields.as_object().unwrap() {
                answer[k] = v.clone();
            }
            json_ok(answer)
        }
        _ => serve(&app, Doc::Token, answer),
    }
}

pub(super) async fn start(fault: Fault) -> App {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let app = App {
        base: format!("http://{}", listener.local_addr().unwrap()),
        fault,
        token_requests: Arc::default(),
        token_forms: Arc::default(),
        mcp_requests: Arc::default(),
        registrations: Arc::default(),
    };
    let router = Router::new()
        .route("/mcp", post(mcp))
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/token", post(token))
        .route("/register", post(register))
        .with_state(app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    app
}

/// The person's browser, answering the way `back` says.
struct Browser {
    back: Back,
    issuer: String,
    /// Sign-ins it was taken through.
    sign_ins: Arc<AtomicUsize>,
}

impl UserAgent for Browser {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".into()
    }

    fn authorize<'a>(
        &'a self,
        url: &'a str,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<String, Error>> {
        Box::pin(async move {
            self.sign_ins.fetch_add(1, Ordering::Relaxed);
            assert_eq!(
                issuer, self.issuer,
                "the issuer shown is the one discovered"
            );
            let q: HashMap<String, String> = reqwest::Url::parse(url)
                .unwrap()
                .query_pairs()
                .into_owned()
                .collect();
            let state = q["state"].clone();
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let iss = enc(issuer);
            if let Back::RightAfter(took) = self.back {
                tokio::time::sleep(took).await;
            }
            Ok(match self.back {
                Back::Right | Back::RightAfter(_) => {
                    format!("{}?code=c0de&state={state}&iss={iss}", self.redirect_uri())
                }
                Back::WrongState => {
                    format!("{}?code=c0de&state=forged&iss={iss}", self.redirect_uri())
                }
                Back::WrongIss => format!(
                    "{}?code=c0de&state={state}&iss={}",
                    self.redirect_uri(),
                    enc("https://attacker.example.test")
                ),
                Back::ErrorWithWrongIss => format!(
                    "{}?error=access_denied&error_description={}&state={state}&iss={}",
                    self.redirect_uri(),
                    enc("call +1-555-0100 to unlock your account"),
                    enc("https://attacker.example.test")
                ),
            })
        })
    }
}

/// Tokens by resource, and how often the client read them.
#[derive(Default)]
pub(super) struct Tokens {
    pub(super) kept: Mutex<HashMap<String, StoredToken>>,
    loads: AtomicUsize,
}

impl TokenStore for Tokens {
    fn load(&self, resource: &str) -> Option<StoredToken> {
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.kept.lock().unwrap().get(resource).cloned()
    }
    fn save(&self, token: &StoredToken) {
        self.kept
            .lock()
            .unwrap()
            .insert(token.resource.clone(), token.clone());
    }
    fn remove(&self, resource: &str) {
        self.kept.lock().unwrap().remove(resource);
    }
}

/// Runs `discover` against the protected endpoint; the outcome and the
/// tokens stored.
pub(super) async fn sign_in(app: &App, back: Back) -> (Result<(), Error>, Arc<Tokens>) {
    let tokens = Arc::new(Tokens::default());
    let outcome = sign_in_with(app, back, tokens.clone()).await;
    (outcome, tokens)
}

async fn sign_in_with(app: &App, back: Back, tokens: Arc<Tokens>) -> Result<(), Error> {
    client(app, back, tokens).discover().await.map(|_| ())
}

/// A client of `app`'s MCP endpoint keeping its tokens in `store`.
fn client(app: &App, back: Back, store: Arc<dyn TokenStore>) -> Client {
    client_with(app, back, store, &Arc::default(), |_| {})
}

/// A client of `app`'s MCP endpoint keeping its tokens in `store`,
/// counting the sign-ins its browser is taken through in `sign_ins`, with
/// `tweak` applied to its options (a pre-registered client id otherwise).
pub(super) fn client_with(
    app: &App,
    back: Back,
    store: Arc<dyn TokenStore>,
    sign_ins: &Arc<AtomicUsize>,
    tweak: impl FnOnce(&mut OAuthOptions),
) -> Client {
    builder_with(app, back, store, sign_ins, tweak).build()
}

/// [`client_with`]'s builder, for a test's own client settings.
pub(super) fn builder_with(
    app: &App,
    back: Back,
    store: Arc<dyn TokenStore>,
    sign_ins: &Arc<AtomicUsize>,
    tweak: impl FnOnce(&mut OAuthOptions),
) -> tern_client::ClientBuilder {
    let browser = Browser {
        back,
        issuer: app.base.clone(),
        sign_ins: sign_ins.clone(),
    };
    let mut oauth = OAuthOptions::new("tern-tests", Arc::new(browser));
    oauth.registration.client_id = Some("pre-registered".into());
    oauth.store = Some(store);
    tweak(&mut oauth);
    let options = HttpClientOptions {
        oauth: Some(oauth),
        ..HttpClientOptions::default()
    };
    let transport = HttpTransport::with_options(&format!("{}/mcp", app.base), options).unwrap();
    Client::builder(transport).era(EraPolicy::Modern)
}

pub(super) async fn refused(fault: Fault, back: Back) -> (String, App) {
    let app = start(fault.clone()).await;
    let (outcome, tokens) = sign_in(&app, back).await;
    let err = outcome.expect_err("the sign-in must fail");
    assert!(err.is_unauthorized(), "{fault:?}/{back:?}: {err}");
    assert!(
        tokens.kept.lock().unwrap().is_empty(),
        "{fault:?}/{back:?}: no token may be stored"
    );
    (err.to_string(), app)
}

/// The request timeout bounds the server's time: a person who takes
/// longer than it to sign in still gets the answer, while a server as slow
/// as that would have failed the request (SECURITY.md, "Signing in").
#[tokio::test]
async fn the_person_s_time_in_the_browser_is_not_the_server_s() {
    let app = start(Fault::None).await;
    let slow = Back::RightAfter(std::time::Duration::from_millis(1_500));
    let client = builder_with(
        &app,
        slow,
        Arc::new(Tokens::default()),
        &Arc::default(),
        |_| {},
    )
    .request_timeout(std::time::Duration::from_millis(500))
    .build();
    client.discover().await.expect("signed in, then answered");
}

#[tokio::test]
async fn the_control_case_signs_in_and_stores_the_token() {
    let app = start(Fault::None).await;
    let (outcome, tokens) = sign_in(&app, Back::Right).await;
    outcome.expect("signs in");
    let stored = tokens.load(&format!("{}/mcp", app.base)).expect("stored");
    assert_eq!(stored.access_token, "good-token");
    assert_eq!(stored.issuer, app.base);
    assert_eq!(stored.scopes, vec!["mcp".to_owned()]);
}

#[tokio::test]
async fn a_metadata_document_naming_another_issuer_is_discarded() {
    let (msg, app) = refused(Fault::IssuerDiffers, Back::Right).await;
    assert!(
        msg.contains("names the issuer \"https://elsewhere.example.test\""),
        "{msg}"
    );
    assert_eq!(*app.token_requests.lock().unwrap(), 0);
}

#[tokio::test]
async fn a_redirect_with_a_forged_state_is_refused_before_the_code_is_used() {
    let (msg, app) = refused(Fault::None, Back::WrongState).await;
    assert!(msg.contains("state is not the one sent"), "{msg}");
    assert_eq!(*app.token_requests.lock().unwrap(), 0);
}

#[tokio::test]
async fn a_redirect_from_another_issuer_is_refused_before_the_code_is_used() {
    let (msg, app) = refused(Fault::None, Back::WrongIss).await;
    assert!(msg.contains("is not the issuer"), "{msg}");
    assert_eq!(*app.token_requests.lock().unwrap(), 0);
}

#[tokio::test]
async fn an_error_redirect_with_a_wrong_iss_is_never_shown() {
    let (msg, _) = refused(Fault::None, Back::ErrorWithWrongIss).await;
    assert!(msg.contains("is not the issuer"), "{msg}");
    assert!(
        !msg.contains("access_denied") && !msg.contains("555"),
        "{msg}"
    );
}

#[tokio::test]
async fn an_authorization_server_on_plain_http_elsewhere_is_never_contacted() {
    let (msg, _) = refused(Fault::PlainHttpIssuer, Back::Right).await;
    assert!(
        msg.contains("the authorization server http://auth.example.test is not on https"),
        "{msg}"
    );
    let (msg, _) = refused(Fault::PlainHttpEndpoints, Back::Right).await;
    assert!(
        msg.contains("http://auth.example.test/authorize is not on https"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_token_endpoint_answering_garbage_stores_nothing() {
    let (msg, app) = refused(Fault::GarbageToken, Back::Right).await;
    assert!(
        msg.contains("the token endpoint answered garbage (HTTP 200 OK)"),
        "{msg}"
    );
    assert_eq!(*app.token_requests.lock().unwrap(), 1);
    let (msg, _) = refused(Fault::TokenWithoutAccessToken, Back::Right).await;
    assert!(msg.contains("the token answer is malformed"), "{msg}");
}

#[tokio::test]
async fn no_s256_means_no_authorization_request() {
    let (msg, _) = refused(Fault::NoPkce, Back::Right).await;
    assert!(msg.contains("does not offer PKCE S256"), "{msg}");
}

#[tokio::test]
async fn after_a_move_to_another_authorization_server_the_old_one_gets_no_refresh() {
    // A token from the server the resource used before, with a refresh
    // token; the resource now names `app` alone (AUTH-C11).
    after_a_move(None).await;
}

/// The README's promise holds for an expired token too: it is refreshed
/// before the message goes out, but not at a server the resource no longer
/// names (AUTH-C11); the old server gets no request at all.
#[tokio::test]
async fn after_a_move_an_expired_token_is_not_refreshed_at_the_old_server() {
    after_a_move(Some(1)).await;
}

/// A token from the server the resource used before (expiring at
/// `expires_at`), with a refresh token, while the resource now names
/// another: the sign-in goes to the new server, and the old one gets no
/// request at all (AUTH-C11).
async fn after_a_move(expires_at: Option<u64>) {
    let old = start(Fault::None).await;
    let app = start(Fault::None).await;
    let resource = format!("{}/mcp", app.base);
    let tokens = Arc::new(Tokens::default());
    tokens.save(&StoredToken {
        resource: resource.clone(),
        resource_indicator: None,
        issuer: old.base.clone(),
        access_token: "stale".into(),
        refresh_token: Some("old-refresh".into()),
        expires_at,
        scopes: vec!["mcp".into()],
        client_id: "pre-registered".into(),
        client_secret: None,
    });
    sign_in_with(&app, Back::Right, tokens.clone())
        .await
        .expect("signs in at the new server");
    assert_eq!(*old.token_requests.lock().unwrap(), 0);
    assert_eq!(*app.token_requests.lock().unwrap(), 1);
    let stored = tokens.load(&resource).unwrap();
    assert_eq!(stored.issuer, app.base);
    assert_eq!(stored.access_token, "good-token");
}

#[tokio::test]
async fn the_token_store_is_read_once_not_on_every_request() {
    // The store may be a file: a client without a token (the endpoint asks
    // for none) must not read it again for each request.
    let app = start(Fault::Unprotected).await;
    let tokens = Arc::new(Tokens::default());
    let client = client(&app, Back::Right, tokens.clone());
    for _ in 0..5 {
        client.discover().await.expect("an open endpoint answers");
    }
    assert_eq!(tokens.loads.load(Ordering::Relaxed), 1);
    assert!(tokens.kept.lock().unwrap().is_empty());
    assert_eq!(*app.token_requests.lock().unwrap(), 0);
}

/// A store another run (`tern login`) writes after this client first read
/// it.
struct WrittenLater(Tokens);

impl TokenStore for WrittenLater {
    fn load(&self, resource: &str) -> Option<StoredToken> {
        let first = self.0.loads.load(Ordering::Relaxed) == 0;
        let token = self.0.load(resource);
        if first { None } else { token }
    }
    fn save(&self, token: &StoredToken) {
        self.0.save(token);
    }
    fn remove(&self, resource: &str) {
        self.0.remove(resource);
    }
}

/// A [`WrittenLater`] store holding `access_token` for `app`'s endpoint.
fn written_later(app: &App, access_token: &str) -> Arc<WrittenLater> {
    let store = Arc::new(WrittenLater(Tokens::default()));
    store.0.save(&StoredToken {
        resource: format!("{}/mcp", app.base),
        resource_indicator: None,
        issuer: app.base.clone(),
        access_token: access_token.into(),
        refresh_token: None,
        expires_at: None,
        scopes: vec!["mcp".into()],
        client_id: "pre-registered".into(),
        client_secret: None,
    });
    store
}

#[tokio::test]
async fn on_a_401_a_token_stored_since_by_another_run_is_used_before_signing_in() {
    let app = start(Fault::None).await;
    let store = written_later(&app, "good-token");
    // The browser would refuse: a sign-in cannot be what lets it through.
    let client = client(&app, Back::WrongState, store.clone());
    client.discover().await.expect("the stored token is used");
    client.discover().await.expect("and kept");
    assert_eq!(*app.token_requests.lock().unwrap(), 0);
    assert_eq!(store.0.loads.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn on_a_401_a_token_stored_since_that_is_refused_too_leads_to_a_sign_in() {
    // The token another run stored since is stale as well: the client tries
    // it once, is refused again, then signs in and replaces it.
    let app = start(Fault::None).await;
    let resource = format!("{}/mcp", app.base);
    let store = written_later(&app, "stale-token");
    let client = client(&app, Back::Right, store.clone());
    client
        .discover()
        .await
        .expect("signs in after both refusals");
    assert_eq!(*app.token_requests.lock().unwrap(), 1);
    // One read at the start and one per 401: each challenge costs at most
    // one read of the store, however the server answers.
    assert_eq!(store.0.loads.load(Ordering::Relaxed), 3);
    let kept = store.0.kept.lock().unwrap().get(&resource).cloned();
    assert_eq!(kept.map(|t| t.access_token).as_deref(), Some("good-token"));
    client.discover().await.expect("the new token is kept");
    assert_eq!(*app.token_requests.lock().unwrap(), 1);
    assert_eq!(store.0.loads.load(Ordering::Relaxed), 3);
}
