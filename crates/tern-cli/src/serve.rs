//! `tern serve`: the reference workload over Streamable HTTP or stdio, with
//! the secure defaults of SECURITY.md (a key file and a durable replay
//! store over HTTP; an ephemeral key and a memory store over stdio).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tern::http::{
    Anonymous, Authenticate, HttpOptions, JwtAuthenticator, JwtKeys, ProtectedResource, TokenFile,
};
use tern::replay::{RedisOptions, RedisReplayStore, SqliteOptions, SqliteReplayStore};
use tern::seal::{KeyFile, KeyRing, MemoryReplayStore, ReplayStore};
use tern::server::{Config, Server};

use crate::ServeArgs;
use crate::workload::{self, Logins};

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

/// Loads the key file, creating it (mode 0600) on first run.
pub(crate) fn load_or_create_keys(path: &std::path::Path) -> Result<KeyFile, String> {
    if path.exists() {
        return crate::keys::read(path);
    }
    let rid = format!(
        "urn:tern:{}",
        tern::seal::random_bytes::<16>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let kf = KeyFile::generate(rid).map_err(|e| e.to_string())?;
    crate::keys::write(path, &kf, true)?;
    tracing::info!(path = %path.display(), "created key file");
    Ok(kf)
}

async fn replay_store(spec: &str) -> Result<Arc<dyn ReplayStore>, String> {
    if spec == "memory" {
        return Ok(Arc::new(MemoryReplayStore::new()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteReplayStore::open(path, SqliteOptions::default())
            .map_err(|e| format!("cannot open replay store {path}: {e}"))?;
        return Ok(Arc::new(store));
    }
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        let store = RedisReplayStore::connect(spec, RedisOptions::default())
            .await
            .map_err(|e| format!("cannot use Redis at {spec}: {e}"))?;
        return Ok(Arc::new(store));
    }
    Err(format!(
        "unknown replay store {spec:?}: use memory, sqlite:PATH or redis://HOST:PORT"
    ))
}

/// Everything `serve` resolves before it binds.
pub(crate) struct Prepared {
    pub(crate) server: Server,
    pub(crate) logins: Arc<Logins>,
}

/// Builds the reference server from the flags.
pub(crate) async fn prepare(args: &ServeArgs) -> Result<Prepared, String> {
    let (keys, file_rid): (Option<KeyRing>, Option<String>) = match (&args.keys, args.stdio) {
        (Some(path), _) => {
            let kf = load_or_create_keys(path)?;
            (
                Some(
                    kf.key_ring()
                        .map_err(|e| format!("bad key file {}: {e}", path.display()))?,
                ),
                Some(kf.resource_id),
            )
        }
        // stdio: a random per-process key; a restart invalidates every state.
        (None, true) => (None, None),
        (None, false) => {
            let path = data_dir()?.join("keys.json");
            let kf = load_or_create_keys(&path)?;
            (
                Some(
                    kf.key_ring()
                        .map_err(|e| format!("bad key file {}: {e}", path.display()))?,
                ),
                Some(kf.resource_id),
            )
        }
    };
    let replay = match (&args.replay, args.stdio) {
        (Some(spec), _) => replay_store(spec).await?,
        (None, true) => Arc::new(MemoryReplayStore::new()),
        (None, false) => {
            let dir = data_dir()?;
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            replay_store(&format!("sqlite:{}", dir.join("replay.db").display())).await?
        }
    };
    let mut config = Config::default();
    if let Some(t) = args.state_ttl {
        config.state_ttl = Duration::from_secs(t);
    }
    if let Some(r) = args.max_rounds {
        config.max_rounds = r;
    }
    let logins = Arc::new(Logins::default());
    let mut builder = Server::builder("tern", env!("CARGO_PKG_VERSION"))
        .config(config)
        .replay_store(replay)
        .instances(args.instances);
    if let Some(k) = keys {
        builder = builder.keys(k);
    }
    if let Some(rid) = args.resource_id.clone().or(file_rid) {
        builder = builder.resource_id(&rid);
    }
    let server = workload::server(builder, logins.clone())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Prepared { server, logins })
}

pub(crate) fn run(args: ServeArgs) -> Result<ExitCode, String> {
    init_logging();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async move {
        let prepared = prepare(&args).await?;
        if args.stdio {
            serve_stdio(prepared).await
        } else {
            let addr = args.http.as_deref().unwrap_or("127.0.0.1:8080");
            serve_http(prepared, addr, &args).await
        }
    })
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TERN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Logs go to stderr only: stdout carries the protocol under --stdio.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

/// The authenticator and resource metadata `--auth` asks for.
async fn protection(
    args: &ServeArgs,
    public_url: &str,
) -> Result<(Arc<dyn Authenticate>, Option<ProtectedResource>), String> {
    let Some(mode) = &args.auth else {
        return Ok((Arc::new(Anonymous), None));
    };
    let mut tool_scopes: HashMap<String, Vec<String>> = HashMap::new();
    for t in &args.tool_scopes {
        let (tool, scope) = t
            .split_once('=')
            .ok_or_else(|| format!("--tool-scope {t:?}: expected TOOL=SCOPE"))?;
        tool_scopes
            .entry(tool.to_owned())
            .or_default()
            .push(scope.to_owned());
    }
    let mut all: Vec<String> = args.scopes.clone();
    all.extend(tool_scopes.values().flatten().cloned());
    all.sort();
    all.dedup();
    let issuer = || {
        args.issuer
            .clone()
            .ok_or_else(|| format!("--auth {mode} needs --issuer"))
    };
    let jwt = |keys: JwtKeys| -> Result<Arc<dyn Authenticate>, String> {
        let issuer = issuer()?;
        let resource = ProtectedResource {
            resource: public_url.to_owned(),
            ..ProtectedResource::default()
        };
        Ok(Arc::new(
            JwtAuthenticator::new(keys, &issuer, public_url)
                .resource_metadata(&resource.metadata_url())
                // What every request needs; a tool's own scopes come with
                // its 403, so a client steps up only when it must.
                .scopes(&args.scopes),
        ))
    };
    let auth: Arc<dyn Authenticate> = match mode.split_once(':') {
        Some(("jwks", url)) => {
            let text = reqwest::get(url)
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(|e| format!("cannot fetch the JWKS at {url}: {e}"))?
                .text()
                .await
                .map_err(|e| format!("cannot read the JWKS at {url}: {e}"))?;
            jwt(JwtAuthenticator::jwks(&text)?)?
        }
        Some(("jwks-file", path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the JWKS file {path}: {e}"))?;
            jwt(JwtAuthenticator::jwks(&text)?)?
        }
        Some(("hs256-env", var)) => {
            let secret = std::env::var(var).map_err(|_| format!("--auth: {var} is not set"))?;
            if secret.len() < 32 {
                return Err(format!(
                    "--auth: the secret in {var} must be at least 32 bytes"
                ));
            }
            jwt(JwtKeys::Hs256(secret.into_bytes()))?
        }
        Some(("tokens", path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the token file {path}: {e}"))?;
            Arc::new(TokenFile::parse(&text)?)
        }
        _ => {
            return Err(format!(
                "--auth {mode:?}: expected jwks:URL, jwks-file:PATH, hs256-env:VAR or tokens:FILE"
            ));
        }
    };
    let metadata = args.issuer.as_ref().map(|iss| ProtectedResource {
        resource: public_url.to_owned(),
        authorization_servers: vec![iss.clone()],
        scopes_supported: all.clone(),
        required_scopes: args.scopes.clone(),
        tool_scopes,
    });
    Ok((auth, metadata))
}

/// Binds `addr` and serves until Ctrl-C.
pub(crate) async fn serve_http(
    prepared: Prepared,
    addr: &str,
    args: &ServeArgs,
) -> Result<ExitCode, String> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| format!("not an address: {addr} (expected HOST:PORT)"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    prepared.logins.set_base_url(format!("http://{local}"));
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}/mcp"));
    let (auth, protected_resource) = protection(args, &public_url).await?;
    let options = HttpOptions {
        protected_resource,
        ..HttpOptions::default()
    };
    let app = tern::http::router(prepared.server, options, auth)
        .merge(workload::login_routes(prepared.logins));
    eprintln!("tern: serving {public_url}");
    // Responses go out as soon as they are written (no Nagle delay behind
    // an unacknowledged segment).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("server failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve_stdio(prepared: Prepared) -> Result<ExitCode, String> {
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
