//! The fleet demo: `cargo run --release -p host-demo -- fleet`.
//!
//! A real `redis-server` on 127.0.0.1, an upstream on loopback that fails and recovers
//! twice ([`upstream`]), and N member processes ([`member`], plus Node members when
//! `node` and js/examples/fleet-member.mjs are there) that call it through their
//! breakers. The script runs with fleet mode off, then on (Redis killed in the middle
//! and restarted empty), then a short run with Q = 2 and one member whose path alone is
//! broken. The table of FLEET.md's "How it is measured" comes from the run's own
//! counts ([`report`]), and a timeline is drawn as SVG.

pub mod member;
mod report;
pub mod rounds;
mod spawn;
mod upstream;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use tripgate_redis::server::{RedisCluster, RedisServer};

use spawn::{node_member, spawn, Plan, Spawned};
use upstream::{Phase, Upstream};

/// Microseconds since the Unix epoch: one clock every process on this host shares, so
/// members' lines and the upstream's log line up.
pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Members, probes per member (K), cooldown.
const MEMBERS: usize = 8;
const PROBES: u8 = 2;
const COOLDOWN_MS: u64 = 1_500;
const KEY: &str = "fleet demo shared key, 32 bytes!";

/// The script, in ms after every member is ready.
#[derive(Clone, Copy)]
pub struct Marks {
    pub fail: u64,
    pub cold: u64,
    pub healthy: u64,
    pub kill: u64,
    pub fail_again: u64,
    pub restart: u64,
    pub healthy_again: u64,
    pub end: u64,
}

const SCRIPT: Marks = Marks {
    fail: 800,
    cold: 2_000,
    healthy: 3_500,
    kill: 3_800,
    fail_again: 4_200,
    restart: 5_200,
    healthy_again: 5_600,
    end: 7_500,
};

/// The store the fleet meets in: one `redis-server`, or a Redis Cluster of three masters
/// (`host-demo fleet --cluster`), whose outage is the master serving the fleet's slot.
pub enum Redis {
    Server(RedisServer),
    Cluster(RedisCluster),
}

impl Redis {
    /// What members are given: a URL, or the cluster's node URLs joined by commas.
    fn url(&self) -> String {
        match self {
            Self::Server(server) => server.url(None),
            Self::Cluster(cluster) => cluster.urls().join(","),
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Self::Server(_) => "redis-server",
            Self::Cluster(_) => "the Redis Cluster master of the fleet's slot",
        }
    }

    /// Commands members sent (every node, on a cluster).
    fn commands_sent(&self) -> Option<u64> {
        match self {
            Self::Server(server) => server.commands_sent().ok(),
            Self::Cluster(cluster) => cluster
                .nodes
                .iter()
                .map(|n| n.commands_sent().ok())
                .sum::<Option<u64>>(),
        }
    }

    /// Kills the server, or the master serving `fleet`'s slot: which one, to restart it.
    fn kill(&mut self, fleet: &str) -> Result<usize> {
        match self {
            Self::Server(server) => {
                server.kill();
                Ok(0)
            }
            Self::Cluster(cluster) => {
                let owner = cluster.node_of(fleet).map_err(|e| anyhow::anyhow!("{e}"))?;
                cluster.nodes[owner].kill();
                Ok(owner)
            }
        }
    }

    fn restart(&mut self, which: usize) -> Result<()> {
        let node = match self {
            Self::Server(server) => server,
            Self::Cluster(cluster) => &mut cluster.nodes[which],
        };
        node.restart().map_err(|e| anyhow::anyhow!("{e}"))
    }
}

/// What one member said.
#[derive(Clone, Debug, Default)]
pub struct MemberLog {
    pub label: String,
    pub node: bool,
    /// (unix µs, from, to, reason)
    pub transitions: Vec<(u64, String, String, String)>,
    /// (unix µs, up)
    pub links: Vec<(u64, bool)>,
    /// calls, rejected, waited, slowest µs, local decisions
    pub stats: Option<[u64; 5]>,
}

/// One run's record.
pub struct RunLog {
    pub title: String,
    pub start_us: u64,
    pub marks: Marks,
    pub members: Vec<MemberLog>,
    pub seen: Vec<upstream::Seen>,
    pub probes: Vec<(u64, i64)>,
    /// Commands the members sent the store from the start to the kill, and over how many
    /// seconds (fleet mode on).
    pub store_commands: Option<(u64, f64)>,
}

/// A run under way: its title and the instant its script started, for the marks and
/// the progress lines.
struct Stage<'a> {
    title: &'a str,
    start: Instant,
}

impl Stage<'_> {
    fn say(&self, what: &str) {
        eprintln!(
            "  [{} {:>5.2} s] {what}",
            self.title,
            self.start.elapsed().as_secs_f64()
        );
    }

    /// Waits for the script's mark `ms`.
    fn at(&self, ms: u64) {
        let due = Duration::from_millis(ms);
        if let Some(wait) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// Runs the script once: members up, upstream phases at the marks, Redis killed and
/// restarted (fleet on), members stopped, logs gathered.
fn run_once(
    title: &str,
    plan: &Plan,
    redis: &mut Redis,
    marks: Marks,
    broken: Option<usize>,
) -> Result<RunLog> {
    let upstream = Upstream::start()?;
    let name: String = format!("demo-{title}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut members = (0..MEMBERS)
        .map(|i| spawn(plan, i, &upstream.addr, &name, marks.end))
        .collect::<Result<Vec<_>>>()?;
    wait_ready(&mut members)?;
    let stage = Stage {
        title,
        start: Instant::now(),
    };
    let start_us = unix_us();
    let mut store_commands = None;
    stage.say(&format!("{MEMBERS} members ready"));
    if let Some(i) = broken {
        let label = members[i]
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .label
            .clone();
        upstream.break_path(Some(label.clone()));
        stage.say(&format!(
            "member {label}'s path is broken (only its calls fail)"
        ));
    } else {
        store_commands = play(&stage, plan, redis, &upstream, &name, marks)?;
    }
    stage.at(marks.end);
    for m in &mut members {
        m.stdin.take();
    }
    for m in &mut members {
        let _ = m.child.wait();
    }
    // The readers finish with the processes' stdout.
    std::thread::sleep(Duration::from_millis(50));
    stage.say("members stopped");
    let (seen, probes) = upstream.take();
    Ok(RunLog {
        title: title.to_string(),
        start_us,
        marks,
        members: members
            .iter()
            .map(|m| m.log.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .collect(),
        seen,
        probes,
        store_commands,
    })
}

/// Waits until every member has said it is ready.
fn wait_ready(members: &mut [Spawned]) -> Result<()> {
    let waiting = Instant::now();
    while !members
        .iter()
        .all(|m| *m.ready.lock().unwrap_or_else(|p| p.into_inner()))
    {
        for m in members.iter_mut() {
            if let Ok(Some(status)) = m.child.try_wait() {
                bail!("a member exited before it was ready ({status})");
            }
        }
        if waiting.elapsed() > Duration::from_secs(20) {
            bail!("members did not report ready within 20 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// The script up to its end mark: the upstream's phases, and the store killed and
/// restarted empty when the fleet has one. Returns the commands the members sent the
/// store from the start to the kill, and over how many seconds.
fn play(
    stage: &Stage<'_>,
    plan: &Plan,
    redis: &mut Redis,
    upstream: &Upstream,
    name: &str,
    marks: Marks,
) -> Result<Option<(u64, f64)>> {
    let sent = |redis: &Redis| plan.redis.and_then(|_| redis.commands_sent());
    let sent_at_start = sent(redis);
    let mut store_commands = None;
    stage.at(marks.fail);
    upstream.set(Phase::Failing);
    stage.say("upstream fails (503)");
    stage.at(marks.cold);
    upstream.set(Phase::Cold);
    stage.say("upstream back, cold (150 ms a call)");
    stage.at(marks.healthy);
    upstream.set(Phase::Healthy);
    stage.say("upstream healthy");
    stage.at(marks.kill);
    if let (Some(first), Some(last)) = (sent_at_start, sent(redis)) {
        store_commands = Some((
            last.saturating_sub(first),
            stage.start.elapsed().as_secs_f64(),
        ));
    }
    let mut killed = None;
    if plan.redis.is_some() {
        killed = Some(redis.kill(name)?);
        stage.say(&format!("{} killed", redis.describe()));
    }
    stage.at(marks.fail_again);
    upstream.set(Phase::Failing);
    stage.say("upstream fails again");
    stage.at(marks.restart);
    if let Some(which) = killed {
        redis.restart(which)?;
        stage.say(&format!("{} restarted (empty)", redis.describe()));
    }
    stage.at(marks.healthy_again);
    upstream.set(Phase::Healthy);
    stage.say("upstream healthy");
    Ok(store_commands)
}

const USAGE: &str = "usage: host-demo fleet [--cluster] [--out FILE.svg]

  --cluster   the members meet on a Redis Cluster of three masters (the master serving
              the fleet's slot is the one killed mid-run) instead of one redis-server
  --out FILE  where the timeline goes (default target/fleet-demo.svg)
";

/// `--cluster` and `--out`; None for `--help`.
fn parse(args: &[String]) -> Result<Option<(bool, PathBuf)>> {
    let mut out = PathBuf::from("target/fleet-demo.svg");
    let mut cluster = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--cluster" => cluster = true,
            "--out" => match rest.next() {
                Some(path) => out = PathBuf::from(path),
                None => bail!("--out needs a file name\n\n{USAGE}"),
            },
            "--help" | "-h" => return Ok(None),
            other => bail!("unknown argument {other:?}\n\n{USAGE}"),
        }
    }
    Ok(Some((cluster, out)))
}

pub fn run(args: &[String]) -> Result<()> {
    let started = Instant::now();
    let Some((cluster, out)) = parse(args)? else {
        print!("{USAGE}");
        return Ok(());
    };
    let mut redis = if cluster {
        RedisCluster::start(3)
            .map(Redis::Cluster)
            .map_err(|e| anyhow::anyhow!("the fleet demo needs a real Redis Cluster: {e}"))?
    } else {
        RedisServer::start(&[])
            .map(Redis::Server)
            .map_err(|e| anyhow::anyhow!("the fleet demo needs a real Redis: {e}"))?
    };
    let url = redis.url();
    let node = node_member();
    eprintln!(
        "tripgate fleet demo: {MEMBERS} member processes ({}), K = {PROBES}, cooldown {COOLDOWN_MS} ms, {} on {url}",
        match &node {
            Some(_) => "Rust and Node alternating",
            None => "Rust only: no node, or js/examples/fleet-member.mjs or the built JS package \
                     (js/pkg, js/node_modules) missing; `bash js/scripts/setup.sh` builds it",
        },
        if cluster {
            "a Redis Cluster of 3 masters"
        } else {
            "redis-server"
        }
    );
    // A cluster takes about 2 s to serve a restarted master's slots again: the script
    // runs on for as long after it.
    let script = if cluster {
        Marks {
            end: SCRIPT.end + 2_500,
            ..SCRIPT
        }
    } else {
        SCRIPT
    };
    let plan = |redis, quorum| Plan {
        redis,
        quorum,
        node: node.as_ref(),
        python: None,
        pace: None,
    };
    let off = run_once("off", &plan(None, 1), &mut redis, script, None)?;
    let on = run_once("on", &plan(Some(&url), 1), &mut redis, script, None)?;
    let short = Marks {
        end: 2_500,
        ..SCRIPT
    };
    let quorum = run_once("on Q=2", &plan(Some(&url), 2), &mut redis, short, Some(0))?;
    let table = report::Table::measure(&off, &on, &quorum, redis.describe());
    print!("{}", table.render());
    let svg = report::svg(&[&off, &on, &quorum]);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&out, svg).with_context(|| format!("writing {}", out.display()))?;
    let shown = out.canonicalize().unwrap_or(out);
    println!("timeline picture: {}", shown.display());
    println!("total wall time {:.1} s", started.elapsed().as_secs_f64());
    let _ = std::io::stdout().flush();
    let failures = table.failures();
    if !failures.is_empty() {
        bail!("fleet mode did not hold: {}", failures.join("; "));
    }
    Ok(())
}
