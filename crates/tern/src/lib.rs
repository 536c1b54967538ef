//! The paved path through Tern. Features: `server`, `client`, `stdio`,
//! `http`, `proxy`, and the replay stores `sqlite` and `redis`. The project README follows; its Rust examples are compiled as
//! doc tests.
#![doc = include_str!("../README.md")]

pub use tern_proto as proto;
pub use tern_seal as seal;
pub use tern_types as types;

#[cfg(feature = "client")]
pub use tern_client as client;
#[cfg(feature = "http")]
pub use tern_http as http;
#[cfg(feature = "proxy")]
pub use tern_proxy as proxy;
#[cfg(any(feature = "sqlite", feature = "redis"))]
pub use tern_replay as replay;
#[cfg(feature = "server")]
pub use tern_server as server;
#[cfg(feature = "stdio")]
pub use tern_stdio as stdio;

/// What a handler needs, in one import: `use tern::prelude::*;`.
///
/// Argument types derive `serde::Deserialize` and `schemars::JsonSchema`
/// (add both crates beside `tern`); form types derive [`ElicitForm`]
/// (re-exported here), which needs only `serde::Deserialize` besides.
///
/// [`ElicitForm`]: tern_server::ElicitForm
#[cfg(feature = "server")]
pub mod prelude {
    pub use tern_server::{
        Args, Ask, ElicitEnum, ElicitForm, Elicited, Error, FormKey, Need, PromptDef, PromptResult,
        ResourceDef, ResourceResult, Server, SingleUse, State, ToolDef, ToolResult,
    };
}
