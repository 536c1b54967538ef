//! Client capability helpers (DIGEST §2.2, §5.1).

use serde_json::json;
use tern_types::ClientCapabilities;

fn caps(v: serde_json::Value) -> ClientCapabilities {
    serde_json::from_value(v).expect("capabilities parse")
}

#[test]
fn empty_elicitation_object_means_form_only() {
    // ELIC-S3: `{}` is the backward-compatible form of `{"form": {}}`.
    let c = caps(json!({"elicitation": {}}));
    assert!(c.elicitation_form());
    assert!(!c.elicitation_url());
}

#[test]
fn url_only_elicitation_is_not_form() {
    let c = caps(json!({"elicitation": {"url": {}}}));
    assert!(!c.elicitation_form());
    assert!(c.elicitation_url());
}

#[test]
fn both_elicitation_modes() {
    let c = caps(json!({"elicitation": {"form": {}, "url": {}}}));
    assert!(c.elicitation_form());
    assert!(c.elicitation_url());
}

#[test]
fn no_elicitation_means_neither_mode() {
    let c = caps(json!({}));
    assert!(!c.elicitation_form());
    assert!(!c.elicitation_url());
    assert!(!c.sampling());
    assert!(!c.roots());
}

#[test]
fn removed_roots_list_changed_is_kept_and_ignored() {
    // The conformance suite still sends `roots.listChanged` (DIGEST §2.2).
    let v = json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}});
    let c = caps(v.clone());
    assert!(c.roots());
    assert!(c.sampling());
    assert!(!c.sampling_tools());
    assert_eq!(serde_json::to_value(&c).unwrap(), v);
}

#[test]
fn unknown_top_level_members_are_ignored() {
    let c = caps(json!({"tasks": {"list": {}}, "sampling": {"tools": {}}}));
    assert!(c.sampling_tools());
}
