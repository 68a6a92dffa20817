//! `host-demo fleet-rounds`: what one recovery costs a fleet, beside one breaker alone.
//!
//! For each fleet size, a fresh `redis-server`, an upstream on loopback and that many
//! member processes (Rust, Node and Python in turn, where this checkout can run them;
//! one member with fleet mode off is "one breaker alone"). Each recovery: the upstream
//! fails until every member is open, then is healthy; the recovery ends when every member
//! is closed. Per recovery it counts the probes (calls that reached the upstream from the
//! first member's half-open to the first close), the lease commands members sent (read off `MONITOR`: every
//! command on the fleet's lease key, takes among them), and the round's time (first probe
//! to the last member closed). Every member has one caller, calling every 20 ms; K = 2,
//! M = 2, cooldown 1.5 s, probe timeout (the lease) 2 s.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tripgate_redis::server::RedisServer;

use super::spawn::{node_member, spawn, Plan, Spawned};
use super::unix_us;
use super::upstream::{Phase, Upstream};

const USAGE: &str = "usage: host-demo fleet-rounds [--members 1,8,12] [--runs 3] [--recoveries 3]

  --members LIST   fleet sizes, comma-separated; 1 is one breaker alone (fleet mode off)
  --runs N         runs per size, each on a fresh redis-server and fresh members
  --recoveries N   recoveries per run
";

/// Every member's pause between calls, in ms (one caller each).
const PAUSE_MS: u64 = 20;

/// What one recovery cost.
struct Recovery {
    probes: usize,
    lease_commands: usize,
    takes: usize,
    round_ms: f64,
}

/// Every command Redis ran, as `MONITOR` prints it, with the store's time in µs.
struct Monitor {
    lines: Arc<Mutex<Vec<(u64, String)>>>,
}

impl Monitor {
    fn start(port: u16) -> Result<Self> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).context("MONITOR")?;
        stream.write_all(b"MONITOR\r\n")?;
        let lines: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                // `+1733450000.123456 [0 127.0.0.1:5000] "EVALSHA" …`
                let at = line
                    .strip_prefix('+')
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|t| t.parse::<f64>().ok())
                    .map_or(0, |s| (s * 1e6) as u64);
                lock(&sink).push((at, line));
            }
        });
        Ok(Self { lines })
    }

    /// Commands members sent on `lease` between `from` and `to` (µs), and how many of
    /// them were takes. (`MONITOR` also lists what each script runs, as `[0 lua]`: those
    /// are part of the member's one command.)
    fn lease_commands(&self, lease: &str, take_sha: &str, from: u64, to: u64) -> (usize, usize) {
        let quoted = format!("\"{lease}\"");
        let lines = lock(&self.lines);
        let on_lease = lines.iter().filter(|(at, line)| {
            (from..=to).contains(at) && line.contains(&quoted) && !line.contains(" lua] ")
        });
        on_lease.fold((0, 0), |(all, takes), (_, line)| {
            (all + 1, takes + usize::from(line.contains(take_sha)))
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The Python member and its interpreter, if this checkout and machine can run one
/// (`TRIPGATE_PYTHON`: a Python with the tripgate package installed, as
/// python/scripts/test.sh leaves in the target dir's `python-venv`).
fn python_member() -> Option<(PathBuf, PathBuf)> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python/examples/fleet_member.py");
    let python = std::env::var_os("TRIPGATE_PYTHON").map(PathBuf::from)?;
    let works = std::process::Command::new(&python)
        .args(["-c", "import tripgate.fleet, redis"])
        .output()
        .is_ok_and(|o| o.status.success());
    (works && script.is_file()).then(|| (python, script.canonicalize().unwrap_or(script)))
}

fn transitions_to(m: &Spawned, to: &str, after: u64) -> Option<u64> {
    lock(&m.log)
        .transitions
        .iter()
        .find(|(at, _, t, _)| t == to && *at >= after)
        .map(|(at, ..)| *at)
}

/// Polls `done` until it holds, or fails after `within`.
fn wait(what: &str, within: Duration, mut done: impl FnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + within;
    while !done() {
        if Instant::now() > deadline {
            bail!("{what} did not happen within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn run_once(size: usize, recoveries: usize, plan: &Plan) -> Result<Vec<Recovery>> {
    let redis = RedisServer::start(&[]).map_err(|e| anyhow::anyhow!("{e}"))?;
    let url = redis.url(None);
    let monitor = Monitor::start(redis.port())?;
    let upstream = Upstream::start()?;
    let name = format!("rounds-{size}-{}", unix_us());
    let lease = format!("tripgate:{{{name}}}:lease");
    let take_sha = sha1_smol::Sha1::from(tripgate_redis::scripts::TAKE)
        .digest()
        .to_string();
    let plan = Plan {
        redis: (size > 1).then_some(url.as_str()),
        ..*plan
    };
    // Long enough for every recovery; members are stopped when the run is over.
    let end_ms = 10_000 + 6_000 * recoveries as u64;
    let mut members = (0..size)
        .map(|i| spawn(&plan, i, &upstream.addr, &name, end_ms))
        .collect::<Result<Vec<_>>>()?;
    wait("every member ready", Duration::from_secs(20), || {
        members.iter().all(|m| *lock(&m.ready))
    })?;
    let mut costs = Vec::new();
    for _ in 0..recoveries {
        let failing = unix_us();
        upstream.set(Phase::Failing);
        wait("every member open", Duration::from_secs(10), || {
            members
                .iter()
                .all(|m| transitions_to(m, "open", failing).is_some())
        })?;
        upstream.set(Phase::Healthy);
        let opened = unix_us();
        wait("every member closed", Duration::from_secs(15), || {
            members
                .iter()
                .all(|m| transitions_to(m, "closed", opened).is_some())
        })?;
        let closes: Vec<u64> = members
            .iter()
            .filter_map(|m| transitions_to(m, "closed", opened))
            .collect();
        let (first_close, last_close) = (
            closes.iter().copied().min().unwrap_or(opened),
            closes.iter().copied().max().unwrap_or(opened),
        );
        // Probes are what arrives once a member's cooldown has ended: a call sent just
        // before its breaker opened may still reach the upstream after the switch to
        // healthy (twelve member processes on two cores), and is no probe.
        let half_open = members
            .iter()
            .filter_map(|m| transitions_to(m, "half-open", opened))
            .min()
            .unwrap_or(opened);
        let (_, arrivals) = upstream.take();
        let probes: Vec<u64> = arrivals
            .iter()
            .map(|&(at, _)| at)
            .filter(|&at| at >= half_open && at <= first_close)
            .collect();
        let first_probe = probes.iter().copied().min().unwrap_or(first_close);
        // Commands after the last close are the round's too (the release); a little later.
        std::thread::sleep(Duration::from_millis(100));
        let (lease_commands, takes) =
            monitor.lease_commands(&lease, &take_sha, opened, last_close + 100_000);
        costs.push(Recovery {
            probes: probes.len(),
            lease_commands,
            takes,
            round_ms: last_close.saturating_sub(first_probe) as f64 / 1000.0,
        });
        std::thread::sleep(Duration::from_millis(300));
    }
    for m in &mut members {
        m.stdin.take();
        let _ = m.child.kill();
        let _ = m.child.wait();
    }
    Ok(costs)
}

fn range(values: impl Iterator<Item = f64>) -> String {
    let values: Vec<f64> = values.collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = (format!("{lo:.0}"), format!("{hi:.0}"));
    if lo == hi {
        lo
    } else {
        format!("{lo}–{hi}")
    }
}

pub fn run(args: &[String]) -> Result<()> {
    let (mut sizes, mut runs, mut recoveries) = (vec![1, 8, 12], 3, 3);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |what: &str| {
            rest.next()
                .with_context(|| format!("{arg} needs {what}\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--members" => {
                sizes = value("a list")?
                    .split(',')
                    .map(|n| n.parse::<usize>().ok().filter(|&n| (1..=64).contains(&n)))
                    .collect::<Option<Vec<_>>>()
                    .with_context(|| {
                        format!("--members takes sizes 1–64, comma-separated\n\n{USAGE}")
                    })?;
            }
            "--runs" => runs = value("a number")?.parse().context("--runs")?,
            "--recoveries" => recoveries = value("a number")?.parse().context("--recoveries")?,
            "--help" | "-h" => {
                print!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n\n{USAGE}"),
        }
    }
    let node = node_member();
    let python = python_member();
    eprintln!(
        "members: Rust{}{}",
        if node.is_some() {
            ", Node"
        } else {
            " (no Node: js/pkg or node_modules missing)"
        },
        if python.is_some() {
            ", Python"
        } else {
            " (no Python: set TRIPGATE_PYTHON)"
        }
    );
    let plan = Plan {
        redis: None,
        quorum: 1,
        node: node.as_ref(),
        python: python.as_ref(),
        // Callers that call one at a time, all members alike, so that one breaker alone
        // sees the traffic any member sees.
        pace: Some((PAUSE_MS, 1)),
    };
    println!(
        "| members | run | probes per recovery | lease commands (takes) per recovery | round ms |"
    );
    println!("|---|---|---|---|---|");
    for &size in &sizes {
        for run in 1..=runs {
            let costs = run_once(size, recoveries, &plan)?;
            let label = if size == 1 {
                "1 (alone, fleet off)".to_string()
            } else {
                size.to_string()
            };
            println!(
                "| {label} | {run} | {} | {} ({}) | {} |",
                range(costs.iter().map(|c| c.probes as f64)),
                range(costs.iter().map(|c| c.lease_commands as f64)),
                range(costs.iter().map(|c| c.takes as f64)),
                range(costs.iter().map(|c| c.round_ms)),
            );
            let _ = std::io::stdout().flush();
        }
    }
    Ok(())
}
