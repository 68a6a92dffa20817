//! A real `redis-server` as a child process on 127.0.0.1 (feature `server`), for tests,
//! benchmarks and demos: a free port, no persistence, stopped on drop; and a Redis Cluster
//! of such servers ([`RedisCluster`]), made with `redis-cli --cluster create`.

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
    /// A cluster node's files (`nodes.conf`), removed when dropped.
    dir: Option<PathBuf>,
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
            dir: None,
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
            dir: None,
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

    /// Commands clients sent it since it started (`INFO commandstats`): fleet members'
    /// scripts and `INCR`, and what connecting and subscribing take. The commands a
    /// script runs are counted by Redis too, but are part of its one round trip: left out.
    pub fn commands_sent(&self) -> Result<u64, ServerError> {
        commands_sent(self.port)
    }

    /// Clients connected to it (`INFO clients`).
    pub fn connected_clients(&self) -> Result<u64, ServerError> {
        let info = info(self.port, "clients")?;
        info.lines()
            .find_map(|line| line.strip_prefix("connected_clients:"))
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| ServerError("INFO clients has no connected_clients".into()))
    }

    /// The server's process id, while it runs (to read its CPU time, say).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
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
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A Redis Cluster of masters on 127.0.0.1 (no replicas), each a [`RedisServer`] with
/// `--cluster-enabled yes`, joined by `redis-cli --cluster create`. A slot whose master is
/// down is unavailable while the others keep serving (`cluster-require-full-coverage
/// no`); a killed master restarted keeps its slots (its `nodes.conf` stays).
#[derive(Debug)]
pub struct RedisCluster {
    /// The masters.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts `masters` servers and makes them one cluster; waits until it serves every
    /// slot.
    pub fn start(masters: usize) -> Result<Self, ServerError> {
        let mut nodes = Vec::with_capacity(masters);
        for _ in 0..masters {
            let port = free_port()?;
            let dir = std::env::temp_dir()
                .join(format!("tripgate-cluster-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir)
                .map_err(|e| ServerError(format!("creating {}: {e}", dir.display())))?;
            let mut node = RedisServer {
                dir: Some(dir.clone()),
                child: None,
                port,
                extra: [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-require-full-coverage",
                    "no",
                    "--dir",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain([dir.display().to_string()])
                .collect(),
                binary: find()?,
                tls: false,
            };
            node.restart()?;
            nodes.push(node);
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let cli = find_cli()?;
        let created = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| ServerError(format!("running {}: {e}", cli.display())))?;
        if !created.success() {
            return Err(ServerError(format!(
                "redis-cli --cluster create: {created}"
            )));
        }
        let cluster = Self { nodes };
        cluster.wait_ok()?;
        Ok(cluster)
    }

    /// The nodes' URLs, to seed a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url(None)).collect()
    }

    /// Which node serves the slot of hash tag `tag` (a fleet's name: its keys are
    /// `tripgate:{<name>}:…`).
    pub fn node_of(&self, tag: &str) -> Result<usize, ServerError> {
        let cli = find_cli()?;
        let port = self.nodes.first().map_or(0, |n| n.port).to_string();
        let slot = cli_output(&cli, &port, &["CLUSTER", "KEYSLOT", &format!("{{{tag}}}")])?;
        let slot: u16 = slot
            .trim()
            .parse()
            .map_err(|_| ServerError(format!("CLUSTER KEYSLOT answered {slot:?}")))?;
        for (i, node) in self.nodes.iter().enumerate() {
            let port = node.port.to_string();
            // Each line of CLUSTER NODES: id, address, flags, …, then the slot ranges from
            // the ninth field; `myself` marks the node answering.
            let nodes = cli_output(&cli, &port, &["CLUSTER", "NODES"])?;
            let owned = nodes.lines().any(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                fields.get(2).is_some_and(|flags| flags.contains("myself"))
                    && fields.iter().skip(8).any(|range| {
                        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                        match (lo.parse::<u16>(), hi.parse::<u16>()) {
                            (Ok(lo), Ok(hi)) => (lo..=hi).contains(&slot),
                            _ => false,
                        }
                    })
            });
            if owned {
                return Ok(i);
            }
        }
        Err(ServerError(format!("no node serves slot {slot}")))
    }

    /// Polls until every node says `cluster_state:ok`, for at most 10 s.
    pub fn wait_ok(&self) -> Result<(), ServerError> {
        let cli = find_cli()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = self.nodes.iter().all(|n| {
                cli_output(&cli, &n.port.to_string(), &["CLUSTER", "INFO"])
                    .is_ok_and(|info| info.contains("cluster_state:ok"))
            });
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ServerError(
                    "the cluster did not become ok within 10 s".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn find_cli() -> Result<PathBuf, ServerError> {
    let cli = find()?.with_file_name("redis-cli");
    if cli.is_file() {
        Ok(cli)
    } else {
        Err(ServerError(format!(
            "{} is not installed: apt-get install redis-tools",
            cli.display()
        )))
    }
}

fn cli_output(cli: &std::path::Path, port: &str, args: &[&str]) -> Result<String, ServerError> {
    let out = Command::new(cli)
        .args(["-h", "127.0.0.1", "-p", port])
        .args(args)
        .output()
        .map_err(|e| ServerError(format!("running {}: {e}", cli.display())))?;
    if !out.status.success() {
        return Err(ServerError(format!("redis-cli {args:?}: {}", out.status)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
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

/// What fleet members send at top level, by `INFO commandstats` name.
const SENT: [&str; 11] = [
    "evalsha",
    "eval",
    "script|load",
    "incr",
    "subscribe",
    "ssubscribe",
    "unsubscribe",
    "sunsubscribe",
    "hello",
    "ping",
    "client|setinfo",
];

fn commands_sent(port: u16) -> Result<u64, ServerError> {
    let info = info(port, "commandstats")?;
    Ok(info
        .lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            SENT.contains(&name).then_some(())?;
            stats
                .split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum())
}

/// `INFO <section>` over a plain connection (RESP: a bulk string).
fn info(port: u16, section: &str) -> Result<String, ServerError> {
    let failed = |e: std::io::Error| ServerError(format!("INFO {section} on port {port}: {e}"));
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).map_err(failed)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(failed)?;
    stream
        .write_all(format!("INFO {section}\r\n").as_bytes())
        .map_err(failed)?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).map_err(failed)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(chunk.get(..n).unwrap_or_default());
        // `$<len>\r\n<body>\r\n`: done once the body is in.
        let text = String::from_utf8_lossy(&reply);
        if let Some((head, body)) = text.split_once("\r\n") {
            let len: usize = head.trim_start_matches('$').parse().unwrap_or(0);
            if body.len() >= len {
                return Ok(body.chars().take(len).collect());
            }
        }
    }
    Err(ServerError(format!(
        "INFO {section}: the reply ended early"
    )))
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
