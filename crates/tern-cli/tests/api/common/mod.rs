//! Helpers for driving the `tern` binary as a person or a script would:
//! a `tern serve` on a free loopback port, stdio targets, and runs of
//! `tern call` with answers files.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use tempfile::TempDir;

pub mod hostile;

/// The binary under test.
pub fn tern_bin() -> &'static str {
    env!("CARGO_BIN_EXE_tern")
}

/// `tern serve` over HTTP on a free port, with its data directory in a
/// temp dir (the default SQLite replay store and key file land there).
pub struct Server {
    child: Child,
    pub url: String,
    pub dir: TempDir,
}

impl Server {
    pub fn start() -> Server {
        Server::start_with(&[], &[])
    }

    /// `tern serve --http 127.0.0.1:0 ARGS…` with `env` set.
    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_at("127.0.0.1:0", args, env)
    }

    /// `tern serve --http ADDR ARGS…` with `env` set.
    pub fn start_at(addr: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let dir = TempDir::new().unwrap();
        let mut cmd = Command::new(tern_bin());
        cmd.args(["serve", "--http", addr])
            .args(args)
            .envs(env.iter().copied())
            .env("XDG_DATA_HOME", dir.path());
        let (child, url) = listening(cmd, |line| {
            line.strip_prefix("tern: serving ").map(str::to_owned)
        });
        Server { child, url, dir }
    }
}

/// Spawns `cmd` and reads its stderr until `url_in` finds the URL it
/// serves; stderr is drained from then on, so the child never blocks.
pub fn listening(mut cmd: Command, url_in: impl Fn(&str) -> Option<String>) -> (Child, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(lines.read_line(&mut line).unwrap() > 0, "the server exited");
        if let Some(u) = url_in(line.trim()) {
            break u;
        }
    };
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = lines.read_to_end(&mut sink);
    });
    (child, url)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where `tern call` connects.
pub enum Target {
    Http(Server),
    /// A `tern serve --stdio` child per call; the replay store is a SQLite
    /// file shared by the calls so that single-use holds across them.
    Stdio(TempDir),
}

impl Target {
    pub fn http() -> Target {
        Target::Http(Server::start())
    }

    pub fn stdio() -> Target {
        Target::Stdio(TempDir::new().unwrap())
    }

    pub fn args(&self) -> Vec<String> {
        match self {
            Target::Http(s) => vec![s.url.clone()],
            Target::Stdio(dir) => vec![
                "--cmd".to_owned(),
                format!(
                    "'{}' serve --stdio --replay 'sqlite:{}'",
                    tern_bin(),
                    dir.path().join("replay.db").display()
                ),
            ],
        }
    }

    pub fn dir(&self) -> &Path {
        match self {
            Target::Http(s) => s.dir.path(),
            Target::Stdio(d) => d.path(),
        }
    }

    /// Writes an answers file and returns its path.
    pub fn answers(&self, json: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = self.dir().join(format!("answers-{n}.json"));
        std::fs::write(&p, json).unwrap();
        p
    }

    /// Runs `tern call TARGET ARGS…` with no terminal.
    pub fn call(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(tern_bin());
        cmd.arg("call").args(self.args()).args(args);
        run(cmd)
    }

    /// Runs `tern call` with an answers file.
    pub fn call_with(&self, answers: &str, args: &[&str]) -> Run {
        let p = self.answers(answers);
        let mut all: Vec<&str> = args.to_vec();
        let p = p.display().to_string();
        all.push("--answers");
        all.push(&p);
        self.call(&all)
    }
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> &Self {
        assert_eq!(self.code, 0, "expected success: {self:#?}");
        self
    }

    pub fn failed(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "expected exit {code}: {self:#?}");
        self
    }

    pub fn says(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text) || self.stderr.contains(text),
            "expected {text:?} in the output: {self:#?}"
        );
        self
    }
}

pub fn run(mut cmd: Command) -> Run {
    let out: Output = cmd
        .stdin(Stdio::null())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Completes a sign-in as the person's browser would: POST to the page.
pub fn post(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(host).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

/// Serves `server` over HTTP on a free loopback port from a runtime of its
/// own: the endpoint's URL, and the runtime, which serves while it lives.
pub fn in_process(server: tern::server::Server) -> (String, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, _) = rt
        .block_on(tern::http::spawn(
            "127.0.0.1:0".parse().unwrap(),
            server,
            tern::http::HttpOptions::default(),
        ))
        .unwrap();
    (format!("http://{addr}/mcp"), rt)
}
