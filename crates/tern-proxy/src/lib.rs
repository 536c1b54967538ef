//! A proxy in front of MCP servers of either era, for clients of either
//! era, built on `tern-server` (downstream) and `tern-client` (upstream).
//!
//! - **A 2025-11-25 client, a 2026-07-28 server.** Each `input_required`
//!   round of the upstream goes to the client as server-initiated requests
//!   (the downstream legacy bridge of `tern-server`, behind the same
//!   capability gate), and its answers go back upstream as
//!   `inputResponses` with the exact `requestState`, on a new request,
//!   until the upstream completes.
//! - **A 2026-07-28 client, a 2025-11-25 server.** The proxy holds the
//!   upstream session, opened declaring every kind it can bridge. A
//!   request the upstream sends during a call becomes an `input_required`
//!   result; the pending upstream call waits in the proxy (bounded in
//!   number, with a lifetime after which it is cancelled) and the retry's
//!   answer is sent upstream as the response to that request. A retry
//!   that reaches a proxy without the pending call gets -32602 with
//!   `restart`.
//! - **A gateway.** Several upstreams behind one endpoint: with more than
//!   one, tools and prompts are named `<server>__<name>`; resource URIs are
//!   kept and each listed resource says its server in `_meta`.
//!
//! Whatever the upstream's state, the client sees only the proxy's: the
//! upstream's exact `requestState`, its questions and the upstream it
//! belongs to travel inside the proxy's sealed state, bound to the
//! principal, the method and the parameters digest (SECURITY.md §3), so a
//! retry goes back to the upstream that asked and a client can neither
//! redirect nor read nor alter it. A round too large to seal (over
//! [`MAX_SEALED_ROUND`] bytes: a large form schema, a large upstream state)
//! is held in the proxy instead, bound to the principal, and only its
//! random id and digest are sealed. The answers are pinned to the
//! questions by digest either way (MRTR-S8, SECURITY.md §3.8). The proxy's
//! own round ceiling and the budgets of [`ProxyOptions`] apply at the edge.

mod catalog;
mod error;
mod parked;
mod relay;
mod relayed;
mod tasks;
mod upstream;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tern_server::{BuildError, Server, ServerBuilder};

pub use catalog::{MAX_LISTED, MAX_LISTED_BYTES, UPSTREAM_META};
pub use error::{UPSTREAM_ERROR, UPSTREAM_UNAVAILABLE};
pub use relayed::{MAX_RELAYED, MAX_RELAYED_BYTES};
pub use upstream::{Connect, ConnectFuture};

use crate::parked::Parked;
use crate::upstream::Upstream;

/// How the proxy bounds what it holds for its clients (its budgets).
///
/// Between two rounds of a call the proxy may hold something for the
/// caller: a 2025-11-25 upstream's call waiting for an answer, or a
/// 2026-07-28 upstream's round too large to seal into the proxy's state
/// (over [`MAX_SEALED_ROUND`] bytes). Each is a *pending call*: it counts
/// against the caller's share and the total, lives for `pending_ttl`, and
/// is dropped (a call so cancelled upstream) when that ends or when the
/// retry comes. At a limit the call is refused as busy
/// ([`ErrorCode::BUSY`](tern_types::ErrorCode::BUSY), -31003) and nothing
/// is held.
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    /// How long a pending call is kept for the client's retry before it is
    /// dropped (default 600 s, a state's lifetime), on the server's clock
    /// in whole seconds (a fraction counts as a second).
    pub pending_ttl: Duration,
    /// The most pending calls held at once, for all callers together
    /// (default 1024).
    pub max_pending: usize,
    /// The most pending calls one principal may hold (default `None`: a
    /// quarter of `max_pending`, at least 1), so that one caller cannot
    /// fill the pool for everyone. Without authentication every caller is
    /// the one anonymous principal, bounded by `max_pending` alone.
    pub max_pending_per_principal: Option<usize>,
    /// The most bytes of one upstream round the proxy holds (its state and
    /// its questions, default 256 KiB); a larger round fails the call.
    pub max_round_bytes: usize,
    /// How long the proxy waits for an upstream's next step: its result,
    /// its next request, or any one answer (default 300 s).
    pub upstream_timeout: Duration,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            pending_ttl: Duration::from_secs(600),
            max_pending: 1024,
            max_pending_per_principal: None,
            max_round_bytes: 256 * 1024,
            upstream_timeout: Duration::from_secs(300),
        }
    }
}

impl ProxyOptions {
    /// The share of pending calls one principal may hold.
    pub fn per_principal(&self) -> usize {
        self.max_pending_per_principal
            .unwrap_or(self.max_pending / 4)
            .max(1)
    }
}

/// The largest upstream round the proxy seals into its own state (the
/// upstream's state and questions, encoded): the server's continuation cap
/// is 4 KiB (SECURITY.md §3.4), less room for the framework's own. A
/// larger round is held in the proxy as a pending call, so a retry must
/// reach the same proxy process.
pub const MAX_SEALED_ROUND: usize = relay::MAX_CONT;

/// How often pending calls past their lifetime are dropped, and each
/// upstream that was lost or never listed is listed again.
const MAINTAIN_EVERY: Duration = Duration::from_secs(2);

/// Runs `work` every `period`, the next run a period after the last one
/// ended (a run that took long is not made up for by a burst).
async fn every<F: Future<Output = ()>>(period: Duration, mut work: impl FnMut() -> F) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        work().await;
    }
}

/// What the handlers of every upstream share.
pub(crate) struct Shared {
    pub(crate) options: ProxyOptions,
    pub(crate) parked: Parked,
    /// The proxy server's round ceiling: nothing is held for a round the
    /// server will refuse to issue.
    pub(crate) max_rounds: u8,
    /// Upstream notifications dropped because a client did not read its
    /// call's stream (see [`MAX_RELAYED`]).
    pub(crate) notifications_dropped: Arc<AtomicU64>,
}

/// Builds a [`Proxy`].
pub struct ProxyBuilder {
    server: ServerBuilder,
    upstreams: Vec<(String, Connect)>,
    options: ProxyOptions,
}

impl ProxyBuilder {
    /// Adds an upstream under `name` (the prefix of its tools and prompts
    /// when there are several). `connect` is called on first use and again
    /// after the upstream was lost (a child that exited, a session the
    /// server forgot).
    #[must_use]
    pub fn upstream(mut self, name: &str, connect: Connect) -> Self {
        self.upstreams.push((name.to_owned(), connect));
        self
    }

    /// Sets the limits of [`ProxyOptions`].
    #[must_use]
    pub fn options(mut self, options: ProxyOptions) -> Self {
        self.options = options;
        self
    }

    /// Builds the proxy. Upstream names must be distinct, non-empty and of
    /// tool-name characters (they prefix names).
    pub fn build(self) -> Result<Proxy, BuildError> {
        let mut names: Vec<&str> = Vec::new();
        for (name, _) in &self.upstreams {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !valid {
                return Err(BuildError::new(format!(
                    "upstream name {name:?}: use letters, digits, '_', '-' and '.'"
                )));
            }
            if names.contains(&name.as_str()) {
                return Err(BuildError::new(format!("upstream {name:?} is named twice")));
            }
            names.push(name);
        }
        if self.upstreams.is_empty() {
            return Err(BuildError::new("a proxy needs at least one upstream"));
        }
        let o = &self.options;
        if o.max_pending == 0 || o.max_round_bytes == 0 || o.pending_ttl.is_zero() {
            return Err(BuildError::new(
                "the pending-call limits, lifetime and round size must be above 0",
            ));
        }
        if o.max_pending_per_principal
            .is_some_and(|n| n == 0 || n > o.max_pending)
        {
            return Err(BuildError::new(
                "the pending calls per principal must be between 1 and the total",
            ));
        }
        let prefixed = self.upstreams.len() > 1;
        let timeout = self.options.upstream_timeout;
        let server = self.server.build()?;
        let shared = Arc::new(Shared {
            parked: Parked::new(
                self.options.max_pending,
                self.options.per_principal(),
                self.options.pending_ttl,
                server.clock(),
            ),
            max_rounds: server.config().max_rounds,
            notifications_dropped: Arc::default(),
            options: self.options,
        });
        let upstreams = self
            .upstreams
            .into_iter()
            .map(|(name, connect)| Arc::new(Upstream::new(name, connect, prefixed, timeout)))
            .collect();
        Ok(Proxy {
            server,
            upstreams,
            shared,
        })
    }
}

/// A proxy: a [`Server`] whose tools, prompts and resources are its
/// upstreams'. Serve [`Proxy::server`] on any transport.
#[derive(Clone)]
pub struct Proxy {
    server: Server,
    upstreams: Vec<Arc<Upstream>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.upstreams.iter().map(|u| u.name.as_str()).collect();
        f.debug_struct("Proxy")
            .field("upstreams", &names)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy serving through `server` (its keys, limits and replay store
    /// are the proxy's own).
    pub fn builder(server: ServerBuilder) -> ProxyBuilder {
        ProxyBuilder {
            server,
            upstreams: Vec::new(),
            options: ProxyOptions::default(),
        }
    }

    /// The server to hand to a transport.
    pub fn server(&self) -> Server {
        self.server.clone()
    }

    /// Reads every upstream's tools, prompts, resources and templates into
    /// the server's lists, all upstreams at once: one that is slow to list
    /// (up to `upstream_timeout` a page) holds up no other. Returns the
    /// upstreams that could not be read, in their configured order, with
    /// why; they are tried again by [`Proxy::maintain`].
    pub async fn sync(&self) -> Vec<(String, String)> {
        let syncs = self.upstreams.iter().map(|up| async move {
            let e = catalog::sync(&self.server, up, &self.shared).await.err()?;
            tracing::warn!(upstream = %up.name, error = %e, "cannot list the upstream's tools, prompts and resources");
            Some((up.name.clone(), e))
        });
        futures_util::future::join_all(syncs)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Runs forever: cancels pending calls past their lifetime, and lists
    /// again an upstream that was lost or never listed. Spawn it once.
    pub async fn maintain(self) {
        // Each on a task of its own: one upstream's sync may wait
        // `upstream_timeout` per list, and neither the sweep (which frees
        // the slots of `max_pending`) nor another upstream's sync waits for
        // it. Dropping this future aborts them all.
        let mut work = tokio::task::JoinSet::new();
        let shared = self.shared.clone();
        work.spawn(every(MAINTAIN_EVERY, move || {
            shared.parked.sweep();
            std::future::ready(())
        }));
        for up in &self.upstreams {
            let (server, up, shared) = (self.server.clone(), up.clone(), self.shared.clone());
            work.spawn(every(MAINTAIN_EVERY, move || {
                let (server, up, shared) = (server.clone(), up.clone(), shared.clone());
                async move {
                    if up.needs_sync()
                        && let Err(e) = catalog::sync(&server, &up, &shared).await
                    {
                        tracing::debug!(upstream = %up.name, error = %e, "the upstream is still unreachable");
                    }
                }
            }));
        }
        while let Some(ended) = work.join_next().await {
            if let Err(e) = ended {
                tracing::error!(error = %e, "a maintenance task of the proxy ended");
            }
        }
    }

    /// How many pending calls wait for a client's retry.
    pub fn pending_calls(&self) -> usize {
        self.shared.parked.len()
    }

    /// How many of them `principal` holds.
    pub fn pending_calls_of(&self, principal: &tern_proto::Principal) -> usize {
        self.shared.parked.held_by(principal)
    }

    /// How many upstream progress and log notifications were dropped,
    /// since the proxy was built, because a client did not read its call's
    /// stream while [`MAX_RELAYED`] of them (or [`MAX_RELAYED_BYTES`])
    /// waited for it.
    pub fn notifications_dropped(&self) -> u64 {
        self.shared.notifications_dropped.load(Ordering::Relaxed)
    }
}
