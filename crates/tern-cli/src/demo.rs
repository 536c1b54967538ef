//! `tern demo`: the reference server in this process on a free loopback
//! port, and the interactive client walked through the deploy flow, each
//! round printed as it happens.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Map, json};
use tern::client::InputKinds;
use tern::http::{Anonymous, HttpOptions};
use tern::types::CallToolResult;

use crate::call::{Reporter, Sink, drive, runtime};
use crate::provider::{self, Settings, TerminalProvider};
use crate::ui::{bold, content_text};
use crate::{DemoArgs, ServeArgs, TargetArgs, serve, target, workload};

/// `tern demo`.
pub(crate) fn run(args: DemoArgs) -> Result<ExitCode, String> {
    let dir = TempDir::new()?;
    let r = runtime()?.block_on(demo(args, &dir));
    drop(dir);
    r
}

/// A private directory for the demo's key file, removed at the end.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let name: String = tern::seal::hex(&tern::seal::random_bytes::<8>());
        let path = std::env::temp_dir().join(format!("tern-demo-{name}"));
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serves, calls `deploy`, prints every round and the result.
async fn demo(args: DemoArgs, dir: &TempDir) -> Result<ExitCode, String> {
    let interactive = !args.yes && provider::stdin_is_terminal();
    // A fresh key file and replay store in a private temp dir, removed at
    // the end: the demo leaves nothing behind. The store is SQLite, not
    // memory, because the server refuses single-use routes (redeem) with a
    // persistent key and a store that forgets (SECURITY.md §3.9).
    let serve_args = ServeArgs {
        http: Some("127.0.0.1:0".to_owned()),
        stdio: false,
        keys: Some(dir.0.join("keys.json")),
        create_keys: true,
        ephemeral_keys: false,
        replay: Some(format!("sqlite:{}", dir.0.join("replay.db").display())),
        state_ttl: None,
        clock_skew: None,
        max_rounds: None,
        threads: None,
        resource_id: None,
        instances: 1,
        task_lease_secs: None,
        protect: crate::ProtectArgs::default(),
        budgets: crate::BudgetArgs::default(),
        metrics: None,
        log_format: crate::LogFormat::Text,
    };
    let prepared = serve::prepare(&serve_args).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    prepared.logins.set_base_url(format!("http://{local}"));
    let app = tern::http::router(prepared.server, HttpOptions::default(), Arc::new(Anonymous))
        .merge(workload::login_routes(prepared.logins));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://{local}/mcp");

    println!(
        "{} the reference server is running in this process at {url}",
        bold("tern demo:")
    );
    if !interactive {
        let how = if args.yes {
            "answering with --yes"
        } else {
            "no terminal: answering as --yes would"
        };
        println!(
            "{} {how} (approve the form, share the current directory)",
            bold("tern demo:")
        );
    }
    let roots = provider::roots(&[])?;
    let provider = TerminalProvider::new(Settings {
        kinds: InputKinds::NONE.with_form().with_url().with_roots(),
        answers: None,
        yes: !interactive,
        interactive,
        sampler: None,
        roots,
        roots_chosen: false,
        max_tokens: provider::DEFAULT_MAX_TOKENS,
        server_label: local.to_string(),
    });
    let target = TargetArgs {
        url: Some(url),
        cmd: None,
        config: None,
        spawn: None,
        name: None,
        era: crate::EraArg::Auto,
        auth: crate::AuthArgs::default(),
    };
    let conn = target::connect(&target, provider).await?;
    println!(
        "{} tools/call deploy {}",
        bold("calling:"),
        json!({"environment": "staging"})
    );
    let rep = Reporter::new(Sink::Stdout, &conn.label, "tools/call deploy");
    let mut arguments = Map::new();
    arguments.insert("environment".into(), json!("staging"));
    let client = &conn.client;
    let r: Result<CallToolResult, _> = drive(&rep, |opts| async move {
        client.call_tool_with("deploy", arguments, &opts).await
    })
    .await;
    server.abort();
    match r {
        Ok(result) => {
            let text: Vec<String> = result.content.iter().map(content_text).collect();
            if result.is_error() {
                println!("{} {}", bold("tool error:"), text.join("\n"));
                Ok(ExitCode::FAILURE)
            } else {
                println!("{} {}", bold("result:"), text.join("\n"));
                Ok(ExitCode::SUCCESS)
            }
        }
        Err(e) => Err(e.to_string()),
    }
}
