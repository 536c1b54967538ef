//! The relay API: what a program that relays another server's flows (a
//! gateway such as `tern proxy`) needs and a caller of its own does not.
//!
//! A relay is a client of its upstream on behalf of a client of its own,
//! so it does not answer the upstream's questions itself: [`once`] sends
//! one round of any flow method from its raw params and hands back what
//! the upstream answered, `input_required` included, without the MRTR
//! loop; [`with_capabilities`] declares its own client's capabilities
//! upstream instead of its provider's, so the upstream gates on what the
//! person at the far end can do; and [`answers`] passes that client's
//! answers on as they came (checked already where the relay asked them:
//! `tern_server::relay`), for [`Client::resume_with`] or
//! [`Client::update_task`]. ARCHITECTURE.md, "The relay API", has the
//! whole picture.
//!
//! ```no_run
//! use serde_json::{Map, Value, json};
//! use tern_client::{CallOptions, Client, Error, Step, relay};
//! use tern_types::{CallToolResult, ClientCapabilities};
//!
//! /// One round of `params` passed on upstream, declaring `caps` (what the
//! /// relay's own client declared).
//! async fn pass_on(
//!     upstream: &Client,
//!     params: Map<String, Value>,
//!     caps: ClientCapabilities,
//! ) -> Result<Option<CallToolResult>, Error> {
//!     let opts = relay::with_capabilities(CallOptions::new(), caps);
//!     match relay::once::<CallToolResult>(upstream, params, &opts).await? {
//!         Step::Complete(result) => Ok(Some(result)),
//!         Step::Pending(pending) => {
//!             // Each question goes to the relay's own client; its answers
//!             // (here, a decline each) go back upstream as they came.
//!             let requests = pending.input_requests();
//!             let declined = requests.iter().map(|_| json!({"action": "decline"}));
//!             let responses = relay::answers(requests, declined);
//!             match upstream.resume_with(pending, responses, &opts).await? {
//!                 Step::Complete(result) => Ok(Some(result)),
//!                 _ => Ok(None),
//!             }
//!         }
//!         Step::Task(_) => Ok(None),
//!     }
//! }
//! ```

use serde_json::{Map, Value};
use tern_types::{ClientCapabilities, InputRequests, InputResponses};

use crate::{CallOptions, Client, Error, FlowResult, Step};

/// One round of any flow method from its raw params (`name` and
/// `arguments`, or `uri`, as the relay's own client sent them): the
/// result, a task, or the pending round to pass on, which
/// [`Client::resume_with`] continues. The options' cancellation, deadline,
/// round limit and observer apply as for [`Client::call_tool_once_with`].
pub async fn once<T: FlowResult>(
    client: &Client,
    params: Map<String, Value>,
    opts: &CallOptions,
) -> Result<Step<T>, Error> {
    client.first(params, opts).await
}

/// `opts`, declaring `capabilities` on every request of the call instead
/// of the provider's: the relay's own client's, so the upstream gates on
/// what the person at the far end can do. The provider still answers
/// whatever the relay leaves to it; it must handle every kind declared
/// here.
#[must_use]
pub fn with_capabilities(mut opts: CallOptions, capabilities: ClientCapabilities) -> CallOptions {
    opts.capabilities = Some(capabilities);
    opts
}

/// The answers to `requests`, one under each of its keys in order, as
/// they came (raw JSON, checked already by whoever asked them); answers
/// past the last key are dropped, and keys past the last answer left
/// unanswered (which [`Client::resume_with`] refuses, MRTR-C3).
pub fn answers(
    requests: &InputRequests,
    answers: impl IntoIterator<Item = Value>,
) -> InputResponses {
    let map: Map<String, Value> = requests
        .iter()
        .map(|(key, _)| key.to_owned())
        .zip(answers)
        .collect();
    // Cannot fail: `InputResponses` is an object of raw answers on the wire
    // (it keeps them as JSON until the server parses the keys it asked).
    serde_json::from_value(Value::Object(map)).expect("an object is InputResponses' JSON")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Each answer lands under its request's key, unchanged, and the
    /// answers are what the wire carries (MRTR-C3).
    #[test]
    fn raw_answers_go_under_the_requests_keys_in_order() {
        let requests: InputRequests = serde_json::from_value(json!({
            "a": {"method": "roots/list", "params": {}},
            "b": {"method": "elicitation/create", "params": {
                "mode": "url", "message": "m", "url": "https://x.example"}}
        }))
        .unwrap();
        let sent = [
            json!({"roots": []}),
            json!({"action": "accept", "extra": 1}),
            json!("dropped"),
        ];
        let responses = answers(&requests, sent);
        assert_eq!(
            serde_json::to_value(&responses).unwrap(),
            json!({"a": {"roots": []}, "b": {"action": "accept", "extra": 1}})
        );
    }

    /// The capabilities declared go into the options and nothing else
    /// changes.
    #[test]
    fn capabilities_are_set_on_the_options() {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
        let opts = with_capabilities(CallOptions::new().max_rounds(3), caps.clone());
        assert_eq!(opts.capabilities, Some(caps));
        assert_eq!(opts.max_rounds, Some(3));
    }
}
