//! Where the person's browser comes in: the [`UserAgent`] a sign-in sends
//! the person through, and a headless one for servers that approve without
//! asking.

use std::time::Duration;

use tern_client::{BoxFuture, Error};

use super::auth_error;

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
