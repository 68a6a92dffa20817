//! The brownout demo: `cargo run --release -p host-demo`.
//!
//! A real HTTP upstream (hyper, [`upstream`]) plays a script ([`scenario`]): healthy, a
//! hang, a 503 storm, a 404 flood, a recovery with a cold start, healthy again. A caller
//! service with a bounded pool of worker threads ([`caller`]) serves two routes, one that
//! calls the upstream with a per-call timeout and a fallback, and one that does unrelated
//! local work. An open-loop load generator ([`loadgen`]) drives both at fixed rates. The
//! scenario runs twice with the same seeded arrivals: with the timeout alone, and through
//! tripgate (the WASI component in wasmtime, via `tripgate-wasmtime`). Then it prints a
//! table per phase ([`report`]), checks the acceptance rules against its own
//! measurements ([`stats`]) and draws the timelines ([`svg`]).

mod caller;
mod fleet;
mod http;
mod loadgen;
mod metrics;
mod options;
mod report;
mod retrying;
mod scenario;
mod stats;
mod svg;
mod upstream;
mod watch;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tripgate_wasmtime::{Config, Runtime};

use caller::{Caller, CallerConfig, CallerShared};
use loadgen::{LoadGen, Route};
use metrics::MetricsServer;
use options::{Modes, Options, Parsed};
use scenario::{Scenario, Timeline};
use stats::{Counters, Mode, PhaseStats, Run};
use upstream::{Upstream, UpstreamConfig, UpstreamShared};
use watch::{Sampler, Watched};

/// The run's durations after scaling, and what the upstream does with them.
pub struct Setup {
    pub timeout: Duration,
    pub cooldown: Duration,
    pub slow_call: Duration,
    pub client_timeout: Duration,
    pub latency: Duration,
    pub stall: Duration,
    pub fill: Duration,
    pub fill_slots: usize,
    pub fills_to_warm: u32,
    pub component: Option<PathBuf>,
}

impl Setup {
    fn new(o: &Options) -> Self {
        let timeout = o.scaled(o.timeout);
        Self {
            timeout,
            cooldown: o.scaled(o.cooldown),
            slow_call: o.scaled(o.slow_call),
            client_timeout: o.scaled(o.client_timeout),
            latency: o.scaled(Duration::from_millis(20)),
            stall: timeout * 4,
            fill: o.scaled(Duration::from_millis(300)),
            fill_slots: 2,
            fills_to_warm: 8,
            component: None,
        }
    }

    fn upstream(&self) -> UpstreamConfig {
        UpstreamConfig {
            latency: self.latency,
            stall: self.stall,
            fill: self.fill,
            fill_slots: self.fill_slots,
            fills_to_warm: self.fills_to_warm,
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The breaker the tripgate run puts in front of the upstream.
fn breaker_config(o: &Options, setup: &Setup) -> Config {
    Config {
        failure_threshold: o.threshold,
        min_calls: o.threshold,
        // Hang detection: `threshold` calls in flight for longer than this trip the
        // breaker before the first of them times out.
        slow_call_duration: Some(nanos(setup.slow_call)),
        window: nanos(o.scaled(Duration::from_secs(5))),
        buckets: 10,
        cooldown: nanos(setup.cooldown),
        half_open_max_probes: o.probes,
        half_open_required_successes: o.successes,
        probe_timeout: nanos(setup.timeout * 2),
        ..Config::default()
    }
}

fn main() -> ExitCode {
    // `fleet` is the fleet demo, `fleet-member` one of its member processes, `upstream`
    // the scripted upstream alone; anything else is the brownout demo's options.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sub = match args.first().map(String::as_str) {
        Some("fleet") => Some(fleet::run as fn(&[String]) -> Result<()>),
        Some("fleet-member") => Some(fleet::member::run as fn(&[String]) -> Result<()>),
        Some("fleet-rounds") => Some(fleet::rounds::run as fn(&[String]) -> Result<()>),
        Some("upstream") => Some(upstream_only as fn(&[String]) -> Result<()>),
        _ => None,
    };
    if let Some(sub) = sub {
        return match sub(args.get(1..).unwrap_or_default()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    let options = match options::parse(args) {
        Ok(Parsed::Run(options)) => options,
        Ok(Parsed::Help) => {
            print!("{}", options::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{}", options::USAGE);
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(o: &Options) -> Result<()> {
    let started = Instant::now();
    let mut setup = Setup::new(o);
    let modes: &[Mode] = match o.modes {
        Modes::Both => &[Mode::TimeoutOnly, Mode::Tripgate],
        Modes::TimeoutOnly => &[Mode::TimeoutOnly],
        Modes::Tripgate => &[Mode::Tripgate],
    };
    let runtime = if modes.contains(&Mode::Tripgate) {
        Some(runtime(o, &mut setup)?)
    } else {
        None
    };
    let metrics = MetricsServer::start(o.metrics)?;
    // Printed even with --quiet: a scraper needs the address.
    eprintln!(
        "metrics: http://{}/metrics (Prometheus text; the tripgate run's breaker, breaker=\"{}\")",
        metrics.addr,
        metrics::BREAKER_NAME
    );
    let scenario = Scenario::new(o.scale);
    eprintln!(
        "tripgate brownout demo: {} per run, {} run(s); upstream route {:.0}/s, unrelated \
         route {:.0}/s, {} workers, timeout {}, K = {}, M = {}{}",
        report::secs(scenario.total()),
        modes.len(),
        o.upstream_rate(),
        o.local_rate,
        o.pool,
        report::secs(setup.timeout),
        o.probes,
        o.successes,
        setup
            .component
            .as_ref()
            .map(|p| format!("\ncomponent: {}", p.display()))
            .unwrap_or_default()
    );
    let mut runs = Vec::new();
    for &mode in modes {
        runs.push(run_one(o, &setup, mode, runtime.as_ref(), &metrics)?);
    }
    let stats: Vec<Vec<PhaseStats>> = runs.iter().map(stats::phase_stats).collect();
    let pairs: Vec<(&Run, &[PhaseStats])> = runs
        .iter()
        .zip(stats.iter())
        .map(|(r, s)| (r, s.as_slice()))
        .collect();
    let checks = stats::checks(o, &pairs);

    let picture = write_picture(o, &setup, &pairs)?;

    let tables = report::tables(o, &setup, &pairs, &checks);
    let footer = format!(
        "\ntimeline picture: {}\ntotal wall time {:.1} s\n",
        picture.display(),
        started.elapsed().as_secs_f64()
    );
    if o.json {
        eprint!("{tables}{footer}");
        let value = report::json(o, &setup, &pairs, &checks, &picture);
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{tables}{footer}");
    }
    Ok(())
}

/// The runtime the tripgate run's breaker lives in: the component `tripgate-wasmtime` was
/// built with (embedded in this binary), or the one `--component` names.
fn runtime(o: &Options, setup: &mut Setup) -> Result<Runtime> {
    Ok(match o.component.as_deref() {
        None => Runtime::new()?,
        Some(path) => {
            setup.component = Some(path.canonicalize().unwrap_or_else(|_| path.into()));
            Runtime::from_file(path)?
        }
    })
}

/// Draws the runs' timelines into `--out` (or the default picture); its path.
fn write_picture(o: &Options, setup: &Setup, pairs: &[(&Run, &[PhaseStats])]) -> Result<PathBuf> {
    let picture = o.out.clone().unwrap_or_else(default_picture_path);
    let title = format!(
        "tripgate brownout: {} workers, upstream route {:.0}/s, unrelated {:.0}/s, timeout {}, K = {}, M = {}",
        o.pool,
        o.upstream_rate(),
        o.local_rate,
        report::secs(setup.timeout),
        o.probes,
        o.successes
    );
    let svg = svg::render(pairs, &title, setup.client_timeout.as_secs_f64() * 1000.0);
    if let Some(dir) = picture.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&picture, svg).with_context(|| format!("writing {}", picture.display()))?;
    Ok(picture.canonicalize().unwrap_or(picture))
}

/// `host-demo upstream [OPTIONS]`: the scripted upstream alone, for a caller service in
/// another language (the Python brownout, `python/demo/`). Prints a JSON line with
/// its address, when the script starts and its phases; plays the script once (and as long
/// again as a stalled request may be held); then prints a JSON line with what it saw in
/// each phase, and exits.
fn upstream_only(args: &[String]) -> Result<()> {
    let o = match options::parse(args.iter().cloned()) {
        Ok(Parsed::Run(options)) => options,
        Ok(Parsed::Help) => {
            print!("{}", options::USAGE);
            return Ok(());
        }
        Err(message) => anyhow::bail!(message),
    };
    let setup = Setup::new(&o);
    let scenario = Scenario::new(o.scale);
    let timeline = Timeline {
        scenario: scenario.clone(),
        start: Instant::now() + Duration::from_millis(500),
    };
    let mut upstream = Upstream::start(timeline.clone(), setup.upstream())?;
    let phases: Vec<serde_json::Value> = scenario
        .phases
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "start_s": p.start.as_secs_f64(),
                "end_s": p.end.as_secs_f64(),
            })
        })
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut out = std::io::stdout();
    writeln!(
        out,
        "{}",
        serde_json::json!({
            "addr": upstream.addr.to_string(),
            "starts_in_s": timeline.start.saturating_duration_since(Instant::now()).as_secs_f64(),
            "phases": phases,
            "latency_ms": ms(setup.latency),
            "stall_ms": ms(setup.stall),
            "fill_ms": ms(setup.fill),
            "fill_slots": setup.fill_slots,
            "fills_to_warm": setup.fills_to_warm,
        })
    )?;
    out.flush()?;
    let end = timeline.start + scenario.total() + setup.stall;
    while Instant::now() < end {
        std::thread::sleep(
            Duration::from_millis(100).min(end.saturating_duration_since(Instant::now())),
        );
    }
    upstream.stop();
    let load = |a: &AtomicU64| a.load(Ordering::SeqCst);
    let load32 = |a: &AtomicU32| a.load(Ordering::SeqCst);
    let counters: Vec<serde_json::Value> = upstream
        .shared
        .phases
        .iter()
        .map(|c| {
            serde_json::json!({
                "received": load(&c.received),
                "probes": load(&c.probes),
                "peak": load32(&c.peak),
                "peak_probes": load32(&c.peak_probes),
                "abandoned": load(&c.abandoned),
            })
        })
        .collect();
    writeln!(out, "{}", serde_json::json!({ "phases": counters }))?;
    out.flush()?;
    Ok(())
}

/// `brownout.svg` in the target directory (as cargo's), else in the current directory.
fn default_picture_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    if target.is_dir() {
        target.join("brownout.svg")
    } else {
        PathBuf::from("brownout.svg")
    }
}

/// The caller's and the upstream's counters of each phase.
fn counters(caller: &CallerShared, upstream: &UpstreamShared) -> Vec<Counters> {
    let r = |a: &AtomicU64| a.load(Ordering::SeqCst);
    let r32 = |a: &AtomicU32| a.load(Ordering::SeqCst);
    caller
        .phases
        .iter()
        .zip(&upstream.phases)
        .map(|(c, u)| Counters {
            peak_busy: r32(&c.peak_busy),
            peak_waiting: r32(&c.peak_waiting),
            shed: r(&c.shed),
            sent: r(&c.sent),
            probes_sent: r(&c.probes_sent),
            rejected: r(&c.rejected),
            recorded_404: r(&c.recorded_404),
            recorded_404_closed: r(&c.recorded_404_closed),
            upstream_received: r(&u.received),
            upstream_probes: r(&u.probes),
            upstream_peak: r32(&u.peak),
            upstream_peak_probes: r32(&u.peak_probes),
            upstream_abandoned: r(&u.abandoned),
        })
        .collect()
}

fn caller_config(o: &Options, setup: &Setup, upstream: &Upstream) -> CallerConfig {
    CallerConfig {
        pool: o.pool,
        queue: o.queue,
        timeout: setup.timeout,
        local_work: o.local_work,
        upstream: upstream.addr,
        retries: o.retries,
    }
}

/// The requests of both routes. The same seeds in both runs: the same requests at the same
/// offsets.
fn schedules(o: &Options, total: Duration) -> Vec<(Route, Vec<Duration>)> {
    vec![
        (
            Route::Upstream,
            loadgen::arrivals(o.upstream_rate(), total, o.seed),
        ),
        (
            Route::Local,
            loadgen::arrivals(o.local_rate, total, o.seed.wrapping_add(1)),
        ),
    ]
}

/// One run of the whole scenario.
fn run_one(
    o: &Options,
    setup: &Setup,
    mode: Mode,
    runtime: Option<&Runtime>,
    metrics: &MetricsServer,
) -> Result<Run> {
    let wall = Instant::now();
    let scenario = Scenario::new(o.scale);
    let total = scenario.total();
    let timeline = Timeline {
        scenario: scenario.clone(),
        start: Instant::now() + Duration::from_millis(300),
    };
    let mut upstream = Upstream::start(timeline.clone(), setup.upstream())?;
    let breaker = match (mode, runtime) {
        (Mode::Tripgate, Some(runtime)) => Some(
            runtime
                .breaker(&breaker_config(o, setup))
                .context("creating the breaker")?,
        ),
        _ => None,
    };
    metrics.show(breaker.clone());
    let mut caller = Caller::start(
        timeline.clone(),
        caller_config(o, setup, &upstream),
        breaker,
    )?;
    let load = LoadGen::start(
        &timeline,
        caller.addr,
        schedules(o, total),
        setup.client_timeout,
    )?;
    let sampler = Sampler::start(o, &caller.shared, &upstream.shared, &timeline)?;
    let watched = Watched {
        mode,
        timeline: &timeline,
        caller: &caller.shared,
        upstream: &upstream.shared,
        load: &load,
    };
    watch::progress_until(timeline.start + total, o, &watched);
    let samples = load.finish();
    let ticks = sampler.finish();
    let metrics = caller.shared.breaker().and_then(|b| b.metrics().ok());
    caller.stop();
    upstream.stop();
    if std::io::stderr().is_terminal() && !o.quiet {
        eprintln!();
    }
    let counters = counters(&caller.shared, &upstream.shared);
    let transitions = std::mem::take(
        &mut *caller
            .shared
            .transitions
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    let run = Run {
        mode,
        scenario,
        pool: o.pool,
        samples,
        ticks,
        transitions,
        counters,
        metrics,
        wall: wall.elapsed().as_secs_f64(),
    };
    eprintln!(
        "  {} run done in {:.1} s: {} requests",
        mode.name(),
        run.wall,
        run.samples.len()
    );
    Ok(run)
}
