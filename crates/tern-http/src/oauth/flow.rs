//! The authorization code flow with PKCE S256 and the `resource`
//! parameter (RFC 8707), the checks of the redirect (`state`, RFC 9207
//! `iss`), the token endpoint and refreshing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use tern_client::Error;

use super::discovery::{ResourceMetadata, ServerMetadata};
use super::register::Registered;
use super::{
    Challenge, MAX_ACCESS_TOKEN_BYTES, MAX_TOKEN_ANSWER_BYTES, OAuth, StoredToken, TOKEN_TIMEOUT,
    auth_error, parse_url, read_capped,
};

/// The shortest lifetime believed: 0 would have the token expired as it
/// arrives. A short one is refreshed before use, at most once per message.
const MIN_LIFETIME: u64 = 1;
/// The longest lifetime believed.
const MAX_LIFETIME: u64 = 365 * 24 * 3600;

#[derive(Clone, Debug, Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    /// Any JSON: a negative, fractional or quoted lifetime is unknown, not
    /// a failed sign-in.
    #[serde(default)]
    expires_in: Option<Value>,
    #[serde(default)]
    refresh_token: Option<String>,
}

impl TokenResponse {
    /// When the access token stops being used: `now` plus `expires_in`
    /// held to [`MIN_LIFETIME`, `MAX_LIFETIME`]; `None` (used until
    /// refused) when the lifetime is missing or not a count of seconds.
    fn expires_at(&self, now: u64) -> Option<u64> {
        let secs = match self.expires_in.as_ref()? {
            Value::Number(n) => n.as_u64()?,
            Value::String(s) => s.trim().parse::<u64>().ok()?,
            _ => return None,
        };
        Some(now.saturating_add(secs.clamp(MIN_LIFETIME, MAX_LIFETIME)))
    }
}

/// The access token is sent as `Bearer <token>` in every request, so it
/// must be an RFC 6750 token68 (`1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
/// / "+" / "/" ) *"="`) of bounded length: anything else could not be sent,
/// or would smuggle header text.
fn check_access_token(token: &str) -> Result<(), Error> {
    if token.len() > MAX_ACCESS_TOKEN_BYTES {
        return Err(auth_error(format!(
            "the access token is over {MAX_ACCESS_TOKEN_BYTES} bytes"
        )));
    }
    let body = token.trim_end_matches('=');
    let token68 = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !token68 {
        return Err(auth_error(
            "the access token holds characters a Bearer header cannot carry",
        ));
    }
    Ok(())
}

/// Whether the protected resource `resource` covers `endpoint` (RFC 9728
/// §3.3, AUTH-C6): the same origin, and a path equal to the endpoint's or
/// a prefix of it ending at a `/`, so `/alice` covers `/alice/mcp` but not
/// `/alice-evil/mcp`.
fn covers(resource: &reqwest::Url, endpoint: &reqwest::Url) -> bool {
    let base = resource.path().trim_end_matches('/');
    let path = endpoint.path();
    let under = path.trim_end_matches('/') == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'));
    resource.origin() == endpoint.origin() && under
}

fn random_token(n: usize) -> Result<String, Error> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| Error::transport(format!("no randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

impl OAuth {
    /// The whole flow for `endpoint`.
    pub(super) async fn sign_in(
        &self,
        endpoint: &str,
        challenge: &Challenge,
        mut scopes: BTreeSet<String>,
    ) -> Result<StoredToken, Error> {
        let url = parse_url(endpoint, "the server")?;
        let prm = self.resource_metadata(&url, challenge).await?;
        let resource = parse_url(&prm.resource, "the protected resource")?;
        if !covers(&resource, &url) {
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
        self.add_scopes(&mut scopes, challenge, &prm, &m);
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
        let back = {
            // The request timeout counts the server's time, not this.
            let _person = self.in_browser();
            self.options
                .agent
                .authorize(authorize.as_str(), &m.issuer)
                .await?
        };
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
            resource_indicator: Some(prm.resource.clone()),
            issuer: m.issuer.clone(),
            expires_at: t.expires_at((self.options.now)()),
            access_token: t.access_token,
            refresh_token: t.refresh_token,
            scopes: scopes.into_iter().collect(),
            client_id: client.client_id,
            client_secret: client.client_secret,
        })
    }

    /// Adds the scopes to ask for: the challenge's, else the resource's,
    /// else none; and `offline_access` as the options and the server allow.
    fn add_scopes(
        &self,
        scopes: &mut BTreeSet<String>,
        challenge: &Challenge,
        prm: &ResourceMetadata,
        m: &ServerMetadata,
    ) {
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
            .timeout(TOKEN_TIMEOUT)
            .send()
            .await
            .map_err(|e| Error::transport_from("the token request failed", e))?;
        let status = resp.status();
        let bytes = read_capped(resp, MAX_TOKEN_ANSWER_BYTES, "the token answer").await?;
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
        check_access_token(&t.access_token)?;
        Ok(t)
    }

    /// Uses the refresh token; `invalid_grant` drops the stored token.
    pub(super) async fn refresh(&self, t: &StoredToken) -> Result<StoredToken, Error> {
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
            (
                "resource",
                t.resource_indicator
                    .clone()
                    .unwrap_or_else(|| t.resource.clone()),
            ),
        ];
        let r = self.token_request(&m, &client, &mut form).await?;
        let fresh = StoredToken {
            expires_at: r.expires_at((self.options.now)()),
            access_token: r.access_token,
            refresh_token: r.refresh_token.or(Some(refresh)),
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
}
