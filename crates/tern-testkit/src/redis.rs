//! A throwaway `redis-server` on a free loopback port, for tests and benches.
//!
//! It runs with no persistence and `noeviction`, the policy the backend
//! requires, and is killed when dropped.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

/// The binary started by [`RedisServer::start`].
pub const BINARY: &str = "redis-server";

/// Why no server could be started.
#[derive(Debug)]
pub enum StartError {
    /// `redis-server` is not on the `PATH`.
    Missing,
    /// It is installed but never answered `PING`.
    NoAnswer(String),
}

/// A running `redis-server`, killed on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts a server with the default test settings plus `extra` arguments.
    pub fn start(extra: &[&str]) -> Result<Self, StartError> {
        let mut last = String::new();
        // Another process may take the free port between our probe and the
        // server's bind; a few attempts make that harmless.
        for _ in 0..3 {
            let port = free_port().map_err(|e| StartError::NoAnswer(e.to_string()))?;
            let mut child = match Command::new(BINARY)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--maxmemory-policy", "noeviction"])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                Ok(child) => child,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(StartError::Missing);
                }
                Err(e) => return Err(StartError::NoAnswer(e.to_string())),
            };
            if wait_for_pong(&mut child, port) {
                return Ok(Self { child, port });
            }
            let _ = child.kill();
            let _ = child.wait();
            last = format!("no PONG on port {port}");
        }
        Err(StartError::NoAnswer(last))
    }

    /// The `redis://` URL of this server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server now, keeping the handle (and its port) around.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// Polls for up to 5 s until the server answers `PING`, or exits.
fn wait_for_pong(child: &mut Child, port: u16) -> bool {
    for _ in 0..250 {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return false;
        }
        if ping(port) {
            return true;
        }
        sleep(Duration::from_millis(20));
    }
    false
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}
