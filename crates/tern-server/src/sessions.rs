//! The table of 2025-11-25 sessions a transport keeps by id (HTTP's
//! `Mcp-Session-Id`), with the budgets of [`SessionLimits`]: a quota per
//! principal, a cap on the whole table, and an idle timeout, all counted on
//! the server's clock.
//!
//! Whoever asks for one more session pays for it with its own: a principal
//! at its quota, or at a full table, loses its longest-idle session (one
//! with no call running) to the new one, and is refused only when every
//! session it holds is busy. So a client that opens sessions in a loop
//! evicts itself, never another principal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tern_proto::{McpError, Principal};

use crate::config::SessionLimits;
use crate::legacy::Session;
use crate::server::Server;

/// Why a new session was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionRefused {
    /// The principal holds its quota of sessions, each with a call
    /// running (-31003, HTTP 429).
    PrincipalQuota,
    /// The table is full and the principal holds no idle session to give
    /// up (-31003, HTTP 503).
    Full,
}

impl SessionRefused {
    /// The HTTP status of the refusal: the busy refusal's, except that a
    /// full table is the whole server's lack of room (503), not this
    /// client's excess.
    pub fn http_status(self) -> u16 {
        match self {
            SessionRefused::PrincipalQuota => self.error().http_status(),
            SessionRefused::Full => 503,
        }
    }

    /// The busy refusal sent to the peer (-31003, `data.limit` naming the
    /// budget): the session was not opened, and a later try may succeed.
    pub fn error(self) -> McpError {
        let retry_after = match self {
            // Its own sessions' calls end when it ends them.
            SessionRefused::PrincipalQuota => None,
            SessionRefused::Full => Some(crate::RETRY_SHORTLY),
        };
        McpError::busy(self.limit(), self.message(), retry_after)
    }

    /// The budget's name in metrics (`tern_limit_reached_total`) and in
    /// the refusal's `data.limit`.
    pub fn limit(self) -> &'static str {
        match self {
            SessionRefused::PrincipalQuota => "sessions_per_principal",
            SessionRefused::Full => "sessions",
        }
    }

    /// One sentence for the peer.
    pub fn message(self) -> &'static str {
        match self {
            SessionRefused::PrincipalQuota => {
                "too many open sessions for this client, each with a call running; end one first"
            }
            SessionRefused::Full => "too many open sessions; try again later",
        }
    }
}

/// Sessions by id, each with the principal that opened it and whatever the
/// transport keeps beside it (`T`: its streams, for HTTP). Dropping an
/// entry drops its `T`; a session evicted or timed out is closed first
/// ([`Session::close`]), so its calls stop.
pub struct SessionTable<T> {
    server: Server,
    entries: Mutex<HashMap<String, Entry<T>>>,
}

struct Entry<T> {
    session: Session,
    owner: Principal,
    extra: Arc<T>,
}

impl<T> std::fmt::Debug for SessionTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTable")
            .field("open", &self.len())
            .finish_non_exhaustive()
    }
}

impl<T> SessionTable<T> {
    /// An empty table under `server`'s [`SessionLimits`], clock and metrics.
    pub fn new(server: &Server) -> Self {
        SessionTable {
            server: server.clone(),
            entries: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry<T>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn limits(&self) -> &SessionLimits {
        &self.server.config().sessions
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Whether `session` has been idle past the timeout: no call running
    /// and no message for [`SessionLimits::idle`].
    fn expired(&self, session: &Session, now: u64) -> bool {
        session.calls_running() == 0
            && now.saturating_sub(session.last_active()) >= self.limits().idle.as_secs()
    }

    /// Keeps `session`, opened by `owner`, under a fresh unguessable id,
    /// making room within the budgets first; returns the id.
    pub fn open(
        &self,
        session: Session,
        owner: Principal,
        extra: T,
    ) -> Result<(String, Arc<T>), SessionRefused> {
        let now = self.server.now();
        let limits = self.limits().clone();
        let mut all = self.lock();
        let mut dropped = Vec::new();
        all.retain(|_, e| {
            let keep = !self.expired(&e.session, now);
            if !keep {
                dropped.push(("idle", e.session.clone()));
            }
            keep
        });
        // Without authentication everyone is one principal: the table is
        // its quota.
        let quota = match owner {
            Principal::Anonymous => usize::MAX,
            _ => limits.max_per_principal,
        };
        let held = all.values().filter(|e| e.owner == owner).count();
        let need = if held >= quota {
            Some(SessionRefused::PrincipalQuota)
        } else if all.len() >= limits.max_open {
            Some(SessionRefused::Full)
        } else {
            None
        };
        let result = match need {
            None => Ok(()),
            Some(refusal) => match victim(&all, &owner) {
                Some(victim) => {
                    if let Some(e) = all.remove(&victim) {
                        dropped.push(("evicted", e.session));
                    }
                    self.server.metrics().limit_reached(refusal.limit());
                    Ok(())
                }
                None => Err(refusal),
            },
        };
        let opened = result.map(|()| {
            let id = tern_seal::hex(&self.server.new_connection_id());
            let extra = Arc::new(extra);
            all.insert(
                id.clone(),
                Entry {
                    session,
                    owner,
                    extra: extra.clone(),
                },
            );
            (id, extra)
        });
        self.server.metrics().set_sessions(all.len());
        drop(all);
        self.closed(dropped);
        if let Err(refusal) = opened {
            self.server.metrics().limit_reached(refusal.limit());
        }
        opened
    }

    /// The session `id` names, if it is live and `principal` opened it (a
    /// session is never shown to another principal: it gets the same
    /// answer as an unknown id).
    pub fn find(&self, id: &str, principal: &Principal) -> Option<(Session, Arc<T>)> {
        let now = self.server.now();
        let mut all = self.lock();
        let entry = all.get(id)?;
        if self.expired(&entry.session, now) {
            let e = all.remove(id)?;
            self.server.metrics().set_sessions(all.len());
            drop(all);
            self.closed(vec![("idle", e.session)]);
            return None;
        }
        if entry.owner != *principal {
            return None;
        }
        Some((entry.session.clone(), entry.extra.clone()))
    }

    /// Ends the session `id` if `principal` opened it (`DELETE`); false
    /// when there is no such session.
    pub fn close(&self, id: &str, principal: &Principal) -> bool {
        let mut all = self.lock();
        if all.get(id).is_none_or(|e| e.owner != *principal) {
            return false;
        }
        let removed = all.remove(id);
        self.server.metrics().set_sessions(all.len());
        drop(all);
        if let Some(e) = removed {
            self.closed(vec![("deleted", e.session)]);
        }
        true
    }

    /// Closes sessions taken out of the table, outside its lock: their
    /// calls stop and their transport state is dropped with the entry.
    fn closed(&self, sessions: Vec<(&'static str, Session)>) {
        for (reason, session) in sessions {
            session.close();
            self.server.metrics().session_closed(reason);
            tracing::info!(reason, "2025-11-25 session closed");
        }
    }
}

/// The session `owner` gives up to make room for a new one: its
/// longest-idle session with no call running. An identified principal
/// whose sessions are all busy is refused instead (its own calls are not
/// ended behind its back). Without authentication every client is the one
/// anonymous principal, and none may hold the table against the others:
/// when all are busy, the longest-idle of them goes, its calls ended as by
/// `DELETE`.
fn victim<T>(all: &HashMap<String, Entry<T>>, owner: &Principal) -> Option<String> {
    let longest_idle = |busy_too: bool| {
        all.iter()
            .filter(|(_, e)| e.owner == *owner && (busy_too || e.session.calls_running() == 0))
            .min_by_key(|(_, e)| e.session.recency())
            .map(|(id, _)| id.clone())
    };
    longest_idle(false).or_else(|| {
        if *owner == Principal::Anonymous {
            longest_idle(true)
        } else {
            None
        }
    })
}
