//! Signing in to a protected MCP server: the OAuth client side of DIGEST §8
//! (2026-07-28 authorization, and 2025-11-25's, which is the same flow).
//!
//! On a `401` the transport asks an [`OAuth`] for a token: it finds the
//! protected resource metadata (RFC 9728: the `resource_metadata` URL of the
//! challenge, else the well-known locations), the authorization server's
//! metadata (RFC 8414 and OpenID discovery, path-insertion variants
//! included, `issuer` checked against the URL it was derived from), a client
//! id (pre-registered, a Client ID Metadata Document URL, or Dynamic Client
//! Registration, in that order), and runs the authorization code flow with
//! PKCE S256 and the `resource` parameter (RFC 8707), checking `state` and
//! the `iss` response parameter (RFC 9207). A `403` with
//! `error="insufficient_scope"` re-authorizes with the union of scopes, a
//! bounded number of times. Tokens are refreshed before they expire.
//!
//! Where the person's browser comes in is a [`UserAgent`]: `tern login`
//! opens the browser and listens on a loopback port; a test may follow the
//! authorization server's redirect itself.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tern_client::{BoxFuture, Error};

/// Where the person signs in: shown the authorization URL, it returns the
/// URL the authorization server redirected back to (with `code` and
/// `state`, or `error`).
pub trait UserAgent: Send + Sync + 'static {
    /// The redirect URI registered for this client.
    fn redirect_uri(&self) -> String;

    /// Takes the person through `authorization_url`; `issuer` is the
    /// authorization server, to show prominently.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<String, Error>>;
}

/// A user agent without a person: it requests the authorization URL itself
/// and takes the redirect the server answers with. For authorization
/// servers that approve without asking (test servers, pre-consented machine
/// clients); a server that shows a login page fails it clearly.
#[derive(Clone, Debug)]
pub struct HeadlessAgent {
    http: reqwest::Client,
    redirect_uri: String,
}

impl HeadlessAgent {
    /// An agent registering `redirect_uri`, which is never contacted: the
    /// code is read off the redirect.
    pub fn new(redirect_uri: &str) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| Error::transport_from("cannot build the HTTP client", e))?;
        Ok(HeadlessAgent {
            http,
            redirect_uri: redirect_uri.to_owned(),
        })
    }
}

impl UserAgent for HeadlessAgent {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        _issuer: &'a str,
    ) -> BoxFuture<'a, Result<String, Error>> {
        Box::pin(async move {
            let resp = self
                .http
                .get(authorization_url)
                .send()
                .await
                .map_err(|e| Error::transport_from("the authorization request failed", e))?;
            let location = resp
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|_| resp.status().is_redirection())
                .ok_or_else(|| {
                    auth_error(format!(
                        "the authorization server answered HTTP {} instead of redirecting back",
                        resp.status()
                    ))
                })?;
            if !location.starts_with(&self.redirect_uri) {
                return Err(auth_error(format!(
                    "the authorization server redirected to {location}, not back to this client"
                )));
            }
            Ok(location.to_owned())
        })
    }
}

/// A token as stored: for one resource, from one authorization server.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct StoredToken {
    /// The protected resource (`resource` of its metadata).
    pub resource: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// The bearer token.
    pub access_token: String,
    /// For refreshing, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds after which the access token is no longer used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes asked for.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The client it was issued to.
    pub client_id: String,
    /// That client's secret, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// Keeps tokens across runs (`tern` keeps them in a 0600 file).
pub trait TokenStore: Send + Sync + 'static {
    /// The token for `resource`, if one is kept.
    fn load(&self, resource: &str) -> Option<StoredToken>;
    /// Keeps `token` (replacing the one for its resource).
    fn save(&self, token: &StoredToken);
    /// Forgets the token for `resource` (it was refused).
    fn remove(&self, resource: &str);
}

/// How this client is known to authorization servers.
#[derive(Clone, Debug, Default)]
pub struct ClientRegistration {
    /// A pre-registered client id (tried first).
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The https URL of this client's metadata document, used as the client
    /// id where the server supports Client ID Metadata Documents.
    pub metadata_url: Option<String>,
    /// The name sent in Dynamic Client Registration.
    pub client_name: String,
}

/// The OAuth settings of an HTTP transport.
#[derive(Clone)]
pub struct OAuthOptions {
    /// How the client registers.
    pub registration: ClientRegistration,
    /// Where the person signs in.
    pub agent: Arc<dyn UserAgent>,
    /// Where tokens are kept, if anywhere.
    pub store: Option<Arc<dyn TokenStore>>,
    /// Ask for `offline_access` (a refresh token) where it is offered.
    pub offline_access: bool,
    /// How many times a `403 insufficient_scope` re-authorizes before the
    /// request fails (default 2).
    pub max_step_ups: u32,
    /// Allow authorization servers on plain `http` that are not loopback.
    /// Off by default: tokens and codes would travel in the clear.
    pub allow_insecure_http: bool,
    /// The time, Unix seconds (default [`system_now`]).
    pub now: fn() -> u64,
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("registration", &self.registration)
            .field("offline_access", &self.offline_access)
            .finish_non_exhaustive()
    }
}

impl OAuthOptions {
    /// Options with `agent`, no store, registration by name only.
    pub fn new(client_name: &str, agent: Arc<dyn UserAgent>) -> Self {
        OAuthOptions {
            registration: ClientRegistration {
                client_name: client_name.to_owned(),
                ..ClientRegistration::default()
            },
            agent,
            store: None,
            offline_access: false,
            max_step_ups: 2,
            allow_insecure_http: false,
            now: system_now,
        }
    }
}

/// A `WWW-Authenticate: Bearer` challenge's parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`.
    pub resource_metadata: Option<String>,
    /// `scope`, space-separated.
    pub scope: Option<String>,
    /// `error`, e.g. `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among `headers`' `WWW-Authenticate` values.
    pub fn from_headers(headers: &HeaderMap) -> Option<Challenge> {
        headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(Challenge::parse)
    }

    /// Parses `Bearer k="v", k2=v2`; `None` for another scheme.
    pub fn parse(value: &str) -> Option<Challenge> {
        let value = value.trim_start();
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut c = Challenge::default();
        let mut rest = rest.trim();
        while !rest.is_empty() {
            let Some((key, after)) = rest.split_once('=') else {
                break;
            };
            let key = key
                .trim()
                .trim_start_matches(',')
                .trim()
                .to_ascii_lowercase();
            let after = after.trim_start();
            let (val, next) = if let Some(quoted) = after.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => {
                            if let Some((_, esc)) = chars.next() {
                                out.push(esc);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        _ => out.push(ch),
                    }
                }
                (out, &quoted[end.min(quoted.len())..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            };
            match key.as_str() {
                "resource_metadata" => c.resource_metadata = Some(val),
                "scope" => c.scope = Some(val),
                "error" => c.error = Some(val),
                _ => {}
            }
            rest = next.trim_start().trim_start_matches(',').trim_start();
        }
        Some(c)
    }
}

#[derive(Clone, Debug, Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
}

#[derive(Clone, Debug, Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: Option<bool>,
}

#[derive(Clone, Debug, Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
}

#[derive(Clone, Debug)]
struct Registered {
    client_id: String,
    client_secret: Option<String>,
}

/// A client's sign-in state for one endpoint: the token in use, the client
/// registered at each authorization server, the scopes granted so far.
pub struct OAuth {
    options: OAuthOptions,
    http: reqwest::Client,
    state: Mutex<State>,
    /// One sign-in at a time.
    flow: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    token: Option<StoredToken>,
    /// By issuer: a client registered at one server is never used at
    /// another (authorization-server migration).
    clients: HashMap<String, Registered>,
    step_ups: u32,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").finish_non_exhaustive()
    }
}

/// Wall-clock Unix seconds: token lifetimes are the authorization
/// server's, in its time.
#[expect(
    clippy::disallowed_methods,
    reason = "the client has no server clock; tests inject OAuthOptions::now"
)]
pub fn system_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn random_token(n: usize) -> Result<String, Error> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| Error::transport(format!("no randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

fn auth_error(what: impl Into<String>) -> Error {
    Error::unauthorized(what)
}

/// `https`, or `http` on a loopback host: anything else would carry codes
/// and tokens in the clear (OAuth 2.1 §1.5).
fn secure_enough(url: &reqwest::Url, allow_http: bool) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => allow_http || url_is_loopback(url),
        _ => false,
    }
}

fn url_is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn parse_url(s: &str, what: &str) -> Result<reqwest::Url, Error> {
    reqwest::Url::parse(s).map_err(|_| auth_error(format!("{what} is not a URL: {s:?}")))
}

/// `origin` + `path` exactly, without the trailing `/` URL parsers add to
/// a bare origin.
fn origin_of(url: &reqwest::Url) -> String {
    url.origin().ascii_serialization()
}

/// The path of `url` without a trailing `/` (`""` for the root).
fn path_of(url: &reqwest::Url) -> String {
    url.path().trim_end_matches('/').to_owned()
}

impl OAuth {
    /// Sign-in state for one endpoint.
    pub fn new(options: OAuthOptions, http: reqwest::Client) -> Self {
        OAuth {
            options,
            http,
            state: Mutex::default(),
            flow: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Loads the stored token for `endpoint` the first time, and refreshes
    /// one about to expire; a refresh the server refuses drops the token.
    pub async fn ready(&self, endpoint: &str) {
        let token = {
            let mut s = self.lock();
            if s.token.is_none()
                && let Some(store) = &self.options.store
            {
                s.token = store.load(endpoint);
            }
            s.token.clone()
        };
        let Some(token) = token else { return };
        let due = token
            .expires_at
            .is_some_and(|at| at <= (self.options.now)() + 30);
        if due && let Err(e) = self.refresh(&token).await {
            tracing::debug!(error = %e, "the token could not be refreshed");
            self.forget(&token.resource);
        }
    }

    /// The `Authorization` value of the token held, if any.
    pub fn current(&self) -> Option<HeaderValue> {
        let s = self.lock();
        let t = s.token.as_ref()?;
        HeaderValue::from_str(&format!("Bearer {}", t.access_token)).ok()
    }

    fn forget(&self, resource: &str) {
        self.lock().token = None;
        if let Some(store) = &self.options.store {
            store.remove(resource);
        }
    }

    /// Answers a `401` or `403` challenge from `endpoint`: signs in (again)
    /// and returns true when a new token is held, false when the challenge
    /// is one this client cannot meet (a step-up beyond the limit).
    pub async fn answer(
        &self,
        endpoint: &str,
        status: StatusCode,
        challenge: Option<Challenge>,
    ) -> Result<bool, Error> {
        let _one = self.flow.lock().await;
        let challenge = challenge.unwrap_or_default();
        let previous = self.lock().token.clone();
        let mut scopes: BTreeSet<String> = BTreeSet::new();
        if status == StatusCode::FORBIDDEN {
            if challenge.error.as_deref() != Some("insufficient_scope") {
                return Ok(false);
            }
            let mut s = self.lock();
            s.step_ups += 1;
            if s.step_ups > self.options.max_step_ups {
                return Ok(false);
            }
            drop(s);
            // Step-up keeps what was granted and adds what is asked.
            if let Some(t) = &previous {
                scopes.extend(t.scopes.iter().cloned());
            }
        } else if let Some(t) = &previous {
            // A refused token is dropped (and its refresh tried first),
            // unless the resource now names other authorization servers:
            // then the old server's tokens are worthless here and its
            // refresh token is not sent anywhere (AUTH-C11, migration).
            let migrated = match parse_url(endpoint, "the server") {
                Ok(url) => self
                    .resource_metadata(&url, &challenge)
                    .await
                    .is_ok_and(|prm| !prm.authorization_servers.contains(&t.issuer)),
                Err(_) => false,
            };
            if !migrated
                && t.refresh_token.is_some()
                && let Ok(fresh) = self.refresh(t).await
                && fresh.access_token != t.access_token
            {
                return Ok(true);
            }
            self.forget(&t.resource);
        }
        let token = self.sign_in(endpoint, &challenge, scopes).await?;
        if let Some(store) = &self.options.store {
            store.save(&token);
        }
        self.lock().token = Some(token);
        Ok(true)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<Option<T>, Error> {
        let resp = self
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("GET {url} failed"), e))?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        let body = resp
            .bytes()
            .await
            .map_err(|e| Error::transport_from(format!("GET {url} broke off"), e))?;
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| auth_error(format!("{url} is not valid metadata: {e}")))
    }

    /// RFC 9728: the challenge's `resource_metadata`, else the path-suffixed
    /// well-known URL, else the root one.
    async fn resource_metadata(
        &self,
        endpoint: &reqwest::Url,
        challenge: &Challenge,
    ) -> Result<ResourceMetadata, Error> {
        let mut tried = Vec::new();
        if let Some(url) = &challenge.resource_metadata {
            tried.push(url.clone());
        } else {
            let origin = origin_of(endpoint);
            let path = path_of(endpoint);
            if !path.is_empty() {
                tried.push(format!(
                    "{origin}/.well-known/oauth-protected-resource{path}"
                ));
            }
            tried.push(format!("{origin}/.well-known/oauth-protected-resource"));
        }
        for url in &tried {
            if let Some(m) = self.get_json::<ResourceMetadata>(url).await? {
                return Ok(m);
            }
        }
        Err(auth_error(format!(
            "no protected resource metadata at {}",
            tried.join(" or ")
        )))
    }

    /// RFC 8414 and OpenID discovery, in the order the spec gives; the
    /// document's `issuer` must be the one the URL was built from.
    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, Error> {
        let url = parse_url(issuer, "the authorization server")?;
        if !secure_enough(&url, self.options.allow_insecure_http) {
            return Err(auth_error(format!(
                "the authorization server {issuer} is not on https"
            )));
        }
        let origin = origin_of(&url);
        let path = path_of(&url);
        let tried = if path.is_empty() {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ]
        };
        for at in &tried {
            if let Some(m) = self.get_json::<ServerMetadata>(at).await? {
                if m.issuer != issuer {
                    return Err(auth_error(format!(
                        "the metadata at {at} names the issuer {:?}, not {issuer:?}",
                        m.issuer
                    )));
                }
                for endpoint in [&m.authorization_endpoint, &m.token_endpoint] {
                    let u = parse_url(endpoint, "an endpoint")?;
                    if !secure_enough(&u, self.options.allow_insecure_http) {
                        return Err(auth_error(format!("{endpoint} is not on https")));
                    }
                }
                return Ok(m);
            }
        }
        Err(auth_error(format!(
            "no authorization server metadata for {issuer} (tried {})",
            tried.join(", ")
        )))
    }

    /// Pre-registered credentials, else a Client ID Metadata Document URL,
    /// else Dynamic Client Registration (RFC 7591).
    async fn client_for(&self, m: &ServerMetadata) -> Result<Registered, Error> {
        if let Some(r) = self.lock().clients.get(&m.issuer) {
            return Ok(r.clone());
        }
        let reg = &self.options.registration;
        let registered = if let Some(id) = &reg.client_id {
            Registered {
                client_id: id.clone(),
                client_secret: reg.client_secret.clone(),
            }
        } else if let (Some(url), Some(true)) =
            (&reg.metadata_url, m.client_id_metadata_document_supported)
        {
            Registered {
                client_id: url.clone(),
                client_secret: None,
            }
        } else if let Some(endpoint) = &m.registration_endpoint {
            self.register(endpoint, m).await?
        } else {
            return Err(auth_error(format!(
                "{} offers no registration and no client id is configured",
                m.issuer
            )));
        };
        self.lock()
            .clients
            .insert(m.issuer.clone(), registered.clone());
        Ok(registered)
    }

    async fn register(&self, endpoint: &str, m: &ServerMetadata) -> Result<Registered, Error> {
        let methods = m
            .token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_default();
        let method = if methods.is_empty() || methods.iter().any(|x| x == "none") {
            "none"
        } else if methods.iter().any(|x| x == "client_secret_basic") {
            "client_secret_basic"
        } else {
            "client_secret_post"
        };
        let redirect = self.options.agent.redirect_uri();
        // A loopback redirect is a native app's; an https one a web app's
        // (DIGEST §8: DCR sends an appropriate `application_type`).
        let application_type = match reqwest::Url::parse(&redirect) {
            Ok(u) if u.scheme() == "https" && !url_is_loopback(&u) => "web",
            _ => "native",
        };
        let body = serde_json::json!({
            "client_name": self.options.registration.client_name,
            "application_type": application_type,
            "redirect_uris": [redirect],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        });
        let resp = self
            .http
            .post(endpoint)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("registration at {endpoint} failed"), e))?;
        let status = resp.status();
        let text = resp.bytes().await.unwrap_or_default();
        if !status.is_success() {
            return Err(auth_error(format!(
                "registration at {endpoint} answered HTTP {status}"
            )));
        }
        let v: Value = serde_json::from_slice(&text)
            .map_err(|_| auth_error(format!("registration at {endpoint} answered garbage")))?;
        let client_id = v["client_id"]
            .as_str()
            .ok_or_else(|| auth_error("the registration answer has no client_id"))?;
        Ok(Registered {
            client_id: client_id.to_owned(),
            client_secret: v["client_secret"].as_str().map(str::to_owned),
        })
    }

    /// The whole flow for `endpoint`.
    async fn sign_in(
        &self,
        endpoint: &str,
        challenge: &Challenge,
        mut scopes: BTreeSet<String>,
    ) -> Result<StoredToken, Error> {
        let url = parse_url(endpoint, "the server")?;
        let prm = self.resource_metadata(&url, challenge).await?;
        // The metadata must be for this server (RFC 9728 §3.3): same origin,
        // and the endpoint under its path.
        let resource = parse_url(&prm.resource, "the protected resource")?;
        let under = url
            .path()
            .starts_with(resource.path().trim_end_matches('/'));
        if resource.origin() != url.origin() || !under {
            return Err(auth_error(format!(
                "the protected resource metadata is for {}, not {endpoint}",
                prm.resource
            )));
        }
        let issuer = prm
            .authorization_servers
            .first()
            .ok_or_else(|| auth_error("the resource names no authorization server"))?;
        let m = self.server_metadata(issuer).await?;
        let client = self.client_for(&m).await?;
        // Scopes: the challenge's, else the resource's, else none.
        match (&challenge.scope, &prm.scopes_supported) {
            (Some(s), _) => scopes.extend(s.split_whitespace().map(str::to_owned)),
            (None, Some(all)) => scopes.extend(all.iter().cloned()),
            (None, None) => {}
        }
        // `offline_access` only where it is advertised, and refreshing is a
        // grant the server allows.
        let offers_offline = m
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == "offline_access"))
            && m.grant_types_supported
                .as_ref()
                .is_none_or(|g| g.iter().any(|x| x == "refresh_token"));
        if self.options.offline_access && offers_offline {
            scopes.insert("offline_access".into());
        } else if !offers_offline {
            scopes.remove("offline_access");
        }
        let methods = m
            .code_challenge_methods_supported
            .clone()
            .unwrap_or_default();
        if !methods.iter().any(|x| x == "S256") {
            return Err(auth_error(format!("{} does not offer PKCE S256", m.issuer)));
        }
        let verifier = random_token(32)?;
        let challenge_value = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token(16)?;
        let redirect_uri = self.options.agent.redirect_uri();
        let scope = scopes.iter().cloned().collect::<Vec<_>>().join(" ");
        let mut authorize = parse_url(&m.authorization_endpoint, "the authorization endpoint")?;
        {
            let mut q = authorize.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &challenge_value)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &prm.resource);
            if !scope.is_empty() {
                q.append_pair("scope", &scope);
            }
        }
        let back = self
            .options
            .agent
            .authorize(authorize.as_str(), &m.issuer)
            .await?;
        let code = check_redirect(&back, &state, &m)?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
            ("resource", prm.resource.clone()),
        ];
        let t = self.token_request(&m, &client, &mut form).await?;
        Ok(StoredToken {
            resource: endpoint.to_owned(),
            issuer: m.issuer.clone(),
            access_token: t.access_token,
            refresh_token: t.refresh_token,
            expires_at: t.expires_in.map(|s| (self.options.now)() + s),
            scopes: scopes.into_iter().collect(),
            client_id: client.client_id,
            client_secret: client.client_secret,
        })
    }

    /// A token endpoint request with the client authentication the server
    /// allows: `client_secret_basic`, `client_secret_post`, or `none`.
    async fn token_request(
        &self,
        m: &ServerMetadata,
        client: &Registered,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<TokenResponse, Error> {
        let methods = m
            .token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".into()]);
        let mut request = self.http.post(&m.token_endpoint);
        match &client.client_secret {
            Some(secret) if methods.iter().any(|x| x == "client_secret_basic") => {
                let enc = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = format!("{}:{}", enc(&client.client_id), enc(secret));
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                request = request.header(http::header::AUTHORIZATION, format!("Basic {basic}"));
            }
            Some(secret) => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            None => form.push(("client_id", client.client_id.clone())),
        }
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter())
            .finish();
        let resp = request
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .map_err(|e| Error::transport_from("the token request failed", e))?;
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap_or_default();
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| {
            auth_error(format!(
                "the token endpoint answered garbage (HTTP {status})"
            ))
        })?;
        if !status.is_success() {
            let code = v["error"].as_str().unwrap_or("unknown error");
            return Err(auth_error(format!("the token endpoint refused: {code}")));
        }
        let t: TokenResponse = serde_json::from_value(v)
            .map_err(|e| auth_error(format!("the token answer is malformed: {e}")))?;
        if t.token_type
            .as_deref()
            .is_some_and(|k| !k.eq_ignore_ascii_case("bearer"))
        {
            return Err(auth_error("the token is not a bearer token"));
        }
        Ok(t)
    }

    /// Uses the refresh token; `invalid_grant` drops the stored token.
    async fn refresh(&self, t: &StoredToken) -> Result<StoredToken, Error> {
        let refresh = t
            .refresh_token
            .clone()
            .ok_or_else(|| auth_error("no refresh token"))?;
        let m = self.server_metadata(&t.issuer).await?;
        let client = Registered {
            client_id: t.client_id.clone(),
            client_secret: t.client_secret.clone(),
        };
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh.clone()),
            ("resource", t.resource.clone()),
        ];
        let r = self.token_request(&m, &client, &mut form).await?;
        let fresh = StoredToken {
            access_token: r.access_token,
            refresh_token: r.refresh_token.or(Some(refresh)),
            expires_at: r.expires_in.map(|s| (self.options.now)() + s),
            ..t.clone()
        };
        if let Some(store) = &self.options.store {
            store.save(&fresh);
        }
        self.lock().token = Some(fresh.clone());
        Ok(fresh)
    }
}

/// The code from the authorization response, once `state` and `iss` are
/// right (RFC 9207: `iss` compared as a plain string with the issuer; it is
/// required when the server advertises it, and checked whenever present).
/// Both are checked before an `error` is read: a response that fails them
/// may come from anyone, and its error text is never shown (AUTH-C7).
fn check_redirect(back: &str, state: &str, m: &ServerMetadata) -> Result<String, Error> {
    let url = parse_url(back, "the redirect")?;
    let q: HashMap<String, String> = url.query_pairs().into_owned().collect();
    if q.get("state").map(String::as_str) != Some(state) {
        return Err(auth_error("the redirect's state is not the one sent"));
    }
    match q.get("iss") {
        Some(iss) if iss != &m.issuer => {
            return Err(auth_error(format!(
                "the redirect's iss {iss:?} is not the issuer {:?}",
                m.issuer
            )));
        }
        None if m.authorization_response_iss_parameter_supported == Some(true) => {
            return Err(auth_error(
                "the redirect lacks the iss the server advertises",
            ));
        }
        _ => {}
    }
    if let Some(e) = q.get("error") {
        return Err(auth_error(format!("the authorization server said {e}")));
    }
    q.get("code")
        .cloned()
        .ok_or_else(|| auth_error("the redirect has no code"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_quoted_and_bare_values() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(r#"bearer scope=read,error="x\"y""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("x\"y"));
        assert_eq!(Challenge::parse("Basic realm=\"x\""), None);
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
    }

    fn meta(iss_supported: Option<bool>) -> ServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example", "authorization_endpoint": "https://as.example/a",
            "token_endpoint": "https://as.example/t",
            "authorization_response_iss_parameter_supported": iss_supported}))
        .unwrap()
    }

    #[test]
    fn the_redirect_is_checked_for_state_and_iss() {
        let ok = "http://127.0.0.1:1/cb?code=c&state=s&iss=https%3A%2F%2Fas.example";
        assert_eq!(check_redirect(ok, "s", &meta(Some(true))).unwrap(), "c");
        for (url, m) in [
            (
                "http://127.0.0.1:1/cb?code=c&state=t&iss=https%3A%2F%2Fas.example",
                meta(Some(true)),
            ),
            ("http://127.0.0.1:1/cb?code=c&state=s", meta(Some(true))),
            (
                "http://127.0.0.1:1/cb?code=c&state=s&iss=https%3A%2F%2Fas.example%2F",
                meta(Some(true)),
            ),
            (
                "http://127.0.0.1:1/cb?code=c&state=s&iss=https%3A%2F%2Fevil.example",
                meta(None),
            ),
            (
                "http://127.0.0.1:1/cb?error=access_denied&state=s",
                meta(None),
            ),
        ] {
            assert!(
                check_redirect(url, "s", &m).unwrap_err().is_unauthorized(),
                "{url}"
            );
        }
        let bare = "http://127.0.0.1:1/cb?code=c&state=s";
        assert_eq!(check_redirect(bare, "s", &meta(None)).unwrap(), "c");
    }

    #[test]
    fn plain_http_is_for_loopback_only() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(secure_enough(&u("https://as.example"), false));
        assert!(secure_enough(&u("http://localhost:9000"), false));
        assert!(secure_enough(&u("http://127.0.0.1:9000"), false));
        assert!(!secure_enough(&u("http://as.example"), false));
        assert!(!secure_enough(&u("http://10.0.0.1"), false));
        assert!(secure_enough(&u("http://as.example"), true));
    }
}
