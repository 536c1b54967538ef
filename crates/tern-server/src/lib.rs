//! The Tern MCP server framework.
//!
//! Handlers are plain async functions whose arguments are extractors; they
//! return anything that converts into an [`Outcome`]. The [`Ask`] API lets a
//! handler ask the client for input (form or URL elicitation, sampling,
//! roots) through multi round-trip requests; this crate is the one place
//! that seals and opens `requestState` (SECURITY.md §3). What a program
//! that relays another server's flows needs besides (a gateway such as
//! `tern proxy`) is in [`relay`], apart from the handler API.
//!
//! ```
//! use tern_server::{Args, Server, ToolResult};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo { text: String }
//!
//! async fn echo(Args(e): Args<Echo>) -> ToolResult {
//!     ToolResult::text(e.text)
//! }
//!
//! let server = Server::builder("example", "1.0.0")
//!     .tool("echo", "Returns the text it is given", echo)
//!     .build()
//!     .expect("valid configuration");
//! # let _ = server;
//! ```

mod ask;
mod builder;
pub mod clock;
mod config;
mod content;
mod extract;
mod form;
mod form_field;
mod handler;
mod legacy;
mod lists;
mod metrics;
mod notify;
mod outcome;
mod registry;
pub mod relay;
mod round;
mod routes;
mod routing;
mod running;
mod server;
mod sessions;
mod single_use;
mod state;
mod tasks;
mod uri_template;

pub use ask::{
    Ask, Either, Elicited, FormKey, InputKind, Need, NeedSet, OneOf, Optional, Root, Round, Sampled,
};
pub use builder::{BuildError, ServerBuilder};
pub use config::{Config, RequestLimits, SessionLimits};
pub use content::{Content, PromptResult, ResourceResult, ToolResult};
pub use extract::{
    Args, Authenticated, CallContext, Caller, Capabilities, Flow, FromCall, Meta, RawArgs, Resumed,
    State, Uri, UriParams,
};
pub use form::{ElicitForm, check_form_schema};
pub use form_field::{FormEnum, FormField};
pub use handler::{BoxFuture, Handler};
pub use legacy::Session;
pub use metrics::{Metrics, RequestOutcome};
pub use notify::{Log, Progress, Sink};
pub use outcome::{Error, IntoOutcome, Json, Outcome, Pending};
pub use registry::{PromptDef, ResourceDef, RouteLimits, TemplateDef, ToolDef};
pub use routes::RouteChanges;
pub use running::{Full, RETRY_SHORTLY, Share, ShareLimits, Shares};
pub use server::{Authorize, Reply, Server, on_trace_parent};
pub use sessions::{SessionRefused, SessionTable};
pub use single_use::SingleUse;
pub use tasks::{Task, TaskBody, TaskLimits, TaskScope, TaskSupport};
pub use tern_macros::{ElicitEnum, ElicitForm};
#[doc(hidden)]
pub mod __bench {
    //! Stages of the request path that are not public API, reachable for
    //! the criterion benches only.
    pub use crate::form::validate_content;
}
#[doc(hidden)]
pub mod __private {
    //! Paths the derive macros expand to.
    pub use serde_json;

    pub use crate::ask::TypedSchema;
}
