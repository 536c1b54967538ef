//! A scripted hostile server for `tern call` and `tern discover`: the
//! stdio server of `hostile.py` (either era), set up by a scenario, with a
//! log of everything tern sent it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{Run, run, tern_bin};

const SCRIPT: &str = include_str!("hostile.py");

/// One hostile server: its scenario, script and log in a temp dir, which
/// is also tern's working directory and home.
pub struct Hostile {
    dir: TempDir,
    era: &'static str,
}

impl Hostile {
    /// A 2026-07-28 server following `scenario` (see `hostile.py`).
    pub fn modern(scenario: Value) -> Hostile {
        Hostile::new("modern", scenario)
    }

    /// A 2025-11-25 server following `scenario`.
    pub fn legacy(scenario: Value) -> Hostile {
        Hostile::new("legacy", scenario)
    }

    fn new(era: &'static str, mut scenario: Value) -> Hostile {
        let dir = TempDir::new().unwrap();
        let h = Hostile { dir, era };
        scenario["era"] = json!(era);
        scenario["log"] = json!(h.path("received.jsonl").display().to_string());
        std::fs::write(h.path("hostile.py"), SCRIPT).unwrap();
        std::fs::write(h.path("scenario.json"), scenario.to_string()).unwrap();
        std::fs::write(h.path("received.jsonl"), "").unwrap();
        h
    }

    /// A path in the server's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Its directory (canonical, as roots are).
    pub fn dir(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    /// `--cmd` and `--era` to reach it.
    pub fn target(&self) -> Vec<String> {
        vec![
            "--cmd".to_owned(),
            format!(
                "python3 '{}' '{}'",
                self.path("hostile.py").display(),
                self.path("scenario.json").display()
            ),
            "--era".to_owned(),
            self.era.to_owned(),
        ]
    }

    /// `tern SUB TARGET ARGS…` as `run` does it (no terminal, no colour),
    /// in the server's directory.
    pub fn tern(&self, sub: &str, args: &[&str]) -> Run {
        let mut cmd = Command::new(tern_bin());
        cmd.arg(sub)
            .args(self.target())
            .args(args)
            .current_dir(self.dir.path())
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("XDG_DATA_HOME", self.path("data"));
        run(cmd)
    }

    /// `tern call TARGET ARGS…`.
    pub fn call(&self, args: &[&str]) -> Run {
        self.tern("call", args)
    }

    /// Every message tern sent, in order.
    pub fn received(&self) -> Vec<Value> {
        read_log(&self.path("received.jsonl"))
    }

    /// The messages tern sent with this method.
    pub fn requests(&self, method: &str) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|m| m["method"] == method)
            .collect()
    }

    /// tern's answers to the server's own requests (legacy), in order.
    pub fn answers(&self) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|m| m.get("method").is_none() && m.get("id").is_some())
            .collect()
    }
}

fn read_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A form asking one boolean under `key`, with `message`.
pub fn form(key: &str, message: &str) -> Value {
    json!({"resultType": "input_required", "requestState": "$next", "inputRequests": {
        key: {"method": "elicitation/create", "params": {"mode": "form", "message": message,
            "requestedSchema": {"type": "object",
                "properties": {"ok": {"type": "boolean", "default": true}}}}}}})
}

/// A complete tool result of one text block.
pub fn text_result(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
}

/// A tool taking no arguments.
pub fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

/// `tern SUB --help`.
pub fn help(sub: &str) -> String {
    let mut cmd = Command::new(tern_bin());
    cmd.args([sub, "--help"]);
    run(cmd).stdout
}
