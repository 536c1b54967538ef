//! Starting a call over when the server can no longer resume it (its
//! state expired or was used: an error with `data.restart`): at once with
//! `--restart`, after asking in a terminal, otherwise not (the error says
//! how). Once at most, so a server cannot keep a call starting over.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tern::client::{CallOptions, Error};

use super::report::Reporter;
use crate::{exit, provider};

/// Whether the server asked to start the flow over (`data.restart`: the
/// state expired, or was already used).
fn restart_asked(e: &Error) -> bool {
    e.remote_error()
        .and_then(|o| o.data.as_ref())
        .and_then(|d| d.get("restart"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// [`drive`](super::report::drive), starting the whole call over once when
/// the server says its state can no longer be resumed.
pub(super) async fn drive_restarting<T, F, Fut>(
    rep: &Arc<Reporter>,
    auto: bool,
    mut call: F,
) -> Result<T, Error>
where
    F: FnMut(CallOptions) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let first = call(rep.options()).await;
    rep.stop();
    let e = match first {
        Err(e) if restart_asked(&e) => e,
        other => return other,
    };
    eprintln!(
        "tern: the server can no longer resume this call ({}); your answers were not used",
        exit::explain(&e, None)
    );
    let again = if auto {
        true
    } else if provider::stdin_is_terminal() {
        tokio::task::spawn_blocking(|| {
            inquire::Confirm::new("Start the call over?")
                .with_default(true)
                .prompt()
                .unwrap_or(false)
        })
        .await
        .unwrap_or(false)
    } else {
        eprintln!("tern: pass --restart to start over by itself");
        false
    };
    if !again {
        return Err(e);
    }
    eprintln!("tern: starting over");
    let r = call(rep.options()).await;
    rep.stop();
    r
}
