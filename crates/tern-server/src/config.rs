//! Server limits and policies, with the secure defaults of SECURITY.md.

use std::time::Duration;

use tern_proto::decode::Limits;
use tern_types::CacheScope;

/// Server limits and policies. The defaults are the secure ones of
/// SECURITY.md.
#[derive(Clone, Debug)]
pub struct Config {
    /// The most input rounds a flow may take (default 8).
    pub max_rounds: u8,
    /// The lifetime of one state (default 600 s, at most 3600 s).
    pub state_ttl: Duration,
    /// The whole flow's deadline, fixed in round 1 (default 3600 s).
    pub flow_ttl: Duration,
    /// Clock skew tolerated between instances (default 30 s).
    pub skew: Duration,
    /// Decoding limits for one message.
    pub limits: Limits,
    /// The most `inputResponses` entries read (default 64).
    pub max_input_responses: usize,
    /// The most bytes of one round's answers other than samples (default
    /// 256 KiB): forms, URL steps and roots are small.
    pub max_input_bytes: usize,
    /// The most bytes of one round's sampling answers, on top of
    /// `max_input_bytes` (default 1 MiB): a model's text can be long.
    pub max_sample_bytes: usize,
    /// Page size of the list methods (default 100).
    pub page_size: usize,
    /// `ttlMs` on cacheable results (default 0: stale at once).
    pub cache_ttl_ms: u64,
    /// `cacheScope` on cacheable results (default private, DIGEST §11 A19).
    pub cache_scope: CacheScope,
    /// How long a legacy session's server-initiated request waits for the
    /// client's answer before the call fails and the request is freed
    /// (default 600 s, as long as a modern state lives).
    pub client_answer_timeout: Duration,
    /// What 2025-11-25 sessions may hold (SECURITY.md, "Budgets").
    pub sessions: SessionLimits,
    /// How many requests may run at once (SECURITY.md, "Budgets").
    pub requests: RequestLimits,
    /// What tasks may hold (the tasks extension; SECURITY.md, "Budgets").
    pub tasks: crate::tasks::TaskLimits,
}

/// The budget of requests running at once: a listen stream, a slow tool
/// and a request waiting for its store all hold a place until they end.
#[derive(Clone, Debug)]
pub struct RequestLimits {
    /// The most one identified principal may have running (default 256);
    /// one more is refused as busy, -31003 (HTTP 429).
    pub max_running_per_principal: usize,
    /// The most running in all, the anonymous principal's included
    /// (default 4096); one more is refused the same way.
    pub max_running: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_running_per_principal: 256,
            max_running: 4096,
        }
    }
}

/// The budgets of 2025-11-25 sessions: how many one principal and the
/// whole server may hold, how long an idle one lives, and how many calls
/// one session may have running.
#[derive(Clone, Debug)]
pub struct SessionLimits {
    /// The most sessions open at once (default 1024). When the table is
    /// full, a principal's new session replaces its own longest-idle one;
    /// a principal with none idle is refused (HTTP 503).
    pub max_open: usize,
    /// The most sessions one principal may hold (default 16). Its next one
    /// replaces its longest-idle session; if every one of them has a call
    /// running, the new one is refused (HTTP 429). Without authentication
    /// every client is the one anonymous principal, whose quota is
    /// `max_open`.
    pub max_per_principal: usize,
    /// A session with no call running that has seen no message this long
    /// is closed (default 30 min); its id then gets 404, and the client
    /// opens a new one.
    pub idle: Duration,
    /// The most calls one session may have running at once, those waiting
    /// for the client's answers included (default 16). One more is refused
    /// as busy (-31003) naming the limit; a call that ends frees its place.
    pub max_calls: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_open: 1024,
            max_per_principal: 16,
            idle: Duration::from_secs(30 * 60),
            max_calls: 16,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_rounds: 8,
            state_ttl: Duration::from_secs(600),
            flow_ttl: Duration::from_secs(3600),
            skew: Duration::from_secs(30),
            limits: Limits::default(),
            max_input_responses: 64,
            max_input_bytes: 256 * 1024,
            max_sample_bytes: 1024 * 1024,
            page_size: 100,
            cache_ttl_ms: 0,
            cache_scope: CacheScope::Private,
            client_answer_timeout: Duration::from_secs(600),
            sessions: SessionLimits::default(),
            requests: RequestLimits::default(),
            tasks: crate::tasks::TaskLimits::default(),
        }
    }
}

impl Config {
    /// How long a single-use marker lives: the longest state lifetime plus
    /// skew plus a margin, a constant counted on the store's clock
    /// (SECURITY.md §3.9).
    pub(crate) fn marker_ttl(&self) -> Duration {
        self.flow_ttl.max(self.state_ttl) + self.skew + Duration::from_secs(60)
    }
}
