//! The methods that describe the server: `server/discover`, the list
//! methods with their paging, and `subscriptions/listen` (DIGEST §6, §7).

use serde_json::{Map, Value, json};
use tern_proto::McpError;
use tern_proto::accept::Accepted;
use tern_proto::finish::{encode_notification, stamp_complete};
use tern_types::meta_keys;
use tern_types::methods::Method;
use tokio::sync::broadcast;

use crate::notify::Sink;
use crate::registry::Registry;
use crate::server::{Change, Server};

impl Server {
    /// The `server/discover` result (VER-S4).
    pub(crate) fn discover(&self, reg: &Registry) -> Map<String, Value> {
        let mut r = Map::new();
        r.insert("supportedVersions".into(), json!(self.inner.supported));
        r.insert("capabilities".into(), capabilities(reg));
        if let Some(i) = &self.inner.instructions {
            r.insert("instructions".into(), json!(i));
        }
        self.cache_hints(&mut r);
        r
    }

    /// CACHE-S1: `ttlMs` and `cacheScope` on cacheable results.
    pub(crate) fn cache_hints(&self, r: &mut Map<String, Value>) {
        let cfg = self.config();
        r.insert("ttlMs".into(), json!(cfg.cache_ttl_ms));
        r.insert(
            "cacheScope".into(),
            serde_json::to_value(cfg.cache_scope).unwrap_or(json!("private")),
        );
    }

    /// The page for `a` when it is one of the four list methods, in either
    /// era; `None` for any other method.
    pub(crate) fn list(
        &self,
        a: &Accepted,
        reg: &Registry,
    ) -> Option<Result<Map<String, Value>, McpError>> {
        Some(match a.method {
            Method::ToolsList => self.page(a, "tools", reg.tools.iter().map(|t| &t.entry)),
            Method::PromptsList => self.page(a, "prompts", reg.prompts.iter().map(|p| &p.entry)),
            Method::ResourcesList => {
                self.page(a, "resources", reg.resources.iter().map(|r| &r.entry))
            }
            Method::ResourcesTemplatesList => self.page(
                a,
                "resourceTemplates",
                reg.templates.iter().map(|t| &t.entry),
            ),
            _ => return None,
        })
    }

    /// One page of a list method, in registration order (TOOL-S3).
    pub(crate) fn page<'r>(
        &self,
        a: &Accepted,
        field: &str,
        items: impl Iterator<Item = &'r Map<String, Value>>,
    ) -> Result<Map<String, Value>, McpError> {
        let all: Vec<&Map<String, Value>> = items.collect();
        let start = match a.params.get("cursor") {
            None | Some(Value::Null) => 0,
            // PAGE-S3: an invalid cursor is -32602.
            Some(Value::String(c)) => decode_cursor(c)
                .filter(|n| *n <= all.len())
                .ok_or_else(|| McpError::invalid_params("Invalid cursor"))?,
            Some(_) => return Err(McpError::invalid_params("cursor must be a string")),
        };
        let size = self.config().page_size.max(1);
        let end = start.saturating_add(size).min(all.len());
        let page = all.get(start..end).unwrap_or_default();
        let mut r = Map::new();
        r.insert(
            field.into(),
            Value::Array(page.iter().map(|m| Value::Object((*m).clone())).collect()),
        );
        if end < all.len() {
            r.insert("nextCursor".into(), json!(encode_cursor(end)));
        }
        self.cache_hints(&mut r);
        Ok(r)
    }

    /// `subscriptions/listen`: acknowledge the honoured subset at once,
    /// then one notification per change until the client goes away.
    pub(crate) async fn listen(
        &self,
        a: Accepted,
        reg: &Registry,
        sink: Sink,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        let Some(Value::Object(filter)) = a.params.get("notifications") else {
            return Err(McpError::invalid_params(
                "params.notifications must be an object",
            ));
        };
        let wants = |k: &str| filter.get(k).and_then(Value::as_bool).unwrap_or(false);
        // SUB-S2, SUB-A2: acknowledge the honoured subset at once.
        let tools = wants("toolsListChanged") && !reg.tools.is_empty();
        let prompts = wants("promptsListChanged") && !reg.prompts.is_empty();
        let resources = wants("resourcesListChanged") && reg.has_resources();
        let mut honoured = Map::new();
        for (k, on) in [
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ] {
            if on {
                honoured.insert(k.into(), json!(true));
            }
        }
        let sub_id = serde_json::to_value(&a.id).unwrap_or(Value::Null);
        let meta = json!({ meta_keys::SUBSCRIPTION_ID: sub_id });
        let mut rx = self.inner.changes.subscribe();
        let ack = json!({"notifications": honoured, "_meta": meta});
        if !sink
            .send(encode_notification(
                "notifications/subscriptions/acknowledged",
                &ack,
            ))
            .await
        {
            return Ok(None);
        }
        loop {
            let change = tokio::select! {
                c = rx.recv() => c,
                () = sink.closed() => return Ok(None),
            };
            let method = match change {
                Ok(Change::Tools) if tools => "notifications/tools/list_changed",
                Ok(Change::Prompts) if prompts => "notifications/prompts/list_changed",
                Ok(Change::Resources) if resources => "notifications/resources/list_changed",
                Ok(_) => continue,
                // Missed changes: the client re-fetches anyway (SUB-A3).
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => {
                    // SUB-S9: end gracefully with the listen result.
                    let mut r = Map::new();
                    r.insert("_meta".into(), meta.clone());
                    stamp_complete(&mut r, None);
                    return Ok(Some(r));
                }
            };
            if !sink
                .send(encode_notification(method, &json!({"_meta": meta})))
                .await
            {
                return Ok(None);
            }
        }
    }
}

/// What this server offers, from what is registered.
pub(crate) fn capabilities(reg: &Registry) -> Value {
    let mut caps = Map::new();
    if !reg.tools.is_empty() {
        caps.insert("tools".into(), json!({"listChanged": true}));
    }
    if !reg.prompts.is_empty() {
        caps.insert("prompts".into(), json!({"listChanged": true}));
    }
    if reg.has_resources() {
        caps.insert("resources".into(), json!({"listChanged": true}));
    }
    if reg.completion.is_some() {
        caps.insert("completions".into(), json!({}));
    }
    // Log notifications are sent only on opt-in (LOG-S1, LOG-S2).
    caps.insert("logging".into(), json!({}));
    // EXT-A1: an extension is offered only when the server opted in (a
    // tool runs as a task).
    if reg.has_tasks() {
        caps.insert(
            "extensions".into(),
            json!({ tern_types::methods::TASKS_EXTENSION: {} }),
        );
    }
    Value::Object(caps)
}

fn encode_cursor(offset: usize) -> String {
    format!("o{offset}")
}

fn decode_cursor(c: &str) -> Option<usize> {
    c.strip_prefix('o')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        for bad in ["", "o", "42", "o-1", "oé", "o99999999999999999999999"] {
            assert_eq!(decode_cursor(bad), None, "{bad:?}");
        }
    }
}
