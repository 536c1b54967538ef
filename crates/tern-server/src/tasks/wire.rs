//! `tasks/get`, `tasks/update` and `tasks/cancel`.
//!
//! Each is gated on the request declaring the extension (-32021, before
//! the id is looked up), then on the task being the caller's own (an
//! unknown id and another principal's get the same -32602). Authorization
//! was re-checked by the dispatch before any of this runs.

use serde_json::{Map, Value};
use tern_proto::accept::Accepted;
use tern_proto::{McpError, Principal};
use tern_types::methods::{Method, TASKS_EXTENSION};

use super::extension_required;
use crate::server::Server;

impl Server {
    /// Answers one of the tasks methods; the result is stamped by the
    /// caller.
    pub(crate) async fn task_method(
        &self,
        a: &Accepted,
        principal: &Principal,
    ) -> Result<Map<String, Value>, McpError> {
        if !a.meta.client_capabilities.extension(TASKS_EXTENSION) {
            return Err(extension_required(a.method.as_str()));
        }
        let id = a
            .params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::invalid_params("params.taskId must be a string"))?;
        // Ids this server issues are 32 hex digits; anything else is
        // unknown before a table or a store sees it.
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(super::table::unknown());
        }
        let tasks = &self.inner.tasks;
        let metrics = self.metrics();
        match a.method {
            Method::TasksGet => tasks.get(id, principal, metrics).await,
            Method::TasksCancel => {
                tasks.cancel(id, principal, metrics).await?;
                Ok(Map::new())
            }
            Method::TasksUpdate => {
                let Some(Value::Object(responses)) = a.params.get("inputResponses") else {
                    return Err(McpError::invalid_params(
                        "params.inputResponses must be an object",
                    ));
                };
                crate::round::check_input_responses(responses, self.config())?;
                // Applied before the acknowledgement leaves: a `tasks/get`
                // right after it sees the answers.
                tasks
                    .update(id, principal, responses, self.config(), metrics)
                    .await?;
                Ok(Map::new())
            }
            other => Err(McpError::Internal(format!("{other} is not a tasks method"))),
        }
    }
}
