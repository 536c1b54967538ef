//! One upstream server: how to reach it, and the client while it lives.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tern_client::{Client, ClientBuilder, EraPolicy};
use tern_server::{RouteChanges, relay};

use crate::error::{Gone, unavailable};
use crate::parked::Relaying;

/// What a [`Connect`] returns.
pub type ConnectFuture = Pin<Box<dyn Future<Output = Result<ClientBuilder, String>> + Send>>;

/// Makes a client builder for an upstream: spawns its child process or
/// opens its HTTP transport with the upstream's headers or sign-in. The
/// proxy sets the era policy, the input provider and the limits.
pub type Connect = Arc<dyn Fn() -> ConnectFuture + Send + Sync>;

/// A client and the generation it belongs to, so that a failure seen on
/// an old client does not drop a newer one.
#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) client: Client,
    generation: u64,
}

pub(crate) struct Upstream {
    pub(crate) name: String,
    /// Whether names carry the `<name>__` prefix (more than one upstream).
    pub(crate) prefixed: bool,
    connect: Connect,
    /// How long one request waits for the upstream's next word.
    request_timeout: std::time::Duration,
    live: tokio::sync::Mutex<Option<Live>>,
    generation: Mutex<u64>,
    /// Set when the lists must be read again (never read, or the upstream
    /// was lost and comes back as a new process or session).
    stale: AtomicBool,
    /// What was listed last time, by its downstream name or URI.
    listed: Mutex<Listed>,
}

/// The downstream names of the tools and prompts, and the URIs of the
/// resources and templates, one sync of an upstream offered.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub(crate) tools: BTreeSet<String>,
    pub(crate) prompts: BTreeSet<String>,
    pub(crate) resources: BTreeSet<String>,
    pub(crate) templates: BTreeSet<String>,
}

impl Upstream {
    pub(crate) fn new(
        name: String,
        connect: Connect,
        prefixed: bool,
        request_timeout: std::time::Duration,
    ) -> Self {
        Upstream {
            name,
            prefixed,
            connect,
            request_timeout,
            live: tokio::sync::Mutex::new(None),
            generation: Mutex::new(0),
            stale: AtomicBool::new(true),
            listed: Mutex::default(),
        }
    }

    /// The name a tool or prompt of this upstream has downstream.
    pub(crate) fn outer_name(&self, inner: &str) -> String {
        if self.prefixed {
            format!("{}__{inner}", self.name)
        } else {
            inner.to_owned()
        }
    }

    pub(crate) fn needs_sync(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// Records what was listed now, removing what was listed before and
    /// is gone: a withdrawn route is never served again, and what one
    /// upstream's syncs leave behind does not pile up.
    pub(crate) fn replace_listed(&self, routes: &mut RouteChanges<'_>, now: Listed) {
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        for gone in listed.tools.difference(&now.tools) {
            routes.remove_tool(gone);
        }
        for gone in listed.prompts.difference(&now.prompts) {
            routes.remove_prompt(gone);
        }
        for gone in listed.resources.difference(&now.resources) {
            relay::remove_owned_resource(routes, &self.name, gone);
        }
        for gone in listed.templates.difference(&now.templates) {
            relay::remove_owned_template(routes, &self.name, gone);
        }
        *listed = now;
    }

    pub(crate) fn synced(&self) {
        self.stale.store(false, Ordering::Relaxed);
    }

    /// The live client, connecting (and settling the era) first if there
    /// is none.
    pub(crate) async fn client(&self) -> Result<Live, tern_proto::McpError> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.as_ref() {
            return Ok(l.clone());
        }
        let builder = (self.connect)().await.map_err(|e| {
            tracing::warn!(upstream = %self.name, error = %e, "cannot reach the upstream");
            unavailable(&self.name, Gone::Unreachable)
        })?;
        let client = builder
            .era(EraPolicy::Auto)
            .provider(Relaying)
            .max_rounds(u32::from(u8::MAX))
            .request_timeout(self.request_timeout)
            .build();
        // Boxed: connecting (the era probe, a session's initialize) is rare
        // and large, and every call through the proxy awaits this future.
        Box::pin(client.connect()).await.map_err(|e| {
            tracing::warn!(upstream = %self.name, error = %e, "cannot connect to the upstream");
            unavailable(&self.name, Gone::Unreachable)
        })?;
        let generation = {
            let mut g = self
                .generation
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *g += 1;
            *g
        };
        tracing::info!(upstream = %self.name, era = ?client.era(), "upstream connected");
        let l = Live { client, generation };
        *live = Some(l.clone());
        Ok(l)
    }

    /// Forgets `lost` after a transport failure: the next call connects
    /// again (a new child process, a new session) and the lists are read
    /// again.
    pub(crate) async fn lost(&self, lost: &Live) {
        let mut live = self.live.lock().await;
        if live
            .as_ref()
            .is_some_and(|l| l.generation == lost.generation)
        {
            tracing::warn!(upstream = %self.name, "upstream lost; it is reached again on the next call");
            if let Some(old) = live.take() {
                // Ends a legacy session the server may still hold; a child
                // process ends when its last client is dropped.
                tokio::spawn(async move {
                    let _ = old.client.close().await;
                });
            }
            self.stale.store(true, Ordering::Relaxed);
        }
    }
}
