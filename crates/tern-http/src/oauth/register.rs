//! How this client is known to an authorization server: pre-registered,
//! a Client ID Metadata Document URL, or Dynamic Client Registration
//! (RFC 7591), one client per issuer.

use serde_json::Value;
use tern_client::Error;

use super::discovery::{ServerMetadata, url_is_loopback};
use super::{DISCOVERY_TIMEOUT, MAX_METADATA_BYTES, OAuth, auth_error, read_capped};

#[derive(Clone, Debug)]
pub(super) struct Registered {
    pub(super) client_id: String,
    pub(super) client_secret: Option<String>,
}

impl OAuth {
    /// Pre-registered credentials, else a Client ID Metadata Document URL,
    /// else Dynamic Client Registration (RFC 7591).
    pub(super) async fn client_for(&self, m: &ServerMetadata) -> Result<Registered, Error> {
        if let Some(r) = self.lock().clients.get(&m.issuer) {
            return Ok(r.clone());
        }
        let reg = &self.options.registration;
        let registered = if let Some(id) = &reg.client_id {
            self.pre_registered_for(id, &m.issuer)?;
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

    /// Refuses to use the pre-registered client `id` at `issuer` unless it
    /// belongs there: the configured issuer, else the first issuer it was
    /// used at by this client. A
    /// resource naming another authorization server must not receive the
    /// id and secret (AUTH-C11: credentials are never reused with another
    /// authorization server).
    fn pre_registered_for(&self, id: &str, issuer: &str) -> Result<(), Error> {
        let bound = self
            .options
            .registration
            .client_issuer
            .clone()
            .or_else(|| self.lock().pre_registered_at.clone());
        match bound {
            Some(b) if b != issuer => Err(auth_error(format!(
                "the pre-registered client {id:?} is for {b:?}; the resource now names {issuer:?}, which is not sent its credentials"
            ))),
            _ => {
                self.lock().pre_registered_at = Some(issuer.to_owned());
                Ok(())
            }
        }
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
            .timeout(DISCOVERY_TIMEOUT)
            .send()
            .await
            .map_err(|e| Error::transport_from(format!("registration at {endpoint} failed"), e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(auth_error(format!(
                "registration at {endpoint} answered HTTP {status}"
            )));
        }
        let what = format!("the registration answer of {endpoint}");
        let text = read_capped(resp, MAX_METADATA_BYTES, &what).await?;
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
}
