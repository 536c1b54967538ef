//! Shared helpers: typed envelopes for tests, the spec folder, and a schema
//! validator over `schema.json`'s `$defs`.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tern_types::{JsonRpcVersion, RequestId};

/// A request whose params are parsed into `P` (tern-proto does this for
/// real; here it checks that each params type fits its request).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TypedRequest<P> {
    pub(crate) jsonrpc: JsonRpcVersion,
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: P,
}

/// A notification whose params, when present, are parsed into `P`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TypedNotification<P> {
    pub(crate) jsonrpc: JsonRpcVersion,
    pub(crate) method: String,
    // No `default`: serde reads a missing `Option` as `None` by itself, and
    // `default` would demand `P: Default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// `shared/spec/2026-07-28`, next to the worktree.
pub(crate) fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/2026-07-28")
}

fn defs() -> &'static Value {
    static DEFS: OnceLock<Value> = OnceLock::new();
    DEFS.get_or_init(|| load_defs(&spec_dir()))
}

/// `shared/spec/2025-11-25`, the legacy revision's schema.
pub(crate) fn legacy_spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/2025-11-25")
}

fn legacy_defs() -> &'static Value {
    static DEFS: OnceLock<Value> = OnceLock::new();
    DEFS.get_or_init(|| load_defs(&legacy_spec_dir()))
}

fn load_defs(dir: &std::path::Path) -> Value {
    {
        let path = dir.join("schema.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let schema: Value = serde_json::from_str(&text).expect("schema.json is JSON");
        schema["$defs"].clone()
    }
}

/// The errors of `instance` against `$defs/<def>`, empty when it validates.
/// The root schema embeds the `$defs` and references into them, so nothing
/// is resolved over the network.
pub(crate) fn schema_errors(def: &str, instance: &Value) -> Vec<String> {
    errors_against(defs(), def, instance)
}

/// Panics unless `instance` validates against the 2025-11-25 `$defs/<def>`.
pub(crate) fn assert_legacy_valid(def: &str, instance: &Value) {
    let errors = errors_against(legacy_defs(), def, instance);
    assert!(
        errors.is_empty(),
        "{def} (2025-11-25) does not validate: {errors:#?}\ninstance: {instance:#}"
    );
}

fn errors_against(defs: &Value, def: &str, instance: &Value) -> Vec<String> {
    assert!(defs.get(def).is_some(), "schema.json has no $defs/{def}");
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "$ref": format!("#/$defs/{def}"),
    });
    let validator = jsonschema::validator_for(&root)
        .unwrap_or_else(|e| panic!("schema for {def} compiles: {e}"));
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics unless `instance` validates against `$defs/<def>`.
pub(crate) fn assert_valid(def: &str, instance: &Value) {
    let errors = schema_errors(def, instance);
    assert!(
        errors.is_empty(),
        "{def} does not validate: {errors:#?}\ninstance: {instance:#}"
    );
}
