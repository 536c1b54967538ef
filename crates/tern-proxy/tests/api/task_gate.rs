//! The task gate through the proxy (EXT-2): an upstream's task-required
//! tool is refused to a 2025-11-25 client by the proxy's own dispatch,
//! the one every era passes, before anything reaches the upstream.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tern_server::{Error, Server, Sink, Task, TaskScope, TaskSupport, ToolDef, ToolResult};
use tern_testkit::transport::Direct;

use super::common::{connect, inbound, legacy_session, parse, proxy_of, quick};

const EXT: &str = "io.modelcontextprotocol/tasks";

#[tokio::test]
async fn an_upstream_task_required_tool_is_refused_to_a_2025_11_25_client() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let handler = move |task: Task| {
        let runs = counted.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(
                task.run(|_: TaskScope| async { Ok::<_, Error>(ToolResult::text("built")) }),
            )
        }
    };
    let upstream = Server::builder("upstream", "1.0.0").tool_def(
        ToolDef::new("build", "builds, as a task only", handler).task(TaskSupport::Required),
    );
    let (direct, _clock) = Direct::new(upstream);
    let proxy = proxy_of(vec![("up", connect(direct))], quick()).await;
    let server = proxy.server();
    let session = legacy_session(&server).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "build", "arguments": {}}});
    let refused = parse(
        server
            .handle_in(&session, inbound(&call), Sink::none())
            .await,
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        format!(
            "this tool needs the client extension {EXT}, which a 2025-11-25 session cannot take"
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the upstream never ran it");
}
