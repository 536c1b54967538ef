//! The shared doubles (tern-testkit) and two small readers.

use serde_json::{Map, Value};
pub(crate) use tern_testkit::provider::Canned;
pub(crate) use tern_testkit::transport::{Answer, Direct, Scripted};

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

pub(crate) fn text(r: &tern_types::CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
