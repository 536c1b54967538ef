//! Argument completion (DIGEST §6.4).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::result::ResultType;

/// Params of `completion/complete`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// What is being completed: a prompt or a resource template.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Already resolved arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
}

/// The object of a completion, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// `"ref/prompt"`: an argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt name.
        name: String,
        /// A display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// `"ref/resource"`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template.
        uri: String,
    },
}

/// The argument being completed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// The argument name.
    pub name: String,
    /// What has been typed so far.
    pub value: String,
}

/// Context for a completion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Arguments already resolved, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// The result of `completion/complete`. Never interim, no cache hints
/// (COMP-S2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// Always written (BASE-S10); absent reads as complete (BASE-C13).
    #[serde(default)]
    pub result_type: ResultType,
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Completion suggestions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 values, most relevant first.
    pub values: Vec<String>,
    /// How many values exist in total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more values than those returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}
