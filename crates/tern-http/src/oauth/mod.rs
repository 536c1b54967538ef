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
//! Everything read comes from the server or a server it names, so each read
//! is bounded: documents and answers by size and time, the access token by
//! size and alphabet, token lifetimes by a floor and a ceiling, and the
//! sign-ins and refreshes one message may cause (SECURITY.md, "Signing in").
//!
//! Where the person's browser comes in is a [`UserAgent`]: `tern login`
//! opens the browser and listens on a loopback port; a test may follow the
//! authorization server's redirect itself.
//!
//! The transport knows none of this: it calls an [`OAuth`] only through
//! its `Authorizer` trait (ready, the current bearer, answer a refusal).

mod agent;
mod challenge;
mod discovery;
mod flow;
mod register;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;
use tern_client::{BoxFuture, Error};

use crate::client::Authorizer;

pub use agent::{HeadlessAgent, UserAgent};
pub use challenge::Challenge;
use register::Registered;

/// A token as stored: for one resource, from one authorization server.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct StoredToken {
    /// The MCP endpoint the token is for, as the transport spells it: the
    /// key it is stored under.
    pub resource: String,
    /// The `resource` parameter (RFC 8707) the authorization request sent:
    /// the protected resource metadata's `resource`, unchanged. A refresh
    /// sends it again, as the code exchange did (AUTH-C6). Absent in tokens
    /// kept before it was recorded; their refresh sends `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_indicator: Option<String>,
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
    /// The authorization server (`issuer`) the pre-registered client belongs
    /// to. Unset, it is the first one this client signs in at: the id and
    /// secret are never sent to another (AUTH-C11).
    pub client_issuer: Option<String>,
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

/// What one request's refusals have led to so far: a server refusing every
/// token must not make one request sign in, or refresh, again and again.
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    /// A sign-in (interactive, or a step-up) happened for this request.
    signed_in: bool,
    /// A refresh happened for this request.
    refreshed: bool,
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
    /// Whether the store was read: once, not on every request (the store
    /// may be a file); after that it is read again only on a refusal.
    loaded: bool,
    /// By issuer: a client registered at one server is never used at
    /// another (authorization-server migration).
    clients: HashMap<String, Registered>,
    step_ups: u32,
    /// The issuer the pre-registered client was first used at, when none is
    /// configured.
    pre_registered_at: Option<String>,
    /// The time the person has spent in the browser, sign-ins ended.
    person_spent: Duration,
    /// When the sign-in in the browser now began, if one is under way.
    person_since: Option<tokio::time::Instant>,
}

/// A sign-in in the person's hands, from its start until it drops (done,
/// failed or abandoned): its time is the person's, not the server's.
pub(super) struct InBrowser<'a>(&'a OAuth);

impl Drop for InBrowser<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        if let Some(since) = s.person_since.take() {
            s.person_spent += since.elapsed();
        }
    }
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

fn auth_error(what: impl Into<String>) -> Error {
    Error::unauthorized(what)
}

fn parse_url(s: &str, what: &str) -> Result<reqwest::Url, Error> {
    reqwest::Url::parse(s).map_err(|_| auth_error(format!("{what} is not a URL: {s:?}")))
}

/// The most read of a metadata document or a registration answer: real
/// ones are a few KiB, and a peer streaming more must not fill memory.
pub(crate) const MAX_METADATA_BYTES: usize = 64 * 1024;
/// The most read of a token endpoint's answer.
pub(crate) const MAX_TOKEN_ANSWER_BYTES: usize = 64 * 1024;
/// The longest access token kept: it goes in every request's header.
pub(crate) const MAX_ACCESS_TOKEN_BYTES: usize = 16 * 1024;
/// How long one discovery or registration request may take, body included:
/// a peer trickling a byte a second must not hold the sign-in.
pub(crate) const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a token request may take, body included.
pub(crate) const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads `resp`'s body, refusing one over `max` bytes: at once when its
/// `Content-Length` says so, else as soon as the bytes read pass it.
async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
    what: &str,
) -> Result<bytes::Bytes, Error> {
    let over = || auth_error(format!("{what} is over {max} bytes"));
    if resp
        .content_length()
        .is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX))
    {
        return Err(over());
    }
    let mut buf = bytes::BytesMut::new();
    loop {
        let chunk = resp.chunk().await.map_err(|e| {
            if e.is_timeout() {
                Error::transport_from(format!("{what} did not arrive in time"), e)
            } else {
                Error::transport_from(format!("{what} broke off"), e)
            }
        })?;
        let Some(chunk) = chunk else {
            return Ok(buf.freeze());
        };
        if buf.len() + chunk.len() > max {
            return Err(over());
        }
        buf.extend_from_slice(&chunk);
    }
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

    /// Marks the start of the person's part of a sign-in (one at a time:
    /// `flow`), until the returned guard drops.
    pub(super) fn in_browser(&self) -> InBrowser<'_> {
        #[expect(
            clippy::disallowed_methods,
            reason = "the person's time, measured as the client's deadline is"
        )]
        let now = tokio::time::Instant::now();
        self.lock().person_since = Some(now);
        InBrowser(self)
    }

    /// The time the person has spent signing in, the sign-in under way
    /// included.
    pub fn person_time(&self) -> Duration {
        let s = self.lock();
        s.person_spent + s.person_since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Loads the stored token for `endpoint` the first time, and refreshes
    /// one about to expire; a refresh the server refuses drops the token.
    pub async fn ready(&self, endpoint: &str) {
        let token = {
            let mut s = self.lock();
            if !s.loaded
                && let Some(store) = &self.options.store
            {
                s.loaded = true;
                s.token = store.load(endpoint);
            }
            s.token.clone()
        };
        let Some(token) = token else { return };
        let due = token
            .expires_at
            .is_some_and(|at| at <= (self.options.now)() + 30);
        if !due {
            return;
        }
        // An expired token's refresh goes to its issuer only while the
        // resource still names it (AUTH-C11, migration).
        if self
            .moved_away(endpoint, &token, &Challenge::default())
            .await
        {
            self.forget(&token.resource);
        } else if let Err(e) = self.refresh(&token).await {
            tracing::debug!(error = %e, "the token could not be refreshed");
            self.forget(&token.resource);
        }
    }

    /// Whether the resource at `endpoint` now names other authorization
    /// servers than `token`'s issuer: then the old server's tokens are
    /// worthless here and its refresh token is sent nowhere (AUTH-C11). A
    /// resource whose metadata cannot be read has not moved.
    async fn moved_away(&self, endpoint: &str, token: &StoredToken, challenge: &Challenge) -> bool {
        match parse_url(endpoint, "the server") {
            Ok(url) => self
                .resource_metadata(&url, challenge)
                .await
                .is_ok_and(|prm| !prm.authorization_servers.contains(&token.issuer)),
            Err(_) => false,
        }
    }

    /// The `Authorization` value of the token held, if any.
    pub fn current(&self) -> Option<HeaderValue> {
        let s = self.lock();
        let t = s.token.as_ref()?;
        HeaderValue::from_str(&format!("Bearer {}", t.access_token)).ok()
    }

    /// The store's token for `endpoint` when it is not the one refused.
    fn kept_since(&self, endpoint: &str, refused: Option<&StoredToken>) -> Option<StoredToken> {
        let kept = self.options.store.as_ref()?.load(endpoint)?;
        refused
            .is_none_or(|t| t.access_token != kept.access_token)
            .then_some(kept)
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
        self.answer_within(endpoint, status, challenge, &mut Attempts::default())
            .await
    }

    /// [`answer`](OAuth::answer) for one of a message's refusals: false
    /// also for a `401` refusing the token a sign-in for this same message
    /// obtained, and at most one refresh per message.
    pub(crate) async fn answer_within(
        &self,
        endpoint: &str,
        status: StatusCode,
        challenge: Option<Challenge>,
        attempts: &mut Attempts,
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
        } else if attempts.signed_in {
            // The token just issued is refused: signing in again would
            // only ask the person for the same thing.
            return Ok(false);
        } else if let Some(kept) = self.kept_since(endpoint, previous.as_ref()) {
            // Another run signed in meanwhile (`tern login`): its token is
            // tried before a sign-in of our own.
            self.lock().token = Some(kept);
            return Ok(true);
        } else if let Some(t) = &previous {
            // A refused token is dropped (and its refresh tried first),
            // unless the resource has moved to other authorization servers.
            let migrated = self.moved_away(endpoint, t, &challenge).await;
            if !migrated && !attempts.refreshed && t.refresh_token.is_some() {
                attempts.refreshed = true;
                if let Ok(fresh) = self.refresh(t).await
                    && fresh.access_token != t.access_token
                {
                    return Ok(true);
                }
            }
            self.forget(&t.resource);
        }
        attempts.signed_in = true;
        let token = self.sign_in(endpoint, &challenge, scopes).await?;
        if let Some(store) = &self.options.store {
            store.save(&token);
        }
        self.lock().token = Some(token);
        Ok(true)
    }
}

impl Authorizer for OAuth {
    fn ready<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(OAuth::ready(self, endpoint))
    }

    fn current(&self) -> Option<HeaderValue> {
        OAuth::current(self)
    }

    fn answer<'a>(
        &'a self,
        endpoint: &'a str,
        status: StatusCode,
        headers: &'a HeaderMap,
        attempts: &'a mut Attempts,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        let challenge = Challenge::from_headers(headers);
        Box::pin(OAuth::answer_within(
            self, endpoint, status, challenge, attempts,
        ))
    }

    fn person_time(&self) -> Duration {
        OAuth::person_time(self)
    }
}
