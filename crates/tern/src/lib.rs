//! The paved path through Tern. Features: `server`, `client`, `stdio`,
//! `http`, `proxy`, and the replay stores `sqlite` and `redis`. The `guide`
//! module (there with every feature on, as docs.rs builds it) takes you
//! from an empty crate to a served multi round-trip tool and on through
//! everything else, chapter by chapter. A program that relays another
//! server's flows, as `proxy` does, finds what it needs besides the
//! handler and caller APIs in `server::relay` and `client::relay`. The
//! project README follows; its Rust examples are compiled as doc tests.
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

// The user guide, one module per chapter: its Rust blocks are doc tests,
// compiled (and most of them run) with every feature of this crate on.
#[cfg(all(
    feature = "server",
    feature = "client",
    feature = "stdio",
    feature = "http",
    feature = "proxy",
    feature = "sqlite",
    feature = "redis"
))]
pub mod guide {
    #![doc = include_str!("../guide/README.md")]

    pub mod first_tool {
        #![doc = include_str!("../guide/01-first-tool.md")]
    }
    pub mod forms {
        #![doc = include_str!("../guide/02-forms.md")]
    }
    pub mod url_sampling_roots {
        #![doc = include_str!("../guide/03-url-sampling-roots.md")]
    }
    pub mod rounds {
        #![doc = include_str!("../guide/04-rounds.md")]
    }
    pub mod single_use {
        #![doc = include_str!("../guide/05-single-use.md")]
    }
    pub mod keys {
        #![doc = include_str!("../guide/06-keys.md")]
    }
    pub mod fleets {
        #![doc = include_str!("../guide/07-fleets.md")]
    }
    pub mod client {
        #![doc = include_str!("../guide/08-client.md")]
    }
    pub mod eras {
        #![doc = include_str!("../guide/09-eras.md")]
    }
    pub mod authorization {
        #![doc = include_str!("../guide/10-authorization.md")]
    }
    pub mod proxy {
        #![doc = include_str!("../guide/11-proxy.md")]
    }
    pub mod tasks {
        #![doc = include_str!("../guide/12-tasks.md")]
    }
}

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
