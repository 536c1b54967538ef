//! Changing a running server's routes: one at a time, or many at once as
//! a proxy's catalog sync does, at the cost of one copy of the routes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::builder::BuildError;
use crate::registry::{PromptDef, Registry, ResourceDef, RouteKey, TemplateDef, ToolDef};
use crate::server::{Change, Server};

/// Route changes made together by [`Server::change_routes`]. Removals
/// apply before additions, so a route both removed and added is the added
/// one; of two added under one name the later wins. A relay's resource
/// and template routes are named by their owner too
/// ([`crate::relay::owned_resource`]), so two owners' routes under one URI
/// are both kept (and a read of it refused, RES-S2).
pub struct RouteChanges<'a> {
    server: &'a Server,
    tools: Vec<ToolDef>,
    prompts: Vec<PromptDef>,
    resources: Vec<ResourceDef>,
    templates: Vec<TemplateDef>,
    gone_tools: HashSet<String>,
    gone_prompts: HashSet<String>,
    gone_resources: HashSet<RouteKey>,
    gone_templates: HashSet<RouteKey>,
}

impl std::fmt::Debug for RouteChanges<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteChanges")
            .field("tools", &self.tools.len())
            .field("prompts", &self.prompts.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("gone_tools", &self.gone_tools.len())
            .field("gone_prompts", &self.gone_prompts.len())
            .field("gone_resources", &self.gone_resources.len())
            .field("gone_templates", &self.gone_templates.len())
            .finish()
    }
}

impl RouteChanges<'_> {
    /// Adds (or replaces) a tool. A tool taking a `State<S>` the server was
    /// not given, or a single-use or idempotent tool the deployment cannot
    /// guard, is refused, as the builder would.
    pub fn add_tool(&mut self, tool: ToolDef) -> Result<(), BuildError> {
        self.server
            .admit(("tool", &tool.name), &tool.handler, &tool.limits)?;
        self.tools.push(tool);
        Ok(())
    }

    /// Removes the tool `name`, if there is one.
    pub fn remove_tool(&mut self, name: &str) {
        self.gone_tools.insert(name.to_owned());
    }

    /// Adds (or replaces) a prompt, with the guards of
    /// [`RouteChanges::add_tool`].
    pub fn add_prompt(&mut self, prompt: PromptDef) -> Result<(), BuildError> {
        self.server
            .admit(("prompt", &prompt.name), &prompt.handler, &prompt.limits)?;
        self.prompts.push(prompt);
        Ok(())
    }

    /// Removes the prompt `name`, if there is one.
    pub fn remove_prompt(&mut self, name: &str) {
        self.gone_prompts.insert(name.to_owned());
    }

    /// Adds (or replaces) a resource, with the guards of
    /// [`RouteChanges::add_tool`].
    pub fn add_resource(&mut self, resource: ResourceDef) -> Result<(), BuildError> {
        self.server.admit(
            ("resource", &resource.uri),
            &resource.handler,
            &resource.limits,
        )?;
        self.resources.push(resource);
        Ok(())
    }

    /// Removes the resource `uri`, if there is one (a relay's routes under
    /// the same URI stay: [`crate::relay::remove_owned_resource`] removes
    /// those).
    pub fn remove_resource(&mut self, uri: &str) {
        self.remove_resource_of(None, uri);
    }

    /// Removes the resource template `template`, if there is one, as
    /// [`RouteChanges::remove_resource`] does.
    pub fn remove_resource_template(&mut self, template: &str) {
        self.remove_template_of(None, template);
    }

    /// Removes the resource `uri` of `owner` (`None`: the one without an
    /// owner); another owner's under the same URI stays.
    pub(crate) fn remove_resource_of(&mut self, owner: Option<&str>, uri: &str) {
        self.gone_resources
            .insert((owner.map(Arc::from), uri.to_owned()));
    }

    /// Removes the resource template `template` of `owner`, as
    /// [`RouteChanges::remove_resource_of`] does.
    pub(crate) fn remove_template_of(&mut self, owner: Option<&str>, template: &str) {
        self.gone_templates
            .insert((owner.map(Arc::from), template.to_owned()));
    }

    /// Adds (or replaces) a resource template, with the guards of
    /// [`RouteChanges::add_tool`].
    pub fn add_resource_template(&mut self, template: TemplateDef) -> Result<(), BuildError> {
        self.server.admit(
            ("resource template", &template.template),
            &template.handler,
            &template.limits,
        )?;
        self.templates.push(template);
        Ok(())
    }

    /// The changes in one pass over each kind's routes; which kinds changed.
    fn apply(self, r: &mut Registry) -> Vec<Change> {
        let mut changed = Vec::new();
        if merge(&mut r.tools, self.tools, &self.gone_tools, |t| {
            t.name.clone()
        }) {
            changed.push(Change::Tools);
        }
        if merge(&mut r.prompts, self.prompts, &self.gone_prompts, |p| {
            p.name.clone()
        }) {
            changed.push(Change::Prompts);
        }
        let resources = merge(
            &mut r.resources,
            self.resources,
            &self.gone_resources,
            ResourceDef::key,
        );
        let templates = merge(
            &mut r.templates,
            self.templates,
            &self.gone_templates,
            TemplateDef::key,
        );
        if resources || templates {
            changed.push(Change::Resources);
        }
        changed
    }
}

/// Drops the routes named in `gone` or added again, then appends `added`
/// (the last of each name): linear in both, where a pass per route made a
/// sync of n routes quadratic. Whether anything was asked of this kind.
fn merge<T, K: Eq + std::hash::Hash>(
    routes: &mut Vec<T>,
    added: Vec<T>,
    gone: &HashSet<K>,
    name: impl Fn(&T) -> K,
) -> bool {
    if added.is_empty() && gone.is_empty() {
        return false;
    }
    let mut names = HashSet::with_capacity(added.len());
    let mut kept: Vec<T> = added
        .into_iter()
        .rev()
        .filter(|d| names.insert(name(d)))
        .collect();
    kept.reverse();
    routes.retain(|d| {
        let n = name(d);
        !names.contains(&n) && !gone.contains(&n)
    });
    routes.extend(kept);
    true
}

impl Server {
    /// Makes the changes `f` asks for at once: the routes are copied once
    /// and listeners told once per kind that changed (SUB-S7), however many
    /// routes change. Requests see the routes before or after, never
    /// between.
    pub fn change_routes<R>(&self, f: impl FnOnce(&mut RouteChanges<'_>) -> R) -> R {
        let mut changes = RouteChanges {
            server: self,
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            gone_tools: HashSet::new(),
            gone_prompts: HashSet::new(),
            gone_resources: HashSet::new(),
            gone_templates: HashSet::new(),
        };
        let out = f(&mut changes);
        self.update(|r| changes.apply(r));
        out
    }

    /// Adds (or replaces) a tool at run time and tells listeners (SUB-S7),
    /// with the guards of [`RouteChanges::add_tool`].
    pub fn add_tool(&self, tool: ToolDef) -> Result<(), BuildError> {
        self.change_routes(|c| c.add_tool(tool))
    }

    /// Removes a tool at run time and tells listeners.
    pub fn remove_tool(&self, name: &str) {
        self.change_routes(|c| c.remove_tool(name));
    }

    /// Adds (or replaces) a prompt at run time and tells listeners, with
    /// the guards of [`RouteChanges::add_tool`].
    pub fn add_prompt(&self, prompt: PromptDef) -> Result<(), BuildError> {
        self.change_routes(|c| c.add_prompt(prompt))
    }

    /// Removes a prompt at run time and tells listeners.
    pub fn remove_prompt(&self, name: &str) {
        self.change_routes(|c| c.remove_prompt(name));
    }

    /// Adds (or replaces) a resource at run time and tells listeners, with
    /// the guards of [`RouteChanges::add_tool`].
    pub fn add_resource(&self, resource: ResourceDef) -> Result<(), BuildError> {
        self.change_routes(|c| c.add_resource(resource))
    }

    /// Adds (or replaces) a resource template at run time and tells
    /// listeners, with the guards of [`RouteChanges::add_tool`].
    pub fn add_resource_template(&self, template: TemplateDef) -> Result<(), BuildError> {
        self.change_routes(|c| c.add_resource_template(template))
    }
}
