//! The digests that pin an answer to its question (MRTR-S8): a round's
//! state carries the digest of each request it asked, and an answer counts
//! only against the same digest. A question that cannot be digested is not
//! asked. A typed form's schema is built, checked, compiled and written in
//! canonical form once per type ([`TypedSchema`]).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use serde_json::Value;
use tern_proto::McpError;

use super::need::form_request;
use crate::form::{ElicitForm, check_form_schema};

/// [`request_digest`] of a form request, `{"method": "elicitation/create",
/// "params": {"mode": "form", "message": message, "requestedSchema":
/// schema}}`, from the schema's canonical bytes; the keys are written in
/// canonical order.
fn form_request_digest(message: &str, schema: &[u8]) -> [u8; 16] {
    use tern_seal::canonical::{digest_canonical, write_str};
    let mut out = Vec::with_capacity(96 + message.len() + schema.len());
    out.extend_from_slice(br#"{"method":"elicitation/create","params":{"message":"#);
    write_str(&mut out, message);
    out.extend_from_slice(br#","mode":"form","requestedSchema":"#);
    out.extend_from_slice(schema);
    out.extend_from_slice(b"}}");
    first_half(&digest_canonical(&out))
}

/// The digest of an input request as it is sent: the first half of the
/// SHA-256 of its canonical JSON. A request too deep or otherwise not
/// canonical has none, and is refused rather than given a shared one.
pub(crate) fn request_digest(request: &Value) -> Result<[u8; 16], McpError> {
    tern_seal::canonical::digest(request)
        .map(|full| first_half(&full))
        .map_err(|e| McpError::Internal(format!("the question cannot be digested: {e}")))
}

/// A request digest is the first half of the SHA-256.
fn first_half(full: &[u8; 32]) -> [u8; 16] {
    let mut out = [0; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// A typed form's schema, built, checked, compiled and written in
/// canonical form once per type: the derive keeps it in a static of the
/// type ([`ElicitForm`]), and the digests of its requests by message.
#[doc(hidden)]
pub struct TypedSchema {
    pub(super) schema: Value,
    pub(super) valid: bool,
    /// The schema's canonical bytes, so each request's digest does not
    /// walk the schema again.
    canonical: Option<Vec<u8>>,
    /// The compiled validator of accepted answers.
    pub(super) validator: Option<Arc<jsonschema::Validator>>,
    /// Request digests by message: a form is usually asked with the same
    /// few messages, and the digest hashes the whole request.
    digests: Mutex<HashMap<Box<str>, [u8; 16]>>,
}

impl std::fmt::Debug for TypedSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedSchema")
            .field("schema", &self.schema)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl TypedSchema {
    /// Messages remembered per form type: enough for a form's usual
    /// messages, few enough to stay small when messages are built from
    /// arguments.
    const KEEP: usize = 256;

    /// Builds what a typed form needs from its schema.
    pub fn of(schema: Value) -> TypedSchema {
        TypedSchema {
            valid: check_form_schema(&schema).is_ok(),
            canonical: tern_seal::canonical::to_vec(&schema).ok(),
            validator: crate::form::compile(&schema).ok(),
            schema,
            digests: Mutex::default(),
        }
    }

    /// `T`'s, for an [`ElicitForm`] implemented by hand (the derive keeps
    /// its own): made once per type and kept for the life of the process.
    pub fn registered<T: ElicitForm>() -> &'static TypedSchema {
        type Registry = RwLock<HashMap<TypeId, &'static TypedSchema>>;
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        let registry = REGISTRY.get_or_init(RwLock::default);
        let id = TypeId::of::<T>();
        if let Some(t) = registry
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            return t;
        }
        let made = TypedSchema::of(T::requested_schema());
        registry
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(id)
            .or_insert_with(|| Box::leak(Box::new(made)))
    }

    /// [`request_digest`] of this form asked with `message`.
    pub(super) fn request_digest(&self, message: &str) -> Result<[u8; 16], McpError> {
        let Some(schema) = self.canonical.as_deref() else {
            return request_digest(&form_request(message, self.schema.clone()));
        };
        let lock = || self.digests.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = lock().get(message) {
            return Ok(*d);
        }
        let d = form_request_digest(message, schema);
        let mut known = lock();
        if known.len() >= Self::KEEP {
            known.clear();
        }
        known.insert(message.into(), d);
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ask::Need;

    #[test]
    fn a_typed_form_digest_is_that_of_its_request() {
        // States sealed before and after the shortcut agree, and so do the
        // instances of a fleet (MRTR-S8: an answer is bound to its question).
        let schema = json!({"type": "object", "properties": {
            "approved": {"type": "boolean", "description": "Approve \"it\"?\n"},
            "n": {"type": "integer", "minimum": 1.0}}, "required": ["approved"]});
        let canonical = tern_seal::canonical::to_vec(&schema).unwrap();
        for message in [
            "Approve deployment to prod?",
            "",
            "quote \" back\\slash \u{1} é 𝄞\t",
        ] {
            let request = json!({"method": "elicitation/create", "params": {
                "mode": "form", "message": message, "requestedSchema": schema}});
            assert_eq!(
                form_request_digest(message, &canonical),
                request_digest(&request).unwrap(),
                "{message:?}"
            );
        }
    }

    #[derive(serde::Deserialize)]
    struct Approval {
        #[expect(dead_code, reason = "only the schema is used")]
        approved: bool,
    }

    impl ElicitForm for Approval {
        fn requested_schema() -> Value {
            json!({"type": "object", "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"]})
        }
    }

    #[test]
    fn a_remembered_typed_form_digest_is_still_that_of_its_request() {
        // MRTR-S8: the digest a need carries is its request's, whether
        // computed now or remembered from an earlier round; another message
        // is another question.
        let digest = |message: &str| Need::form::<Approval>("k", message).digest().unwrap();
        let sent = |message: &str| {
            let need = Need::form::<Approval>("k", message);
            request_digest(&need.request.into_value()).unwrap()
        };
        for message in ["Approve?", "Approve deployment to prod?", "Approve?"] {
            assert_eq!(digest(message), sent(message), "{message:?}");
            assert_eq!(digest(message), digest(message), "{message:?}");
        }
        assert_ne!(digest("Approve?"), digest("Approve deployment to prod?"));
    }

    #[test]
    fn a_question_too_deep_to_digest_is_refused_not_given_a_shared_digest() {
        // MRTR-S8: two such questions must not share one pin.
        let mut deep = json!("leaf");
        for _ in 0..64 {
            deep = json!({ "n": deep });
        }
        let relayed = json!({"method": "elicitation/create", "params": {
            "mode": "form", "message": "m", "requestedSchema": deep}});
        let err = request_digest(&relayed).unwrap_err();
        assert!(matches!(err, McpError::Internal(_)), "{err:?}");
        let need = Need::input("k", relayed).unwrap();
        let err = need.digest().unwrap_err();
        assert!(
            matches!(&err, McpError::Internal(m) if m.starts_with("input k: the question cannot be digested")),
            "{err:?}"
        );
    }

    #[test]
    fn a_fixed_request_carries_the_digest_of_the_request_sent() {
        // MRTR-S8: the roots request's digest is worked out once.
        let need = Need::roots("r");
        let digest = need.digest().unwrap();
        let sent = need.request.into_value();
        assert_eq!(sent, json!({"method": "roots/list", "params": {}}));
        assert_eq!(digest, request_digest(&sent).unwrap());
    }
}
