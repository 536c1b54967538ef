//! `tern serve --stdio` over a pipe: complete `deploy` flows (round 1 asks
//! a form and the roots with sealed state, round 2 answers), one at a time
//! (`c1`) and eight in flight (`c8`), measured per flow. The server is the
//! real binary as a child process, so this is the stdio figure of
//! bench/README.md ("The stages").

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

struct Peer {
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
    next_id: u64,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {"form": {}}, "roots": {}, "sampling": {}}
    })
}

impl Peer {
    fn start() -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tern"))
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tern serve --stdio starts");
        let to = BufWriter::new(child.stdin.take().expect("stdin"));
        let from = BufReader::new(child.stdout.take().expect("stdout"));
        Peer {
            child,
            to,
            from,
            next_id: 0,
        }
    }

    fn send(&mut self, params: &Value) -> u64 {
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                         "params": params});
        serde_json::to_writer(&mut self.to, &msg).expect("writes");
        self.to.write_all(b"\n").expect("writes");
        self.next_id
    }

    /// The next response, by id.
    fn recv(&mut self) -> (u64, Value) {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.from.read_line(&mut line).expect("reads") > 0,
                "server exited"
            );
            let v: Value = serde_json::from_str(&line).expect("a JSON line");
            if let Some(id) = v["id"].as_u64() {
                return (id, v);
            }
        }
    }

    /// `n` flows with all of them in flight at once.
    fn flows(&mut self, n: usize) {
        let first = json!({"_meta": meta(), "name": "deploy",
                           "arguments": {"environment": "prod"}});
        for _ in 0..n {
            self.send(&first);
        }
        self.to.flush().expect("flushes");
        let mut states = Vec::with_capacity(n);
        for _ in 0..n {
            let (_, r) = self.recv();
            assert_eq!(r["result"]["resultType"], "input_required", "{r}");
            states.push(r["result"]["requestState"].clone());
        }
        for state in states {
            let mut second = first.clone();
            second["requestState"] = state;
            second["inputResponses"] = json!({
                "deployment_approval": {"action": "accept", "content": {"approved": true}},
                "workspace_roots": {"roots": [{"uri": "file:///tmp/work", "name": "work"}]}
            });
            self.send(&second);
        }
        self.to.flush().expect("flushes");
        for _ in 0..n {
            let (_, r) = self.recv();
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
        }
    }
}

fn stdio(c: &mut Criterion) {
    let mut peer = Peer::start();
    peer.flows(8);
    let mut g = c.benchmark_group("stdio_deploy_flow");
    g.throughput(Throughput::Elements(1));
    g.bench_function("c1", |b| b.iter(|| peer.flows(1)));
    g.bench_function("c8", |b| {
        b.iter_custom(|iters| {
            // Per flow: batches of eight in flight.
            let batches = iters.div_ceil(8).max(1);
            #[expect(
                clippy::disallowed_methods,
                reason = "a benchmark times the wall clock by design"
            )]
            let start = Instant::now();
            for _ in 0..batches {
                peer.flows(8);
            }
            let per_flow = start.elapsed() / u32::try_from(batches * 8).unwrap_or(u32::MAX);
            per_flow * u32::try_from(iters).unwrap_or(u32::MAX)
        });
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = stdio
}
criterion_main!(benches);
