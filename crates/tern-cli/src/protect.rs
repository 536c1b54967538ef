//! Who may call an HTTP endpoint (`tern serve`, `tern proxy`): the
//! authenticator `--auth` asks for, its key set fetched within bounds, and
//! the protected resource metadata for `--public-url` (DIGEST §8).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tern::http::{
    Anonymous, Authenticate, JwtAuthenticator, JwtKeys, ProtectedResource, TokenFile, TokenTypes,
};

use crate::ProtectArgs;

/// The most a JWKS document may weigh: a key set is a few KiB.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// How long fetching the JWKS may take, connecting included.
const JWKS_TIMEOUT: Duration = Duration::from_secs(10);

/// The key set of `--auth jwks:URL`, fetched once at startup: over https
/// (plain http only to a loopback host), without following a redirect,
/// within [`JWKS_TIMEOUT`] and [`MAX_JWKS_BYTES`]. The keys decide who may
/// call the server, so a key set an attacker on the path could swap, or
/// one that never arrives, stops the server with the reason instead.
async fn fetch_jwks(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    let host = parsed.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback());
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        other => {
            return Err(format!(
                "{other}: only https (or http to this machine) is taken"
            ));
        }
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(JWKS_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let mut resp = client.get(parsed).send().await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!(
            "HTTP {} (redirects are not followed)",
            resp.status()
        ));
    }
    let too_large = || format!("larger than {} KiB", MAX_JWKS_BYTES / 1024);
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_JWKS_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_JWKS_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| "not UTF-8".to_owned())
}

/// The JWT `typ` values `--jwt-typ` accepts besides `at+jwt`.
fn token_types(given: &[String]) -> TokenTypes {
    if given.iter().any(|t| t.eq_ignore_ascii_case("any")) {
        TokenTypes::Any
    } else if given.is_empty() {
        TokenTypes::AccessToken
    } else {
        TokenTypes::Also(given.to_vec())
    }
}

/// The authenticator and resource metadata `--auth` asks for.
pub(crate) async fn protection(
    args: &ProtectArgs,
    public_url: &str,
) -> Result<(Arc<dyn Authenticate>, Option<ProtectedResource>), String> {
    check_public_url(public_url)?;
    let Some(mode) = &args.auth else {
        return Ok((Arc::new(Anonymous), None));
    };
    let mut tool_scopes: HashMap<String, Vec<String>> = HashMap::new();
    for t in &args.tool_scopes {
        let (tool, scope) = t
            .split_once('=')
            .ok_or_else(|| format!("--tool-scope {t:?}: expected TOOL=SCOPE"))?;
        tool_scopes
            .entry(tool.to_owned())
            .or_default()
            .push(scope.to_owned());
    }
    let mut all: Vec<String> = args.scopes.clone();
    all.extend(tool_scopes.values().flatten().cloned());
    all.sort();
    all.dedup();
    let issuer = || {
        args.issuer
            .clone()
            .ok_or_else(|| format!("--auth {mode} needs --issuer"))
    };
    let jwt = |keys: JwtKeys| -> Result<Arc<dyn Authenticate>, String> {
        let issuer = issuer()?;
        let resource = ProtectedResource {
            resource: public_url.to_owned(),
            ..ProtectedResource::default()
        };
        Ok(Arc::new(
            JwtAuthenticator::new(keys, &issuer, public_url)
                .resource_metadata(&resource.metadata_url())
                // What every request needs; a tool's own scopes come with
                // its 403, so a client steps up only when it must.
                .scopes(&args.scopes)
                .token_types(token_types(&args.jwt_types)),
        ))
    };
    let auth: Arc<dyn Authenticate> = match mode.split_once(':') {
        Some(("jwks", url)) => {
            let text = fetch_jwks(url)
                .await
                .map_err(|e| format!("cannot fetch the JWKS at {url}: {e}"))?;
            jwt(JwtAuthenticator::jwks(&text)?)?
        }
        Some(("jwks-file", path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the JWKS file {path}: {e}"))?;
            jwt(JwtAuthenticator::jwks(&text)?)?
        }
        Some(("hs256-env", var)) => {
            let secret = std::env::var(var).map_err(|_| format!("--auth: {var} is not set"))?;
            if secret.len() < 32 {
                return Err(format!(
                    "--auth: the secret in {var} must be at least 32 bytes"
                ));
            }
            jwt(JwtKeys::Hs256(secret.into_bytes()))?
        }
        Some(("tokens", _)) if !args.jwt_types.is_empty() => {
            return Err("--jwt-typ applies to JWTs, not to --auth tokens:FILE".to_owned());
        }
        Some(("tokens", path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the token file {path}: {e}"))?;
            Arc::new(TokenFile::parse(&text)?)
        }
        _ => {
            return Err(format!(
                "--auth {mode:?}: expected jwks:URL, jwks-file:PATH, hs256-env:VAR or tokens:FILE"
            ));
        }
    };
    let metadata = args.issuer.as_ref().map(|iss| ProtectedResource {
        resource: public_url.to_owned(),
        authorization_servers: vec![iss.clone()],
        scopes_supported: all.clone(),
        required_scopes: args.scopes.clone(),
        tool_scopes,
    });
    Ok((auth, metadata))
}

/// The endpoint's public URL names the resource tokens are issued for and
/// where its metadata lives (RFC 8707, RFC 9728): an absolute http(s) URL
/// without credentials, query or fragment, whose path a route serves as
/// written (no `{`, `}`, `*` or `:`, which routes read as parameters).
pub(crate) fn check_public_url(url: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("--public-url {url:?}: {why}"));
    let Ok(u) = reqwest::Url::parse(url) else {
        return bad("not an absolute URL");
    };
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return bad("an http or https URL with a host is needed");
    }
    if !u.username().is_empty() || u.password().is_some() {
        return bad("credentials do not belong in it");
    }
    if u.query().is_some() || u.fragment().is_some() {
        return bad("a resource has no query or fragment");
    }
    // The URL as given: parsing escapes braces, while routes are made from
    // the text itself.
    if url.contains(['{', '}', '*']) || u.path().contains(':') {
        return bad("its path may not contain {, }, * or :");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_name_a_resource_a_route_can_serve() {
        for ok in [
            "http://127.0.0.1:8080/mcp",
            "https://mcp.example.com/tenant/mcp",
            "https://mcp.example.com",
        ] {
            assert_eq!(check_public_url(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("mcp.example.com/mcp", "not an absolute URL"),
            ("ftp://h/mcp", "an http or https URL with a host is needed"),
            ("https://u:p@h/mcp", "credentials do not belong in it"),
            ("https://h/mcp?x=1", "a resource has no query or fragment"),
            ("https://h/mcp#f", "a resource has no query or fragment"),
            ("https://h/:x/mcp", "its path may not contain {, }, * or :"),
            ("https://h/{t}/mcp", "its path may not contain {, }, * or :"),
        ] {
            assert_eq!(
                check_public_url(bad),
                Err(format!("--public-url {bad:?}: {why}")),
                "{bad}"
            );
        }
    }
}
