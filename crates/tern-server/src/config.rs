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
    /// The most bytes of `inputResponses` accepted (default 256 KiB plus
    /// 1 MiB for sampling answers).
    pub max_input_bytes: usize,
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
            max_input_bytes: 256 * 1024 + 1024 * 1024,
            page_size: 100,
            cache_ttl_ms: 0,
            cache_scope: CacheScope::Private,
            client_answer_timeout: Duration::from_secs(600),
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
