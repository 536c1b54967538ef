//! One call of a 2025-11-25 session (DIGEST §3.4): the request, the
//! server's own requests on the call's stream, and the budget that bounds
//! them.
//!
//! A legacy server asks for input with requests of its own while the call
//! is open. Each goes through the same [`InputProvider`](crate::InputProvider)
//! and capability gate as an `input_required` round (MRTR-C-A2), and each
//! counts as a round of the call's one [`Budget`] (MRTR-C-A3), which every
//! request of the call shares: a server that asks a thousand times, or
//! asks and then answers `input_required` to be asked again, gets the
//! ceiling, then the call ends locally.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tern_proto::McpHeaders;
use tern_types::legacy::methods as legacy;
use tern_types::{
    ElicitRequestParams, ErrorCode, ErrorObject, InputRequest, InputRequests, InputResponses,
    Request, RequestId, methods,
};

use crate::Error;
use crate::budget::Budget;
use crate::client::{Call, Client, ServerRequests};
use crate::encode::encode_request;
use crate::era::Connection;
use crate::mrtr::{MAX_INPUT_REQUESTS, answer_one, check_declared, target_of};
use crate::options::RoundEvent;
use crate::provider::InputContext;
use crate::transport::{OutboundRequest, OutboundResponse};

/// `URLElicitationRequiredError` (2025-11-25 only; ERR-3 retires it).
const URL_ELICITATION_REQUIRED: i64 = -32042;
/// How often a call is sent again after its URL elicitations.
const MAX_URL_RETRIES: u32 = 3;

impl Client {
    /// A call in a legacy session. A `-32042` answer (the request needs
    /// URL-mode elicitations finished first) goes to the provider as URL
    /// elicitations; once the person accepted them all, the call is sent
    /// again, a few times at most (2025-11-25 URLElicitationRequiredError),
    /// each time a round of the call's `budget`.
    pub(crate) async fn send_legacy(
        &self,
        call: &Call<'_>,
        version: Option<&str>,
        budget: &mut Budget,
    ) -> Result<Map<String, Value>, Error> {
        let mut tries = 0;
        loop {
            let e = match self.send_legacy_once(call, version, budget).await {
                Err(e)
                    if e.remote_error()
                        .is_some_and(|o| o.code.0 == URL_ELICITATION_REQUIRED) =>
                {
                    e
                }
                done => return done,
            };
            tries += 1;
            if tries > MAX_URL_RETRIES || !self.open_urls(call, &e, tries).await? {
                return Err(e);
            }
            budget.next_round(call.method, "request to send the call again")?;
        }
    }

    /// Shows each URL elicitation of a `-32042` error to the provider;
    /// true when every one was accepted. At most [`MAX_INPUT_REQUESTS`]
    /// of them, as in one interim result (SECURITY.md §3.10).
    async fn open_urls(&self, call: &Call<'_>, e: &Error, round: u32) -> Result<bool, Error> {
        let listed = e
            .remote_error()
            .and_then(|o| o.data.as_ref())
            .and_then(|d| d.get("elicitations"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if listed.is_empty() {
            return Ok(false);
        }
        if listed.len() > MAX_INPUT_REQUESTS {
            return Err(Error::protocol(format!(
                "a -32042 error listing {} elicitations exceeds {MAX_INPUT_REQUESTS}",
                listed.len()
            )));
        }
        for elicitation in listed {
            let method = methods::ELICITATION_CREATE;
            let asked_for = json!({"method": method, "params": elicitation});
            let input = serde_json::from_value::<InputRequest>(asked_for).map_err(|e| {
                Error::protocol(format!("a -32042 error with a malformed elicitation: {e}"))
            })?;
            if !matches!(
                input,
                InputRequest::Elicitation(ElicitRequestParams::Url(_))
            ) {
                return Err(Error::protocol(
                    "a -32042 error listing an elicitation that is not URL mode",
                ));
            }
            check_declared(self.inner.provider.kinds(), method, &input)?;
            let cx = InputContext {
                method: call.method.to_owned(),
                target: target_of(&call.params),
                key: method.to_owned(),
                round,
                server_info: self.legacy_server_info(),
                answer_within: None,
            };
            let answer = answer_one(self.inner.provider.as_ref(), cx, input).await?;
            let accepted = serde_json::to_value(&answer)
                .is_ok_and(|a| a.get("action") == Some(&json!("accept")));
            if !accepted {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One request of a legacy session: no modern `_meta`, only the
    /// session's `MCP-Protocol-Version` (none for `initialize` itself). The
    /// server's requests on the call's stream are answered as they come,
    /// within `budget`; the request timeout bounds each wait for the
    /// server, never the time a person takes to answer.
    pub(crate) async fn send_legacy_once(
        &self,
        call: &Call<'_>,
        version: Option<&str>,
        budget: &mut Budget,
    ) -> Result<Map<String, Value>, Error> {
        let id = self.next_id();
        let progress_token = call.opts.progress.then(|| json!(format!("progress-{id}")));
        let mut meta = Map::new();
        if let Some(token) = &progress_token {
            meta.insert(tern_types::meta_keys::PROGRESS_TOKEN.into(), token.clone());
        }
        if let Some(tp) = &call.opts.traceparent {
            meta.insert(tern_types::meta_keys::TRACEPARENT.into(), json!(tp));
        }
        let body = encode_request(&id, call, (!meta.is_empty()).then_some(&meta))?;
        let headers = session_headers(version);
        let out = OutboundRequest {
            id: id.clone(),
            method: call.method.to_owned(),
            body: Bytes::from(body),
            headers: headers.clone(),
            progress_token,
        };
        self.exchange(
            call,
            out,
            ServerRequests::Serve {
                budget,
                headers: &headers,
            },
        )
        .await
    }

    /// Answers one request the server sent during `call`. A request for
    /// input starts a round of `budget` first; past the ceiling it is
    /// answered with an error and the call ends locally (MRTR-C-A3). Input
    /// requests go through the provider exactly as an `input_required`
    /// round would (the capability gate first, MRTR-C-A2); the key is the
    /// method name, as legacy requests have none. A refusal is reported to
    /// the server and ends the call locally (MRTR-C4).
    pub(crate) async fn serve_request(
        &self,
        call: &Call<'_>,
        request: Request,
        budget: &mut Budget,
        headers: &McpHeaders,
    ) -> Result<(), Error> {
        let method = request.method.clone();
        let is_input = matches!(
            method.as_str(),
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE | methods::ROOTS_LIST
        );
        let counted = if is_input {
            budget
                .next_round(call.method, &format!("{method} request"))
                .map(Some)
        } else {
            budget
                .other(call.method, &format!("{method} request"))
                .map(|()| None)
        };
        let round = match counted {
            Ok(round) => round,
            Err(e) => {
                let refusal = ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string());
                self.respond(request.id, Err(refusal), headers).await?;
                return Err(e);
            }
        };
        let mut ended = None;
        let outcome = match (method.as_str(), round) {
            (legacy::PING, _) => Ok(json!({})),
            (_, Some(round)) => {
                match self.serve_input(call, &method, request.params, round).await {
                    Ok(v) => Ok(v),
                    Err((refusal, e)) => {
                        ended = e;
                        Err(refusal)
                    }
                }
            }
            (other, None) => Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("this client does not serve {other}"),
            )),
        };
        self.respond(request.id, outcome, headers).await?;
        ended.map_or(Ok(()), Err)
    }

    /// One request for input, as round `round` of the call: the answer, or
    /// the error for the server and, when the call must end, why.
    async fn serve_input(
        &self,
        call: &Call<'_>,
        method: &str,
        params: Option<Map<String, Value>>,
        round: u32,
    ) -> Result<Value, (ErrorObject, Option<Error>)> {
        let asked_for = json!({"method": method, "params": params});
        let input = serde_json::from_value::<InputRequest>(asked_for).map_err(|e| {
            let why = format!("malformed {method} request: {e}");
            (ErrorObject::new(ErrorCode::INVALID_PARAMS, why), None)
        })?;
        check_declared(self.inner.provider.kinds(), method, &input).map_err(|e| {
            (
                ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, e.to_string()),
                None,
            )
        })?;
        let mut requests = InputRequests::new();
        requests.insert(method.to_owned(), input.clone());
        call.opts.emit(&RoundEvent::InputRequired {
            round,
            input_requests: &requests,
            request_state: None,
        });
        let cx = InputContext {
            method: call.method.to_owned(),
            target: target_of(&call.params),
            key: method.to_owned(),
            round,
            server_info: self.legacy_server_info(),
            answer_within: None,
        };
        match answer_one(self.inner.provider.as_ref(), cx, input).await {
            Ok(answer) => {
                let mut responses = InputResponses::new();
                responses.insert(method.to_owned(), &answer);
                call.opts.emit(&RoundEvent::Answered {
                    round,
                    responses: &responses,
                });
                serde_json::to_value(&answer).map_err(|e| {
                    (
                        ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string()),
                        None,
                    )
                })
            }
            Err(e) => Err((
                ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string()),
                Some(e),
            )),
        }
    }

    async fn respond(
        &self,
        id: RequestId,
        outcome: Result<Value, ErrorObject>,
        headers: &McpHeaders,
    ) -> Result<(), Error> {
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        let body = serde_json::to_vec(&message).map_err(|e| Error::usage(e.to_string()))?;
        self.inner
            .transport
            .respond(OutboundResponse {
                id,
                body: Bytes::from(body),
                headers: headers.clone(),
            })
            .await
    }

    fn legacy_server_info(&self) -> Option<Value> {
        match self.known().as_deref() {
            Some(Connection::Legacy(s)) => s.server_info.clone(),
            _ => None,
        }
    }
}

/// A legacy session's headers: its version, nothing mirrored.
fn session_headers(version: Option<&str>) -> McpHeaders {
    McpHeaders {
        protocol_version: version.map(str::to_owned),
        ..McpHeaders::default()
    }
}
