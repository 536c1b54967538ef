//! The server's fast path through decoding, in one place: a usual request
//! is read straight into its members, and its `_meta` into a
//! [`RequestMeta`] through a per-thread cache keyed by its exact text.
//!
//! A client sends the same `_meta` on request after request, and building
//! its tree, reading it and dropping it again was a tenth of a request's
//! work. The invariant this module keeps: [`request`] gives exactly what
//! [`super::decode_uncached`] gives (the message decoded the general way,
//! its `_meta` then read and taken out of its params), or nothing, when the
//! general way is left to decide. A cached entry is what strictly parsing and reading
//! those very bytes gave, under the same depth limit; anything but a
//! request whose `_meta` reads cleanly (any error, a notification, a
//! malformed `_meta`) is left to the general path, so its answer is
//! unchanged too. The property test in `tests/api.rs` and the
//! `decode_message` fuzz target check the two agree.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use tern_types::{Request, RequestId};

use super::strict::{Place, StrictSeed, parse_value};
use super::{Decoded, Limits, Message};
use crate::accept::{RequestMeta, read_meta};

/// A usual request with a `_meta` that reads cleanly, decoded with its
/// `_meta` read; `None` leaves the bytes to the general path.
pub(super) fn request(bytes: &[u8], limits: &Limits) -> Option<Decoded> {
    // The message object itself must fit the depth limit.
    if limits.max_depth == 0 {
        return None;
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
    let req = match seed.deserialize(&mut de) {
        Ok(members) if de.end().is_ok() => members.request()?,
        _ => return None,
    };
    let text = at.get()?;
    // `_meta` is depth 3: the message, its params, then `_meta`.
    let meta = remembered_meta(text.as_bytes(), limits.max_depth.saturating_sub(2))?;
    Some(Decoded {
        message: Message::Request(req),
        meta: Some(meta),
    })
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
struct RequestSeed<'h, 'de>(StrictSeed<'h, 'de>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_, 'de> {
    type Value = Members;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Members, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_, 'de> {
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
