//! Which era a message belongs to, decided per message (DIGEST §3.4,
//! COMPAT-S1): a request with this revision's `_meta` is modern and served
//! statelessly; a legacy-shaped `initialize` opens a legacy session; a
//! message inside a legacy session (the HTTP session or the stdio
//! connection it opened) is legacy. Anything else is treated as modern, so
//! it meets the modern accept rules and their errors (COMPAT-S-A1).

use serde_json::Value;
use tern_types::legacy::{Era, methods};
use tern_types::{Request, meta_keys};

/// The era of `request`. `in_legacy_session` says whether the transport
/// delivered it inside a session a legacy `initialize` opened.
pub fn era_of(request: &Request, in_legacy_session: bool) -> Era {
    let params = request.params.as_ref();
    let modern_meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(meta_keys::PROTOCOL_VERSION));
    if modern_meta {
        return Era::Modern;
    }
    if request.method == methods::INITIALIZE {
        // Legacy-shaped: a `protocolVersion` string in the params.
        let legacy_shape = params
            .and_then(|p| p.get("protocolVersion"))
            .is_some_and(Value::is_string);
        return if legacy_shape {
            Era::Legacy
        } else {
            Era::Modern
        };
    }
    if in_legacy_session {
        Era::Legacy
    } else {
        Era::Modern
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(method: &str, params: Value) -> Request {
        serde_json::from_value(
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
        .unwrap()
    }

    #[test]
    fn modern_meta_wins_everywhere() {
        let meta = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        assert_eq!(era_of(&req("tools/list", meta.clone()), false), Era::Modern);
        // Even inside a legacy session (COMPAT-S1: per message).
        assert_eq!(era_of(&req("tools/list", meta.clone()), true), Era::Modern);
        // A modern-shaped initialize is a modern unknown method (COMPAT-S-A1).
        assert_eq!(era_of(&req("initialize", meta), false), Era::Modern);
    }

    #[test]
    fn a_legacy_initialize_opens_the_legacy_era() {
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "c", "version": "1"}});
        assert_eq!(era_of(&req("initialize", init), false), Era::Legacy);
        assert_eq!(era_of(&req("initialize", json!({})), false), Era::Modern);
        assert_eq!(
            era_of(&req("initialize", json!({"protocolVersion": 5})), false),
            Era::Modern
        );
    }

    #[test]
    fn a_session_makes_plain_requests_legacy() {
        assert_eq!(era_of(&req("tools/list", json!({})), true), Era::Legacy);
        assert_eq!(era_of(&req("ping", json!({})), true), Era::Legacy);
        // Outside a session, a request without modern _meta is refused by
        // the modern rules (COMPAT-S4: -32020 on HTTP, -32602 on stdio).
        assert_eq!(era_of(&req("tools/list", json!({})), false), Era::Modern);
    }
}
