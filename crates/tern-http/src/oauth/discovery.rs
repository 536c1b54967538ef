//! Finding where to sign in: the protected resource's metadata (RFC 9728)
//! and its authorization server's (RFC 8414, OpenID discovery), each at the
//! locations the spec lists, in its order, on https or loopback only.

use serde::Deserialize;
use tern_client::Error;

use super::{
    Challenge, DISCOVERY_TIMEOUT, MAX_METADATA_BYTES, OAuth, auth_error, parse_url, read_capped,
};

/// The protected resource's metadata (RFC 9728 §2), what this client uses
/// of it.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct ResourceMetadata {
    pub(super) resource: String,
    #[serde(default)]
    pub(super) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(super) scopes_supported: Option<Vec<String>>,
}

/// The authorization server's metadata (RFC 8414 §2), what this client
/// uses of it.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct ServerMetadata {
    pub(super) issuer: String,
    pub(super) authorization_endpoint: String,
    pub(super) token_endpoint: String,
    #[serde(default)]
    pub(super) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(super) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    pub(super) authorization_response_iss_parameter_supported: Option<bool>,
}

/// `https`, or `http` on a loopback host: anything else would carry codes
/// and tokens in the clear (OAuth 2.1 §1.5).
pub(super) fn secure_enough(url: &reqwest::Url, allow_http: bool) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => allow_http || url_is_loopback(url),
        _ => false,
    }
}

pub(super) fn url_is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
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
    pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<Option<T>, Error> {
        let resp = self
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .timeout(DISCOVERY_TIMEOUT)
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("GET {url} failed"), e))?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        let body = read_capped(resp, MAX_METADATA_BYTES, &format!("the metadata at {url}")).await?;
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| auth_error(format!("{url} is not valid metadata: {e}")))
    }

    /// RFC 9728: the challenge's `resource_metadata`, else the path-suffixed
    /// well-known URL, else the root one.
    pub(super) async fn resource_metadata(
        &self,
        endpoint: &reqwest::Url,
        challenge: &Challenge,
    ) -> Result<ResourceMetadata, Error> {
        let mut tried = Vec::new();
        if let Some(url) = &challenge.resource_metadata {
            // The challenge comes from the server, which may name any URL:
            // only its own origin, or https (on plain http elsewhere the
            // metadata could be swapped in transit; other schemes and hosts
            // reachable only over plain http, such as cloud metadata
            // services, are never fetched for it).
            let u = parse_url(url, "the challenge's resource_metadata")?;
            let same_origin = u.origin() == endpoint.origin();
            let https =
                u.scheme() == "https" || (u.scheme() == "http" && self.options.allow_insecure_http);
            if !same_origin && !https {
                return Err(auth_error(format!(
                    "the challenge's resource_metadata {url} is neither on https nor on the server's origin"
                )));
            }
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
    pub(super) async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, Error> {
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
                // The registration endpoint receives the client's metadata
                // and answers its secret: as much in need of https.
                let endpoints = [&m.authorization_endpoint, &m.token_endpoint]
                    .into_iter()
                    .chain(m.registration_endpoint.as_ref());
                for endpoint in endpoints {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
