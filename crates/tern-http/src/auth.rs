//! Authentication for the HTTP server: who is behind a request
//! (SECURITY.md §3.6, DIGEST §8). Every request is authenticated on its
//! own, each MRTR round included; the principal is what sealed state binds
//! to.

use axum::http::{HeaderMap, StatusCode, header};
use std::time::Duration;

use jsonwebtoken::jwk::{JwkSet, PublicKeyUse};
use jsonwebtoken::{
    Algorithm, DecodingKey, Header, Validation, decode, decode_header, get_current_timestamp,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tern_proto::Principal;

use crate::server::{Authenticate, Refusal};

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut all = headers.get_all(header::AUTHORIZATION).iter();
    let v = all.next()?.to_str().ok()?;
    // Two credentials: which one counts would be up to each hop on the
    // way; neither does.
    if all.next().is_some() {
        return None;
    }
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A `Bearer` challenge value; quotes and backslashes in values escaped.
pub(crate) fn challenge(
    error: Option<&str>,
    scope: Option<&str>,
    metadata: Option<&str>,
) -> String {
    let quote = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
    let mut parts = Vec::new();
    if let Some(e) = error {
        parts.push(format!("error=\"{}\"", quote(e)));
    }
    if let Some(s) = scope {
        parts.push(format!("scope=\"{}\"", quote(s)));
    }
    if let Some(m) = metadata {
        parts.push(format!("resource_metadata=\"{}\"", quote(m)));
    }
    if parts.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", parts.join(", "))
    }
}

fn unauthorized(error: &str) -> Refusal {
    Refusal {
        status: StatusCode::UNAUTHORIZED,
        challenge: Some(format!("Bearer error=\"{error}\"")),
    }
}

/// Static bearer tokens from a token file, for small deployments.
///
/// Each line is `ID TOKEN` or `ID sha256:HEX` (the SHA-256 of the token, so
/// the file need not hold secrets); `#` starts a comment. A match gives
/// `Principal::Static { secret_id: ID }`: the id, never the token, is bound
/// into states.
#[derive(Clone, Debug)]
pub struct TokenFile {
    digests: Vec<(String, [u8; 32])>,
}

impl TokenFile {
    /// Parses a token file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut digests = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, secret) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("line {}: expected `ID TOKEN`", n + 1))?;
            let secret = secret.trim();
            let digest = match secret.strip_prefix("sha256:") {
                Some(hex) => {
                    parse_hex32(hex).ok_or_else(|| format!("line {}: bad sha256 digest", n + 1))?
                }
                None => Sha256::digest(secret.as_bytes()).into(),
            };
            digests.push((id.to_owned(), digest));
        }
        if digests.is_empty() {
            return Err("the token file names no tokens".into());
        }
        Ok(TokenFile { digests })
    }
}

fn parse_hex32(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl Authenticate for TokenFile {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let token = bearer(headers).ok_or_else(|| Refusal {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some("Bearer".into()),
        })?;
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Compare every entry in full, so timing says nothing about which
        // entry or prefix matched.
        let mut found = None;
        for (id, d) in &self.digests {
            let diff = d
                .iter()
                .zip(presented.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 {
                found = Some(id.clone());
            }
        }
        found
            .map(|secret_id| Principal::Static { secret_id })
            .ok_or_else(|| unauthorized("invalid_token"))
    }
}

/// How JWT signatures are checked.
#[derive(Clone)]
pub enum JwtKeys {
    /// A shared HS256 secret.
    Hs256(Vec<u8>),
    /// The keys of a JWKS document, by `kid`.
    Jwks(JwkSet),
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwtKeys::Hs256(_) => f.write_str("Hs256(..)"),
            JwtKeys::Jwks(set) => write!(f, "Jwks({} keys)", set.keys.len()),
        }
    }
}

/// The clock skew tolerated on `exp`, `nbf` and `iat` by default.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The longest bearer token read by default: longer ones are refused
/// before any decoding.
pub const DEFAULT_MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Which JWT `typ` headers a [`JwtAuthenticator`] accepts. RFC 9068 §4:
/// a resource server MUST check that a JWT access token's `typ` is
/// `at+jwt` (`application/at+jwt` is the same, RFC 7515 §4.1.9), so an ID
/// token or another JWT signed by the same issuer is not taken for an
/// access token (RFC 8725 §3.11). Values compare case-insensitively.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TokenTypes {
    /// Only `at+jwt`: RFC 9068 access tokens (the default).
    #[default]
    AccessToken,
    /// `at+jwt` and these values too, for issuers that do not follow RFC
    /// 9068 (many send `JWT`). A token without `typ` is still refused.
    Also(Vec<String>),
    /// Any `typ`, or none: the check is off.
    Any,
}

impl TokenTypes {
    fn accepts(&self, typ: Option<&str>) -> bool {
        let bare = |t: &str| {
            let t = t.to_ascii_lowercase();
            t.strip_prefix("application/")
                .map(str::to_owned)
                .unwrap_or(t)
        };
        match (self, typ.map(bare)) {
            (TokenTypes::Any, _) => true,
            (_, None) => false,
            (TokenTypes::AccessToken, Some(t)) => t == "at+jwt",
            (TokenTypes::Also(more), Some(t)) => t == "at+jwt" || more.iter().any(|m| bare(m) == t),
        }
    }
}

/// JWT access tokens (RFC 9068): size, `typ`, signature, expiry, not-before,
/// issue time, issuer, audience and subject checked on every request
/// (AUTH-S2). The principal is `("oauth", iss, sub, client_id, resource)`
/// (SECURITY.md §3.6); a token that names no subject (neither `sub` nor a
/// client id) is refused, since every such token would share one principal.
#[derive(Clone, Debug)]
pub struct JwtAuthenticator {
    keys: JwtKeys,
    issuer: String,
    resource: String,
    resource_metadata: Option<String>,
    scopes: Vec<String>,
    types: TokenTypes,
    leeway: Duration,
    max_token_bytes: usize,
}

#[derive(Deserialize)]
struct AccessClaims {
    iss: String,
    /// RFC 9068 / RFC 8693: space-separated scopes granted.
    #[serde(default)]
    scope: Option<String>,
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    /// A NumericDate, which may have a fraction (RFC 7519 §2).
    iat: Option<f64>,
}

impl JwtAuthenticator {
    /// Accepts tokens from `issuer` whose audience is `resource`, this
    /// server's canonical URI (RFC 8707).
    pub fn new(keys: JwtKeys, issuer: &str, resource: &str) -> Self {
        JwtAuthenticator {
            keys,
            issuer: issuer.to_owned(),
            resource: resource.to_owned(),
            resource_metadata: None,
            scopes: Vec::new(),
            types: TokenTypes::default(),
            leeway: DEFAULT_LEEWAY,
            max_token_bytes: DEFAULT_MAX_TOKEN_BYTES,
        }
    }

    /// Parses a JWKS document.
    pub fn jwks(json: &str) -> Result<JwtKeys, String> {
        serde_json::from_str::<JwkSet>(json)
            .map(JwtKeys::Jwks)
            .map_err(|e| format!("bad JWKS: {e}"))
    }

    /// The protected-resource metadata URL named in challenges (AUTH-C4).
    #[must_use]
    pub fn resource_metadata(mut self, url: &str) -> Self {
        self.resource_metadata = Some(url.to_owned());
        self
    }

    /// The scopes named in challenges, as a client should ask for them.
    #[must_use]
    pub fn scopes(mut self, scopes: &[String]) -> Self {
        self.scopes = scopes.to_vec();
        self
    }

    /// The `typ` headers accepted (default: `at+jwt` only, RFC 9068 §4).
    #[must_use]
    pub fn token_types(mut self, types: TokenTypes) -> Self {
        self.types = types;
        self
    }

    /// The clock skew tolerated on `exp`, `nbf` and `iat` alike (default
    /// [`DEFAULT_LEEWAY`]).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The longest token read (default [`DEFAULT_MAX_TOKEN_BYTES`]).
    #[must_use]
    pub fn max_token_bytes(mut self, max: usize) -> Self {
        self.max_token_bytes = max;
        self
    }

    /// A `401` with `WWW-Authenticate: Bearer` naming the metadata and the
    /// scopes (RFC 6750 §3, RFC 9728 §5.1).
    fn refuse(&self, error: Option<&str>) -> Refusal {
        let scope = (!self.scopes.is_empty()).then(|| self.scopes.join(" "));
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some(challenge(
                error,
                scope.as_deref(),
                self.resource_metadata.as_deref(),
            )),
        }
    }

    /// The key and algorithm a token's header selects: the shared secret
    /// with HS256 only, or the JWKS key its `kid` names, used only with
    /// the algorithm that key declares (no algorithm confusion).
    fn key_for(&self, head: &Header) -> Result<(DecodingKey, Algorithm), String> {
        match &self.keys {
            JwtKeys::Hs256(secret) => Ok((
                DecodingKey::from_secret(secret).map_err(|e| e.to_string())?,
                Algorithm::HS256,
            )),
            JwtKeys::Jwks(set) => {
                let kid = head.kid.as_deref().ok_or("token has no kid")?;
                let jwk = set.find(kid).ok_or("unknown kid")?;
                if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                    return Err("the key is for encryption".into());
                }
                if let Some(declared) = jwk.common.key_algorithm
                    && declared.to_string().parse::<Algorithm>().ok() != Some(head.alg)
                {
                    return Err("the token's algorithm is not its key's".into());
                }
                Ok((
                    DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?,
                    head.alg,
                ))
            }
        }
    }

    fn check(&self, token: &str) -> Result<AccessClaims, String> {
        if token.len() > self.max_token_bytes {
            return Err(format!(
                "token of {} bytes; at most {}",
                token.len(),
                self.max_token_bytes
            ));
        }
        let head = decode_header(token).map_err(|e| e.to_string())?;
        if !self.types.accepts(head.typ.as_deref()) {
            return Err(format!("typ {:?} is not an access token's", head.typ));
        }
        let (key, alg) = self.key_for(&head)?;
        if head.alg != alg {
            return Err("unexpected algorithm".into());
        }
        let mut v = Validation::new(alg);
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[&self.resource]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.leeway = self.leeway.as_secs();
        v.validate_nbf = true;
        let claims = decode::<AccessClaims>(token, &key, &v)
            .map(|d| d.claims)
            .map_err(|e| e.to_string())?;
        let latest = get_current_timestamp().saturating_add(self.leeway.as_secs());
        if claims.iat.is_some_and(|iat| iat > latest as f64) {
            return Err("token issued in the future".into());
        }
        Ok(claims)
    }
}

impl Authenticate for JwtAuthenticator {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        self.authenticate_scoped(headers).map(|(p, _)| p)
    }

    fn authenticate_scoped(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Principal, Option<Vec<String>>), Refusal> {
        let Some(token) = bearer(headers) else {
            // No credential at all: a challenge without an error code.
            return Err(self.refuse(None));
        };
        let claims = self.check(token).map_err(|why| {
            // The reason may quote the token (the decoder's reading of
            // its header): kept short, and recorded as a string, which
            // the log escapes, so a newline in it cannot start a line.
            let reason: String = why.chars().take(200).collect();
            tracing::info!(reason = reason.as_str(), "bearer token refused");
            self.refuse(Some("invalid_token"))
        })?;
        let named = |v: Option<String>| v.filter(|s| !s.is_empty());
        let client_id = named(claims.client_id)
            .or_else(|| named(claims.azp))
            .unwrap_or_default();
        // client_credentials tokens may have no subject: sub = client_id.
        let subject = named(claims.sub).unwrap_or_else(|| client_id.clone());
        if subject.is_empty() {
            // Every such token would be one principal: one state, one
            // session binding for all of them.
            tracing::info!(reason = "no sub and no client_id", "bearer token refused");
            return Err(self.refuse(Some("invalid_token")));
        }
        // Scopes are not part of the principal: a step-up mid-flow must not
        // invalidate the flow's state.
        let scopes = claims
            .scope
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let principal = Principal::OAuth {
            issuer: claims.iss,
            subject,
            client_id,
            resource: self.resource.clone(),
        };
        Ok((principal, Some(scopes)))
    }
}

/// Several authenticators by scheme: the first that accepts wins; with
/// none accepting, the first refusal is returned.
pub struct AnyOf(pub Vec<Box<dyn Authenticate>>);

impl std::fmt::Debug for AnyOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AnyOf({} authenticators)", self.0.len())
    }
}

impl Authenticate for AnyOf {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        self.authenticate_scoped(headers).map(|(p, _)| p)
    }

    fn authenticate_scoped(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Principal, Option<Vec<String>>), Refusal> {
        let mut first = None;
        for a in &self.0 {
            match a.authenticate_scoped(headers) {
                Ok(p) => return Ok(p),
                Err(r) => {
                    first.get_or_insert(r);
                }
            }
        }
        Err(first.unwrap_or_else(|| unauthorized("invalid_token")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    fn with_bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        h
    }

    #[test]
    fn token_file_matches_plain_and_hashed_entries() {
        let digest: String = Sha256::digest(b"s3cret")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let f = TokenFile::parse(&format!("# ops\nalice token-a\nbob sha256:{digest}\n")).unwrap();
        assert_eq!(
            f.authenticate(&with_bearer("token-a")).unwrap(),
            Principal::Static {
                secret_id: "alice".into()
            }
        );
        assert_eq!(
            f.authenticate(&with_bearer("s3cret")).unwrap(),
            Principal::Static {
                secret_id: "bob".into()
            }
        );
        let r = f.authenticate(&with_bearer("nope")).unwrap_err();
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.challenge.as_deref(),
            Some("Bearer error=\"invalid_token\"")
        );
        assert_eq!(
            f.authenticate(&HeaderMap::new())
                .unwrap_err()
                .challenge
                .as_deref(),
            Some("Bearer")
        );
        assert!(TokenFile::parse("# nothing\n").is_err());
        assert!(TokenFile::parse("bob sha256:zz").is_err());
    }

    fn hs256(claims: serde_json::Value) -> String {
        let mut head = Header::new(Algorithm::HS256);
        head.typ = Some("at+jwt".into());
        encode(
            &head,
            &claims,
            &EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef").unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn jwt_gives_an_oauth_principal_and_checks_iss_aud_exp() {
        let auth = JwtAuthenticator::new(
            JwtKeys::Hs256(b"0123456789abcdef0123456789abcdef".to_vec()),
            "https://as.example",
            "https://mcp.example/mcp",
        )
        .resource_metadata("https://mcp.example/.well-known/oauth-protected-resource");
        let exp = 4_000_000_000u64;
        let good = hs256(
            json!({"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": exp, "sub": "u1", "client_id": "app"}),
        );
        assert_eq!(
            auth.authenticate(&with_bearer(&good)).unwrap(),
            Principal::OAuth {
                issuer: "https://as.example".into(),
                subject: "u1".into(),
                client_id: "app".into(),
                resource: "https://mcp.example/mcp".into()
            }
        );
        // client_credentials: no sub, so sub = client_id.
        let cc = hs256(
            json!({"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": exp, "azp": "svc"}),
        );
        assert!(
            matches!(auth.authenticate(&with_bearer(&cc)).unwrap(), Principal::OAuth { subject, .. } if subject == "svc")
        );
        for bad in [
            hs256(
                json!({"iss": "https://other", "aud": "https://mcp.example/mcp", "exp": exp, "sub": "u"}),
            ),
            hs256(
                json!({"iss": "https://as.example", "aud": "https://elsewhere/mcp", "exp": exp, "sub": "u"}),
            ),
            hs256(
                json!({"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": 1, "sub": "u"}),
            ),
            format!("{good}x"),
        ] {
            let r = auth.authenticate(&with_bearer(&bad)).unwrap_err();
            assert_eq!(r.status, StatusCode::UNAUTHORIZED);
            assert!(r.challenge.unwrap().contains("resource_metadata="));
        }
    }
}
