//! Building a [`Server`]: routes, keys, the replay store and the startup
//! guards of SECURITY.md §3.9, checked once over every route.

use std::any::Any;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tern_proto::Principal;
use tern_proto::accept::Accepted;
use tern_seal::{Deployment, KeyRing, MemoryReplayStore, ReplayStore, check_deployment};
use tern_types::Implementation;
use tokio::sync::broadcast;

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::handler::{Handler, erase};
use crate::metrics::Metrics;
use crate::registry::{PromptDef, Registry, ResourceDef, TemplateDef, ToolDef};
use crate::server::{Authorize, Inner, Server};

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    config: Config,
    keys: Option<KeyRing>,
    resource_id: Option<String>,
    clock: Arc<dyn Clock>,
    authorize: Option<Authorize>,
    app_state: crate::server::AppState,
    replay: Option<Arc<dyn ReplayStore>>,
    task_store: Option<Arc<dyn tern_seal::TaskStore>>,
    instances: u32,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// A server configuration that cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid server configuration: {0}")]
pub struct BuildError(String);

impl BuildError {
    /// An error with this explanation (for layers built on the server,
    /// such as a proxy).
    pub fn new(why: impl Into<String>) -> Self {
        BuildError(why.into())
    }
}

impl Server {
    /// Starts building a server that names itself `name` `version` in every
    /// result's `_meta` (META-S12).
    pub fn builder(name: &str, version: &str) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            registry: Registry::default(),
            config: Config::default(),
            keys: None,
            resource_id: None,
            clock: Arc::new(SystemClock),
            authorize: None,
            app_state: crate::server::AppState::new(),
            replay: None,
            task_store: None,
            instances: 1,
        }
    }
}

impl ServerBuilder {
    // Every kind of route registers the same two ways: `KIND(name, text,
    // handler)` for the plain case, `KIND_def(def)` for one described in
    // full (arguments, annotations, single use, tasks, ...). The run-time
    // `Server::add_*` take the same definitions.

    /// Registers a tool with a name, a description and a handler; its
    /// input schema comes from the handler's `Args<T>`.
    #[must_use]
    pub fn tool<H: Handler<A>, A: 'static>(
        self,
        name: &str,
        description: &str,
        handler: H,
    ) -> Self {
        self.tool_def(ToolDef::new(name, description, handler))
    }

    /// Registers a fully described tool (replacing one of the same name).
    #[must_use]
    pub fn tool_def(mut self, def: ToolDef) -> Self {
        self.registry.add_tool(def);
        self
    }

    /// Registers a prompt with a name, a description and a handler; its
    /// arguments come from the handler's `Args<T>`.
    #[must_use]
    pub fn prompt<H: Handler<A>, A: 'static>(
        self,
        name: &str,
        description: &str,
        handler: H,
    ) -> Self {
        self.prompt_def(PromptDef::new(name, description, handler))
    }

    /// Registers a fully described prompt (replacing one of the same name).
    #[must_use]
    pub fn prompt_def(mut self, def: PromptDef) -> Self {
        self.registry.add_prompt(def);
        self
    }

    /// Registers a resource with its URI, a name and a handler.
    #[must_use]
    pub fn resource<H: Handler<A>, A: 'static>(self, uri: &str, name: &str, handler: H) -> Self {
        self.resource_def(ResourceDef::new(uri, name, handler))
    }

    /// Registers a fully described resource (replacing one at the same URI).
    #[must_use]
    pub fn resource_def(mut self, def: ResourceDef) -> Self {
        self.registry.add_resource(def);
        self
    }

    /// Registers a resource template (RFC 6570 level 1) with a name and a
    /// handler.
    #[must_use]
    pub fn resource_template<H: Handler<A>, A: 'static>(
        self,
        uri_template: &str,
        name: &str,
        handler: H,
    ) -> Self {
        self.template_def(TemplateDef::new(uri_template, name, handler))
    }

    /// Registers a fully described resource template.
    #[must_use]
    pub fn template_def(mut self, def: TemplateDef) -> Self {
        self.registry.add_template(def);
        self
    }

    /// Registers the `completion/complete` handler.
    #[must_use]
    pub fn completion<H: Handler<A>, A: 'static>(mut self, handler: H) -> Self {
        self.registry.completion = Some(erase(handler));
        self
    }

    /// Sets the instructions `server/discover` returns.
    #[must_use]
    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.to_owned());
        self
    }

    /// Sets the configuration.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Seals states under `keys`. Without it the server makes an ephemeral
    /// key ring: states die with the process.
    #[must_use]
    pub fn keys(mut self, keys: KeyRing) -> Self {
        self.keys = Some(keys);
        self
    }

    /// The resource id bound into every state's AAD (SECURITY.md §3.1): the
    /// server's canonical URI, or a deployment id. Instances that share keys
    /// and this id can finish each other's flows.
    #[must_use]
    pub fn resource_id(mut self, id: &str) -> Self {
        self.resource_id = Some(id.to_owned());
        self
    }

    /// Uses `clock` instead of the system clock (tests).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Installs the authorization hook, run on every request and every
    /// round with the current principal (SECURITY.md §3.7). A refusal is
    /// an [`Error`](crate::Error), usually [`Error::application`](crate::Error::application)
    /// with the server's own code.
    #[must_use]
    pub fn authorize(
        mut self,
        f: impl Fn(&Principal, &Accepted) -> Result<(), crate::Error> + Send + Sync + 'static,
    ) -> Self {
        self.authorize = Some(Arc::new(f));
        self
    }

    /// Application state handed to handlers through [`crate::State`]: one
    /// value per type (a second value of a type replaces the first), as
    /// many types as handlers need.
    #[must_use]
    pub fn state<S: Any + Send + Sync>(mut self, state: S) -> Self {
        self.app_state
            .insert(std::any::TypeId::of::<S>(), Arc::new(state));
        self
    }

    /// The replay store single-use effects consume their keys in (default:
    /// a bounded in-memory store, fine for one process with an ephemeral
    /// key).
    #[must_use]
    pub fn replay_store(mut self, store: Arc<dyn ReplayStore>) -> Self {
        self.replay = Some(store);
        self
    }

    /// Where tasks are kept so that any instance answers for them (default:
    /// none, each instance holds its own). With more than one
    /// [instance](Self::instances) and a task tool, it must be shared: a
    /// client's `tasks/get` may reach any instance.
    #[must_use]
    pub fn task_store(mut self, store: Arc<dyn tern_seal::TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Declares how many instances serve this deployment. With more than
    /// one, the replay store must be shared (SECURITY.md §3.9), and so must
    /// the task store when a tool runs as a task.
    #[must_use]
    pub fn instances(mut self, n: u32) -> Self {
        self.instances = n;
        self
    }

    /// Builds the server, refusing the combinations of SECURITY.md §3.9
    /// that would let a replay through, whatever kind of route (tool,
    /// prompt, resource, template) is single use.
    pub fn build(self) -> Result<Server, BuildError> {
        let store: Arc<dyn ReplayStore> = self
            .replay
            .unwrap_or_else(|| Arc::new(MemoryReplayStore::new()));
        let limits = self.registry.limits();
        if limits.iter().any(|l| l.idempotent) && !store.keeps_results() {
            return Err(BuildError::new(
                "idempotent routes need a replay store that keeps results",
            ));
        }
        let deployment = Deployment {
            persistent_keys: self.keys.is_some(),
            single_use_routes: limits.iter().any(|l| l.single_use),
            instances: self.instances,
            store: store.durability(),
            marker_ttl: self.config.marker_ttl(),
            max_state_ttl: self.config.state_ttl,
            skew: self.config.skew,
        };
        check_deployment(&deployment).map_err(|e| BuildError::new(e.to_string()))?;
        if self.instances > 1
            && self.registry.has_tasks()
            && self
                .task_store
                .as_ref()
                .is_none_or(|s| s.durability() != tern_seal::Durability::Shared)
        {
            return Err(BuildError::new(
                "a task tool on several instances needs a shared task store: a client's tasks/get may reach any instance",
            ));
        }
        if self.config.tasks.lease.is_zero() {
            return Err(BuildError::new("the task lease must be at least 1 s"));
        }
        if let Some(missing) = self.registry.missing_state(&self.app_state) {
            return Err(BuildError::new(missing));
        }
        if self.config.max_rounds == 0 {
            return Err(BuildError::new("max_rounds must be at least 1"));
        }
        let (r, s) = (&self.config.requests, &self.config.sessions);
        if [
            r.max_running,
            r.max_running_per_principal,
            s.max_open,
            s.max_per_principal,
            s.max_calls,
        ]
        .contains(&0)
            || s.idle.is_zero()
        {
            return Err(BuildError::new(
                "every request and session budget must be at least 1",
            ));
        }
        if self.config.state_ttl > Duration::from_secs(3600) || self.config.state_ttl.is_zero() {
            return Err(BuildError::new("state_ttl must be between 1 s and 3600 s"));
        }
        let keys = match self.keys {
            Some(k) => k,
            None => {
                KeyRing::ephemeral().map_err(|e| BuildError(format!("cannot make a key: {e}")))?
            }
        };
        let resource_id = self.resource_id.unwrap_or_else(|| {
            // A random deployment id: states from any other process never
            // open here.
            tern_seal::random_id()
        });
        let (changes, _) = broadcast::channel(64);
        let info = serde_json::to_value(&self.info).map_err(|e| BuildError(e.to_string()))?;
        Ok(Server {
            inner: Arc::new(Inner {
                info,
                instructions: self.instructions,
                registry: RwLock::new(Arc::new(self.registry)),
                changes,
                tasks: crate::tasks::Tasks::new(
                    self.config.tasks.clone(),
                    self.clock.clone(),
                    self.task_store,
                ),
                config: self.config,
                keys: RwLock::new(Arc::new(keys)),
                resource_id,
                clock: self.clock,
                authorize: self.authorize,
                app_state: self.app_state,
                metrics: Metrics::default(),
                running: crate::running::Running::default(),
                replay: store,
                supported: tern_proto::SUPPORTED_VERSIONS
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
                deployment,
            }),
        })
    }
}
