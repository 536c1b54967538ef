//! Decoding one JSON-RPC message with limits (DIGEST §1.1, BASE-A2,
//! STDIO-A2; SECURITY.md §3.4, §3.8).
//!
//! serde_json keeps the last of two duplicate object keys and recurses up to
//! 128 levels. Neither is acceptable for input whose digest binds a state:
//! `{"a":1,"a":2}` must not mean one thing to the digest and another to the
//! handler. So messages are read through a visitor that rejects duplicate
//! keys and nesting past a limit while it builds the value.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use tern_types::{ErrorResponse, Notification, Request, RequestId, ResultResponse};

use crate::accept::{RequestMeta, read_meta};
use crate::error::McpError;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LimitHit {
    Duplicate,
    Depth,
}

/// Parses JSON text into a [`Value`], rejecting duplicate keys and nesting
/// deeper than `max_depth`.
///
/// Malformed JSON, trailing characters, invalid UTF-8 and non-finite numbers
/// are -32700; duplicate keys and excess depth are -32602 (the text is JSON,
/// the parameters are not acceptable).
pub fn parse_value(bytes: &[u8], max_depth: usize) -> Result<Value, McpError> {
    let hit = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // Our own depth limit replaces serde_json's; it is lower, so the stack
    // stays bounded.
    let parsed = StrictSeed {
        depth: 0,
        max_depth,
        hit: &hit,
        place: Place::Any,
        meta: None,
    }
    .deserialize(&mut de);
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            return Err(match hit.get() {
                Some(LimitHit::Duplicate) => McpError::invalid_params("Duplicate object key"),
                Some(LimitHit::Depth) => McpError::invalid_params("JSON nested too deeply"),
                None => McpError::Parse(parse_detail(&e)),
            });
        }
    };
    de.end().map_err(|e| McpError::Parse(parse_detail(&e)))?;
    Ok(value)
}

fn parse_detail(e: &serde_json::Error) -> String {
    // Line and column help a person fix a hand-written request; the rest of
    // serde_json's text is stable enough to show.
    e.to_string()
}

/// Where a value sits, as far as locating `params._meta` goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The message's `params`.
    Params,
    /// Anywhere else.
    Any,
}

#[derive(Clone, Copy)]
struct StrictSeed<'h> {
    depth: usize,
    max_depth: usize,
    hit: &'h Cell<Option<LimitHit>>,
    place: Place,
    /// Where `params._meta`'s text starts (its address) and how long it is.
    meta: Option<&'h Cell<Option<(usize, usize)>>>,
}

impl StrictSeed<'_> {
    fn deeper<E: de::Error>(&self) -> Result<Self, E> {
        if self.depth + 1 > self.max_depth {
            self.hit.set(Some(LimitHit::Depth));
            return Err(E::custom("nesting too deep"));
        }
        Ok(StrictSeed {
            depth: self.depth + 1,
            place: Place::Any,
            ..*self
        })
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.deeper()?;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.deeper()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let seed = match (self.place, key.as_str(), self.meta) {
                (Place::Params, "_meta", Some(at)) => {
                    if at.get().is_some() {
                        self.hit.set(Some(LimitHit::Duplicate));
                        return Err(de::Error::custom("duplicate key"));
                    }
                    // Checked (depth, duplicates) when it is parsed, unless
                    // these exact bytes already were.
                    let text: &RawValue = map.next_value()?;
                    let text = text.get();
                    at.set(Some((text.as_ptr() as usize, text.len())));
                    continue;
                }
                _ => inner,
            };
            // One search of the map per key, not a lookup then an insert.
            match out.entry(key) {
                serde_json::map::Entry::Occupied(_) => {
                    self.hit.set(Some(LimitHit::Duplicate));
                    return Err(de::Error::custom("duplicate key"));
                }
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(seed)?);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Decodes one message: size limit first (the caller should also refuse to
/// read past it), then strict parsing, then the JSON-RPC shape.
pub fn decode_message(bytes: &[u8], limits: &Limits) -> Result<Message, DecodeError> {
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
    classify(value)
}

/// A message decoded by [`decode_request`].
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The message. When `meta` is set, its params no longer hold `_meta`.
    pub message: Message,
    /// The request's `_meta`, already read (see [`read_meta`]); the
    /// envelope checks take it through [`crate::accept::accept_read`].
    /// Boxed: it travels through every future of the request path, and
    /// inline it would add its size to each of them.
    pub meta: Option<Box<RequestMeta>>,
}

/// [`decode_message`] for a server: a request's `_meta` is read straight
/// into a [`RequestMeta`], through a per-thread cache keyed by its exact
/// text.
///
/// A client sends the same `_meta` on request after request, and building
/// its tree, reading it and dropping it again was a tenth of a request's
/// work. A cached entry is what strictly parsing and reading those very
/// bytes gave, under the same depth limit, so a request is accepted or
/// refused exactly as without the cache. Anything but a request whose
/// `_meta` reads cleanly (any error, a notification, a malformed `_meta`)
/// is decoded by [`decode_message`], so its answer is unchanged too.
pub fn decode_request(bytes: &[u8], limits: &Limits) -> Result<Decoded, DecodeError> {
    let plain = || {
        decode_message(bytes, limits).map(|message| Decoded {
            message,
            meta: None,
        })
    };
    // The message object itself must fit the depth limit.
    if bytes.len() > limits.max_bytes || limits.max_depth == 0 {
        return plain();
    }
    let (hit, at) = (Cell::new(None), Cell::new(None));
    // Members are depth 2: the message object is depth 1.
    let seed = RequestSeed(StrictSeed {
        depth: 1,
        max_depth: limits.max_depth,
        hit: &hit,
        place: Place::Any,
        meta: Some(&at),
    });
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = match seed.deserialize(&mut de) {
        Ok(members) if de.end().is_ok() => members.request(),
        _ => None,
    };
    let (Some(req), Some((start, len))) = (parsed, at.get()) else {
        return plain();
    };
    // The span lies inside `bytes`: the parser borrowed it from there.
    let start = start - bytes.as_ptr() as usize;
    let text = &bytes[start..start + len];
    // `_meta` is depth 3: the message, its params, then `_meta`.
    let depth = limits.max_depth.saturating_sub(2);
    match remembered_meta(text, depth) {
        Some(meta) => Ok(Decoded {
            message: Message::Request(req),
            meta: Some(meta),
        }),
        None => plain(),
    }
}

/// The [`RequestMeta`] that `text` reads to, from the cache or freshly
/// parsed and read; `None` when it does not read cleanly.
fn remembered_meta(text: &[u8], max_depth: usize) -> Option<Box<RequestMeta>> {
    /// Distinct `_meta` texts kept per thread: a process serves a few
    /// clients' worth at a time; the cache is emptied when full.
    const KEEP: usize = 64;
    /// By text: the depth limit it was parsed under, and what it read to.
    type Read = HashMap<Box<[u8]>, (usize, RequestMeta)>;
    thread_local! {
        static READ: RefCell<Read> = RefCell::new(HashMap::new());
    }
    let known = READ.with_borrow(|read| match read.get(text) {
        Some((depth, meta)) if *depth == max_depth => Some(Box::new(meta.clone())),
        _ => None,
    });
    if known.is_some() {
        return known;
    }
    let Ok(Value::Object(map)) = parse_value(text, max_depth) else {
        return None;
    };
    let meta = read_meta(map).ok()?;
    // A progress token is new on every request: such a `_meta` is not
    // seen again, and would only push out the ones that are.
    if meta.progress_token.is_none() {
        READ.with_borrow_mut(|read| {
            if read.len() >= KEEP {
                read.clear();
            }
            read.insert(text.into(), (max_depth, meta.clone()));
        });
    }
    Some(Box::new(meta))
}

/// The members of a request's message object, as [`RequestSeed`] read them.
#[derive(Default)]
struct Members {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
}

impl Members {
    /// The request, when these are the usual request's members: anything
    /// else is for [`classify`] to sort out and name.
    fn request(self) -> Option<Request> {
        if self.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
            return None;
        }
        let id = match self.id? {
            Value::Null => return None,
            id => serde_json::from_value::<RequestId>(id).ok()?,
        };
        let Value::String(method) = self.method? else {
            return None;
        };
        let params = match self.params {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return None,
        };
        Some(Request {
            jsonrpc: tern_types::JsonRpcVersion,
            id,
            method,
            params,
        })
    }
}

/// A member name of a message object, read without allocating.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Other,
}

impl<'de> serde::Deserialize<'de> for Member {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Member, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, v: &str) -> Result<Member, E> {
                Ok(match v {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_identifier(Name)
    }
}

/// Reads a message object straight into its [`Members`], with the limits
/// of [`StrictSeed`] on each member's value, and without a map of its
/// own. A member a request does not have fails it: the caller then
/// decodes the message the general way.
struct RequestSeed<'h>(StrictSeed<'h>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = Members;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Members, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_> {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let seed = self.0;
        let mut m = Members::default();
        while let Some(member) = map.next_key::<Member>()? {
            let (slot, seed) = match member {
                Member::Jsonrpc => (&mut m.jsonrpc, seed),
                Member::Id => (&mut m.id, seed),
                Member::Method => (&mut m.method, seed),
                Member::Params => (
                    &mut m.params,
                    StrictSeed {
                        place: Place::Params,
                        ..seed
                    },
                ),
                Member::Other => return Err(de::Error::custom("not a plain request")),
            };
            if slot.is_some() {
                return Err(de::Error::custom("duplicate key"));
            }
            *slot = Some(map.next_value_seed(seed)?);
        }
        Ok(m)
    }
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
pub fn classify(value: Value) -> Result<Message, DecodeError> {
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
