//! The relay API: what a program that relays another server's flows (a
//! gateway such as `tern proxy`) needs and a handler does not.
//!
//! A relay's route is an ordinary handler whose questions are its
//! upstream's: [`need`] makes a [`Need`] of an input request as the
//! upstream sent it, and [`ask_again`] passes on a whole upstream round,
//! which may repeat a question already answered. The answers go through
//! the same checks a handler's typed needs get (ARCHITECTURE.md, "The
//! relay API"). A relay that serves several upstreams' resources names
//! each route's owner ([`owned_resource`], [`owned_template`]): a read
//! whose URI matches routes of two owners is refused as not found rather
//! than given to either (RES-S2), so one upstream cannot claim another's
//! URIs, and [`remove_owned_resource`] and [`remove_owned_template`]
//! withdraw one owner's route and leave the others'.
//!
//! ```
//! use serde_json::{Value, json};
//! use tern_server::{Ask, Error, ResourceDef, ResourceResult, Server, ToolResult, relay};
//!
//! // One question of an upstream's round, under the upstream's own key.
//! async fn relayed(ask: Ask) -> Result<ToolResult, Error> {
//!     let asked = json!({"method": "elicitation/create", "params": {
//!         "mode": "form", "message": "Go on?",
//!         "requestedSchema": {"type": "object",
//!             "properties": {"ok": {"type": "boolean"}}}}});
//!     // The answer comes back as the client sent it, checked against the
//!     // form's schema, to be passed upstream unchanged.
//!     let answers: Vec<Value> = ask.all(vec![relay::need("confirm", asked)?])?;
//!     Ok(ToolResult::text(answers[0].to_string()))
//! }
//!
//! async fn read() -> ResourceResult {
//!     ResourceResult::text("up://notes", "text/plain", "notes")
//! }
//!
//! let server = Server::builder("gateway", "1.0.0")
//!     .tool("relayed", "Asks what the upstream asks", relayed)
//!     .build()
//!     .expect("valid configuration");
//! server.change_routes(|routes| {
//!     let notes = ResourceDef::new("up://notes", "notes", read);
//!     routes.add_resource(relay::owned_resource(notes, "upstream-a"))
//! })
//! .expect("a resource route");
//! // Withdrawn when upstream-a stops listing it; another owner's route
//! // under the same URI would stay.
//! server.change_routes(|routes| {
//!     relay::remove_owned_resource(routes, "upstream-a", "up://notes");
//! });
//! ```

use serde_json::Value;
use tern_proto::McpError;

use crate::{Ask, Error, Need, ResourceDef, RouteChanges, TemplateDef};

/// A question asked elsewhere, relayed as it is: `request` is an input
/// request (`method` and `params`) as the upstream sent it, whose kind
/// follows from its method and mode (a method that is not an input
/// request's is refused). Asked through [`Ask::all`] like any need, its
/// answer comes back as the client sent it, after the checks a typed need
/// applies (the kind's shape, a form's schema, accept/decline/cancel); it
/// is not carried into later states, since the upstream keeps its own.
pub fn need(key: &str, request: Value) -> Result<Need<Value>, McpError> {
    Need::input(key, request)
}

/// Asks every need in `needs` as a new round, whatever was answered before:
/// an upstream's round passed on whole, which may repeat a question
/// already answered (a URL interaction still open). Returns the round to
/// send ([`Error::Input`]), or -32021 when the client did not declare a
/// kind asked (MRTR-S9); an empty `needs` is the caller's bug (-32603).
pub fn ask_again(ask: &Ask, needs: Vec<Need<Value>>) -> Error {
    ask.again_all(needs)
}

/// `resource` served for `owner` (an upstream's name): a read whose URI
/// matches routes of more than one owner is refused as not found, and the
/// route is removed by [`remove_owned_resource`].
#[must_use]
pub fn owned_resource(mut resource: ResourceDef, owner: &str) -> ResourceDef {
    resource.owner = Some(owner.into());
    resource
}

/// `template` served for `owner`, as [`owned_resource`] is; removed by
/// [`remove_owned_template`].
#[must_use]
pub fn owned_template(mut template: TemplateDef, owner: &str) -> TemplateDef {
    template.owner = Some(owner.into());
    template
}

/// Removes `owner`'s resource `uri`, if there is one; another owner's
/// under the same URI, or one without an owner, stays.
pub fn remove_owned_resource(changes: &mut RouteChanges<'_>, owner: &str, uri: &str) {
    changes.remove_resource_of(Some(owner), uri);
}

/// Removes `owner`'s resource template `template`, as
/// [`remove_owned_resource`] does.
pub fn remove_owned_template(changes: &mut RouteChanges<'_>, owner: &str, template: &str) {
    changes.remove_template_of(Some(owner), template);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{ResourceResult, Server};

    async fn read() -> ResourceResult {
        ResourceResult::text("up://x", "text/plain", "x")
    }

    fn owners(server: &Server) -> Vec<(Option<String>, String)> {
        let reg = server.registry();
        let resources = reg.resources.iter().map(|r| (&r.owner, &r.uri));
        let templates = reg.templates.iter().map(|t| (&t.owner, &t.template));
        resources
            .chain(templates)
            .map(|(o, n)| (o.as_deref().map(str::to_owned), n.clone()))
            .collect()
    }

    /// Two owners' routes under one URI are both kept, and removing one
    /// owner's leaves the other's and the unowned one (RES-S2).
    #[test]
    fn one_owners_routes_are_removed_and_the_others_stay() {
        let server = Server::builder("gateway", "1").build().unwrap();
        server.change_routes(|c| {
            for owner in ["a", "b"] {
                let r = owned_resource(ResourceDef::new("up://x", "x", read), owner);
                c.add_resource(r).unwrap();
                let t = owned_template(TemplateDef::new("up://{id}", "t", read), owner);
                c.add_resource_template(t).unwrap();
            }
            c.add_resource(ResourceDef::new("up://x", "x", read))
                .unwrap();
        });
        assert_eq!(owners(&server).len(), 5);
        server.change_routes(|c| {
            remove_owned_resource(c, "a", "up://x");
            remove_owned_template(c, "a", "up://{id}");
        });
        let some = |o: &str, n: &str| (Some(o.to_owned()), n.to_owned());
        assert_eq!(
            owners(&server),
            vec![
                some("b", "up://x"),
                (None, "up://x".to_owned()),
                some("b", "up://{id}"),
            ]
        );
        server.change_routes(|c| c.remove_resource("up://x"));
        assert_eq!(
            owners(&server),
            vec![some("b", "up://x"), some("b", "up://{id}")]
        );
    }

    /// A relayed need takes its kind from the request's method and mode; a
    /// request that is not an input request's is refused.
    #[test]
    fn a_relayed_need_is_made_from_an_input_request_only() {
        let url = json!({"method": "elicitation/create",
            "params": {"mode": "url", "message": "m", "url": "https://x.example"}});
        let n = need("k", url).unwrap();
        assert_eq!(format!("{n:?}"), r#"Need { key: "k", kind: Url }"#);
        let refused = need("k", json!({"method": "tools/call", "params": {}}));
        let Err(McpError::Internal(message)) = refused else {
            panic!("not refused: {refused:?}");
        };
        assert_eq!(
            message,
            r#"input k: Some("tools/call") is not an input request method"#
        );
    }
}
