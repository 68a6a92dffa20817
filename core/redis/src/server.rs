//! A real `redis-server` as a child process on 127.0.0.1 (feature `server`), for tests,
//! benchmarks and demos: a free port, no persistence, stopped on drop.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's package puts the server; `REDIS_SERVER` overrides it, else `PATH`.
const DEFAULT: &str = "/usr/bin/redis-server";

/// A running `redis-server`, killed when dropped.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    extra: Vec<String>,
    binary: PathBuf,
    /// Listening with TLS only (`--tls-port`): readiness is an accepted connection.
    tls: bool,
}

/// The server could not be started.
#[derive(Debug)]
pub struct ServerError(pub String);

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServerError {}

impl RedisServer {
    /// Starts a server on a free port of 127.0.0.1 with `--save '' --appendonly no`
    /// and `extra` arguments (`["--user", "app", "on", ">pw", "~*", "&*", "+@all"]`).
    pub fn start(extra: &[&str]) -> Result<Self, ServerError> {
        let binary = find()?;
        let port = free_port()?;
        let mut server = Self {
            child: None,
            port,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            binary,
            tls: false,
        };
        server.restart()?;
        Ok(server)
    }

    /// Starts a server that speaks TLS only, with this certificate and key (PEM files),
    /// not asking clients for certificates: for `rediss://` URLs.
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Result<Self, ServerError> {
        let mut server = Self {
            child: None,
            port: 0,
            extra: Vec::new(),
            binary: find()?,
            tls: true,
        };
        server.port = free_port()?;
        let path = |p: &std::path::Path| p.display().to_string();
        server.extra = vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            server.port.to_string(),
            "--tls-cert-file".into(),
            path(cert),
            "--tls-key-file".into(),
            path(key),
            "--tls-auth-clients".into(),
            "no".into(),
        ];
        server.restart()?;
        Ok(server)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>`, optionally with credentials (`user:password@`).
    pub fn url(&self, credentials: Option<&str>) -> String {
        match credentials {
            Some(c) => format!("redis://{c}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Kills the server (SIGKILL: no shutdown, as a crash would) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops (`SIGSTOP`) or resumes (`SIGCONT`) the server: a store that hangs.
    pub fn pause(&self, paused: bool) -> Result<(), ServerError> {
        let pid = self
            .child
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| ServerError("not running".into()))?;
        let signal = if paused { "-STOP" } else { "-CONT" };
        let ok = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(())
            .ok_or_else(|| ServerError(format!("kill {signal} {pid} failed")))
    }

    /// Starts it again on the same port, empty (it never persists), and waits for it to
    /// answer.
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.kill();
        let child = Command::new(&self.binary)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| ServerError(format!("starting {}: {e}", self.binary.display())))?;
        self.child = Some(child);
        self.wait_ready()
    }

    /// Polls until the port answers a `PING` (with `NOAUTH` as good as `PONG`), for at
    /// most 5 s.
    fn wait_ready(&mut self) -> Result<(), ServerError> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(ServerError(format!("redis-server exited: {status}")));
                }
            }
            let ready = if self.tls {
                TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok()
            } else {
                ping(self.port)
            };
            if ready {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(ServerError(format!(
            "redis-server on port {} did not answer within 5 s",
            self.port
        )))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.pause(false);
        self.kill();
    }
}

fn find() -> Result<PathBuf, ServerError> {
    if let Some(path) = std::env::var_os("REDIS_SERVER").map(PathBuf::from) {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(ServerError(format!(
                "REDIS_SERVER={} is not a file: apt-get install redis-server, or point \
                 REDIS_SERVER at its binary",
                path.display()
            )))
        };
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("redis-server"))
            .find(|p| p.is_file())
    });
    let default = PathBuf::from(DEFAULT);
    if default.is_file() {
        return Ok(default);
    }
    on_path.ok_or_else(|| {
        ServerError(
            "redis-server is not installed: apt-get install redis-server \
             (or set REDIS_SERVER to its path)"
                .into(),
        )
    })
}

fn free_port() -> Result<u16, ServerError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| ServerError(format!("finding a free port: {e}")))
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut reply = [0u8; 64];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read(&mut reply).is_ok_and(|n| {
            let reply = reply.get(..n).unwrap_or_default();
            reply.starts_with(b"+PONG") || reply.starts_with(b"-NOAUTH")
        })
}
