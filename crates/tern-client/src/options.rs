//! Per-call options and the events a call's observer sees.

use std::sync::Arc;
use std::time::Duration;

use tern_types::{ClientCapabilities, InputRequests, InputResponses, Notification};

use crate::CancelToken;

/// Called with every notification that arrives for a call (progress, log
/// messages) before its response.
pub type NotificationHandler = Arc<dyn Fn(&Notification) + Send + Sync>;

/// Sees every round of a multi round-trip call as it happens (for a
/// display, a log or a test), without driving it.
pub type RoundObserver = Arc<dyn Fn(&RoundEvent<'_>) + Send + Sync>;

/// One step of a multi round-trip call, as [`CallOptions::observe`] sees it.
/// Rounds count from 1, the first request.
#[derive(Debug)]
#[non_exhaustive]
pub enum RoundEvent<'a> {
    /// The request of `round` is about to be sent.
    Sending {
        /// The round.
        round: u32,
        /// The method.
        method: &'a str,
    },
    /// The server answered `round` with `input_required`.
    InputRequired {
        /// The round that was answered.
        round: u32,
        /// What the server asks for (empty for a state-only round).
        input_requests: &'a InputRequests,
        /// The state to echo, if any.
        request_state: Option<&'a str>,
    },
    /// The answers to `round`'s requests, about to go out with the next.
    Answered {
        /// The round whose requests these answer.
        round: u32,
        /// The answers, by key.
        responses: &'a InputResponses,
    },
    /// The server answered `round` with the final result.
    Complete {
        /// The last round.
        round: u32,
    },
    /// A task's status as a poll saw it, when it changed (the tasks
    /// extension). `message` is server text.
    Task {
        /// The task's id.
        task_id: &'a str,
        /// Its status.
        status: &'a str,
        /// Its status message, if any.
        message: Option<&'a str>,
    },
}

/// Per-call options. The default: no cancellation token, no progress, no
/// log level, the client's timeouts and round limit.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) cancel: Option<CancelToken>,
    pub(crate) observer: Option<RoundObserver>,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) on_notification: Option<NotificationHandler>,
    pub(crate) progress: bool,
    pub(crate) log_level: Option<String>,
    pub(crate) traceparent: Option<String>,
    pub(crate) flow_timeout: Option<Duration>,
    /// Declared instead of the provider's ([`crate::relay::with_capabilities`]).
    pub(crate) capabilities: Option<ClientCapabilities>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancel", &self.cancel)
            .field("progress", &self.progress)
            .field("log_level", &self.log_level)
            .field("traceparent", &self.traceparent)
            .field("flow_timeout", &self.flow_timeout)
            .finish_non_exhaustive()
    }
}

impl CallOptions {
    /// Default options.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// Stops the call (and its whole multi round-trip flow) when `token`
    /// is cancelled.
    #[must_use]
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Asks for progress with a fresh `progressToken` per round
    /// (MRTR-C-A4) and hands every notification of the call to `handler`.
    #[must_use]
    pub fn on_notification(
        mut self,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(handler));
        self.progress = true;
        self
    }

    /// Opts in to log notifications at or above `level`
    /// (`io.modelcontextprotocol/logLevel`; deprecated with logging).
    #[must_use]
    pub fn log_level(mut self, level: impl Into<String>) -> Self {
        self.log_level = Some(level.into());
        self
    }

    /// A W3C `traceparent` for `_meta` (META-3).
    #[must_use]
    pub fn traceparent(mut self, value: impl Into<String>) -> Self {
        self.traceparent = Some(value.into());
        self
    }

    /// The deadline of the whole call, every round included; overrides the
    /// client's.
    #[must_use]
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.flow_timeout = Some(deadline);
        self
    }

    /// Hands every round of the call to `observer` as it happens.
    #[must_use]
    pub fn observe(mut self, observer: impl Fn(&RoundEvent<'_>) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The most rounds this call may take; the lower of this and the
    /// client's limit applies (MRTR-C-A3). In a 2025-11-25 session the same
    /// ceiling bounds the server's own requests for input during the call
    /// (elicitation, sampling, roots): each starts a round after the call's
    /// first request, so a server cannot make one call answer without end.
    #[must_use]
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = Some(rounds);
        self
    }

    pub(crate) fn emit(&self, event: &RoundEvent<'_>) {
        if let Some(o) = &self.observer {
            o(event);
        }
    }
}
