//! The `InputProvider`: how the client answers a server's input requests
//! (elicitation, sampling, roots; DIGEST §5). The client owns the loop, the
//! ids and the state; the provider only decides what to answer (the tower
//! `Retry`/`Policy` split).

use serde_json::{Map, Value};
use tern_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams,
    ElicitRequestUrlParams, ElicitResult, ElicitationCapability, ListRootsResult, RootsCapability,
    SamplingCapability,
};

use crate::transport::BoxFuture;

/// The kinds of input a provider can really produce. The client declares
/// exactly these as `clientCapabilities` on every request (META-A1), so a
/// headless provider declares nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputKinds {
    /// Form-mode elicitation.
    pub form: bool,
    /// URL-mode elicitation.
    pub url: bool,
    /// Sampling (deprecated feature).
    pub sampling: bool,
    /// Sampling with `tools`/`toolChoice` (SAMP-S2); implies `sampling`.
    pub sampling_tools: bool,
    /// Roots (deprecated feature).
    pub roots: bool,
}

impl InputKinds {
    /// Nothing: the client declares `{}`.
    pub const NONE: InputKinds = InputKinds {
        form: false,
        url: false,
        sampling: false,
        sampling_tools: false,
        roots: false,
    };

    /// Everything this revision defines.
    pub const ALL: InputKinds = InputKinds {
        form: true,
        url: true,
        sampling: true,
        sampling_tools: true,
        roots: true,
    };

    /// These kinds with form-mode elicitation.
    #[must_use]
    pub const fn with_form(mut self) -> Self {
        self.form = true;
        self
    }

    /// These kinds with URL-mode elicitation.
    #[must_use]
    pub const fn with_url(mut self) -> Self {
        self.url = true;
        self
    }

    /// These kinds with sampling.
    #[must_use]
    pub const fn with_sampling(mut self) -> Self {
        self.sampling = true;
        self
    }

    /// These kinds with roots.
    #[must_use]
    pub const fn with_roots(mut self) -> Self {
        self.roots = true;
        self
    }

    /// The `clientCapabilities` these kinds declare (ELIC-C1, SAMP-C1).
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.form || self.url {
            caps.elicitation = Some(ElicitationCapability {
                form: self.form.then(Map::new),
                url: self.url.then(Map::new),
            });
        }
        if self.sampling || self.sampling_tools {
            caps.sampling = Some(SamplingCapability {
                context: None,
                tools: self.sampling_tools.then(Map::new),
            });
        }
        if self.roots {
            caps.roots = Some(RootsCapability::default());
        }
        caps
    }
}

/// A provider's refusal to produce an answer. For sampling and roots, which
/// have no "declined" answer, it ends the call locally with no retry
/// (MRTR-C4); for elicitation, prefer answering `decline` or `cancel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Why, for the caller.
    pub reason: String,
}

impl Refusal {
    /// A refusal with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Refusal {
            reason: reason.into(),
        }
    }
}

/// What the provider is told about the request that asks.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct InputContext {
    /// The method of the call that needs input (`tools/call`, …).
    pub method: String,
    /// The call's target: the tool or prompt name, or the resource URI.
    pub target: Option<String>,
    /// The key the server asked under.
    pub key: String,
    /// The round that asked (1 for the first response).
    pub round: u32,
    /// The server's identity from the interim result's `_meta`, for display
    /// only (META-11); ELIC-C9 wants the user to see who is asking.
    pub server_info: Option<Value>,
    /// How long the server gives for the answer, when it says (a Tern
    /// server does), for display: the state expires after that.
    pub answer_within: Option<std::time::Duration>,
}

/// Answers a server's input requests. Every method has a default that
/// refuses, so an implementation overrides the kinds it declares in
/// [`kinds`](Self::kinds). The client never calls a method whose kind is not
/// declared: a server asking for one fails the call (MRTR-C-A2).
///
/// The client calls the methods of one round concurrently; an
/// implementation that shows dialogs should queue them itself.
pub trait InputProvider: Send + Sync + 'static {
    /// What this provider can do, declared on every request (META-A1).
    fn kinds(&self) -> InputKinds;

    /// Form-mode elicitation (ELIC-C9: show who asks, let the user review,
    /// offer decline and cancel). Return `decline`/`cancel` as answers.
    fn elicit_form(
        &self,
        cx: InputContext,
        params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        let _ = (cx, params);
        Box::pin(async { Err(Refusal::new("form elicitation is not supported")) })
    }

    /// URL-mode elicitation: show the full URL, ask consent, never prefetch
    /// (DIGEST §5.1, SECURITY.md §3.10). `accept` means the user agreed to
    /// open it (ELIC-10).
    fn elicit_url(
        &self,
        cx: InputContext,
        params: ElicitRequestUrlParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        let _ = (cx, params);
        Box::pin(async { Err(Refusal::new("URL elicitation is not supported")) })
    }

    /// A model sample (deprecated feature). Respect `maxTokens`.
    fn sample(
        &self,
        cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, Refusal>> {
        let _ = (cx, params);
        Box::pin(async { Err(Refusal::new("sampling is not supported")) })
    }

    /// The roots the user permits (deprecated feature, ROOT-C2).
    fn list_roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        let _ = cx;
        Box::pin(async { Err(Refusal::new("roots are not supported")) })
    }
}

/// A provider that can do nothing: the client declares `{}` and any input
/// request fails the call (the default for headless use, META-A1).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoInput;

impl InputProvider for NoInput {
    fn kinds(&self) -> InputKinds {
        InputKinds::NONE
    }
}
