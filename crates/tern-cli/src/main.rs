//! The `tern` command: serve the reference workload, call a server while
//! walking a person through its questions, discover, probe and proxy
//! servers, follow tasks, sign in and out, list named servers, manage key
//! rings, run the demo and print shell completions.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line program talks to its user"
)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// mimalloc: the request path allocates many small, short-lived JSON
/// values, and it measured faster than the system allocator there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod call;
mod demo;
mod discover;
mod exit;
mod form;
mod keys;
mod otel;
mod probe;
mod protect;
mod provider;
mod proxy;
mod safe;
mod serve;
mod servers;
mod signin;
mod target;
mod task;
mod ui;
mod url;
mod workload;

/// Tern, MCP 2026-07-28 with multi round-trip requests: serve, call,
/// discover, probe, proxy, task, login, logout, servers, keys, demo,
/// completions.
// The one line of `tern --help` names every command (issue 52), and a
// test holds it to clap's list.
#[derive(Debug, Parser)]
#[command(name = "tern", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the reference workload over HTTP or stdio.
    Serve(ServeArgs),
    /// Call a tool, get a prompt or read a resource, answering the server's
    /// questions in the terminal.
    Call(CallArgs),
    /// Show a server's versions, capabilities, tools, prompts and resources.
    Discover(DiscoverArgs),
    /// Start the reference server in-process and walk through the deploy flow.
    Demo(DemoArgs),
    /// Manage a key ring file (new, add, activate, retire).
    Keys(KeysArgs),
    /// Sign in to a protected server in the browser and keep the token.
    Login(LoginArgs),
    /// Forget the token kept for a server.
    Logout {
        /// The server's Streamable HTTP URL.
        url: String,
    },
    /// Put MCP servers of either era behind one endpoint for clients of
    /// either era: bridge 2025-11-25 hosts to 2026-07-28 servers and back,
    /// or gateway several servers from an mcpServers file.
    Proxy(ProxyArgs),
    /// Check a server's multi round-trip security: replay one of its flows
    /// with one thing wrong at a time and report what it refused.
    Probe(ProbeArgs),
    /// Follow, inspect or cancel a task a tool call started (the tasks
    /// extension; `tern call --detach` prints its id).
    Task(task::TaskArgs),
    /// List the named servers of the config file ("mcpServers").
    Servers {
        /// The file to read (default: tern/config.json in the platform
        /// config directory).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Print a shell completion script, e.g. `tern completions bash >
    /// ~/.local/share/bash-completion/completions/tern`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// How to authenticate to a protected HTTP server (DIGEST §8).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct AuthArgs {
    /// A header sent with every request, 'Name: value' (repeatable).
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub(crate) headers: Vec<String>,
    /// Send `Authorization: Bearer` with the token in this environment
    /// variable (no sign-in flow then).
    #[arg(long, value_name = "VAR")]
    pub(crate) bearer_env: Option<String>,
    /// A client id registered with the authorization server beforehand.
    #[arg(long, value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// The environment variable holding that client's secret.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub(crate) client_secret_env: Option<String>,
    /// The https URL of this client's metadata document, used as its client
    /// id where the authorization server supports that.
    #[arg(long, value_name = "URL")]
    pub(crate) client_metadata_url: Option<String>,
}

/// `tern login`.
#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The server's Streamable HTTP URL.
    pub(crate) url: String,
    #[command(flatten)]
    pub(crate) auth: AuthArgs,
}

/// `tern serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve Streamable HTTP on this address (default 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    pub(crate) http: Option<String>,
    /// Serve newline-delimited JSON on stdin/stdout.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// The key ring file. Default: tern/keys.json in the platform data
    /// directory, created (mode 0600) on first run. A file named here must
    /// exist unless --create-keys is given. SIGHUP reloads it.
    #[arg(long, value_name = "FILE")]
    pub(crate) keys: Option<PathBuf>,
    /// Create the --keys file if it does not exist.
    #[arg(long, requires = "keys")]
    pub(crate) create_keys: bool,
    /// Seal with a random key that lives as long as the process (no key
    /// file): a restart ends every flow in progress. Allows --replay memory
    /// over HTTP.
    #[arg(long, conflicts_with = "keys")]
    pub(crate) ephemeral_keys: bool,
    /// The replay store: memory, sqlite:PATH or redis://HOST:PORT.
    #[arg(long, value_name = "STORE")]
    pub(crate) replay: Option<String>,
    /// The lifetime of a requestState, in seconds.
    #[arg(long, value_name = "SECS", env = "TERN_STATE_TTL_SECS")]
    pub(crate) state_ttl: Option<u64>,
    /// The clock skew allowed past a state's lifetime and a flow's, in
    /// seconds: the most the clocks of a fleet's instances may differ by
    /// (default 30, at most 300).
    #[arg(long, value_name = "SECS")]
    pub(crate) clock_skew: Option<u64>,
    /// The most input rounds a flow may take.
    #[arg(long, value_name = "N")]
    pub(crate) max_rounds: Option<u8>,
    /// Worker threads of the runtime (default: the core count; 1 runs the
    /// single-threaded scheduler).
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<std::num::NonZeroUsize>,
    /// The resource id bound into every state (default: the key file's).
    #[arg(long, value_name = "ID")]
    pub(crate) resource_id: Option<String>,
    /// The number of instances sharing this deployment (needs a shared
    /// replay store when above 1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) instances: u32,
    /// How long a task's record in the replay store's database vouches for
    /// the instance running it; when that instance dies, the task reads
    /// `failed` once this lapses (default 30).
    #[arg(long, value_name = "SECS")]
    pub(crate) task_lease_secs: Option<u64>,
    #[command(flatten)]
    pub(crate) protect: ProtectArgs,
    #[command(flatten)]
    pub(crate) budgets: BudgetArgs,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// The log format on stderr (the level comes from RUST_LOG or TERN_LOG;
    /// default info: one line per request, every refused state with its
    /// reason).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
}

/// What one client may hold (SECURITY.md, "Budgets").
#[derive(clap::Args, Debug, Default)]
pub(crate) struct BudgetArgs {
    /// The most requests one authenticated principal may have running at
    /// once, listen streams included (default 256).
    #[arg(long, value_name = "N")]
    pub(crate) max_requests_per_principal: Option<usize>,
    /// The most requests running at once in all (default 4096).
    #[arg(long, value_name = "N")]
    pub(crate) max_requests: Option<usize>,
    /// The most 2025-11-25 sessions open at once (default 1024). When full,
    /// a client's new session replaces its own longest-idle one.
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions: Option<usize>,
    /// The most sessions one authenticated principal may hold (default 16);
    /// its next one replaces its longest-idle one.
    #[arg(long, value_name = "N")]
    pub(crate) max_sessions_per_principal: Option<usize>,
    /// Close a session with no call running after this many seconds
    /// without a message (default 1800).
    #[arg(long, value_name = "SECS")]
    pub(crate) session_idle_secs: Option<u64>,
    /// The most calls one session may have running at once (default 16).
    #[arg(long, value_name = "N")]
    pub(crate) max_session_calls: Option<usize>,
    /// How long a session's question to its client (a form, a sample, the
    /// roots) waits for the answer before the call fails (default 600).
    #[arg(long, value_name = "SECS")]
    pub(crate) answer_timeout_secs: Option<u64>,
    /// The most HTTP connections open at once (default 4096); at the limit
    /// new ones wait until one closes.
    #[arg(long, value_name = "N")]
    pub(crate) max_connections: Option<usize>,
    /// The most HTTP connections open at once from one IP address (default
    /// 1024); a further one is closed at once.
    #[arg(long, value_name = "N")]
    pub(crate) max_connections_per_address: Option<usize>,
}

/// Who may call an HTTP endpoint (`tern serve`, `tern proxy`): bearer
/// tokens checked against an issuer's keys or a token file (DIGEST §8).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ProtectArgs {
    /// Require a bearer token: `jwks:URL` or `jwks-file:PATH` (JWTs from
    /// --issuer), `hs256-env:VAR` (JWTs signed with the secret in VAR), or
    /// `tokens:FILE` (a token file). HTTP only.
    #[arg(long, value_name = "MODE", conflicts_with = "stdio")]
    pub(crate) auth: Option<String>,
    /// The issuer JWTs must come from; also the authorization server named
    /// in the protected resource metadata.
    #[arg(long, value_name = "URL")]
    pub(crate) issuer: Option<String>,
    /// This endpoint's public URL: the tokens' audience and the resource of
    /// its metadata (default http://ADDR/mcp).
    #[arg(long, value_name = "URL")]
    pub(crate) public_url: Option<String>,
    /// A scope every request needs (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
    /// A scope a tool needs besides those, TOOL=SCOPE (repeatable).
    #[arg(long = "tool-scope", value_name = "TOOL=SCOPE")]
    pub(crate) tool_scopes: Vec<String>,
    /// A JWT `typ` accepted besides `at+jwt` (RFC 9068 §4), for issuers
    /// that do not follow RFC 9068, e.g. JWT (repeatable); `any` turns the
    /// check off.
    #[arg(long = "jwt-typ", value_name = "TYP")]
    pub(crate) jwt_types: Vec<String>,
}

/// `tern proxy`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("upstreams").required(true).args(["upstream", "upstream_cmd", "config"])))]
pub(crate) struct ProxyArgs {
    /// Serve Streamable HTTP on this address (default 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    pub(crate) http: Option<String>,
    /// Worker threads of the runtime (default: the core count; 1 runs the
    /// single-threaded scheduler).
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<std::num::NonZeroUsize>,
    /// Serve newline-delimited JSON on stdin/stdout.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// The upstream server's Streamable HTTP URL.
    #[arg(long, value_name = "URL", conflicts_with_all = ["upstream_cmd", "config"])]
    pub(crate) upstream: Option<String>,
    /// The upstream server's command line, spawned as a stdio server (and
    /// again if it exits).
    #[arg(long, value_name = "'COMMAND ARGS'", conflicts_with = "config")]
    pub(crate) upstream_cmd: Option<String>,
    /// Every server of this mcpServers file, behind one endpoint: with more
    /// than one, tools and prompts are named SERVER__NAME.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// How --upstream authenticates (static headers, a bearer token, or
    /// the sign-in kept by `tern login`).
    #[command(flatten)]
    pub(crate) auth: AuthArgs,
    /// Who may call the proxy (HTTP): its clients' tokens; the principal
    /// binds the proxy's states.
    #[command(flatten)]
    pub(crate) protect: ProtectArgs,
    #[command(flatten)]
    pub(crate) budgets: BudgetArgs,
    /// The key ring file sealing the proxy's states (default: a random key
    /// for the life of the process).
    #[arg(long, value_name = "FILE")]
    pub(crate) keys: Option<PathBuf>,
    /// The lifetime of a requestState, in seconds.
    #[arg(long, value_name = "SECS")]
    pub(crate) state_ttl: Option<u64>,
    /// The clock skew allowed past a state's lifetime and a flow's, in
    /// seconds: the most the clocks of a fleet's instances may differ by
    /// (default 30, at most 300).
    #[arg(long, value_name = "SECS")]
    pub(crate) clock_skew: Option<u64>,
    /// The most input rounds a flow may take at the proxy.
    #[arg(long, value_name = "N")]
    pub(crate) max_rounds: Option<u8>,
    /// How long a pending call (a 2025-11-25 upstream's call, or an
    /// upstream round too large to seal) waits for the client's retry
    /// before it is dropped, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(crate) pending_ttl: u64,
    /// The most pending calls held at once, for all clients together.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub(crate) max_pending: usize,
    /// The most pending calls one principal may hold (default: a quarter
    /// of --max-pending, at least 1).
    #[arg(long, value_name = "N")]
    pub(crate) max_pending_per_principal: Option<usize>,
    /// The most bytes of one upstream round held in the proxy (its state
    /// and questions).
    #[arg(long, value_name = "BYTES", default_value_t = 256 * 1024)]
    pub(crate) max_round_bytes: usize,
    /// How long to wait for an upstream's answer, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub(crate) upstream_timeout: u64,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// The log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One line per event, for people.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Where a client connects: a URL, or a command to spawn over stdio.
#[derive(Debug, Args, Clone)]
pub(crate) struct TargetArgs {
    /// The server's Streamable HTTP URL, or the name of a server in the
    /// config file's "mcpServers" (see `tern servers`).
    #[arg(value_name = "URL|NAME", required_unless_present = "cmd")]
    pub(crate) url: Option<String>,
    /// The file named servers are read from: any file with "mcpServers"
    /// (default: tern/config.json in the platform config directory).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// A named server's command, arguments and environment.
    #[arg(skip)]
    pub(crate) spawn: Option<servers::Spawn>,
    /// The server's name, when it was given by name.
    #[arg(skip)]
    pub(crate) name: Option<String>,
    /// A command that starts a stdio server, e.g. 'tern serve --stdio'.
    // With --cmd the first word after it is not a URL: the commands shift it
    // back into WHAT, so clap must not reject the pair (target.rs).
    #[arg(long, value_name = "COMMAND")]
    pub(crate) cmd: Option<String>,
    /// Which revision the server speaks: `auto` probes with server/discover
    /// and falls back to a 2025-11-25 session (remembered per server in the
    /// cache directory); `modern` is 2026-07-28 only; `legacy` opens a
    /// 2025-11-25 session at once.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
    #[command(flatten)]
    pub(crate) auth: AuthArgs,
}

/// `--era`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EraArg {
    /// Probe, then fall back.
    Auto,
    /// 2026-07-28.
    Modern,
    /// 2025-11-25.
    Legacy,
}

/// `tern call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// `tool NAME`, `prompt NAME` or `read URI`, then arguments: `key=value`
    /// (converted by the tool's input schema) or `key:=JSON`.
    // Flags may follow WHAT, and with --cmd the first word lands in `url`
    // (call.rs shifts it back), so call.rs checks it. Not `required` for
    // clap: a required positional after the optional `url` fails clap's
    // debug assertions, so every `tern call` of a dev build panicked.
    #[arg(value_name = "WHAT", num_args = 1..)]
    pub(crate) what: Vec<String>,
    /// An OpenAI-compatible chat-completions endpoint for sampling (key from
    /// OPENAI_API_KEY or TERN_MODEL_KEY).
    #[arg(long, value_name = "URL")]
    pub(crate) model_url: Option<String>,
    /// The model name sent to --model-url.
    #[arg(long, value_name = "NAME", default_value = "gpt-4o-mini")]
    pub(crate) model: String,
    /// A command that answers sampling requests: it reads the request JSON on
    /// stdin and prints the text.
    #[arg(long, value_name = "COMMAND")]
    pub(crate) sampling_cmd: Option<String>,
    /// A root to share (repeatable): consent to share it when the server
    /// asks, also without a terminal. Without --root, a terminal asks about
    /// the current directory, --yes shares it, and otherwise no root is
    /// offered.
    #[arg(long = "root", value_name = "DIR")]
    pub(crate) roots: Vec<PathBuf>,
    /// Do not declare roots.
    #[arg(long)]
    pub(crate) no_roots: bool,
    /// Do not declare sampling.
    #[arg(long)]
    pub(crate) no_sampling: bool,
    /// Do not declare elicitation.
    #[arg(long)]
    pub(crate) no_elicitation: bool,
    /// Declare form-mode elicitation only (no URL mode).
    #[arg(long)]
    pub(crate) form_only: bool,
    /// Answers by input key, from a JSON file: {"KEY": ANSWER} where ANSWER
    /// is {"action": "accept", "content": {...}} (or "decline", "cancel")
    /// for a form or link, {"roots": [{"uri": "file:///..."}]} for roots,
    /// or {"role": "assistant", "content": {"type": "text", "text": "..."},
    /// "model": "..."} for sampling; a list gives one answer per round. A
    /// method name as KEY answers every question of that kind. The whole
    /// file is checked before the call.
    #[arg(long, value_name = "FILE", verbatim_doc_comment)]
    pub(crate) answers: Option<PathBuf>,
    /// Accept forms with required booleans true and other fields from their
    /// defaults, share the --root directories (default: the current
    /// directory) and approve sampling requests to --sampling-cmd or
    /// --model-url, without asking; never consents to a URL. Each is
    /// printed as it happens.
    #[arg(long)]
    pub(crate) yes: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print each round with its timing and state size.
    #[arg(short, long)]
    pub(crate) verbose: bool,
    /// Arguments as one JSON object; `key=value` and `key:=JSON` words
    /// after WHAT add to it and win.
    #[arg(long = "args", value_name = "JSON")]
    pub(crate) args: Option<String>,
    /// When the server can no longer resume the call (its state expired or
    /// was used), start it over once without asking.
    #[arg(long)]
    pub(crate) restart: bool,
    /// Give up when the whole call (connecting, every round, the time
    /// spent answering) takes longer than this (exit status 3); 0 for no
    /// limit. A server streaming notifications cannot keep a call alive
    /// past it.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(crate) timeout: u64,
    /// The most rounds one call may take (MRTR-C-A3), also the most requests
    /// for input a 2025-11-25 server may send during one call (each starts
    /// a round); past it the call ends (exit status 3).
    #[arg(long, value_name = "N", default_value_t = 10,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_rounds: u32,
    /// The most tokens a sampling request may ask of the model: a request's
    /// maxTokens above it is lowered to it before the model is called (and
    /// the dialog says so).
    #[arg(long, value_name = "N", default_value_t = provider::DEFAULT_MAX_TOKENS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_tokens: u64,
    /// Do not declare the tasks extension (declared by default, as the
    /// kinds of input are): a tool the server runs as a task when it can
    /// then runs inline, and one that runs only as a task is refused
    /// (-32021). Declared, a task is followed to its end: its status on
    /// stderr, its questions asked like a round's, Ctrl-C cancels it.
    #[arg(long, conflicts_with_all = ["tasks", "detach"])]
    pub(crate) no_tasks: bool,
    /// Declare the tasks extension: the default now, so this does nothing;
    /// kept so that scripts written before still run.
    #[arg(long, hide = true)]
    pub(crate) tasks: bool,
    /// When the server runs the tool as a task, print the task id and exit
    /// at once; `tern task wait` follows it later.
    #[arg(long)]
    pub(crate) detach: bool,
}

/// `tern probe`.
#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// The tool whose flow is probed (default: the first listed tool not
    /// marked destructive whose flow the probe can complete, its required
    /// arguments made up from its inputSchema).
    #[arg(long, value_name = "NAME")]
    pub(crate) tool: Option<String>,
    /// Probe every listed tool's flow the probe can complete (not marked
    /// destructive), each with its own cases, within --max-requests.
    #[arg(long)]
    pub(crate) all: bool,
    /// The arguments of the tool named with --tool (else --single-use),
    /// `key=value` (JSON values are parsed); without them the required
    /// ones are made up from its inputSchema.
    #[arg(value_name = "KEY=VALUE", num_args = 0..)]
    pub(crate) args: Vec<String>,
    /// Answers by input key, as for `tern call --answers`.
    #[arg(long, value_name = "FILE")]
    pub(crate) answers: Option<PathBuf>,
    /// The tool is single use: probe its flow, with replays of its final
    /// state (never done for any other tool).
    #[arg(long, value_name = "TOOL")]
    pub(crate) single_use: Option<String>,
    /// The server's state lifetime: wait it out (plus the clock skew it
    /// allows) and check that an expired state is refused.
    #[arg(long, value_name = "SECS")]
    pub(crate) state_ttl: Option<u64>,
    /// The clock skew the server allows past a state's lifetime, waited
    /// out on top of --state-ttl (`tern serve --clock-skew`).
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub(crate) clock_skew: u64,
    /// How long the probe waits for each reply before calling the server
    /// silent.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub(crate) reply_timeout: u64,
    /// Print the results as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the results as a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Probe this host although it is not this machine.
    #[arg(long, value_name = "HOST")]
    pub(crate) allow_remote: Option<String>,
    /// The most requests the probe sends in all: a flow it cannot finish
    /// within them is skipped, a case it cannot is a SKIP.
    #[arg(long, value_name = "N", default_value_t = 600)]
    pub(crate) max_requests: usize,
    /// The most JSON the probe makes up for one tool's arguments, in bytes:
    /// a tool whose inputSchema asks for more is skipped.
    #[arg(long, value_name = "BYTES", default_value_t = 16384)]
    pub(crate) max_fill_bytes: usize,
    /// Another client's bearer token, in this environment variable: its
    /// retry of the probe's state must be refused (HTTP).
    #[arg(long, value_name = "VAR")]
    pub(crate) other_bearer_env: Option<String>,
    /// Exit 1 when a case at this level or a more binding one fails: `must`
    /// gates on MUST cases only, `should` (the default) on MUST and SHOULD,
    /// `advice` on every case.
    #[arg(long, value_enum, value_name = "LEVEL", default_value_t = FailOn::Should)]
    pub(crate) fail_on: FailOn,
}

/// `tern probe --fail-on`: the least binding level whose failure fails
/// the run, so a CI gate chooses how strict it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub(crate) enum FailOn {
    /// MUST cases only.
    Must,
    /// MUST and SHOULD cases.
    Should,
    /// Every case, advice included.
    Advice,
}

/// `tern discover`.
#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `tern demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Answer every question as `--yes` would (the default without a
    /// terminal).
    #[arg(long)]
    pub(crate) yes: bool,
}

/// `tern keys`.
#[derive(Debug, Args)]
pub(crate) struct KeysArgs {
    #[command(subcommand)]
    pub(crate) action: KeysAction,
}

/// What to do to a key ring file.
#[derive(Debug, Subcommand)]
pub(crate) enum KeysAction {
    /// Create a key file with one active key (refuses to overwrite).
    New {
        /// The key file.
        file: PathBuf,
        /// The resource id bound into every state (default: random).
        #[arg(long)]
        resource_id: Option<String>,
    },
    /// Add a verify-only key; prints its kid. Publish it to every instance
    /// before activating it.
    Add {
        /// The key file.
        file: PathBuf,
    },
    /// Make a key active; the previous active key stays verify-only for a
    /// grace period.
    Activate {
        /// The key file.
        file: PathBuf,
        /// The key id.
        kid: u32,
        /// Seconds the previous key keeps verifying (default 690).
        #[arg(long)]
        grace: Option<u64>,
    },
    /// Retire a key: states sealed with it no longer open.
    Retire {
        /// The key file.
        file: PathBuf,
        /// The key id.
        kid: u32,
        /// Retire it even inside its grace period (flows sealed with it
        /// fail).
        #[arg(long)]
        force: bool,
    },
    /// Print the key ids and roles (never the secrets).
    List {
        /// The key file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(a) => serve::run(a),
        Command::Keys(a) => keys::run(a),
        Command::Call(a) => call::run(a),
        Command::Discover(a) => discover::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Login(a) => signin::login(a),
        Command::Logout { url } => signin::logout(&url),
        Command::Servers { config } => servers::list(config.as_deref()),
        Command::Probe(a) => probe::run(a),
        Command::Proxy(a) => proxy::run(a),
        Command::Task(a) => task::run(a),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(shell, &mut Cli::command(), "tern", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tern: {}", safe::text(&e));
            ExitCode::FAILURE
        }
    }
}
