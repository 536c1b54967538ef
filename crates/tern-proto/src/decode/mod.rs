//! Decoding one JSON-RPC message with limits (DIGEST §1.1, BASE-A2,
//! STDIO-A2; SECURITY.md §3.4, §3.8), once: [`decode`] is the one entry
//! point, for servers, clients and transports alike. Its [`Decoded`] says
//! what the message is, and for a request its era's marks and its `_meta`
//! already read, so nothing downstream parses the same bytes again.
//!
//! - `strict`: the reader that refuses duplicate keys and excess depth;
//! - `fast`: the server's fast path, with its equivalence to the general
//!   path checked in tests and by a fuzz target.

mod fast;
mod strict;

use std::fmt;

use serde::de;
use serde_json::{Map, Value};
use tern_types::legacy::Era;
use tern_types::{ErrorResponse, Notification, Request, RequestId, ResultResponse};

use crate::accept::{RequestMeta, read_meta};
use crate::error::McpError;
pub use strict::parse_value;

/// Limits applied while decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest body accepted, in bytes.
    pub max_bytes: usize,
    /// The deepest nesting of arrays and objects accepted. The message
    /// object itself is depth 1.
    pub max_depth: usize,
}

impl Default for Limits {
    /// 4 MiB and 64 levels: a request's params can hold a tool argument
    /// object nested 32 deep (SECURITY.md §3.4) with room for the envelope.
    fn default() -> Self {
        Limits {
            max_bytes: 4 * 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// One decoded JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: it expects a response.
    Request(Request),
    /// A notification: it gets no response (BASE-6).
    Notification(Notification),
    /// A successful response.
    Result(ResultResponse),
    /// An error response.
    Error(ErrorResponse),
}

/// A message that could not be decoded, with the request id when it could
/// still be read (BASE-5).
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeError {
    /// The id of the offending request, if known.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: McpError,
    /// The bytes were recognisably a request (a `method` and an `id`), so
    /// the refusal is that request's response; anything else refused (a
    /// notification, a response, an unreadable message) gets an HTTP error
    /// status whatever its JSON-RPC code (HTTP-S6).
    pub request: bool,
}

impl DecodeError {
    /// The HTTP status of the refusal: the error's own for a request, and
    /// at least 400 for anything else (HTTP-S6; 2025-11-25 asks the same of
    /// a POSTed response it cannot accept).
    pub fn http_status(&self) -> u16 {
        match self.error.http_status() {
            s if s >= 400 => s,
            _ if self.request => 200,
            _ => 400,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for DecodeError {}

/// A decoded message: what it is, and for a request whose `_meta` reads
/// cleanly (a modern request's), that `_meta` already read and taken out of
/// its params.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The message. When `meta` is set, its params no longer hold `_meta`.
    pub message: Message,
    /// The request's `_meta`, read (see [`read_meta`]); the envelope checks
    /// take it through [`crate::accept::accept`]. Boxed: it travels through
    /// every future of the request path, and inline it would add its size
    /// to each of them.
    pub meta: Option<Box<RequestMeta>>,
}

impl Decoded {
    /// The era of this message if it is a request (DIGEST §3.4,
    /// COMPAT-S1): modern when its `_meta` names this revision's version;
    /// legacy when it is a legacy-shaped `initialize`, or arrives inside a
    /// session a legacy `initialize` opened (`in_legacy_session`); modern
    /// otherwise, so it meets the modern accept rules and their errors
    /// (COMPAT-S-A1).
    pub fn era(&self, in_legacy_session: bool) -> Option<Era> {
        let Message::Request(r) = &self.message else {
            return None;
        };
        if self.meta.is_some() {
            return Some(Era::Modern);
        }
        Some(crate::era::era_of(r, in_legacy_session))
    }

    /// The message alone, its `_meta` put back into its params when it was
    /// read out.
    pub fn into_message(self) -> Message {
        match (self.message, self.meta) {
            (Message::Request(mut r), Some(meta)) => {
                r.params
                    .get_or_insert_with(Map::new)
                    .insert("_meta".into(), Value::Object(meta.into_map()));
                Message::Request(r)
            }
            (message, _) => message,
        }
    }
}

/// Decodes one message: size limit first (the caller should also refuse to
/// read past it), then strict parsing, then the JSON-RPC shape, then a
/// request's `_meta`.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded, DecodeError> {
    if bytes.len() > limits.max_bytes {
        return Err(DecodeError {
            id: None,
            error: McpError::PayloadTooLarge,
            request: false,
        });
    }
    match fast::request(bytes, limits) {
        Some(decoded) => Ok(decoded),
        None => decode_uncached(bytes, limits),
    }
}

/// [`decode`] for a peer that wants the message alone (a client reading a
/// server's response); its `_meta`, if read, is put back.
pub fn decode_message(bytes: &[u8], limits: &Limits) -> Result<Message, DecodeError> {
    decode(bytes, limits).map(Decoded::into_message)
}

/// [`decode`] without its fast path: the general way every message can be
/// decoded, and what the fast path must agree with. For the equivalence
/// tests and the fuzz target; not an entry point of its own.
#[doc(hidden)]
pub fn decode_uncached(bytes: &[u8], limits: &Limits) -> Result<Decoded, DecodeError> {
    if bytes.len() > limits.max_bytes {
        return Err(DecodeError {
            id: None,
            error: McpError::PayloadTooLarge,
            request: false,
        });
    }
    let value = parse_value(bytes, limits.max_depth).map_err(|error| {
        // Duplicate keys and depth leave valid JSON behind: recover the id
        // so the error can echo it, and whether a request is refused.
        let (id, request) = match error {
            McpError::Parse(_) => (None, false),
            _ => peek(bytes),
        };
        DecodeError { id, error, request }
    })?;
    let mut message = classify(value)?;
    let mut meta = None;
    if let Message::Request(r) = &mut message
        && let Some(params) = r.params.as_mut()
        && let Some(Value::Object(m)) = params.get("_meta")
        && let Ok(read) = read_meta(m.clone())
    {
        params.remove("_meta");
        meta = Some(Box::new(read));
    }
    Ok(Decoded { message, meta })
}

/// The id of a message refused for a limit, and whether it is a request,
/// read without the limits: serde's own depth limit still bounds the walk,
/// and duplicates only matter to the value kept, which is ignored here.
fn peek(bytes: &[u8]) -> (Option<RequestId>, bool) {
    #[derive(serde::Deserialize)]
    struct Peek {
        id: Option<RequestId>,
        method: Option<de::IgnoredAny>,
    }
    match serde_json::from_slice::<Peek>(bytes) {
        Ok(p) => {
            let request = p.method.is_some() && p.id.is_some();
            (p.id, request)
        }
        Err(_) => (None, false),
    }
}

/// Sorts a parsed value into the four JSON-RPC message kinds (BASE-1..7).
fn classify(value: Value) -> Result<Message, DecodeError> {
    let request = matches!(&value, Value::Object(o)
        if o.contains_key("method") && o.get("id").is_some_and(|v| !v.is_null()));
    let invalid = |id: Option<RequestId>, why: &str| DecodeError {
        request,
        id,
        error: McpError::InvalidRequest(why.to_owned()),
    };
    let Value::Object(obj) = value else {
        let why = if value.is_array() {
            "batches are not supported; send one message"
        } else {
            "a message must be a JSON object"
        };
        return Err(invalid(None, why));
    };
    let id = match obj.get("id") {
        None | Some(Value::Null) => None,
        Some(v) => match serde_json::from_value::<RequestId>(v.clone()) {
            Ok(id) => Some(id),
            Err(_) => return Err(invalid(None, "id must be a string or an integer")),
        },
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let (has_method, has_id) = (obj.contains_key("method"), obj.contains_key("id"));
    let (has_result, has_error) = (obj.contains_key("result"), obj.contains_key("error"));
    // BASE-4, BASE-5: a response carries a result or an error, never both,
    // and a request or notification carries neither. A peer that sends
    // both must not have one of them picked for it (a declined answer read
    // as a result would let an effect go ahead).
    if has_result && has_error {
        return Err(invalid(
            id,
            "a response carries either result or error, not both",
        ));
    }
    if has_method && (has_result || has_error) {
        return Err(invalid(
            id,
            "a message is a request or a response, not both",
        ));
    }
    // The usual request (string method, object or no params) moves its
    // parts into a `Request` without a second walk of the tree; anything
    // else takes serde's path below, for its precise message.
    let usual = matches!(obj.get("method"), Some(Value::String(_)))
        && matches!(obj.get("params"), None | Some(Value::Object(_)));
    if let (true, Some(rid)) = (usual, &id) {
        let mut obj = obj;
        let params = match obj.remove("params") {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        };
        if let Some(Value::String(method)) = obj.remove("method") {
            return Ok(Message::Request(Request {
                jsonrpc: tern_types::JsonRpcVersion,
                id: rid.clone(),
                method,
                params,
            }));
        }
        return Err(invalid(id, "method must be a string"));
    }
    // The usual result (an object, for a request id) is moved out the same
    // way: a client reads one per round, and rebuilding its tree through
    // serde cost more than parsing it.
    if let (true, Some(rid), Some(Value::Object(_))) = (has_result, &id, obj.get("result")) {
        let mut obj = obj;
        if let Some(Value::Object(result)) = obj.remove("result") {
            return Ok(Message::Result(ResultResponse {
                jsonrpc: tern_types::JsonRpcVersion,
                id: rid.clone(),
                result,
            }));
        }
        return Err(invalid(id, "result must be an object"));
    }
    let value = Value::Object(obj);
    let shape_err = |id: Option<RequestId>, e: serde_json::Error| invalid(id, &e.to_string());
    if has_method {
        if has_id {
            if id.is_none() {
                return Err(invalid(None, "a request id must not be null"));
            }
            serde_json::from_value(value)
                .map(Message::Request)
                .map_err(|e| shape_err(id, e))
        } else {
            serde_json::from_value(value)
                .map(Message::Notification)
                .map_err(|e| shape_err(id, e))
        }
    } else if has_result {
        serde_json::from_value(value)
            .map(Message::Result)
            .map_err(|e| shape_err(id, e))
    } else if has_error {
        serde_json::from_value(value)
            .map(Message::Error)
            .map_err(|e| shape_err(id, e))
    } else {
        Err(invalid(id, "not a request, notification or response"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_types::ErrorCode;

    fn code(bytes: &[u8]) -> ErrorCode {
        decode_message(bytes, &Limits::default())
            .unwrap_err()
            .error
            .code()
    }

    #[test]
    fn malformed_input_is_a_parse_error() {
        for bad in [
            &b"{"[..],
            b"{\"jsonrpc\":\"2.0\"} trailing",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":NaN}}",
            b"\xff\xfe{}",
            b"{\"a\":\"\xc3\x28\"}",
            b"",
        ] {
            assert_eq!(
                code(bad),
                ErrorCode::PARSE_ERROR,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn duplicate_keys_are_invalid_params_and_keep_the_id() {
        let bytes =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        let err = decode_message(bytes, &Limits::default()).unwrap_err();
        assert_eq!(err.error.code(), ErrorCode::INVALID_PARAMS);
        assert_eq!(err.id, Some(RequestId::Number(7)));
    }

    #[test]
    fn a_refused_request_keeps_its_status_and_anything_else_gets_400() {
        // HTTP-S6: a notification or a response that cannot be accepted gets
        // an HTTP error status, whatever JSON-RPC code names the reason; a
        // request's refusal is its response (HTTP-A4: -32602 is 200).
        let dup_request =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        let err = decode_message(dup_request, &Limits::default()).unwrap_err();
        assert!(err.request);
        assert_eq!(err.http_status(), 200);
        let dup_response =
            br#"{"jsonrpc":"2.0","id":7,"result":{"action":"accept","action":"decline"}}"#;
        let err = decode_message(dup_response, &Limits::default()).unwrap_err();
        assert_eq!(err.error.code(), ErrorCode::INVALID_PARAMS);
        assert_eq!(err.id, Some(RequestId::Number(7)));
        assert!(!err.request);
        assert_eq!(err.http_status(), 400);
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{}{}}}"#,
            "[".repeat(80),
            "]".repeat(80)
        );
        let err = decode_message(deep.as_bytes(), &Limits::default()).unwrap_err();
        assert_eq!(err.error.code(), ErrorCode::INVALID_PARAMS);
        assert_eq!(err.http_status(), 400);
        let dup_notification =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"a":1,"a":2}}"#;
        assert_eq!(
            decode_message(dup_notification, &Limits::default())
                .unwrap_err()
                .http_status(),
            400
        );
    }

    #[test]
    fn a_usual_result_reads_as_serde_reads_it() {
        // Moved out of the parsed tree rather than rebuilt by serde: the
        // same response, unknown members ignored, for either kind of id.
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}"#,
            r#"{"result":{},"id":"x-1","jsonrpc":"2.0","extra":[1,{"a":null}]}"#,
            r#"{"jsonrpc":"2.0","id":-7,"result":{"resultType":"input_required","inputRequests":{}}}"#,
        ] {
            let serde: ResultResponse = serde_json::from_str(text).unwrap();
            let ours = decode_message(text.as_bytes(), &Limits::default()).unwrap();
            assert_eq!(ours, Message::Result(serde), "{text}");
        }
        // What is not the usual result is answered as before.
        for (text, why) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
                "invalid type: sequence",
            ),
            (r#"{"jsonrpc":"2.0","result":{}}"#, "missing field `id`"),
            (
                r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
                "invalid type: null",
            ),
        ] {
            let e = decode_message(text.as_bytes(), &Limits::default()).unwrap_err();
            assert_eq!(e.error.code(), ErrorCode::INVALID_REQUEST, "{text}");
            assert!(e.error.to_string().contains(why), "{text}: {}", e.error);
        }
    }

    #[test]
    fn a_message_with_both_result_and_error_is_invalid() {
        // BASE-4, BASE-5: neither half may be picked for the peer.
        for both in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept"},"error":{"code":-1,"message":"no"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"},"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/x","error":{"code":-1,"message":"no"}}"#,
        ] {
            let err = decode_message(both, &Limits::default()).unwrap_err();
            assert_eq!(
                err.error.code(),
                ErrorCode::INVALID_REQUEST,
                "{}",
                String::from_utf8_lossy(both)
            );
            assert_eq!(err.http_status(), 400);
        }
    }

    #[test]
    fn depth_is_bounded() {
        let limits = Limits {
            max_bytes: 1 << 20,
            max_depth: 8,
        };
        let ok = format!("{}{}", "[".repeat(8), "]".repeat(8));
        assert!(parse_value(ok.as_bytes(), 8).is_ok());
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{}{}}}}}"#,
            "[".repeat(8),
            "]".repeat(8)
        );
        let err = decode_message(deep.as_bytes(), &limits).unwrap_err();
        assert_eq!(err.error.code(), ErrorCode::INVALID_PARAMS);
        assert_eq!(err.id, Some(RequestId::Number(1)));
    }

    #[test]
    fn size_is_checked_before_parsing() {
        let limits = Limits {
            max_bytes: 10,
            max_depth: 8,
        };
        let err = decode_message(b"{\"jsonrpc\":\"2.0\"}", &limits).unwrap_err();
        assert_eq!(err.error, McpError::PayloadTooLarge);
    }

    #[test]
    fn batches_and_non_objects_are_invalid_requests() {
        // BASE-A2.
        assert_eq!(code(b"[]"), ErrorCode::INVALID_REQUEST);
        assert_eq!(
            code(br#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(code(b"42"), ErrorCode::INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[]}"#),
            ErrorCode::INVALID_REQUEST
        );
    }

    #[test]
    fn the_four_kinds_are_told_apart() {
        let l = Limits::default();
        assert!(matches!(
            decode_message(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#, &l),
            Ok(Message::Request(r)) if r.id == RequestId::String("a".into())
        ));
        assert!(matches!(
            decode_message(
                br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
                &l
            ),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            decode_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, &l),
            Ok(Message::Result(_))
        ));
        // BASE-A1: accept "id": null on errors when receiving.
        assert!(matches!(
            decode_message(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#, &l),
            Ok(Message::Error(e)) if e.id.is_none()
        ));
    }

    #[test]
    fn big_integers_stay_exact() {
        let v = parse_value(
            b"[9007199254740993, 18446744073709551615, -9223372036854775808]",
            4,
        )
        .unwrap();
        assert_eq!(v[0].as_u64(), Some(9_007_199_254_740_993));
        assert_eq!(v[1].as_u64(), Some(u64::MAX));
        assert_eq!(v[2].as_i64(), Some(i64::MIN));
    }
}
