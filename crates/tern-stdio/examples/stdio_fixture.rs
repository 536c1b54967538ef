//! A small stdio MCP server used by this crate's tests as a real child
//! process.
//!
//! Usage: `stdio_fixture [--max-line BYTES] [--grace-ms MS]`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tern_proto::Principal;
use tern_server::{
    Ask, Caller, ElicitForm, Elicited, Error, Need, Progress, RawArgs, Server, ToolDef, ToolResult,
};
use tern_stdio::StdioOptions;

#[derive(Debug, Deserialize)]
struct NameForm {
    name: String,
}

impl ElicitForm for NameForm {
    fn requested_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Your name"}},
            "required": ["name"]
        })
    }
}

async fn echo(RawArgs(args): RawArgs) -> ToolResult {
    let text = args.get("text").and_then(Value::as_str).unwrap_or("");
    ToolResult::text(text)
}

/// Reports progress, then sleeps `ms` milliseconds (default 3000) before
/// answering, so a test can cancel it in flight.
async fn slow(progress: Progress, RawArgs(args): RawArgs) -> ToolResult {
    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(3000);
    progress.notify(0.0, Some(2.0), Some("started")).await;
    tokio::time::sleep(Duration::from_millis(ms / 2)).await;
    progress.notify(1.0, Some(2.0), Some("halfway")).await;
    tokio::time::sleep(Duration::from_millis(ms - ms / 2)).await;
    ToolResult::text(format!("slept {ms} ms"))
}

async fn ask_name(ask: Ask) -> Result<ToolResult, Error> {
    match ask.form::<NameForm>("user_name", "What is your name?")? {
        Elicited::Accepted(f) => Ok(ToolResult::text(format!("Hello, {}!", f.name))),
        Elicited::Declined | Elicited::Cancelled => Err(Error::tool("no name given")),
    }
}

async fn whoami(Caller(p): Caller) -> ToolResult {
    match p {
        Principal::Stdio {
            uid,
            credential_identity,
            ..
        } => ToolResult::text(format!("stdio uid={uid} account={credential_identity}")),
        _ => ToolResult::text("not stdio"),
    }
}

async fn added() -> ToolResult {
    ToolResult::text("added at run time")
}

async fn add_tool(server: Server) -> Result<ToolResult, Error> {
    server
        .add_tool(ToolDef::new("added", "Added at run time", added))
        .map_err(|e| Error::tool(e.to_string()))?;
    Ok(ToolResult::text("tool added"))
}

/// Asks for the client's roots and names them.
async fn list_roots(ask: Ask) -> Result<ToolResult, Error> {
    let roots = ask.all(Need::roots("roots"))?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(ToolResult::text(uris.join(",")))
}

/// Panics, so a test can see the request answered -32603 and serving go on.
async fn boom() -> ToolResult {
    panic!("the boom tool always panics")
}

fn arg<T: std::str::FromStr>(name: &str) -> Option<T> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let server = Server::builder("stdio-fixture", "1.0.0")
        .tool("echo", "Returns its text argument", echo)
        .tool("slow", "Reports progress and sleeps", slow)
        .tool("ask_name", "Asks for a name through a form", ask_name)
        .tool("whoami", "Describes the caller", whoami)
        .tool("add_tool", "Adds a tool at run time", add_tool)
        .tool("roots", "Names the client's roots", list_roots)
        .tool("boom", "Panics", boom)
        .build()
        .map_err(std::io::Error::other)?;
    let mut options = StdioOptions {
        credential_identity: "fixture-account".into(),
        ..StdioOptions::default()
    };
    if let Some(n) = arg("--max-line") {
        options.max_line_bytes = n;
    }
    if let Some(ms) = arg("--grace-ms") {
        options.shutdown_grace = Duration::from_millis(ms);
    }
    tern_stdio::serve(server, options).await
}
