//! Command-line options. Hand-parsed: a dozen `--name value` pairs need no parser crate.

use std::path::PathBuf;
use std::time::Duration;

/// Which of the two runs to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modes {
    Both,
    TimeoutOnly,
    Tripgate,
}

/// Everything the scenario can be told. Durations are at `scale` 1 unless a field says
/// otherwise; [`Options::scaled`] applies the scale.
#[derive(Clone, Debug)]
pub struct Options {
    /// Every duration of the script (phases, timeouts, cooldown, the upstream's latencies)
    /// is multiplied by this and the upstream route's arrival rate divided by it, so a
    /// compressed run keeps the same pool arithmetic (arrivals x timeout) and shows the
    /// same picture faster. The unrelated route, its rate and its work, is the yardstick
    /// and is not scaled.
    pub scale: f64,
    /// Arrivals per second on the route that calls the upstream (at scale 1).
    pub upstream_rate: f64,
    /// Arrivals per second on the unrelated, local-work route (not scaled).
    pub local_rate: f64,
    /// Worker threads of the caller service.
    pub pool: u32,
    /// Connections that may wait for a worker; past that the caller answers 503 at once.
    pub queue: u32,
    /// The caller's per-call timeout on the upstream.
    pub timeout: Duration,
    /// Half-open probes allowed at once (K).
    pub probes: u8,
    /// Probe successes that close the breaker (M).
    pub successes: u32,
    /// Faults (or hung calls) that trip the breaker.
    pub threshold: u32,
    /// How long the breaker stays open.
    pub cooldown: Duration,
    /// Calls slower than this are slow; this many hung in flight trip (hang detection).
    pub slow_call: Duration,
    /// Local work per request on the unrelated route (not scaled).
    pub local_work: Duration,
    /// The load generator gives up on a request after this long.
    pub client_timeout: Duration,
    /// Seed of the arrival times (both runs use the same arrivals).
    pub seed: u64,
    /// Which runs to make.
    pub modes: Modes,
    /// Load this build of the component instead of the default one.
    pub component: Option<PathBuf>,
    /// Print machine-readable results on stdout (the tables go to stderr).
    pub json: bool,
    /// Where to write the SVG timeline.
    pub out: Option<PathBuf>,
    /// No progress lines.
    pub quiet: bool,
    /// Where `/metrics` listens while the demo runs (port 0: any free port).
    pub metrics: std::net::SocketAddr,
    /// Retries after a failed first attempt on the upstream route, in both runs (0: none).
    pub retries: u8,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            scale: 1.0,
            upstream_rate: 50.0,
            local_rate: 50.0,
            pool: 32,
            queue: 64,
            timeout: Duration::from_millis(1000),
            probes: 2,
            successes: 2,
            threshold: 5,
            cooldown: Duration::from_millis(1000),
            slow_call: Duration::from_millis(200),
            local_work: Duration::from_millis(50),
            client_timeout: Duration::from_millis(2000),
            seed: 7,
            modes: Modes::Both,
            component: None,
            json: false,
            out: None,
            quiet: false,
            metrics: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            retries: 0,
        }
    }
}

pub const USAGE: &str = "\
tripgate brownout demo: a real HTTP upstream browns out (hang, 503 storm, 404 flood, cold
start) under a thread-per-request caller service; the scenario runs twice, timeout-only and
with tripgate (the WASI component in wasmtime), with the same seeded arrivals.

USAGE: cargo run --release -p host-demo -- [OPTIONS]
       cargo run --release -p host-demo -- upstream [OPTIONS]   the scripted upstream alone
       (for a caller in another language): JSON lines with its address, then its counters

OPTIONS (durations in milliseconds, at scale 1):
  --scale X            multiply the script's durations by X and divide the upstream
                       route's rate by X; the unrelated route is not scaled [1]
  --upstream-rate N    arrivals/s on the route that calls the upstream [50]
  --local-rate N       arrivals/s on the unrelated local-work route, not scaled [50]
  --pool N             caller worker threads [32]
  --queue N            connections that may wait for a worker [2 x pool]
  --timeout MS         per-call timeout on the upstream [1000]
  -k, --probes K       half-open probes at once [2]
  -m, --successes M    probe successes that close the breaker [2]
  --threshold N        faults or hung calls that trip [5]
  --cooldown MS        open time before probing [1000]
  --slow-call MS       slow-call duration, turns on hang detection [200]
  --local-work MS      work per unrelated request, not scaled [50]
  --client-timeout MS  the load generator gives up after [2000]
  --seed N             arrival seed [7]
  --retries N          retry a failed upstream call N times in both runs, the same
                       jittered waits; with tripgate through the breaker and a shared
                       budget (20% of calls + 10/s) [0]
  --only MODE          timeout-only | tripgate (default: both)
  --component PATH     load this build of the component
  --out PATH           where to write the SVG timeline [target/brownout.svg]
  --metrics ADDR        serve Prometheus /metrics there while running [127.0.0.1:0,
                       a free port; the address is printed at the start]
  --json               print results as JSON on stdout (tables go to stderr)
  --quiet              no progress lines
  -h, --help           this text
";

/// What the command line asked for.
pub enum Parsed {
    Run(Box<Options>),
    Help,
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let mut o = Options::default();
    let mut queue_set = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "--json" => o.json = true,
            "--quiet" => o.quiet = true,
            "--scale" => o.scale = positive(&name, &value()?)?,
            "--upstream-rate" => o.upstream_rate = positive(&name, &value()?)?,
            "--local-rate" => o.local_rate = positive(&name, &value()?)?,
            "--pool" => o.pool = whole(&name, &value()?, 1, 4096)?,
            "--queue" => {
                o.queue = whole(&name, &value()?, 0, 1 << 16)?;
                queue_set = true;
            }
            "--timeout" => o.timeout = millis(&name, &value()?)?,
            "-k" | "--probes" => o.probes = whole(&name, &value()?, 1, 64)? as u8,
            "-m" | "--successes" => o.successes = whole(&name, &value()?, 1, 1000)?,
            "--threshold" => o.threshold = whole(&name, &value()?, 1, 100_000)?,
            "--cooldown" => o.cooldown = millis(&name, &value()?)?,
            "--retries" => o.retries = whole(&name, &value()?, 0, 9)? as u8,
            "--slow-call" => o.slow_call = millis(&name, &value()?)?,
            "--local-work" => o.local_work = millis(&name, &value()?)?,
            "--client-timeout" => o.client_timeout = millis(&name, &value()?)?,
            "--seed" => {
                let v = value()?;
                o.seed = v
                    .parse()
                    .map_err(|_| format!("{name}: not a number: {v}"))?;
            }
            "--only" => {
                o.modes = match value()?.as_str() {
                    "timeout-only" => Modes::TimeoutOnly,
                    "tripgate" => Modes::Tripgate,
                    "both" => Modes::Both,
                    other => return Err(format!("--only: timeout-only or tripgate, not {other}")),
                }
            }
            "--component" => o.component = Some(PathBuf::from(value()?)),
            "--out" => o.out = Some(PathBuf::from(value()?)),
            "--metrics" => {
                let v = value()?;
                o.metrics = v
                    .parse()
                    .map_err(|_| format!("{name}: an address such as 127.0.0.1:9464, not {v}"))?;
            }
            other => return Err(format!("unknown option {other} (see --help)")),
        }
    }
    if !queue_set {
        o.queue = o.pool.saturating_mul(2);
    }
    if o.scale > 100.0 {
        return Err("--scale: at most 100".into());
    }
    Ok(Parsed::Run(Box::new(o)))
}

fn positive(name: &str, v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("{name}: a number > 0, not {v}")),
    }
}

fn whole(name: &str, v: &str, min: u32, max: u32) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(x) if (min..=max).contains(&x) => Ok(x),
        _ => Err(format!("{name}: a whole number in {min}..={max}, not {v}")),
    }
}

fn millis(name: &str, v: &str) -> Result<Duration, String> {
    let ms = positive(name, v)?;
    if ms > 3_600_000.0 {
        return Err(format!("{name}: at most an hour"));
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

impl Options {
    /// A scenario duration at this run's scale.
    pub fn scaled(&self, d: Duration) -> Duration {
        d.mul_f64(self.scale)
    }

    /// The upstream route's arrival rate at this run's scale (per second of wall time).
    pub fn upstream_rate(&self) -> f64 {
        self.upstream_rate / self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Options {
        match parse(args.iter().map(|s| s.to_string())).unwrap() {
            Parsed::Run(o) => *o,
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let o = run(&[]);
        assert_eq!((o.pool, o.queue, o.probes, o.successes), (32, 64, 2, 2));
        let o = run(&[
            "--pool",
            "8",
            "-k",
            "3",
            "--timeout=250",
            "--only",
            "tripgate",
        ]);
        assert_eq!((o.pool, o.queue, o.probes), (8, 16, 3));
        assert_eq!(o.timeout, Duration::from_millis(250));
        assert_eq!(o.modes, Modes::Tripgate);
    }

    #[test]
    fn bad_values_are_errors() {
        for bad in [
            &["--scale", "0"][..],
            &["--pool", "0"],
            &["-k", "65"],
            &["--timeout", "x"],
            &["--what"],
            &["--seed"],
        ] {
            assert!(parse(bad.iter().map(|s| s.to_string())).is_err(), "{bad:?}");
        }
    }
}
