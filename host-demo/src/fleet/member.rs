//! `host-demo fleet-member`: one member process of the fleet demo. A tripgate-wasmtime
//! breaker in front of the loopback upstream, joined to the fleet with tripgate-redis
//! (unless `--redis off`), some caller threads, and a line protocol on stdout that the
//! demo reads (docs/fleet-member.md; the Node member speaks the same).
//!
//! Lines: `ready`, `transition <unix-us> <from> <to> <reason>`, `link <unix-us> up|down`,
//! and at the end `stats <calls> <rejected> <waited> <slowest-us> <local-decisions>`.
//! The member stops when its stdin closes.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tripgate_redis::{Fleet, Options, Store};
use tripgate_wasmtime::{Breaker, Config, Outcome, Runtime, MILLISECOND};

use super::unix_us;

/// A decision (acquire + record, the HTTP call excluded) slower than this is counted as
/// one that waited: it is the adapter's store-timeout, the least a store round trip
/// that hung would cost.
const WAITED: Duration = Duration::from_millis(250);

struct Args {
    upstream: String,
    redis: Option<String>,
    name: String,
    key: String,
    label: String,
    quorum: u8,
    cooldown_ms: u64,
    probes: u8,
    successes: u32,
    threshold: u32,
    callers: usize,
    pause_ms: u64,
}

fn parse(args: &[String]) -> Result<Args> {
    let get = |flag: &str| -> Result<String> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .ok_or_else(|| anyhow!("fleet-member: {flag} is required"))
    };
    let num = |flag: &str| -> Result<u64> {
        get(flag)?
            .parse()
            .with_context(|| format!("fleet-member: {flag} must be a whole number"))
    };
    let redis = get("--redis")?;
    Ok(Args {
        upstream: get("--upstream")?,
        redis: (redis != "off").then_some(redis),
        name: get("--name")?,
        key: get("--key")?,
        label: get("--label")?,
        quorum: u8::try_from(num("--quorum")?).context("--quorum")?,
        cooldown_ms: num("--cooldown-ms")?,
        probes: u8::try_from(num("--probes")?).context("--probes")?,
        successes: u32::try_from(num("--successes")?).context("--successes")?,
        threshold: u32::try_from(num("--threshold")?).context("--threshold")?,
        callers: usize::try_from(num("--callers")?).context("--callers")?,
        pause_ms: num("--pause-ms")?,
    })
}

#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    rejected: AtomicU64,
    waited: AtomicU64,
    slowest_us: AtomicU64,
    local: AtomicU64,
}

/// The member's stdout, shared by the threads that write lines to the demo.
#[derive(Clone)]
struct Lines(Arc<Mutex<std::io::Stdout>>);

impl Lines {
    fn say(&self, line: &str) {
        let mut out = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

pub fn run(args: &[String]) -> Result<()> {
    let a = parse(args)?;
    let lines = Lines(Arc::new(Mutex::new(std::io::stdout())));
    let breaker = breaker(&a, &lines)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let fleet = match &a.redis {
        Some(url) => Some(join(&runtime, url, &a, &breaker)?),
        None => None,
    };
    let degraded = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, degraded, lines) = (Arc::clone(&stop), Arc::clone(&degraded), lines.clone());
        std::thread::spawn(move || runtime.block_on(watch_link(fleet, &stop, &degraded, &lines)))
    };
    let counts = Arc::new(Counts::default());
    let callers: Vec<_> = (0..a.callers.max(1))
        .map(|_| {
            let (breaker, counts, stop, degraded) = (
                breaker.clone(),
                Arc::clone(&counts),
                Arc::clone(&stop),
                Arc::clone(&degraded),
            );
            let (upstream, label, pause) = (a.upstream.clone(), a.label.clone(), a.pause_ms);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    call_once(&breaker, &upstream, &label, &counts, &degraded);
                    std::thread::sleep(Duration::from_millis(pause));
                }
            })
        })
        .collect();

    // Until the demo closes our stdin.
    let mut sink = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut sink);
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        let _ = caller.join();
    }
    let _ = watcher.join();
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    lines.say(&format!(
        "stats {} {} {} {} {}",
        get(&counts.calls),
        get(&counts.rejected),
        get(&counts.waited),
        get(&counts.slowest_us),
        get(&counts.local)
    ));
    Ok(())
}

/// The member's breaker, its transitions told to the demo.
fn breaker(a: &Args, lines: &Lines) -> Result<Breaker> {
    let config = Config {
        failure_threshold: a.threshold,
        min_calls: a.threshold,
        cooldown: a.cooldown_ms * MILLISECOND,
        half_open_max_probes: a.probes,
        half_open_required_successes: a.successes,
        probe_timeout: 2_000 * MILLISECOND,
        fleet_quorum: a.redis.as_ref().map(|_| a.quorum),
        ..Config::default()
    };
    let breaker = Runtime::new()?.breaker(&config)?;
    let lines = lines.clone();
    breaker.on_transition(move |t| {
        lines.say(&format!(
            "transition {} {} {} {}",
            unix_us(),
            t.from.name(),
            t.to.name(),
            t.reason.name()
        ))
    });
    Ok(breaker)
}

/// Joins the fleet on the store at `url` (several URLs: a Redis Cluster's nodes).
fn join(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    a: &Args,
    breaker: &Breaker,
) -> Result<Fleet> {
    let options = if url.contains(',') {
        Options::cluster(url.split(','))
    } else {
        Options::new(url)
    }
    .key(a.key.as_bytes());
    Ok(runtime
        .block_on(async { Store::connect(options)?.join(a.name.as_str(), breaker.clone()) })?)
}

/// Runs the fleet's task on this thread's runtime until `stop`, reporting the link's ups
/// and downs (and `ready` once the member can take part: at once without a fleet).
async fn watch_link(fleet: Option<Fleet>, stop: &AtomicBool, degraded: &AtomicBool, lines: &Lines) {
    let mut up = false;
    let mut ready = fleet.is_none();
    if ready {
        lines.say("ready");
    }
    while !stop.load(Ordering::Relaxed) {
        if let Some(fleet) = &fleet {
            let now_up = fleet.status().connected;
            if now_up != up {
                up = now_up;
                degraded.store(!up, Ordering::Relaxed);
                lines.say(&format!(
                    "link {} {}",
                    unix_us(),
                    if up { "up" } else { "down" }
                ));
                if up && !ready {
                    ready = true;
                    lines.say("ready");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    drop(fleet);
}

fn call_once(
    breaker: &Breaker,
    upstream: &str,
    label: &str,
    counts: &Counts,
    degraded: &AtomicBool,
) {
    let started = Instant::now();
    let Ok(admission) = breaker.acquire() else {
        return;
    };
    let mut decided = started.elapsed();
    if degraded.load(Ordering::Relaxed) {
        counts.local.fetch_add(1, Ordering::Relaxed);
    }
    match admission.decision {
        Err(_) => {
            counts.rejected.fetch_add(1, Ordering::Relaxed);
        }
        Ok(permit) => {
            counts.calls.fetch_add(1, Ordering::Relaxed);
            let probe = permit.is_probe();
            let outcome = match get(upstream, label, probe) {
                Ok(status) => Outcome::Status(status),
                Err(_) => Outcome::ConnectionError,
            };
            let recording = Instant::now();
            let _ = permit.record(outcome);
            decided += recording.elapsed();
        }
    }
    if decided >= WAITED {
        counts.waited.fetch_add(1, Ordering::Relaxed);
    }
    let us = u64::try_from(decided.as_micros()).unwrap_or(u64::MAX);
    counts.slowest_us.fetch_max(us, Ordering::Relaxed);
}

/// One `GET /` over a fresh connection: the status code.
fn get(upstream: &str, label: &str, probe: bool) -> Result<u16> {
    let mut stream = TcpStream::connect(upstream)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: upstream\r\nX-Member: {label}\r\nX-Probe: {}\r\nConnection: close\r\n\r\n",
        u8::from(probe)
    )?;
    let mut line = String::new();
    std::io::BufReader::new(stream).read_line(&mut line)?;
    let status = line.split(' ').nth(1).unwrap_or("");
    match status.parse() {
        Ok(code) => Ok(code),
        Err(_) => bail!("no status line from the upstream: {line:?}"),
    }
}
