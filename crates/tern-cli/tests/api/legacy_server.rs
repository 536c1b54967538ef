//! `tern call` and `tern discover` against a 2025-11-25 server on the real
//! TypeScript SDK (`interop/ts/legacy-server.mjs`, SDK 1.32.x), over stdio
//! and HTTP. tern probes first, with `server/discover` on stdio (COMPAT-C5)
//! and a modern POST on HTTP (COMPAT-C8); the SDK answers `-32601` on stdio
//! and a plain `400` with `-32000` on HTTP, neither a recognised modern
//! error, so tern opens an `initialize` session and answers the server's own
//! elicitation, sampling and roots requests. The era it found is remembered
//! per server (COMPAT-C10). Compiled as ignored where the SDK is not
//! installed (see build.rs).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::common::tern_bin;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/ts/legacy-server.mjs")
}

/// The TypeScript server: spawned by tern per run over stdio, or one child
/// serving HTTP for the whole test.
enum Peer {
    Stdio(String),
    Http { child: Child, url: String },
}

impl Peer {
    fn stdio() -> Peer {
        Peer::Stdio(format!("node '{}' stdio", script().display()))
    }

    fn http() -> Peer {
        let mut child = Command::new("node")
            .arg(script())
            .args(["http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs");
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        let Some(port) = line.trim().strip_prefix("listening ").map(str::to_owned) else {
            let _ = child.kill();
            panic!("the server did not start: {line:?}");
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        Peer::Http { child, url }
    }

    fn target(&self) -> Vec<String> {
        match self {
            Peer::Stdio(cmd) => vec!["--cmd".to_owned(), cmd.clone()],
            Peer::Http { url, .. } => vec![url.clone()],
        }
    }

    /// The server's entry in tern's era cache.
    fn cache_key(&self) -> String {
        match self {
            Peer::Stdio(cmd) => format!("cmd:{cmd}"),
            Peer::Http { url, .. } => format!("url:{url}"),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Peer::Http { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A peer and a home for tern: its own cache and data directories, so no
/// era learned by another test (or by the person running them) is a hint.
struct Case {
    peer: Peer,
    home: TempDir,
}

impl Case {
    fn new(peer: Peer) -> Case {
        Case {
            peer,
            home: TempDir::new().unwrap(),
        }
    }

    fn home(&self) -> PathBuf {
        std::fs::canonicalize(self.home.path()).unwrap()
    }

    /// `tern SUB TARGET ARGS…` with no terminal: (exit code, stdout, stderr).
    fn tern(&self, sub: &str, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(tern_bin())
            .arg(sub)
            .args(self.peer.target())
            .args(args)
            .env("XDG_CACHE_HOME", self.home.path().join("cache"))
            .env("XDG_DATA_HOME", self.home.path().join("data"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn call(&self, args: &[&str]) -> (i32, String, String) {
        self.tern("call", args)
    }

    /// Writes an answers file; a legacy server's requests have no input
    /// keys, so entries are keyed by method.
    fn answers(&self, json: &str) -> String {
        let p = self.home.path().join("answers.json");
        std::fs::write(&p, json).unwrap();
        p.display().to_string()
    }
}

/// `--json` output without the round timings, which vary.
fn without_timings(stdout: &str) -> Value {
    let mut v: Value = serde_json::from_str(stdout).expect("tern call --json prints JSON");
    for round in v["rounds"].as_array_mut().into_iter().flatten() {
        if let Some(r) = round.as_object_mut() {
            r.remove("ms");
        }
    }
    v
}

fn eras(home: &Path) -> Value {
    let text = std::fs::read_to_string(home.join("cache/tern/eras.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Each scenario runs against both transports.
macro_rules! both {
    ($($name:ident => $body:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            #[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
            fn stdio() {
                ($body)(Case::new(Peer::stdio()));
            }
            #[test]
            #[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
            fn http() {
                ($body)(Case::new(Peer::http()));
            }
        }
    )*};
}

both! {
    discover_finds_a_legacy_server => |c: Case| {
        let (code, stdout, stderr) = c.tern("discover", &["--json"]);
        assert_eq!(code, 0, "{stderr}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["era"], "legacy");
        assert_eq!(v["supportedVersions"], json!(["2025-11-25"]));
        assert_eq!(v["serverInfo"], json!({"name": "interop-ts-server", "version": "1.32.2"}));
        let tools: Vec<&str> = v["tools"].as_array().unwrap().iter()
            .map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["echo", "confirm_order", "summarize", "list_roots"]);
    };
    echo_and_the_era_is_remembered => |c: Case| {
        let (code, stdout, stderr) = c.call(&["tool", "echo", "text=hi"]);
        assert_eq!((code, stdout.as_str()), (0, "hi\n"), "{stderr}");
        assert_eq!(eras(c.home.path()), json!({ (c.peer.cache_key()): "legacy" }));
        // The cached era goes straight to initialize and still works.
        let (code, stdout, stderr) = c.call(&["tool", "echo", "text=again"]);
        assert_eq!((code, stdout.as_str()), (0, "again\n"), "{stderr}");
    };
    confirm_order_accepted_as_a_gift => |c: Case| {
        let answers = c.answers(
            r#"{"elicitation/create": {"action": "accept", "content": {"quantity": 2, "gift": true}}}"#,
        );
        let (code, stdout, stderr) =
            c.call(&["tool", "confirm_order", "item=book", "--answers", &answers, "--json"]);
        assert_eq!(code, 0, "{stderr}");
        // The server's request is one input round of the call, numbered as
        // a modern flow's are: its answers start round 2, which completes
        // (one round budget per call, counted the same in both eras).
        assert_eq!(without_timings(&stdout), json!({
            "result": {
                "resultType": "complete",
                "content": [{"type": "text", "text": "ordered 2 book as a gift"}]
            },
            "rounds": [
                {
                    "round": 1,
                    "resultType": "input_required",
                    "requestStateBytes": null,
                    "inputRequests": {"elicitation/create": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "Order book?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "quantity": {"type": "integer", "minimum": 1},
                                    "gift": {"type": "boolean"}
                                },
                                "required": ["quantity"]
                            }
                        }
                    }},
                    "inputResponses": {"elicitation/create": {
                        "action": "accept",
                        "content": {"quantity": 2, "gift": true}
                    }}
                },
                {"round": 2, "resultType": "complete"}
            ]
        }));
    };
    confirm_order_declined => |c: Case| {
        let answers = c.answers(r#"{"elicitation/create": {"action": "decline"}}"#);
        let (code, stdout, stderr) =
            c.call(&["tool", "confirm_order", "item=book", "--answers", &answers]);
        // The server handles a decline with an ordinary result.
        assert_eq!((code, stdout.as_str()), (0, "order declined\n"), "{stderr}");
    };
    confirm_order_without_elicitation => |c: Case| {
        let (code, stdout, stderr) =
            c.call(&["tool", "confirm_order", "item=book", "--no-elicitation", "--yes"]);
        // Not declared, so the SDK refuses before asking; its tool error
        // comes back as the result.
        assert_eq!(
            (code, stdout.as_str()),
            (1, "Client does not support form elicitation.\n"),
            "{stderr}"
        );
        assert!(stderr.contains("the tool reported an error"), "{stderr}");
    };
    summarize_through_a_command => |c: Case| {
        let (code, stdout, stderr) = c.call(&[
            "tool", "summarize", "text=a long story", "--yes",
            "--sampling-cmd", "cat >/dev/null; echo short",
        ]);
        assert_eq!((code, stdout.as_str()), (0, "summary: short\n"), "{stderr}");
    };
    list_roots_from_the_flags => |c: Case| {
        let (a, b) = (c.home().join("a"), c.home().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let (a, b) = (a.display().to_string(), b.display().to_string());
        let (code, stdout, stderr) =
            c.call(&["tool", "list_roots", "--root", &a, "--root", &b]);
        assert_eq!(
            (code, stdout),
            (0, format!("file://{a}, file://{b}\n")),
            "{stderr}"
        );
    };
}

/// COMPAT-C7: `--era modern` still probes a child process, so the legacy
/// server refuses cleanly instead of running `tools/call` its own way.
#[test]
#[cfg_attr(tern_no_ts_sdk, ignore = "the TypeScript SDK peer is not installed")]
fn modern_only_refuses_a_legacy_child_before_calling() {
    let c = Case::new(Peer::stdio());
    let (code, stdout, stderr) = c.call(&["--era", "modern", "tool", "echo", "text=hi"]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains("speaks 2025-11-25 only, and --era modern refuses it"),
        "{stderr}"
    );
}
