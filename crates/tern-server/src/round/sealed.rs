//! The sealed delivery: a round of a 2026-07-28 request travels to the
//! client inside an `input_required` result and comes back in the retry's
//! `requestState` (ARCHITECTURE.md "A call on the server", steps 4 and 6;
//! SECURITY.md §3). The state lifecycle lives here, in one place.
//!
//! A flow request comes in; [`Server::open_flow`] binds it (principal,
//! method, parameter digest), opens and verifies the `requestState` it
//! carries against that binding, the clock, the flow deadline and the round
//! ceiling, and reads `inputResponses` only alongside a verified state. The
//! handler runs with the [`AskContext`] this gives. If it needs input,
//! [`Resume::seal_next`] (as its [`Delivery`]) seals the next round with the answers carried so
//! far under the size cap. Every failure to verify is the one uniform
//! -32602; the reason goes to [`Server::refuse`], which logs and counts it.
//!
//! Single use has one consume path, [`Server::consume`], shared by the
//! [`crate::SingleUse`] extractor (at the point of the effect, after
//! authorization) and by single-use routes. A single-use route consumes the
//! state's own id as it opens, after authorization and before the handler
//! runs: that guarantee is about the state, not an effect (a replayed or
//! forked round never reaches the handler at all, so code before the effect
//! cannot run twice with other answers either), and a state issued by a
//! single-use route stays single use even if the route is later
//! re-registered without the flag (`StateBody::once`).

use std::time::Duration;

use serde_json::{Map, Value};
use tern_proto::accept::Accepted;
use tern_proto::{McpError, Principal};
use tern_seal::{Binding, Claims, ConsumeKey, Consumed, OpenPolicy, random_bytes};
use tern_types::ClientCapabilities;
use tern_types::methods::FlowMethod;

use tern_proto::finish::input_required;

use super::{Delivered, Delivery, Start, ceiling};
use crate::ask::{AskContext, Asked, InputKind};
use crate::config::Config;
use crate::outcome::Pending;
use crate::registry::RouteLimits;
use crate::server::Server;
use crate::state::{
    MAX_CONTINUATION, PAYLOAD_VERSION, StateBody, binding, method_code, params_digest,
    principal_fingerprint,
};

/// The longest a state may live, whatever the configuration says
/// (SECURITY.md §3.4).
const MAX_STATE_TTL: Duration = Duration::from_secs(3600);

/// A flow request, bound and verified: what the next state will bind to
/// and the verified state it resumes, if any.
pub(crate) struct Resume {
    method: FlowMethod,
    bind: Binding,
    pfp: [u8; 32],
    now: u64,
    ttl: Duration,
    limits: RouteLimits,
    fid: [u8; 16],
    flow_exp: u64,
    prev: Option<StateBody>,
    responses: Map<String, Value>,
}

/// What opening a flow request gave.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per request and unpacked at once; a box would allocate on every call"
)]
pub(crate) enum Opened {
    /// Run the handler.
    Run(Resume),
    /// A replay of an idempotent route's last round by the same principal:
    /// its kept result, and nothing runs (SECURITY.md §3.9).
    Replayed(Map<String, Value>),
}

/// What a consume found.
enum Use {
    First,
    Again,
}

impl Server {
    /// Step 4: binds this request, opens and verifies its state, and for a
    /// single-use route consumes the state's id.
    pub(crate) async fn open_flow(
        &self,
        a: &mut Accepted,
        method: FlowMethod,
        principal: &Principal,
        limits: RouteLimits,
    ) -> Result<Opened, McpError> {
        let cfg = self.config();
        let ceiling = ceiling(&limits, cfg);
        let ttl = limits
            .state_ttl
            .map_or(cfg.state_ttl, |t| t.min(cfg.state_ttl))
            .min(MAX_STATE_TTL);
        let responses = take_input_responses(&mut a.params, cfg)?;
        let now = self.now();
        let m = method_code(method);
        let pdig = params_digest(method, &a.params)?;
        let pfp = principal_fingerprint(principal);
        let bind = binding(&pfp, m, &pdig);
        let prev = match a.params.get("requestState") {
            None => None,
            Some(Value::String(token)) => Some(self.open_state(token, &bind, now, m, ceiling)?),
            Some(_) => return Err(self.refuse("not_a_string")),
        };
        // Each kind of answer within its share, now that the questions are
        // known; answers to no question (a first call's) are no sample.
        super::check_answer_kinds(&responses, cfg, |key| {
            prev.as_ref().is_some_and(|b| {
                b.expect
                    .iter()
                    .any(|e| e.key == key && e.kind == InputKind::Sampling.code())
            })
        })?;
        if let Some(body) = &prev
            && (limits.single_use || body.once)
            && let Some(kept) = self.consume_state(body, &pfp, limits.idempotent).await?
        {
            return Ok(Opened::Replayed(kept));
        }
        let (fid, flow_exp) = match &prev {
            Some(b) => (b.fid, b.flow_exp),
            None => (random_bytes::<16>(), now + cfg.flow_ttl.as_secs()),
        };
        Ok(Opened::Run(Resume {
            method,
            bind,
            pfp,
            now,
            ttl,
            limits,
            fid,
            flow_exp,
            prev,
            responses,
        }))
    }

    /// Opens `token` against this request's binding and checks what the
    /// envelope does not: payload version, method, flow deadline, round.
    fn open_state(
        &self,
        token: &str,
        bind: &Binding,
        now: u64,
        m: u8,
        ceiling: u8,
    ) -> Result<StateBody, McpError> {
        let policy = OpenPolicy {
            skew_secs: self.config().skew.as_secs(),
            max_ttl_secs: MAX_STATE_TTL.as_secs(),
        };
        let opened = self
            .keys()
            .open_at::<StateBody>(&self.inner.resource_id, token, bind, now, &policy)
            .map_err(|e| self.refuse(e.reason()))?;
        let body = opened.into_claims().body;
        let skew = policy.skew_secs;
        if body.v != PAYLOAD_VERSION {
            Err(self.refuse("payload_version"))
        } else if body.m != m {
            Err(self.refuse("method_mismatch"))
        } else if now > body.flow_exp + skew {
            Err(self.refuse("flow_expired"))
        } else if body.round > ceiling {
            Err(self.refuse("round_limit"))
        } else {
            Ok(body)
        }
    }

    /// The uniform answer to a state that fails verification: the reason
    /// goes to the log and a counter only (SECURITY.md §3.5, MRTR-E-A1).
    pub(crate) fn refuse(&self, reason: &'static str) -> McpError {
        tracing::info!(reason, "requestState refused");
        self.metrics().reject(reason);
        McpError::InvalidState
    }

    /// The one consume path (SECURITY.md §3.9): first use goes on, a
    /// replay is the uniform -32602, a store that is down fails closed with
    /// -32603 and nothing consumed.
    pub(crate) async fn consume(&self, key: ConsumeKey, ttl: Duration) -> Result<(), McpError> {
        match self.take(key, ttl).await? {
            Use::First => Ok(()),
            Use::Again => Err(self.refuse("already_consumed")),
        }
    }

    async fn take(&self, key: ConsumeKey, ttl: Duration) -> Result<Use, McpError> {
        let started = self.inner.clock.instant();
        let consumed = self.inner.replay.consume(key, ttl).await;
        self.metrics()
            .replay_call(self.inner.clock.instant() - started, consumed.is_ok());
        match consumed {
            Ok(Consumed::FirstUse) => Ok(Use::First),
            Ok(Consumed::AlreadyUsed) => Ok(Use::Again),
            Err(e) => {
                tracing::warn!(error = %e, "replay store unavailable; failing closed");
                self.metrics().reject("store_unavailable");
                Err(McpError::Unavailable)
            }
        }
    }

    /// Consumes the state's id. A replay is refused, unless the route keeps
    /// results and this principal's result is there, which is returned.
    async fn consume_state(
        &self,
        body: &StateBody,
        pfp: &[u8; 32],
        idempotent: bool,
    ) -> Result<Option<Map<String, Value>>, McpError> {
        let key = ConsumeKey::for_flow(&body.sid, "state");
        match self.take(key, self.config().marker_ttl()).await? {
            Use::First => Ok(None),
            Use::Again if idempotent => match self.kept_result(&body.fid, pfp).await {
                Some(r) => {
                    tracing::info!("replayed state answered with its kept result");
                    Ok(Some(r))
                }
                None => Err(self.refuse("already_consumed")),
            },
            Use::Again => Err(self.refuse("already_consumed")),
        }
    }

    async fn kept_result(&self, fid: &[u8; 16], pfp: &[u8; 32]) -> Option<Map<String, Value>> {
        let key = ConsumeKey::for_flow(fid, "result");
        let kept = self.inner.replay.get_result(key).await.ok()??;
        if kept.owner != *pfp {
            return None;
        }
        serde_json::from_slice(&kept.result).ok()
    }
}

impl Resume {
    /// The round this request answers (0 for a first call).
    pub(crate) fn round(&self) -> u8 {
        self.prev.as_ref().map_or(0, |b| b.round)
    }

    /// What the handler sealed last round, if anything.
    pub(crate) fn continuation(&self) -> Option<Vec<u8>> {
        self.prev
            .as_ref()
            .filter(|b| !b.app.is_empty())
            .map(|b| b.app.clone())
    }

    /// The answers this run may read. Answers without a verified state
    /// from the round that asked them are ignored (SECURITY.md §3.8).
    fn ask_context(&mut self, caps: ClientCapabilities) -> AskContext {
        match &self.prev {
            Some(body) => AskContext::answered(
                caps,
                body.expect.clone(),
                body.done.clone(),
                std::mem::take(&mut self.responses),
            ),
            None => AskContext::unanswered(caps),
        }
    }

    /// After a complete result: an idempotent route keeps it under the
    /// flow's key for replays of this last round (SECURITY.md §3.9).
    async fn keep(&self, server: &Server, result: &Map<String, Value>) {
        if !(self.limits.idempotent && self.prev.is_some()) {
            return;
        }
        let bytes = serde_json::to_vec(result).unwrap_or_default();
        let key = ConsumeKey::for_flow(&self.fid, "result");
        let ttl = server.config().marker_ttl();
        if let Err(e) = server
            .inner
            .replay
            .put_result(key, self.pfp, bytes, ttl)
            .await
        {
            // The effect happened; only the replay convenience is lost.
            tracing::warn!(error = %e, "could not keep the result for replays");
        }
    }

    /// How long a state sealed now lives: its lifetime, or less when the
    /// flow's deadline comes first.
    fn answer_within(&self) -> u64 {
        (self.now + self.ttl.as_secs()).min(self.flow_exp.max(self.now)) - self.now
    }

    /// Step 6: seals the next round's state: round + 1 (the round loop
    /// keeps it under the ceiling), the questions asked pinned by digest,
    /// the answers carried (a key asked again drops its old answer), the
    /// continuation, all under the size cap (SECURITY.md §3.1, §3.4).
    fn seal_next(
        &self,
        server: &Server,
        p: &Pending,
        ask: &AskContext,
    ) -> Result<String, McpError> {
        let next_round = self.round().saturating_add(1);
        let app = p
            .continuation
            .clone()
            .or_else(|| self.continuation())
            .unwrap_or_default();
        let body = StateBody {
            v: PAYLOAD_VERSION,
            sid: random_bytes::<16>(),
            fid: self.fid,
            flow_exp: self.flow_exp,
            m: method_code(self.method),
            round: next_round,
            once: self.limits.single_use || self.prev.as_ref().is_some_and(|b| b.once),
            expect: p.requests.iter().map(Asked::expect).collect(),
            done: ask.carried_except(&p.requests),
            app,
        };
        // The continuation is the handler's: past the cap it is a bug. The
        // answers are the client's: past it, the client's request is what
        // cannot go on (-32602), not the server.
        if body.app.len() > MAX_CONTINUATION {
            return Err(McpError::Internal(format!(
                "the continuation ({} bytes) exceeds the state's {MAX_CONTINUATION}-byte cap",
                body.app.len()
            )));
        }
        let carried: usize = body
            .done
            .iter()
            .map(|d| d.answer.len() + d.key.len())
            .sum::<usize>()
            + body.app.len();
        if carried > MAX_CONTINUATION {
            return Err(McpError::invalid_params(format!(
                "the answers to carry into the next round are too large: at most \
                 {MAX_CONTINUATION} bytes with the handler's continuation"
            )));
        }
        let claims = Claims {
            issued_at: self.now,
            expires_at: self.now + self.answer_within(),
            binding: self.bind,
            body,
        };
        let token = server
            .keys()
            .seal_at(&server.inner.resource_id, &claims)
            .map_err(|e| McpError::Internal(format!("cannot seal state: {e}")))?;
        server.metrics().state_sealed(token.len());
        Ok(token)
    }
}

impl Delivery for Resume {
    const RERUNS: bool = false;

    fn start(&mut self, caps: &ClientCapabilities) -> Start {
        Start {
            round: self.round(),
            flow_id: self.fid,
            continuation: self.continuation(),
            answers: self.ask_context(caps.clone()),
        }
    }

    /// The round goes out sealed: the request ends with `input_required`,
    /// its questions, the state and how long it lives.
    async fn deliver(
        &mut self,
        server: &Server,
        round: Pending,
        answers: &AskContext,
    ) -> Result<Delivered, McpError> {
        let token = self.seal_next(server, &round, answers)?;
        let requests: Map<String, Value> = round
            .requests
            .into_iter()
            .map(|r| (r.key, r.request))
            .collect();
        let requests = (!requests.is_empty()).then_some(requests);
        let mut r = input_required(self.method, requests, Some(token), Some(&server.inner.info))?;
        if let Some(Value::Object(meta)) = r.get_mut("_meta") {
            meta.insert(
                tern_types::meta_keys::STATE_TTL_SECS.into(),
                Value::from(self.answer_within()),
            );
        }
        Ok(Delivered::Reply(r))
    }

    async fn completed(&mut self, server: &Server, result: &Map<String, Value>) {
        self.keep(server, result).await;
    }
}

/// SECURITY.md §3.8: `inputResponses` must be an object, bounded in entries
/// and bytes; MRTR-E-A2: anything else is -32602. It is taken out of the
/// params, so no handler can read an answer that was not verified.
fn take_input_responses(
    params: &mut Map<String, Value>,
    cfg: &Config,
) -> Result<Map<String, Value>, McpError> {
    match params.remove("inputResponses") {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => {
            super::check_input_responses(&m, cfg)?;
            Ok(m)
        }
        Some(_) => Err(McpError::invalid_params("inputResponses must be an object")),
    }
}
