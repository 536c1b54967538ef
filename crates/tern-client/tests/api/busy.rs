//! A busy refusal (-31003, issue 52) is sent again, bounded: the server did
//! not run the request, so the client tries the same request again after a
//! backoff with jitter, at most `MAX_BUSY_RETRIES` times and never past the
//! call's deadline; then the caller gets the refusal, `is_busy()`.

use std::time::Duration;

use serde_json::{Map, Value, json};
use tern_client::{CallOptions, Client, MAX_BUSY_RETRIES};
use tern_server::{Config, RequestLimits, Server};
use tern_types::ErrorCode;

use super::support::{Answer, Direct, Scripted};

fn busy(retry_after_ms: Option<u64>) -> Answer {
    let mut data = json!({"limit": "requests"});
    if let Some(ms) = retry_after_ms {
        data["retryAfterMs"] = json!(ms);
    }
    Answer::Error(json!({"code": -31003, "message": "try again shortly", "data": data}))
}

fn tools() -> Answer {
    Answer::Result(json!({"tools": []}))
}

#[tokio::test(start_paused = true)]
async fn a_request_refused_as_busy_twice_is_sent_again_and_succeeds() {
    let t = Scripted::new(|_, i| if i < 2 { busy(None) } else { tools() });
    let client = Client::new(t.clone());
    let listed = client.list_tools(None).await.unwrap();
    assert!(listed.tools.is_empty());
    let seen = t.seen();
    assert_eq!(seen.len(), 3);
    // The same request each time: it never ran, so its id is free again
    // (BASE-3) and nothing of it changes.
    assert_eq!(seen[0].body, seen[1].body);
    assert_eq!(seen[1].body, seen[2].body);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_stays_busy_is_given_up_on_after_the_bound() {
    let t = Scripted::new(|_, _| busy(None));
    let client = Client::new(t.clone());
    let started = tern_testkit::runtime_now();
    let e = client.list_tools(None).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert!(e.is_remote() && !e.is_timeout(), "{e}");
    assert_eq!(e.remote_error().unwrap().code, ErrorCode::BUSY);
    assert_eq!(e.retry_after(), None);
    assert_eq!(MAX_BUSY_RETRIES, 3);
    assert_eq!(t.seen().len(), 4);
    // Full jitter over 100, 200 and 400 ms: at most 700 ms in all.
    assert!(started.elapsed() <= Duration::from_millis(700));
}

#[tokio::test(start_paused = true)]
async fn the_server_s_retry_time_is_waited_at_least() {
    let t = Scripted::new(|_, _| busy(Some(150)));
    let client = Client::new(t.clone());
    let started = tern_testkit::runtime_now();
    let e = client.list_tools(None).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.retry_after(), Some(Duration::from_millis(150)));
    assert_eq!(t.seen().len(), 4);
    let took = started.elapsed();
    // Each wait is 150 ms plus a jitter of up to 150, 300 and 600 ms.
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took <= Duration::from_millis(1500), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn no_retry_waits_past_the_call_s_deadline() {
    let t = Scripted::new(|_, _| busy(Some(200)));
    let client = Client::new(t.clone());
    let opts = CallOptions::default().timeout(Duration::from_millis(250));
    let started = tern_testkit::runtime_now();
    let e = client
        .request::<Value>("tools/list", Map::new(), &opts)
        .await
        .unwrap_err();
    // The refusal, not a timeout: the client stopped before the deadline.
    assert!(e.is_busy() && !e.is_timeout(), "{e}");
    // One retry fits at most (200 to 400 ms after the first: only if
    // under 250), a second never does.
    assert!((1..=2).contains(&t.seen().len()), "{}", t.seen().len());
    assert!(started.elapsed() < Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn an_application_s_own_minus_31003_is_not_a_refusal_and_is_not_sent_again() {
    // Without data.limit nothing says the request did not run.
    let t =
        Scripted::new(|_, _| Answer::Error(json!({"code": -31003, "message": "access revoked"})));
    let client = Client::new(t.clone());
    let e = client.list_tools(None).await.unwrap_err();
    assert!(!e.is_busy(), "{e}");
    assert_eq!(t.seen().len(), 1);
}

async fn forever() -> tern_server::ToolResult {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn a_real_server_s_budget_reads_as_busy_and_names_its_limit() {
    let config = Config {
        requests: RequestLimits {
            max_running_per_principal: 1,
            max_running: 1,
        },
        ..Config::default()
    };
    let builder = Server::builder("t", "1")
        .tool("forever", "never answers", forever)
        .config(config);
    let (t, _clock) = Direct::new(builder);
    let client = Client::new(t.clone());
    // One call holds the server's only place.
    let holder = client.clone();
    tokio::spawn(async move { holder.call_tool("forever", Map::new()).await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let e = client.list_tools(None).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    let data = e.remote_error().unwrap().busy_data().unwrap();
    assert_eq!(data.limit, "requests");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(1)));
    let lists = t
        .seen()
        .iter()
        .filter(|s| s.body["method"] == "tools/list")
        .count();
    assert_eq!(lists, 1 + MAX_BUSY_RETRIES as usize);
}
