//! The server's finish rules: `resultType` stamping, server identity, the
//! MRTR method gate, and compact one-line encoding (BASE-S10, META-S12,
//! MRTR-S1..S4, HTTP-S7).

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use tern_types::methods::FlowMethod;
use tern_types::{ErrorResponse, JsonRpcVersion, RequestId, meta_keys};

use crate::error::McpError;

/// Stamps a final result: `resultType: "complete"` (BASE-S10) and the
/// server's identity in `_meta` (META-S12). A result that already names a
/// `resultType` keeps it.
pub fn stamp_complete(result: &mut Map<String, Value>, server_info: Option<&Value>) {
    result
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    stamp_server_info(result, server_info);
}

fn stamp_server_info(result: &mut Map<String, Value>, server_info: Option<&Value>) {
    if let Some(info) = server_info {
        let meta = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.entry(meta_keys::SERVER_INFO)
                .or_insert_with(|| info.clone());
        }
    }
}

/// Builds an interim result (MRTR-S3, MRTR-S4): only for the three flow
/// methods (the type says which), and only with `inputRequests`,
/// `requestState` or both. An empty `inputRequests` counts as absent
/// (MRTR-S-A3). Anything else is a server bug, answered -32603 rather than
/// sent.
pub fn input_required(
    _method: FlowMethod,
    input_requests: Option<Map<String, Value>>,
    request_state: Option<String>,
    server_info: Option<&Value>,
) -> Result<Map<String, Value>, McpError> {
    let input_requests = input_requests.filter(|m| !m.is_empty());
    if input_requests.is_none() && request_state.is_none() {
        return Err(McpError::Internal(
            "an interim result needs inputRequests or requestState".into(),
        ));
    }
    let mut result = Map::new();
    result.insert("resultType".into(), Value::from("input_required"));
    if let Some(r) = input_requests {
        result.insert("inputRequests".into(), Value::Object(r));
    }
    if let Some(s) = request_state {
        result.insert("requestState".into(), Value::String(s));
    }
    stamp_server_info(&mut result, server_info);
    Ok(result)
}

#[derive(Serialize)]
struct ResultOut<'a, R> {
    jsonrpc: JsonRpcVersion,
    id: &'a RequestId,
    result: &'a R,
}

/// The length of `value`'s compact JSON text, counted without building it:
/// what a size budget weighs.
pub fn encoded_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // A sink that never fails fails only where serializing `value` does,
    // and then what was counted is what it wrote.
    let _ = serde_json::to_writer(&mut n, value);
    n.0
}

/// Encodes a result response on one line.
pub fn encode_result<R: Serialize>(id: &RequestId, result: &R) -> Bytes {
    to_bytes(&ResultOut {
        jsonrpc: JsonRpcVersion,
        id,
        result,
    })
}

/// Encodes an error response on one line; `id` is omitted when unknown
/// (BASE-A1).
pub fn encode_error(id: Option<RequestId>, error: &McpError) -> Bytes {
    to_bytes(&ErrorResponse {
        jsonrpc: JsonRpcVersion,
        id,
        error: error.to_error_object(),
    })
}

#[derive(Serialize)]
struct NotificationOut<'a, P> {
    jsonrpc: JsonRpcVersion,
    method: &'a str,
    params: &'a P,
}

/// Encodes a notification on one line.
pub fn encode_notification<P: Serialize>(method: &str, params: &P) -> Bytes {
    to_bytes(&NotificationOut {
        jsonrpc: JsonRpcVersion,
        method,
        params,
    })
}

#[derive(Serialize)]
struct RequestOut<'a, P> {
    jsonrpc: JsonRpcVersion,
    id: &'a RequestId,
    method: &'a str,
    params: &'a P,
}

/// Encodes a request on one line: the server-initiated requests of a legacy
/// session (`elicitation/create`, `sampling/createMessage`, `roots/list`).
pub fn encode_request<P: Serialize>(id: &RequestId, method: &str, params: &P) -> Bytes {
    to_bytes(&RequestOut {
        jsonrpc: JsonRpcVersion,
        id,
        method,
        params,
    })
}

fn to_bytes<T: Serialize>(value: &T) -> Bytes {
    // serde_json's compact writer never emits a newline, so every message
    // fits on one line (STDIO-2, HTTP-S7). Serialising plain data into a Vec
    // cannot fail.
    // Most results fit in 1 KiB: one allocation instead of a growing one.
    let mut out = Vec::with_capacity(1024);
    if serde_json::to_writer(&mut out, value).is_err() {
        out.clear();
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info() -> Value {
        json!({"name": "tern", "version": "0.1.0"})
    }

    #[test]
    fn encoded_len_is_the_length_of_the_compact_text() {
        let v = json!({"a": [1, 2.5, null, true], "b": "é\n\"", "c": {}});
        assert_eq!(encoded_len(&v), serde_json::to_vec(&v).unwrap().len());
        let id = RequestId::Number(7);
        assert_eq!(encoded_len(&id), 1);
        assert_eq!(encoded_len("x"), 3);
    }

    #[test]
    fn complete_results_are_stamped() {
        // BASE-S10, META-S12.
        let mut r = Map::new();
        r.insert("content".into(), json!([]));
        stamp_complete(&mut r, Some(&info()));
        assert_eq!(
            Value::Object(r),
            json!({"content": [], "resultType": "complete",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tern", "version": "0.1.0"}}})
        );
    }

    #[test]
    fn input_required_only_on_the_three_methods() {
        // MRTR-S1, MRTR-S2: only a FlowMethod can be passed; the other
        // methods have none (tern_types::methods::Method::flow).
        let reqs: Map<String, Value> =
            serde_json::from_value(json!({"k": {"method": "roots/list"}})).unwrap();
        for m in [
            FlowMethod::ToolsCall,
            FlowMethod::PromptsGet,
            FlowMethod::ResourcesRead,
        ] {
            let r = input_required(m, Some(reqs.clone()), None, None).unwrap();
            assert_eq!(r["resultType"], "input_required");
        }
    }

    #[test]
    fn input_required_needs_requests_or_state() {
        // MRTR-S4, MRTR-S-A3: an empty map counts as absent.
        assert!(input_required(FlowMethod::ToolsCall, Some(Map::new()), None, None).is_err());
        assert!(input_required(FlowMethod::ToolsCall, None, None, None).is_err());
        let r = input_required(
            FlowMethod::ToolsCall,
            Some(Map::new()),
            Some("s".into()),
            None,
        )
        .unwrap();
        assert_eq!(
            Value::Object(r),
            json!({"resultType": "input_required", "requestState": "s"})
        );
    }

    #[test]
    fn encoding_is_one_line() {
        let b = encode_result(&RequestId::Number(1), &json!({"text": "a\nb"}));
        assert!(!b.contains(&b'\n'));
        assert_eq!(
            &b[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"a\nb"}}"#
        );
        let e = encode_error(None, &McpError::Parse("x".into()));
        assert_eq!(
            serde_json::from_slice::<Value>(&e).unwrap(),
            json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error: x"}})
        );
    }
}
