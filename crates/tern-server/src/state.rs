//! The MCP payload of a sealed `requestState` and its bindings
//! (SECURITY.md §3.4, §3.6). This module and `round/sealed.rs` (the sealed
//! delivery, which opens and seals it) are the only places where sealed
//! state meets the protocol.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tern_proto::{McpError, Principal};
use tern_seal::Binding;
use tern_types::methods::FlowMethod;

use crate::ask::{Done, Expect};

/// The payload sealed into every `requestState` (SECURITY.md §3.4). The
/// principal fingerprint, method and parameter digest travel in the
/// envelope's binding; issue and expiry times in its claims.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StateBody {
    /// Payload schema version.
    pub(crate) v: u8,
    /// Unique per issued state; for logs.
    pub(crate) sid: [u8; 16],
    /// Constant across the rounds of one flow (ELIC-S15); the basis of
    /// single-use keys.
    pub(crate) fid: [u8; 16],
    /// The absolute flow deadline fixed in round 1.
    pub(crate) flow_exp: u64,
    /// The method code (1 tools/call, 2 prompts/get, 3 resources/read).
    pub(crate) m: u8,
    /// The input round this state answers.
    pub(crate) round: u8,
    /// The flow ends in a single-use effect.
    pub(crate) once: bool,
    /// The input requests of this round, pinned by digest.
    pub(crate) expect: Vec<Expect>,
    /// Answers accepted in earlier rounds.
    pub(crate) done: Vec<Done>,
    /// The handler's continuation (JSON), at most [`MAX_CONTINUATION`].
    pub(crate) app: Vec<u8>,
}

/// The cap on answers carried plus the handler continuation (SECURITY.md
/// §3.1: 4 KiB).
pub(crate) const MAX_CONTINUATION: usize = 4096;

pub(crate) const PAYLOAD_VERSION: u8 = 1;

pub(crate) fn method_code(method: FlowMethod) -> u8 {
    match method {
        FlowMethod::ToolsCall => 1,
        FlowMethod::PromptsGet => 2,
        FlowMethod::ResourcesRead => 3,
    }
}

/// SHA-256 over the canonical salient params: `{m, name, arguments}` for
/// tools and prompts (absent arguments count as `{}`), `{m, uri}` for
/// resources. `_meta`, `inputResponses` and `requestState` are excluded
/// (SECURITY.md §3.4).
pub(crate) fn params_digest(
    method: FlowMethod,
    params: &Map<String, Value>,
) -> Result<[u8; 32], McpError> {
    let m = Value::String(method.as_str().to_owned());
    let null = Value::Null;
    let no_arguments = Value::Object(Map::new());
    // Borrowed, not copied into an object first: the arguments can be
    // large and this runs on every round.
    let digest = match method {
        FlowMethod::ResourcesRead => tern_seal::canonical::digest_entries(&mut [
            ("m", &m),
            ("uri", params.get("uri").unwrap_or(&null)),
        ]),
        FlowMethod::ToolsCall | FlowMethod::PromptsGet => {
            tern_seal::canonical::digest_entries(&mut [
                ("m", &m),
                ("name", params.get("name").unwrap_or(&null)),
                (
                    "arguments",
                    params.get("arguments").unwrap_or(&no_arguments),
                ),
            ])
        }
    };
    // Depth past 32 cannot be digested; the request is refused, not hashed
    // partially.
    digest.map_err(|e| McpError::invalid_params(format!("arguments cannot be bound: {e}")))
}

/// The principal fingerprint (SECURITY.md §3.6): SHA-256 over a domain tag
/// and the length-prefixed identity fields.
pub(crate) fn principal_fingerprint(p: &Principal) -> [u8; 32] {
    // Hashed once: most servers without authorization see only this one.
    static ANONYMOUS: std::sync::LazyLock<[u8; 32]> =
        std::sync::LazyLock::new(|| fingerprint(&Principal::Anonymous));
    match p {
        Principal::Anonymous => *ANONYMOUS,
        _ => fingerprint(p),
    }
}

fn fingerprint(p: &Principal) -> [u8; 32] {
    let fields = p.identity_fields();
    let mut parts: Vec<&[u8]> = vec![b"mcp-mrtr-principal-v1"];
    parts.extend(fields.iter().map(|f| f.as_ref()));
    Binding::digest(&parts).0
}

/// The envelope binding: principal, method and parameters together.
pub(crate) fn binding(pfp: &[u8; 32], method: u8, pdig: &[u8; 32]) -> Binding {
    Binding::digest(&[b"tern-state-binding-v1", pfp, &[method], pdig])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digest_is_that_of_the_salient_object() {
        // States sealed by any instance of a fleet verify on any other:
        // the digest is the canonical one of `{m, name, arguments}` /
        // `{m, uri}` however it is computed (SECURITY.md §3.4).
        let p: Map<String, Value> = serde_json::from_value(json!({
            "name": "deploy", "arguments": {"z": [1, {"b": "é\n"}], "a": 1.0}, "_meta": {}}))
        .unwrap();
        let object = json!({"m": "tools/call", "name": "deploy",
            "arguments": {"z": [1, {"b": "é\n"}], "a": 1.0}});
        assert_eq!(
            params_digest(FlowMethod::ToolsCall, &p).unwrap(),
            tern_seal::canonical::digest(&object).unwrap()
        );
        let r: Map<String, Value> = serde_json::from_value(json!({"uri": "file:///a b"})).unwrap();
        assert_eq!(
            params_digest(FlowMethod::ResourcesRead, &r).unwrap(),
            tern_seal::canonical::digest(&json!({"m": "resources/read", "uri": "file:///a b"}))
                .unwrap()
        );
    }

    #[test]
    fn digest_ignores_meta_and_mrtr_fields() {
        let a: Map<String, Value> = serde_json::from_value(json!({
            "name": "t", "arguments": {"b": 1, "a": 2.0}, "_meta": {"x": 1}}))
        .unwrap();
        let b: Map<String, Value> = serde_json::from_value(json!({
            "name": "t", "arguments": {"a": 2, "b": 1}, "requestState": "s", "inputResponses": {}}))
        .unwrap();
        assert_eq!(
            params_digest(FlowMethod::ToolsCall, &a).unwrap(),
            params_digest(FlowMethod::ToolsCall, &b).unwrap()
        );
        let c: Map<String, Value> =
            serde_json::from_value(json!({"name": "t", "arguments": {"a": 3, "b": 1}})).unwrap();
        assert_ne!(
            params_digest(FlowMethod::ToolsCall, &a).unwrap(),
            params_digest(FlowMethod::ToolsCall, &c).unwrap()
        );
        // Missing arguments count as {}.
        let d: Map<String, Value> = serde_json::from_value(json!({"name": "t"})).unwrap();
        let e: Map<String, Value> =
            serde_json::from_value(json!({"name": "t", "arguments": {}})).unwrap();
        assert_eq!(
            params_digest(FlowMethod::ToolsCall, &d).unwrap(),
            params_digest(FlowMethod::ToolsCall, &e).unwrap()
        );
        // Same params, other method: different digest.
        assert_ne!(
            params_digest(FlowMethod::PromptsGet, &d).unwrap(),
            params_digest(FlowMethod::ToolsCall, &d).unwrap()
        );
    }

    #[test]
    fn principals_fingerprint_apart() {
        let a = Principal::Static {
            secret_id: "a".into(),
        };
        let b = Principal::Static {
            secret_id: "b".into(),
        };
        assert_ne!(principal_fingerprint(&a), principal_fingerprint(&b));
        assert_ne!(
            principal_fingerprint(&Principal::Anonymous),
            principal_fingerprint(&a)
        );
        assert_eq!(principal_fingerprint(&a), principal_fingerprint(&a.clone()));
    }
}
