//! The rooms server as one instance of a fleet behind a load balancer:
//! keys from one shared key file, single use and tasks in one Redis.
//!
//! ```sh
//! tern keys new /etc/rooms/keys.json                       # once, for every instance
//! cargo run --release -p tern --example fleet_redis -- redis://10.0.0.5:6379 /etc/rooms/keys.json 0.0.0.0:8090
//! ```
//!
//! Run it on as many hosts as needed, each with the same Redis and the same
//! key file: a state sealed by one instance opens on any other (the key
//! ring and the resource id are the key file's), a single-use flow
//! consumed on one stays consumed on all (the replay store), and a task
//! created on one is polled, answered and cancelled through any (the task
//! store), while it runs on the instance that created it. The builder is
//! told how many instances there are and refuses to start on stores that
//! are not shared.

// An example says what it does.
#![allow(clippy::print_stderr)]

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use tern::prelude::*;
use tern::replay::{RedisOptions, RedisReplayStore, RedisTaskStore};
use tern::seal::KeyFile;
use tern::server::{Outcome, Task, TaskScope, TaskSupport};

#[path = "stdio_form_confirm.rs"]
#[allow(dead_code)] // its `main`: served over HTTP here
mod rooms;

/// A long check of every room, then a go-ahead asked during the task: the
/// check runs once, on the instance that created the task, while the
/// client polls and answers through whichever instance it reaches.
async fn audit(task: Task) -> Outcome {
    task.run(|scope: TaskScope| async move {
        scope.status("checking every room");
        tokio::time::sleep(Duration::from_secs(5)).await;
        scope
            .ask(Need::confirm("publish", "The audit is done. Publish it?"))
            .await?
            .confirmed("the audit")?;
        Ok::<_, Error>(ToolResult::text("audit published"))
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn StdError>> {
    let mut args = std::env::args().skip(1);
    let (Some(redis), Some(keys), addr) = (args.next(), args.next(), args.next()) else {
        return Err("usage: fleet_redis REDIS_URL KEY_FILE [ADDR]".into());
    };
    let addr = addr.unwrap_or_else(|| "127.0.0.1:8090".into());
    let kf = KeyFile::from_json(&std::fs::read_to_string(&keys)?)?;
    // Both stores refuse a Redis that may evict keys (an evicted marker
    // would let a replay through).
    let replay = RedisReplayStore::connect(&redis, RedisOptions::default()).await?;
    let tasks = RedisTaskStore::connect(&redis, RedisOptions::default()).await?;
    let server = rooms::builder()
        .tool_def(
            ToolDef::new("audit", "Audits every room, then asks to publish", audit)
                .task(TaskSupport::Optional),
        )
        .keys(kf.key_ring()?)
        .resource_id(&kf.resource_id)
        .replay_store(Arc::new(replay))
        .task_store(Arc::new(tasks))
        // More than one: the builder checks that both stores are shared.
        .instances(2)
        .build()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("serving http://{addr}/mcp, one instance of the fleet on {redis}");
    tern::http::serve(listener, server, tern::http::HttpOptions::default()).await?;
    Ok(())
}
