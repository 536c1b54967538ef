//! `tern proxy`: one endpoint in front of MCP servers of either era, for
//! clients of either era (the `tern-proxy` crate), with the operations of
//! `tern serve`: the startup line, request logs, metrics.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tern::client::Client;
use tern::http::{HttpOptions, HttpTransport};
use tern::proxy::{Connect, Proxy, ProxyOptions};
use tern::server::Server;
use tern::stdio::StdioTransport;
use tern::types::Implementation;

use crate::servers::Named;
use crate::{AuthArgs, ProxyArgs};

fn info() -> Implementation {
    Implementation::new("tern-proxy", env!("CARGO_PKG_VERSION"))
}

/// An upstream spawned as a child process; spawned again after it exits.
fn spawned(program: String, args: Vec<String>, env: Vec<(String, String)>) -> Connect {
    Arc::new(move || {
        let (program, args, env) = (program.clone(), args.clone(), env.clone());
        Box::pin(async move {
            crate::exit::find_program(&program)?;
            let mut command = tokio::process::Command::new(&program);
            command.args(&args).envs(env);
            let transport = StdioTransport::spawn(command)
                .map_err(|e| format!("cannot start {program:?}: {e}"))?;
            Ok(Client::builder(transport).info(info()))
        })
    })
}

/// An upstream reached over Streamable HTTP with `auth` (headers, a
/// bearer token, or the kept sign-in; never a browser: a proxy has no one
/// at its terminal).
fn reached(url: String, auth: AuthArgs) -> Result<Connect, String> {
    crate::exit::check_url("the upstream URL", &url)?;
    // Checked now, so a malformed header fails at startup.
    crate::signin::http_options(&url, &auth, false)?;
    Ok(Arc::new(move || {
        let (url, auth) = (url.clone(), auth.clone());
        Box::pin(async move {
            let options = crate::signin::http_options(&url, &auth, false)?;
            let transport =
                HttpTransport::with_options(&url, options).map_err(|e| format!("{url}: {e}"))?;
            Ok(Client::builder(transport).info(info()))
        })
    }))
}

/// The upstreams the flags name, with their names.
fn upstreams(args: &ProxyArgs) -> Result<Vec<(String, Connect)>, String> {
    if let Some(url) = &args.upstream {
        return Ok(vec![(
            "upstream".to_owned(),
            reached(url.clone(), args.auth.clone())?,
        )]);
    }
    if let Some(cmd) = &args.upstream_cmd {
        let words = crate::target::split_command(cmd)?;
        let (program, rest) = words
            .split_first()
            .ok_or("--upstream-cmd is empty: give the command that starts the server")?;
        return Ok(vec![(
            "upstream".to_owned(),
            spawned(program.clone(), rest.to_vec(), Vec::new()),
        )]);
    }
    let path = args.config.as_deref();
    let (file, named) = crate::servers::load(path)?;
    let file = file.map_or_else(String::new, |p| p.display().to_string());
    if named.is_empty() {
        return Err(format!("{file}: \"mcpServers\" names no server"));
    }
    named
        .into_iter()
        .map(|(name, server)| {
            let connect = match server {
                Named::Stdio { command, args, env } => {
                    spawned(command, args, env.into_iter().collect())
                }
                Named::Http { url, headers } => {
                    let auth = AuthArgs {
                        headers: headers.iter().map(|(k, v)| format!("{k}: {v}")).collect(),
                        ..args.auth.clone()
                    };
                    reached(url, auth).map_err(|e| format!("{file}: server {name:?}: {e}"))?
                }
            };
            Ok((name, connect))
        })
        .collect()
}

fn options(args: &ProxyArgs) -> Result<ProxyOptions, String> {
    if args.pending_ttl == 0
        || args.upstream_timeout == 0
        || args.max_pending == 0
        || args.max_round_bytes == 0
    {
        return Err(
            "--pending-ttl, --upstream-timeout, --max-pending and --max-round-bytes must be at least 1"
                .to_owned(),
        );
    }
    if let Some(n) = args.max_pending_per_principal
        && (n == 0 || n > args.max_pending)
    {
        return Err(format!(
            "--max-pending-per-principal must be between 1 and --max-pending ({})",
            args.max_pending
        ));
    }
    Ok(ProxyOptions {
        pending_ttl: Duration::from_secs(args.pending_ttl),
        max_pending: args.max_pending,
        max_pending_per_principal: args.max_pending_per_principal,
        max_round_bytes: args.max_round_bytes,
        upstream_timeout: Duration::from_secs(args.upstream_timeout),
    })
}

pub(crate) fn run(args: ProxyArgs) -> Result<ExitCode, String> {
    let _log = crate::serve::init_logging(
        args.log_format,
        if args.stdio { "warn" } else { "info" },
        "tern-proxy",
    );
    let rt = crate::serve::runtime(args.threads)?;
    let done = rt.block_on(async move {
        let http = match (&args.http, args.stdio) {
            (_, true) => None,
            (Some(a), false) => Some(crate::serve::resolve(a).await?),
            (None, false) => Some(SocketAddr::from(([127, 0, 0, 1], 8080))),
        };
        let upstreams = upstreams(&args)?;
        let mut config = crate::serve::limits(args.state_ttl, args.clock_skew, args.max_rounds)?;
        crate::serve::budgets(&args.budgets, &mut config)?;
        let options = options(&args)?;
        let metrics = match &args.metrics {
            Some(a) => Some(
                crate::serve::bind(
                    crate::serve::resolve(a)
                        .await
                        .map_err(|e| format!("--metrics: {e}"))?,
                )
                .await?,
            ),
            None => None,
        };
        let listener = match http {
            Some(addr) => Some(crate::serve::bind(addr).await?),
            None => None,
        };
        let mut builder = Server::builder("tern-proxy", env!("CARGO_PKG_VERSION")).config(config);
        if let Some(path) = &args.keys {
            let kf = crate::keys::read(path)?;
            let ring = kf
                .key_ring()
                .map_err(|e| format!("bad key file {}: {e}", path.display()))?;
            builder = builder.keys(ring).resource_id(&kf.resource_id);
        }
        let names: Vec<String> = upstreams.iter().map(|(n, _)| n.clone()).collect();
        let (max_pending, per_principal) = (options.max_pending, options.per_principal());
        let mut proxy = Proxy::builder(builder).options(options);
        for (name, connect) in upstreams {
            proxy = proxy.upstream(&name, connect);
        }
        let proxy = proxy.build().map_err(|e| e.to_string())?;
        let unreachable = proxy.sync().await;
        tokio::spawn(proxy.clone().maintain());
        if let Some(l) = metrics {
            crate::serve::serve_metrics(proxy.server(), l)?;
        }
        let listen = match &listener {
            Some(l) => format!("http://{}/mcp", l.local_addr().map_err(|e| e.to_string())?),
            None => "stdio".to_owned(),
        };
        tracing::info!(
            listen,
            upstreams = names.join(","),
            unreachable = unreachable.len(),
            keys = args
                .keys
                .as_ref()
                .map_or_else(|| "ephemeral".to_owned(), |p| p.display().to_string()),
            max_rounds = proxy.server().config().max_rounds,
            max_pending,
            per_principal,
            metrics = args.metrics.as_deref().unwrap_or("off"),
            "tern proxy started"
        );
        match listener {
            None => {
                tern::stdio::serve(proxy.server(), tern::stdio::StdioOptions::default())
                    .await
                    .map_err(|e| format!("stdio failed: {e}"))?;
            }
            Some(listener) => {
                if args.log_format == crate::LogFormat::Text {
                    eprintln!("tern: proxying {} at {listen}", names.join(", "));
                }
                let public_url = args.protect.public_url.clone().unwrap_or(listen.clone());
                let (auth, protected_resource) =
                    crate::protect::protection(&args.protect, &public_url).await?;
                let options = HttpOptions {
                    protected_resource,
                    ..HttpOptions::default()
                };
                let app = tern::http::router(proxy.server(), options, auth);
                crate::serve::run_until_interrupted(listener, app, &args.budgets, proxy.server())
                    .await?;
            }
        }
        Ok(ExitCode::SUCCESS)
    });
    crate::otel::flush();
    done
}
