//! The OAuth client's limits against a hostile protected server and
//! authorization server (DIGEST §8): bodies past their caps, a trickling
//! peer, odd tokens and lifetimes, metadata that is not this server's or
//! points elsewhere, a server refusing every token, and pre-registered
//! credentials bound to their authorization server. The server is
//! `oauth.rs`'s, picking its misbehaviour with a [`Fault`].
#![cfg(all(feature = "client", feature = "server"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tern_http::oauth::{OAuthOptions, StoredToken};

use super::oauth::{
    App, Back, Delivery, Doc, Fault, Points, Tokens, client_with, refused, sign_in, start,
};

const KIB64: usize = 64 * 1024;
const KIB16: usize = 16 * 1024;

/// Signs in to `app` with `tweak` applied; the outcome, the token kept for
/// its endpoint and the sign-ins the browser was taken through.
async fn signed_in_with(
    app: &App,
    tweak: impl FnOnce(&mut OAuthOptions),
) -> (Result<(), tern_client::Error>, Option<StoredToken>, usize) {
    let tokens = Arc::new(Tokens::default());
    let sign_ins = Arc::new(AtomicUsize::new(0));
    let client = client_with(app, Back::Right, tokens.clone(), &sign_ins, tweak);
    let outcome = client.discover().await.map(|_| ());
    let kept = tokens
        .kept
        .lock()
        .unwrap()
        .get(&format!("{}/mcp", app.base))
        .cloned();
    (outcome, kept, sign_ins.load(Ordering::Relaxed))
}

/// Dynamic Client Registration instead of a pre-registered id.
fn registering(o: &mut OAuthOptions) {
    o.registration.client_id = None;
}

#[tokio::test]
async fn documents_and_token_answers_past_64_kib_are_refused_however_sent() {
    for delivery in [Delivery::Sized, Delivery::Streamed] {
        for (doc, what) in [
            (
                Doc::ResourceMetadata,
                "the metadata at {base}/.well-known/oauth-protected-resource/mcp",
            ),
            (
                Doc::ServerMetadata,
                "the metadata at {base}/.well-known/oauth-authorization-server",
            ),
            (Doc::Token, "the token answer"),
        ] {
            let (msg, app) = refused(Fault::Big(doc, KIB64 + 1, delivery), Back::Right).await;
            let what = what.replace("{base}", &app.base);
            assert!(
                msg.contains(&format!("{what} is over 65536 bytes")),
                "{doc:?}/{delivery:?}: {msg}"
            );
            let app = start(Fault::Big(doc, KIB64, delivery)).await;
            let (outcome, _) = sign_in(&app, Back::Right).await;
            outcome.unwrap_or_else(|e| panic!("{doc:?}/{delivery:?} at the limit: {e}"));
        }
    }
}

#[tokio::test]
async fn a_registration_answer_past_64_kib_is_refused() {
    for delivery in [Delivery::Sized, Delivery::Streamed] {
        let app = start(Fault::Big(Doc::Registration, KIB64 + 1, delivery)).await;
        let (outcome, kept, _) = signed_in_with(&app, registering).await;
        let msg = outcome.unwrap_err().to_string();
        assert!(
            msg.contains(&format!(
                "the registration answer of {}/register is over 65536 bytes",
                app.base
            )),
            "{delivery:?}: {msg}"
        );
        assert!(kept.is_none());
        assert_eq!(*app.token_requests.lock().unwrap(), 0);
        let app = start(Fault::Big(Doc::Registration, KIB64, delivery)).await;
        let (outcome, kept, _) = signed_in_with(&app, registering).await;
        outcome.expect("at the limit");
        assert_eq!(kept.unwrap().client_id, "dcr-client");
        assert_eq!(app.token_field("client_id"), ["dcr-client"]);
    }
}

#[tokio::test]
async fn a_resource_metadata_trickling_in_is_given_up_after_ten_seconds() {
    let app = start(Fault::TrickleResourceMetadata).await;
    let started = tern_testkit::runtime_now();
    let (outcome, tokens) = sign_in(&app, Back::Right).await;
    let took = started.elapsed();
    let msg = outcome.unwrap_err().to_string();
    assert!(
        msg.contains(&format!(
            "the metadata at {}/.well-known/oauth-protected-resource/mcp did not arrive in time",
            app.base
        )),
        "{msg}"
    );
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert!(tokens.kept.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_access_token_past_16_kib_or_not_token68_is_refused() {
    for (token, why) in [
        ("a".repeat(KIB16 + 1), "is over 16384 bytes"),
        (
            "abc\r\nX-Injected: 1".to_owned(),
            "holds characters a Bearer header cannot carry",
        ),
        ("two words".to_owned(), "holds characters"),
        ("==".to_owned(), "holds characters"),
        (String::new(), "holds characters"),
    ] {
        let (msg, app) = refused(
            Fault::TokenFields(json!({"access_token": token})),
            Back::Right,
        )
        .await;
        assert!(msg.contains(why), "{token:?}: {msg}");
        assert_eq!(app.mcp_requests.load(Ordering::Relaxed), 1, "{token:?}");
    }
    for token in ["a".repeat(KIB16), "aB9-._~+/==".to_owned()] {
        let app = start(Fault::TokenFields(json!({"access_token": token}))).await;
        let (outcome, tokens) = sign_in(&app, Back::Right).await;
        outcome.unwrap_or_else(|e| panic!("{token:?}: {e}"));
        let kept = tokens
            .kept
            .lock()
            .unwrap()
            .values()
            .next()
            .cloned()
            .unwrap();
        assert_eq!(kept.access_token, token);
    }
}

fn fixed_now() -> u64 {
    1_000_000
}

#[tokio::test]
async fn token_lifetimes_are_held_to_a_second_and_a_year_and_odd_ones_are_unknown() {
    let year = 365 * 24 * 3600;
    for (expires_in, at) in [
        (json!(3600), Some(1_003_600)),
        (json!(u64::MAX), Some(1_000_000 + year)),
        (json!(year + 1), Some(1_000_000 + year)),
        (json!(0), Some(1_000_001)),
        (json!(3), Some(1_000_003)),
        (json!("7200"), Some(1_007_200)),
        (json!(-1), None),
        (json!(1e30), None),
        (json!(12.5), None),
        (json!("soon"), None),
        (Value::Null, None),
    ] {
        let app = start(Fault::TokenFields(json!({"expires_in": expires_in}))).await;
        let (outcome, kept, _) = signed_in_with(&app, |o| o.now = fixed_now).await;
        outcome.unwrap_or_else(|e| panic!("{expires_in}: {e}"));
        assert_eq!(kept.unwrap().expires_at, at, "{expires_in}");
    }
}

#[tokio::test]
async fn a_resource_is_this_server_only_at_a_path_segment_boundary() {
    for path in ["/mc", "/mcp-evil", "/mcp/v2", "/m"] {
        let (msg, app) = refused(Fault::Resource(path), Back::Right).await;
        assert!(
            msg.contains(&format!(
                "the protected resource metadata is for {}{path}, not {}/mcp",
                app.base, app.base
            )),
            "{path}: {msg}"
        );
        assert_eq!(*app.token_requests.lock().unwrap(), 0, "{path}");
    }
    for path in ["", "/", "/mcp", "/mcp/"] {
        let app = start(Fault::Resource(path)).await;
        let (outcome, _) = sign_in(&app, Back::Right).await;
        outcome.unwrap_or_else(|e| panic!("{path:?}: {e}"));
        // Sent unchanged, not rebuilt from the endpoint (AUTH-C6).
        assert_eq!(app.token_field("resource"), [format!("{}{path}", app.base)]);
    }
}

static CLOCK: AtomicU64 = AtomicU64::new(1_000_000);

fn clock() -> u64 {
    CLOCK.load(Ordering::Relaxed)
}

#[tokio::test]
async fn a_refresh_sends_the_resource_the_authorization_request_sent() {
    let app = start(Fault::Resource("")).await;
    let tokens = Arc::new(Tokens::default());
    let client = client_with(&app, Back::Right, tokens.clone(), &Arc::default(), |o| {
        o.now = clock;
    });
    client.discover().await.expect("signs in");
    CLOCK.fetch_add(3600, Ordering::Relaxed);
    client.discover().await.expect("refreshes");
    assert_eq!(
        app.token_field("grant_type"),
        ["authorization_code", "refresh_token"]
    );
    assert_eq!(app.token_field("resource"), [app.base.as_str(); 2]);
    let kept = tokens
        .kept
        .lock()
        .unwrap()
        .values()
        .next()
        .cloned()
        .unwrap();
    assert_eq!(kept.resource, format!("{}/mcp", app.base));
    assert_eq!(kept.resource_indicator.as_deref(), Some(app.base.as_str()));
}

#[tokio::test]
async fn a_challenge_naming_metadata_off_the_server_and_not_on_https_is_not_followed() {
    for (points, url) in [
        (
            Points::Ssrf,
            "http://169.254.169.254/latest/meta-data/".to_owned(),
        ),
        (Points::File, "file:///etc/passwd".to_owned()),
        (Points::OtherOrigin, String::new()),
    ] {
        let (msg, app) = refused(Fault::ChallengePoints(points), Back::Right).await;
        let url = if url.is_empty() {
            let port = app.base.rsplit(':').next().unwrap();
            format!("http://localhost:{port}/.well-known/oauth-protected-resource/mcp")
        } else {
            url
        };
        assert!(
            msg.contains(&format!(
                "the challenge's resource_metadata {url} is neither on https nor on the server's origin"
            )),
            "{points:?}: {msg}"
        );
    }
}

#[tokio::test]
async fn a_registration_endpoint_on_plain_http_elsewhere_is_never_sent_the_client() {
    let app = start(Fault::PlainHttpRegistration).await;
    let (outcome, kept, sign_ins) = signed_in_with(&app, registering).await;
    let msg = outcome.unwrap_err().to_string();
    assert!(
        msg.contains("http://auth.example.test/register is not on https"),
        "{msg}"
    );
    assert!(kept.is_none());
    assert_eq!(sign_ins, 0);
    assert_eq!(app.registrations.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_server_refusing_every_token_costs_one_sign_in_and_one_refresh_per_request() {
    let app = start(Fault::Forever401).await;
    let tokens = Arc::new(Tokens::default());
    let sign_ins = Arc::new(AtomicUsize::new(0));
    let client = client_with(&app, Back::Right, tokens, &sign_ins, |_| {});
    let err = client.discover().await.unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("HTTP 401 from {}/mcp", app.base)),
        "{err}"
    );
    assert_eq!(sign_ins.load(Ordering::Relaxed), 1);
    assert_eq!(app.token_field("grant_type"), ["authorization_code"]);
    assert_eq!(app.mcp_requests.load(Ordering::Relaxed), 2);
    // The next request: the held token refused, one refresh (it answers
    // the same token), one sign-in, and no more.
    client.discover().await.unwrap_err();
    assert_eq!(sign_ins.load(Ordering::Relaxed), 2);
    assert_eq!(
        app.token_field("grant_type"),
        ["authorization_code", "refresh_token", "authorization_code"]
    );
    assert_eq!(app.mcp_requests.load(Ordering::Relaxed), 4);
}

#[tokio::test]
async fn pre_registered_credentials_go_only_to_their_authorization_server() {
    let app = start(Fault::None).await;
    let (outcome, kept, sign_ins) = signed_in_with(&app, |o| {
        o.registration.client_secret = Some("s3cret".into());
        o.registration.client_issuer = Some("https://as.example.test".into());
    })
    .await;
    let msg = outcome.unwrap_err().to_string();
    assert!(
        msg.contains(&format!(
            "the pre-registered client \"pre-registered\" is for \"https://as.example.test\"; the resource now names \"{}\"",
            app.base
        )),
        "{msg}"
    );
    assert!(kept.is_none());
    assert_eq!(sign_ins, 0);
    assert_eq!(*app.token_requests.lock().unwrap(), 0);
    let base = app.base.clone();
    let (outcome, kept, _) = signed_in_with(&app, move |o| {
        o.registration.client_issuer = Some(base);
    })
    .await;
    outcome.expect("its own server is sent it");
    assert_eq!(kept.unwrap().client_id, "pre-registered");
}
