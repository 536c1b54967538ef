//! A request's body, written from the caller's params where they are.

use serde_json::{Map, Value};
use tern_types::{JsonRpcVersion, RequestId};

use crate::Error;
use crate::client::Call;

/// The body of `call` as request `id`, its params with `_meta` set to
/// `meta` (replacing any the caller put there). Written from the borrowed
/// params: a retry's params carry the answers and the state, which a copy
/// per request would duplicate only to be dropped once encoded.
pub(crate) fn encode_request(
    id: &RequestId,
    call: &Call<'_>,
    meta: Option<&Map<String, Value>>,
) -> Result<Vec<u8>, Error> {
    #[derive(serde::Serialize)]
    struct Outgoing<'a> {
        jsonrpc: JsonRpcVersion,
        id: &'a RequestId,
        method: &'a str,
        params: WithMeta<'a>,
    }
    let out = Outgoing {
        jsonrpc: JsonRpcVersion,
        id,
        method: call.method,
        params: WithMeta {
            params: &call.params,
            meta,
        },
    };
    serde_json::to_vec(&out).map_err(|e| Error::usage(e.to_string()))
}

/// Params with `_meta` in its place: the bytes a copy of `params` with
/// `_meta` inserted would encode to (a `Map` keeps its keys sorted).
struct WithMeta<'a> {
    params: &'a Map<String, Value>,
    meta: Option<&'a Map<String, Value>>,
}

impl serde::Serialize for WithMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let Some(meta) = self.meta else {
            return self.params.serialize(s);
        };
        let mut m = s.serialize_map(None)?;
        let mut placed = false;
        for (k, v) in self.params {
            if !placed && k.as_str() >= "_meta" {
                m.serialize_entry("_meta", meta)?;
                placed = true;
                if k == "_meta" {
                    continue;
                }
            }
            m.serialize_entry(k, v)?;
        }
        if !placed {
            m.serialize_entry("_meta", meta)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tern_types::methods;

    use super::*;
    use crate::CallOptions;

    /// What `encode_request` must equal: a copy of the params with `_meta`
    /// inserted, encoded as a `Request`.
    fn copied(id: &RequestId, call: &Call<'_>, meta: Option<&Map<String, Value>>) -> Vec<u8> {
        let mut params = call.params.clone();
        if let Some(m) = meta {
            params.insert("_meta".into(), Value::Object(m.clone()));
        }
        let request = tern_types::Request {
            jsonrpc: JsonRpcVersion,
            id: id.clone(),
            method: call.method.to_owned(),
            params: Some(params),
        };
        serde_json::to_vec(&request).unwrap()
    }

    #[test]
    fn a_request_encodes_as_a_copy_with_meta_inserted_would() {
        let opts = CallOptions::new();
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
        let meta = meta.as_object().unwrap();
        let cases = [
            json!({}),
            json!({ "name": "deploy", "arguments": { "b": 1, "a": [true, null] } }),
            // Keys on both sides of `_meta`, and one equal to it: the
            // caller's `_meta` is replaced, in its place.
            json!({ "A": 1, "Z": 2, "_a": 3, "_meta": { "x": 1 }, "_z": 4, "a": "\u{2028}\"" }),
            json!({ "_meta": { "x": 1 } }),
            json!({ "requestState": "s", "inputResponses": { "k": { "action": "accept" } } }),
        ];
        for params in cases {
            let call = Call {
                method: methods::TOOLS_CALL,
                params: params.as_object().unwrap().clone(),
                opts: &opts,
                deadline: None,
            };
            for (id, m) in [
                (RequestId::Number(7), Some(meta)),
                (RequestId::String("r".into()), None),
            ] {
                assert_eq!(
                    String::from_utf8(encode_request(&id, &call, m).unwrap()).unwrap(),
                    String::from_utf8(copied(&id, &call, m)).unwrap(),
                    "params {params}"
                );
            }
        }
    }
}
