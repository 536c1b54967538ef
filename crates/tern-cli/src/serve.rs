//! `tern serve`: the reference workload over Streamable HTTP or stdio, with
//! the secure defaults of SECURITY.md (a key file and a durable replay
//! store over HTTP; an ephemeral key and a memory store over stdio).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tern::http::HttpOptions;
use tern::replay::{
    RedisOptions, RedisReplayStore, RedisTaskStore, SqliteOptions, SqliteReplayStore,
    SqliteTaskStore, Synchronous,
};
use tern::seal::{KeyFile, MemoryReplayStore, ReplayStore, TaskStore};
use tern::server::{Config, Server};

use crate::workload::{self, Logins};
use crate::{BudgetArgs, LogFormat, ServeArgs};

/// The platform data directory: `$XDG_DATA_HOME/tern`, else
/// `~/.local/share/tern`.
pub(crate) fn data_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("tern"));
    }
    let home = std::env::var_os("HOME")
        .ok_or("neither XDG_DATA_HOME nor HOME is set; pass --keys and --replay")?;
    Ok(PathBuf::from(home).join(".local/share/tern"))
}

/// Loads the key file, creating it (mode 0600) if it does not exist.
pub(crate) fn load_or_create_keys(path: &std::path::Path) -> Result<KeyFile, String> {
    if path.exists() {
        return crate::keys::read(path);
    }
    let rid = format!("urn:tern:{}", tern::seal::random_id());
    let kf = KeyFile::generate(rid).map_err(|e| e.to_string())?;
    crate::keys::write(path, &kf, true)?;
    tracing::info!(path = %path.display(), "created key file");
    Ok(kf)
}

/// Where the replay store lives, checked before anything touches the disk.
enum ReplaySpec {
    Memory,
    Sqlite(PathBuf),
    Redis(String),
}

impl ReplaySpec {
    fn parse(spec: &str) -> Result<Self, String> {
        if spec == "memory" {
            Ok(Self::Memory)
        } else if let Some(path) = spec.strip_prefix("sqlite:").filter(|p| !p.is_empty()) {
            Ok(Self::Sqlite(PathBuf::from(path)))
        } else if spec.starts_with("redis://") || spec.starts_with("rediss://") {
            Ok(Self::Redis(spec.to_owned()))
        } else {
            Err(format!(
                "--replay {spec:?}: expected memory, sqlite:PATH or redis://HOST:PORT"
            ))
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Memory => "memory".to_owned(),
            Self::Sqlite(p) => format!("sqlite:{}", p.display()),
            Self::Redis(url) => redact(url),
        }
    }

    async fn open(&self) -> Result<Arc<dyn ReplayStore>, String> {
        Ok(match self {
            Self::Memory => Arc::new(MemoryReplayStore::new()),
            Self::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                Arc::new(
                    SqliteReplayStore::open(path, SqliteOptions::default()).map_err(|e| {
                        format!("cannot open the replay store {}: {e}", path.display())
                    })?,
                )
            }
            Self::Redis(url) => Arc::new(
                RedisReplayStore::connect(url, RedisOptions::default())
                    .await
                    .map_err(|e| format!("cannot use Redis at {}: {e}", redact(url)))?,
            ),
        })
    }

    /// The task store beside the replay store: the same SQLite file or the
    /// same Redis, so every process sharing one shares the other. In
    /// memory, each instance keeps its own tasks.
    async fn open_tasks(&self) -> Result<Option<Arc<dyn TaskStore>>, String> {
        Ok(match self {
            Self::Memory => None,
            // NORMAL, not the replay store's FULL: a task cannot outlive
            // the process running its body, so a write lost in a crash
            // costs nothing a lapsed lease does not report anyway, and a
            // task writes its record several times.
            Self::Sqlite(path) => Some(Arc::new(
                SqliteTaskStore::open(
                    path,
                    SqliteOptions::default().synchronous(Synchronous::Normal),
                )
                .map_err(|e| format!("cannot open the task store {}: {e}", path.display()))?,
            )),
            Self::Redis(url) => Some(Arc::new(
                RedisTaskStore::connect(url, RedisOptions::default())
                    .await
                    .map_err(|e| format!("cannot use Redis at {}: {e}", redact(url)))?,
            )),
        })
    }
}

/// A store URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://***{}", &url[at..]),
        _ => url.to_owned(),
    }
}

/// Resolves `HOST:PORT` (a name or an address) to the address to bind.
pub(crate) async fn resolve(addr: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = addr.parse() {
        return Ok(a);
    }
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(format!("{addr:?} is not HOST:PORT (e.g. 127.0.0.1:8080)"));
    };
    if port.parse::<u16>().is_err() {
        return Err(format!(
            "{addr:?}: the port {port:?} is not a number from 0 to 65535"
        ));
    }
    let mut found = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("cannot resolve {host:?}: {e}"))?;
    found
        .next()
        .ok_or_else(|| format!("{host:?} resolves to no address"))
}

/// Everything `serve` resolves before it binds.
pub(crate) struct Prepared {
    pub(crate) server: Server,
    pub(crate) logins: Arc<Logins>,
    /// The key file a SIGHUP reloads (none with an ephemeral key).
    pub(crate) key_path: Option<PathBuf>,
    /// The replay store, for the startup line.
    pub(crate) replay: String,
}

/// The server limits of `--state-ttl`, `--clock-skew` and `--max-rounds`
/// (`tern serve`, `tern proxy`).
pub(crate) fn limits(
    state_ttl: Option<u64>,
    clock_skew: Option<u64>,
    max_rounds: Option<u8>,
) -> Result<Config, String> {
    let mut config = Config::default();
    if let Some(s) = clock_skew {
        if s > 300 {
            return Err(format!("--clock-skew {s}: must be at most 300 seconds"));
        }
        config.skew = Duration::from_secs(s);
    }
    if let Some(t) = state_ttl {
        if !(1..=3600).contains(&t) {
            return Err(format!("--state-ttl {t}: must be from 1 to 3600 seconds"));
        }
        config.state_ttl = Duration::from_secs(t);
    }
    if let Some(r) = max_rounds {
        if r == 0 {
            return Err("--max-rounds must be at least 1".to_owned());
        }
        config.max_rounds = r;
    }
    Ok(config)
}

/// The budgets of `--max-requests`, `--max-sessions` and their siblings
/// (`tern serve`, `tern proxy`), each at least 1.
pub(crate) fn budgets(args: &BudgetArgs, config: &mut Config) -> Result<(), String> {
    fn at_least_one<T: PartialEq + From<u8>>(
        flag: &str,
        n: Option<T>,
    ) -> Result<Option<T>, String> {
        match n {
            Some(n) if n == T::from(0) => Err(format!("--{flag} must be at least 1")),
            n => Ok(n),
        }
    }
    let r = &mut config.requests;
    if let Some(n) = at_least_one(
        "max-requests-per-principal",
        args.max_requests_per_principal,
    )? {
        r.max_running_per_principal = n;
    }
    if let Some(n) = at_least_one("max-requests", args.max_requests)? {
        r.max_running = n;
    }
    let s = &mut config.sessions;
    if let Some(n) = at_least_one("max-sessions", args.max_sessions)? {
        s.max_open = n;
    }
    if let Some(n) = at_least_one(
        "max-sessions-per-principal",
        args.max_sessions_per_principal,
    )? {
        s.max_per_principal = n;
    }
    if let Some(secs) = at_least_one("session-idle-secs", args.session_idle_secs)? {
        s.idle = Duration::from_secs(secs);
    }
    if let Some(n) = at_least_one("max-session-calls", args.max_session_calls)? {
        s.max_calls = n;
    }
    if let Some(secs) = at_least_one("answer-timeout-secs", args.answer_timeout_secs)? {
        config.client_answer_timeout = Duration::from_secs(secs);
    }
    Ok(())
}

/// Builds the reference server from the flags. Every flag is checked
/// before the key file or the replay store is touched.
pub(crate) async fn prepare(args: &ServeArgs) -> Result<Prepared, String> {
    let mut config = limits(args.state_ttl, args.clock_skew, args.max_rounds)?;
    budgets(&args.budgets, &mut config)?;
    if args.instances == 0 {
        return Err("--instances must be at least 1".to_owned());
    }
    match args.task_lease_secs {
        Some(0) => return Err("--task-lease-secs must be at least 1".to_owned()),
        Some(secs) => config.tasks.lease = Duration::from_secs(secs),
        None => {}
    }
    let ephemeral = args.ephemeral_keys || (args.stdio && args.keys.is_none());
    let replay = match (&args.replay, args.stdio) {
        (Some(spec), _) => ReplaySpec::parse(spec)?,
        (None, true) => ReplaySpec::Memory,
        (None, false) => ReplaySpec::Sqlite(data_dir()?.join("replay.db")),
    };
    if matches!(replay, ReplaySpec::Memory) && !ephemeral {
        return Err(
            "--replay memory forgets which single-use flows ran when the server restarts, while the key file keeps their states valid, so a flow could run twice. Use the default store (SQLite), sqlite:PATH or redis://HOST:PORT, or add --ephemeral-keys so that a restart also ends every flow"
                .to_owned(),
        );
    }
    if args.instances > 1 && !matches!(replay, ReplaySpec::Redis(_)) {
        return Err(format!(
            "--instances {}: instances must share one replay store (--replay redis://HOST:PORT), or a flow finished on one could run again on another",
            args.instances
        ));
    }
    let key_path = match (&args.keys, ephemeral) {
        (Some(path), _) => Some((path.clone(), args.create_keys)),
        (None, true) => None,
        (None, false) => Some((data_dir()?.join("keys.json"), true)),
    };
    if let Some((path, false)) = &key_path
        && !path.exists()
    {
        return Err(format!(
            "no key file at {}: pass --create-keys to create it, or make one with `tern keys new {}`",
            path.display(),
            path.display()
        ));
    }
    // The checks are done: from here on the disk and the network are used.
    let store = replay.open().await?;
    let tasks = replay.open_tasks().await?;
    let (keys, file_rid) = match &key_path {
        Some((path, _)) => {
            let kf = load_or_create_keys(path)?;
            let ring = kf
                .key_ring()
                .map_err(|e| format!("bad key file {}: {e}", path.display()))?;
            (Some(ring), Some(kf.resource_id))
        }
        None => (None, None),
    };
    let logins = Arc::new(Logins::default());
    let mut builder = Server::builder("tern", env!("CARGO_PKG_VERSION"))
        .config(config)
        .replay_store(store)
        .instances(args.instances);
    if let Some(t) = tasks {
        builder = builder.task_store(t);
    }
    if let Some(k) = keys {
        builder = builder.keys(k);
    }
    if let Some(rid) = args.resource_id.clone().or(file_rid) {
        builder = builder.resource_id(&rid);
    }
    let server = workload::server(builder, logins.clone())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Prepared {
        server,
        logins,
        key_path: key_path.map(|(p, _)| p),
        replay: replay.describe(),
    })
}

pub(crate) fn run(args: ServeArgs) -> Result<ExitCode, String> {
    // Over stdio, stderr is often the terminal of whoever spawned the
    // server: requests are logged only when RUST_LOG asks.
    let _log = init_logging(
        args.log_format,
        if args.stdio { "warn" } else { "info" },
        "tern-serve",
    );
    let rt = runtime(args.threads)?;
    let done = rt.block_on(async move {
        // Addresses first: a typo must not leave a key file behind.
        let http = match (&args.http, args.stdio) {
            (_, true) => None,
            (Some(a), false) => Some(resolve(a).await?),
            (None, false) => Some(SocketAddr::from(([127, 0, 0, 1], 8080))),
        };
        let metrics = match &args.metrics {
            Some(a) => Some(bind(resolve(a).await.map_err(|e| format!("--metrics: {e}"))?).await?),
            None => None,
        };
        let listener = match http {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        let prepared = prepare(&args).await?;
        if let Some(path) = &prepared.key_path {
            reload_on_hangup(prepared.server.clone(), path.clone());
        }
        if let Some(l) = metrics {
            serve_metrics(prepared.server.clone(), l)?;
        }
        match listener {
            None => serve_stdio(prepared, &args).await,
            Some(l) => serve_http(prepared, l, &args).await,
        }
    });
    crate::otel::flush();
    done
}

/// The runtime of `tern serve` and `tern proxy`: `threads` workers, or
/// the core count. One thread asked for: the current-thread scheduler,
/// which skips the work-stealing machinery a lone worker never uses.
pub(crate) fn runtime(
    threads: Option<std::num::NonZeroUsize>,
) -> Result<tokio::runtime::Runtime, String> {
    let mut rt = match threads {
        Some(n) if n.get() == 1 => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n.get());
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    rt.enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// The most log lines waiting for the writer thread (about 5 MiB of
/// text); past it a request waits for room rather than a line being lost.
const LOG_LINES_QUEUED: usize = 16_384;

/// What the writer thread gathers before a write of its own.
const LOG_BUFFER: usize = 64 * 1024;

/// Installs the log subscriber. Lines are formatted where they happen and
/// written to stderr by a thread of their own, so a request never waits on
/// the write; the returned guard flushes what is queued when it drops, at
/// the end of `run`.
pub(crate) fn init_logging(
    format: LogFormat,
    default: &str,
    service: &'static str,
) -> tracing_appender::non_blocking::WorkerGuard {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // TERN_LOG, else RUST_LOG, else `default` (info: a line per request
    // and every refused state with its reason).
    let filter = ["TERN_LOG", "RUST_LOG"]
        .iter()
        .find_map(|v| tracing_subscriber::EnvFilter::try_from_env(v).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // Logs go to stderr only: stdout carries the protocol under --stdio.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(LOG_LINES_QUEUED)
        .thread_name("tern-log")
        // The writer thread drains every queued line into one buffer and
        // flushes it once per batch (and at exit): a write per batch, not
        // per line.
        .finish(std::io::BufWriter::with_capacity(
            LOG_BUFFER,
            std::io::stderr(),
        ));
    // Spans go to OpenTelemetry whatever the log level says.
    let otel = crate::otel::layer(service).unwrap_or_else(|e| {
        eprintln!("tern: {e}; no spans are exported");
        None
    });
    let Some(otel) = otel else {
        // The usual case: one global filter, so a span below the level is
        // never built (the request path pays nothing for it).
        let builder = tracing_subscriber::fmt()
            .with_writer(writer)
            .with_ansi(ansi)
            .with_env_filter(filter);
        let _ = match format {
            LogFormat::Text => builder.try_init(),
            LogFormat::Json => builder.json().with_current_span(true).try_init(),
        };
        return guard;
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi);
    let fmt = match format {
        LogFormat::Text => fmt.with_filter(filter).boxed(),
        LogFormat::Json => fmt
            .json()
            .with_current_span(true)
            .with_filter(filter)
            .boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    guard
}

/// The startup line: where it listens and what it runs with.
fn started(prepared: &Prepared, args: &ServeArgs, listen: &str) {
    let cfg = prepared.server.config();
    let keys = prepared
        .key_path
        .as_ref()
        .map_or_else(|| "ephemeral".to_owned(), |p| p.display().to_string());
    tracing::info!(
        listen,
        keys,
        replay = prepared.replay,
        resource_id = prepared.server.resource_id(),
        state_ttl_secs = cfg.state_ttl.as_secs(),
        max_rounds = cfg.max_rounds,
        instances = args.instances,
        metrics = args.metrics.as_deref().unwrap_or("off"),
        "tern serve started"
    );
}

/// SIGHUP reloads the key file, so a fleet rotates keys without restarts.
/// A file that does not load, or names another resource id, is refused and
/// the ring in use is kept.
fn reload_on_hangup(server: Server, path: PathBuf) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; the key file is not reloaded");
        return;
    };
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let loaded = crate::keys::read(&path).and_then(|kf| {
                if kf.resource_id != server.resource_id() {
                    return Err(format!(
                        "its resource id {} is not the one in use ({})",
                        kf.resource_id,
                        server.resource_id()
                    ));
                }
                kf.key_ring().map_err(|e| e.to_string())
            });
            match loaded {
                Ok(ring) => {
                    let active = ring.active_kid();
                    let kids = ring.kids();
                    server.replace_keys(ring);
                    tracing::info!(path = %path.display(), active, ?kids, "key file reloaded");
                }
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "key file not reloaded; the keys in use stay");
                }
            }
        }
    });
}

/// `--metrics ADDR`: Prometheus text at `/metrics`, on a listener of its
/// own so that it can stay off the public interface.
pub(crate) fn serve_metrics(
    server: Server,
    listener: tokio::net::TcpListener,
) -> Result<(), String> {
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let text = server.metrics().render_prometheus();
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    text,
                )
            }
        }),
    );
    tracing::info!(url = %format!("http://{local}/metrics"), "metrics");
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(())
}

/// Binds `addr` and serves until Ctrl-C.
pub(crate) async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))
}

pub(crate) async fn serve_http(
    prepared: Prepared,
    listener: tokio::net::TcpListener,
    args: &ServeArgs,
) -> Result<ExitCode, String> {
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    prepared.logins.set_base_url(format!("http://{local}"));
    let public_url = args
        .protect
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}/mcp"));
    let (auth, protected_resource) = crate::protect::protection(&args.protect, &public_url).await?;
    let options = HttpOptions {
        protected_resource,
        ..HttpOptions::default()
    };
    started(&prepared, args, &public_url);
    let server = prepared.server.clone();
    let app = tern::http::router(prepared.server, options, auth)
        .merge(workload::login_routes(prepared.logins));
    if args.log_format == LogFormat::Text {
        eprintln!("tern: serving {public_url}");
    }
    run_until_interrupted(listener, app, &args.budgets, server).await?;
    Ok(ExitCode::SUCCESS)
}

/// How long connections still open (a session's `GET` stream, a call
/// waiting for a person) may take to finish once the server is asked to
/// stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until Ctrl-C or SIGTERM (`tern serve`,
/// `tern proxy`), within the connection budgets: no new connection is
/// taken, those open get [`SHUTDOWN_GRACE`] to finish, and `run` then
/// flushes the logs.
pub(crate) async fn run_until_interrupted(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    budgets: &BudgetArgs,
    server: Server,
) -> Result<(), String> {
    let defaults = tern::http::ConnectionLimits::default();
    let limits = tern::http::ConnectionLimits {
        max_open: budgets.max_connections.unwrap_or(defaults.max_open),
        max_per_address: budgets
            .max_connections_per_address
            .unwrap_or(defaults.max_per_address),
        ..defaults
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serve = tern::http::serve_router(listener, app, limits, Some(server), async move {
        stop_requested().await;
        let _ = stop.send(());
    });
    tokio::select! {
        r = serve => r.map_err(|e| format!("server failed: {e}")),
        () = async {
            if stopped.await.is_ok() {
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => {
            tracing::warn!(grace_secs = SHUTDOWN_GRACE.as_secs(), "connections still open after the grace period are closed");
            Ok(())
        }
    }
}

/// Ctrl-C, or SIGTERM (what a service manager sends).
async fn stop_requested() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    tracing::info!("stopping");
}

async fn serve_stdio(prepared: Prepared, args: &ServeArgs) -> Result<ExitCode, String> {
    started(&prepared, args, "stdio");
    // The sign-in pages need a browser-reachable port of their own.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot open the sign-in port: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    prepared.logins.set_base_url(format!("http://{local}"));
    let pages = workload::login_routes(prepared.logins);
    tokio::spawn(async move { axum::serve(listener, pages).await });
    tern::stdio::serve(prepared.server, tern::stdio::StdioOptions::default())
        .await
        .map_err(|e| format!("stdio failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
