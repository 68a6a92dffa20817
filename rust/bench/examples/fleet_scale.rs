//! What fleet mode costs a process and its store, against a live redis-server the example
//! starts: `cargo run --release -p tripgate-bench --example fleet_scale [idle-seconds]`.
//!
//! 1. **Scale.** 1, 50 and 500 breakers in one process, with fleet mode off (plain
//!    breakers) and on (every breaker joined to its own fleet through one `Store`), idle
//!    for the window: the process's connections to the store, its CPU time, the store's,
//!    and the commands members sent per second.
//! 2. **Recovery with uneven traffic.** Ten member processes (ten `Store`s, ten
//!    connections) in one fleet: one busy (a call every millisecond) and nine nearly idle
//!    (a call every two seconds). The upstream fails until the fleet opens and works from
//!    then on; measured from the end of the cooldown to the last member closed, with the
//!    commands sent meanwhile. Five rounds.
//!
//! 3. **A Redis Cluster** of three masters (started here): three member processes over
//!    sharded pub/sub; how long a trip takes to open every member, and a probe round to
//!    close them; the master of the fleet's slot killed: how long until every member is
//!    degraded; restarted: how long until every member is back, and until a trip made
//!    meanwhile reached the others. Three rounds.
//!
//! Each line is one measurement, as a Markdown table row.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tripgate::{Breaker, Config, Outcome, State, SECOND};
use tripgate_redis::server::{RedisCluster, RedisServer};
use tripgate_redis::{Options, Store};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let idle: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(10);
    // Sections by name after the window; all of them without.
    let sections: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let run = |section: &str| sections.is_empty() || sections.contains(&section);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let redis = RedisServer::start(&[]).expect("redis-server");
        let url = redis.url(None);
        if run("scale") {
            println!("| breakers | fleet mode | connections | process CPU | redis-server CPU | commands/s |");
            println!("|---:|---|---:|---:|---:|---:|");
            for n in [1usize, 50, 500] {
                for on in [false, true] {
                    scale(&redis, &url, n, on, Duration::from_secs(idle)).await;
                }
            }
            println!();
        }
        if run("recovery") {
            println!("| round | cooldown end → fleet closed | members closed | commands in the round | busy member's rejected calls |");
            println!("|---:|---:|---:|---:|---:|");
            for round in 1..=5 {
                recovery(&redis, &url, round).await;
            }
            println!();
        }
        if run("cluster") {
            println!("| round | trip → all open | probe → all closed | master killed → all degraded | restarted → cluster_state:ok | restarted → all back | restarted → the trip made meanwhile reached all |");
            println!("|---:|---:|---:|---:|---:|---:|---:|");
            for round in 1..=3 {
                cluster(round).await;
            }
        }
    });
}

fn config(quorum: Option<u8>) -> Config {
    Config {
        failure_threshold: 5,
        min_calls: 5,
        cooldown: 2 * SECOND,
        probe_timeout: 5 * SECOND,
        half_open_max_probes: 1,
        half_open_required_successes: 2,
        fleet_quorum: quorum,
        ..Config::default()
    }
}

async fn scale(redis: &RedisServer, url: &str, n: usize, on: bool, window: Duration) {
    let quorum = on.then_some(1);
    let breakers: Vec<Arc<Breaker>> = (0..n)
        .map(|_| Arc::new(Breaker::new(config(quorum)).unwrap()))
        .collect();
    let mut fleets = Vec::new();
    if on {
        let store = Store::connect(Options::new(url).member("scale")).unwrap();
        for (i, b) in breakers.iter().enumerate() {
            fleets.push(
                store
                    .join(&format!("scale-{n}-{i}"), Arc::clone(b))
                    .unwrap(),
            );
        }
        while !fleets.iter().all(|f| f.status().connected) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let clients = redis.connected_clients().unwrap().saturating_sub(1);
    let commands = redis.commands_sent().unwrap();
    let (cpu, server_cpu) = (process_cpu(None), process_cpu(redis.pid()));
    tokio::time::sleep(window).await;
    let cpu = process_cpu(None) - cpu;
    let server_cpu = process_cpu(redis.pid()) - server_cpu;
    let commands = redis.commands_sent().unwrap() - commands;
    let seconds = window.as_secs_f64();
    println!(
        "| {n} | {} | {clients} | {:.2} % | {:.2} % | {:.1} |",
        if on { "on" } else { "off" },
        100.0 * cpu / seconds,
        100.0 * server_cpu / seconds,
        commands as f64 / seconds
    );
    drop(fleets);
    // The store's connection closes once its last handle is gone: wait, so that the next
    // row counts only its own.
    while redis.connected_clients().unwrap() > 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A member of a measured fleet: its breaker and its fleet handle.
type Member = (Arc<Breaker>, tripgate_redis::Fleet);

async fn recovery(redis: &RedisServer, url: &str, round: u32) {
    let name = format!("recovery-{round}");
    let members: Vec<Member> = (0..10)
        .map(|i| {
            let breaker = Arc::new(Breaker::new(config(Some(1))).unwrap());
            let store =
                Store::connect(Options::new(url).member(format!("pod-{round}-{i}"))).unwrap();
            let fleet = store.join(&name, Arc::clone(&breaker)).unwrap();
            (breaker, fleet)
        })
        .collect();
    while !members.iter().all(|(_, f)| f.status().connected) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let callers = Callers::default();
    let tasks: Vec<_> = members
        .iter()
        .enumerate()
        .map(|(i, (breaker, _))| callers.spawn(i, Arc::clone(breaker)))
        .collect();
    // The busy member trips the fleet; once everyone is open the upstream is healthy.
    let opening = Instant::now();
    while !members.iter().all(|(b, _)| b.state() == State::Open) {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if opening.elapsed() > Duration::from_secs(30) {
            let states: Vec<_> = members
                .iter()
                .map(|(b, f)| (b.state(), f.status()))
                .collect();
            panic!("round {round}: the fleet did not open: {states:?}");
        }
    }
    callers.healthy.store(true, Ordering::Relaxed);
    // From the first member's cooldown end: any member's probe may close the fleet.
    let remaining = members
        .iter()
        .map(|(b, _)| b.metrics().cooldown_remaining)
        .min()
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_nanos(remaining)).await;
    let cooldown_end = Instant::now();
    let (commands, rejected_before) = (
        redis.commands_sent().unwrap(),
        callers.rejected.load(Ordering::Relaxed),
    );
    while !members.iter().all(|(b, _)| b.state() == State::Closed) {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if cooldown_end.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    let took = cooldown_end.elapsed();
    let closed = members
        .iter()
        .filter(|(b, _)| b.state() == State::Closed)
        .count();
    let commands = redis.commands_sent().unwrap() - commands;
    callers.stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    println!(
        "| {round} | {:.0} ms | {closed}/10 | {commands} | {} |",
        took.as_secs_f64() * 1e3,
        callers.rejected.load(Ordering::Relaxed) - rejected_before
    );
}

/// The recovery fleet's callers: whether the upstream is healthy yet, when to stop, and
/// the busy member's rejections.
#[derive(Clone, Default)]
struct Callers {
    healthy: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    rejected: Arc<std::sync::atomic::AtomicU64>,
}

impl Callers {
    /// Member `i`'s caller. Member 0 is busy; the rest call every two seconds, out of step.
    fn spawn(&self, i: usize, breaker: Arc<Breaker>) -> tokio::task::JoinHandle<()> {
        let Callers {
            healthy,
            stop,
            rejected,
        } = self.clone();
        let every = if i == 0 {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(2_000 + 97 * i as u64)
        };
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match breaker.acquire() {
                    Ok(permit) => {
                        let ok = healthy.load(Ordering::Relaxed);
                        permit.record(if ok {
                            Outcome::Success
                        } else {
                            Outcome::Failure
                        });
                    }
                    Err(_) if i == 0 => {
                        rejected.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(every).await;
            }
        })
    }
}

/// CPU time (user + system) of a process in seconds: this one, or `pid`.
fn process_cpu(pid: Option<u32>) -> f64 {
    let path = pid.map_or_else(
        || "/proc/self/stat".to_string(),
        |p| format!("/proc/{p}/stat"),
    );
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and stime are the 12th
    // and 13th of them, in clock ticks (100 a second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Waits until `cond` holds (at most 30 s); how long it took, in ms.
async fn until(what: &str, cond: impl Fn() -> bool) -> f64 {
    let from = Instant::now();
    while !cond() {
        assert!(
            from.elapsed() < Duration::from_secs(30),
            "{what}: not within 30 s"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    from.elapsed().as_secs_f64() * 1e3
}

async fn cluster(round: u32) {
    let mut cluster = RedisCluster::start(3).expect("a cluster");
    let name = format!("cluster-{round}");
    let members: Vec<Member> = (0..3)
        .map(|i| {
            // A cooldown longer than the outage below, so that the trip made during it
            // still describes its member when the store is back.
            let config = Config {
                cooldown: 10 * SECOND,
                ..config(Some(1))
            };
            let breaker = Arc::new(Breaker::new(config).unwrap());
            let options = Options::cluster(cluster.urls())
                .member(format!("cluster-pod-{round}-{i}"))
                .max_backoff(Duration::from_millis(100));
            let fleet = Store::connect(options)
                .unwrap()
                .join(&name, Arc::clone(&breaker))
                .unwrap();
            (breaker, fleet)
        })
        .collect();
    until("connected", || {
        members.iter().all(|(_, f)| f.status().connected)
    })
    .await;
    fail(&members[0].0);
    let opened = until("opened", || {
        members.iter().all(|(b, _)| b.state() == State::Open)
    })
    .await;
    let closed = close_by_probing(&members).await;
    let owner = cluster.node_of(&name).unwrap();
    let killed = Instant::now();
    cluster.nodes[owner].kill();
    until("degraded", || {
        members.iter().all(|(_, f)| f.status().degraded)
    })
    .await;
    let degraded = killed.elapsed().as_secs_f64() * 1e3;
    fail(&members[1].0);
    cluster.nodes[owner].restart().unwrap();
    let restarted = Instant::now();
    let cluster_ok = serving_every_slot(cluster.urls(), restarted);
    until("back", || members.iter().all(|(_, f)| f.status().connected)).await;
    let back = restarted.elapsed().as_secs_f64() * 1e3;
    until("reached", || {
        members.iter().all(|(b, _)| b.state() == State::Open)
    })
    .await;
    let reached = restarted.elapsed().as_secs_f64() * 1e3;
    let ok = cluster_ok.join().unwrap_or(f64::NAN);
    println!(
        "| {round} | {opened:.1} ms | {closed:.1} ms | {degraded:.0} ms | {ok:.0} ms | {back:.0} ms | {reached:.0} ms |"
    );
}

/// Five failures through `b`.
fn fail(b: &Breaker) {
    for _ in 0..5 {
        if let Ok(permit) = b.acquire() {
            permit.record(Outcome::Failure);
        }
    }
}

/// After the cooldown, the first member calls until the whole fleet is closed: the first
/// caller asks for the lease, its second call probes. How long it took, in ms.
async fn close_by_probing(members: &[Member]) -> f64 {
    tokio::time::sleep(Duration::from_nanos(
        members[0].0.metrics().cooldown_remaining,
    ))
    .await;
    let probing = Instant::now();
    let busy = &members[0].0;
    loop {
        if let Ok(permit) = busy.acquire() {
            permit.record(Outcome::Success);
        }
        if members.iter().all(|(b, _)| b.state() == State::Closed) {
            break;
        }
        assert!(
            probing.elapsed() < Duration::from_secs(30),
            "the fleet did not close"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    probing.elapsed().as_secs_f64() * 1e3
}

/// When the cluster itself serves every slot again, in ms after `restarted` (redis-cli,
/// on a thread of its own).
fn serving_every_slot(nodes: Vec<String>, restarted: Instant) -> std::thread::JoinHandle<f64> {
    std::thread::spawn(move || {
        let cli = |port: &str| {
            std::process::Command::new("redis-cli")
                .args(["-h", "127.0.0.1", "-p", port, "CLUSTER", "INFO"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
                .unwrap_or(false)
        };
        let ports: Vec<String> = nodes
            .iter()
            .filter_map(|url| url.rsplit(':').next().map(str::to_string))
            .collect();
        while !ports.iter().all(|p| cli(p)) {
            std::thread::sleep(Duration::from_millis(5));
        }
        restarted.elapsed().as_secs_f64() * 1e3
    })
}
