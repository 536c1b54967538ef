//! The `stdio_form_confirm` server as a deployment runs it: Streamable HTTP,
//! a key file that outlives restarts, and single use remembered in SQLite.
//!
//! ```sh
//! cargo run --release -p tern --example http_sqlite -- /var/lib/rooms   # serves http://127.0.0.1:8090/mcp
//! tern call --url http://127.0.0.1:8090/mcp tool book_room city=Lisbon
//! ```
//!
//! The directory (default: `./rooms-data`) holds `keys.json` (mode 0600,
//! created on the first start) and `replay.db`. A state sealed before a
//! restart still opens after it, and one consumed before it stays
//! consumed: the server refuses to start a single-use route on a store
//! that would forget across restarts with keys that would not.

// An example says what it does.
#![allow(clippy::print_stderr)]

use std::error::Error;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::Arc;

use tern::replay::{SqliteOptions, SqliteReplayStore};
use tern::seal::KeyFile;

#[path = "stdio_form_confirm.rs"]
#[allow(dead_code)] // its `main`: served over HTTP here
mod rooms;

/// The key file at `path`, created with one fresh key when there is none.
/// Anyone who can read it can forge states: it is written 0600.
fn key_file(path: &Path) -> Result<KeyFile, Box<dyn Error>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(KeyFile::from_json(&text)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let kf = KeyFile::generate("urn:example:rooms")?;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)?;
            f.write_all(kf.to_json()?.as_bytes())?;
            Ok(kf)
        }
        Err(e) => Err(e.into()),
    }
}

/// The rooms server with its keys and replay store under `dir`.
pub(crate) fn server(dir: &Path) -> Result<tern::server::Server, Box<dyn Error>> {
    std::fs::create_dir_all(dir)?;
    let kf = key_file(&dir.join("keys.json"))?;
    let store = SqliteReplayStore::open(dir.join("replay.db"), SqliteOptions::default())?;
    Ok(rooms::builder()
        .keys(kf.key_ring()?)
        .resource_id(&kf.resource_id)
        .replay_store(Arc::new(store))
        .build()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "rooms-data".into());
    let server = server(Path::new(&dir))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8090").await?;
    eprintln!("serving http://127.0.0.1:8090/mcp with its data in {dir}");
    tern::http::serve(listener, server, tern::http::HttpOptions::default()).await?;
    Ok(())
}
