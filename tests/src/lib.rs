//! Runs the scenario vectors in `tests/vectors/` (format: `tests/vectors/README.md`)
//! against any host of the breaker.
//!
//! A host implements [`Subject`], speaking only in the vectors' own words (kebab-case
//! names, raw outcome numbers), and [`run_all`] checks every expectation of every file.
//! The native core and the wasmtime host share this runner, so "the same decisions" means
//! the same code checked them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::{Map, Value};
use tripgate_core::{Config, GrpcSet, Metrics, RejectReason, StatusSet, MILLISECOND};

/// An outcome as a vector spells it; numbers are unvalidated so hosts can be fed bad ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorOutcome {
    /// `success`
    Success,
    /// `status:N`
    Status(u16),
    /// `grpc:N`
    Grpc(u8),
    /// `timeout`
    Timeout,
    /// `connection-error`
    ConnectionError,
    /// `failure`
    Failure,
    /// `cancelled`
    Cancelled,
    /// `ignored`
    Ignored,
}

impl VectorOutcome {
    /// Parses `success`, `status:503`, `grpc:14`, ….
    pub fn parse(text: &str) -> Result<Self> {
        let number = |prefix: &str| -> Result<Option<u64>> {
            match text.strip_prefix(prefix) {
                Some(n) => Ok(Some(
                    n.parse().with_context(|| format!("bad outcome {text:?}"))?,
                )),
                None => Ok(None),
            }
        };
        if let Some(code) = number("status:")? {
            return Ok(Self::Status(u16::try_from(code)?));
        }
        if let Some(code) = number("grpc:")? {
            return Ok(Self::Grpc(u8::try_from(code)?));
        }
        Ok(match text {
            "success" => Self::Success,
            "timeout" => Self::Timeout,
            "connection-error" => Self::ConnectionError,
            "failure" => Self::Failure,
            "cancelled" => Self::Cancelled,
            "ignored" => Self::Ignored,
            _ => bail!("unknown outcome {text:?}"),
        })
    }
}

/// `[from, to, reason]`.
pub type Step3 = [String; 3];

/// What `acquire` decided.
#[derive(Debug)]
pub enum Decision<P> {
    /// Admitted, with the permit and whether it is a probe.
    Admitted { permit: P, probe: bool },
    /// Rejected.
    Rejected { reason: String, retry_after_ns: u64 },
}

/// What `record` reported.
#[derive(Debug)]
pub struct RecordReport {
    /// `success`, `fault` or `neutral`.
    pub class: String,
    /// Slow success.
    pub slow: bool,
    /// Stale permit.
    pub stale: bool,
    /// Transitions caused.
    pub transitions: Vec<Step3>,
}

/// A breaker under test, in any host.
pub trait Subject: Sized {
    /// The host's permit.
    type Permit;

    /// Creates a breaker at `now`; on a bad config, `(field, message)`.
    fn create(config: &Config, now: u64) -> Result<Self, (String, String)>;
    /// Acquires once.
    fn acquire(&mut self, now: u64) -> Result<(Decision<Self::Permit>, Vec<Step3>)>;
    /// Records an outcome. `Err` for an outcome the host refuses (bad status or code).
    fn record(
        &mut self,
        permit: Self::Permit,
        outcome: VectorOutcome,
        now: u64,
    ) -> Result<RecordReport, String>;
    /// The effective state.
    fn state(&mut self, now: u64) -> Result<String>;
    /// The metrics, under the vector key names (`calls`, `rejected-open`, `time-in-state-ms`…).
    fn metrics(&mut self, now: u64) -> Result<BTreeMap<String, Value>>;
    /// `isolate`, `release`, `disable` or `reset`.
    fn manual(&mut self, op: &str, now: u64) -> Result<Vec<Step3>>;
    /// Exports the state.
    fn export(&mut self, now: u64) -> Result<Vec<u8>>;
    /// Imports a state; `Err` with the host's message when refused.
    fn import(&mut self, bytes: &[u8], elapsed: u64, now: u64) -> Result<(), String>;
}

/// A core `Metrics` under the vector key names (`calls`, `rejected-open`,
/// `time-in-state-ms`, …). Hosts convert their metrics to the core's and use this, so every
/// host is checked against one mapping.
pub fn metric_map(m: &Metrics) -> BTreeMap<String, Value> {
    let mut map = BTreeMap::new();
    let mut put = |k: &str, v: Value| {
        map.insert(k.to_string(), v);
    };
    put("state", m.state.name().into());
    put("epoch", m.epoch.into());
    put("calls", m.window.calls.into());
    put("faults", m.window.faults.into());
    put("slow", m.window.slow.into());
    put("in-flight", m.in_flight.into());
    put("hung", m.hung.into());
    put("probes-out", m.probes_out.into());
    put("admitted-total", m.admitted_total.into());
    for reason in RejectReason::ALL {
        put(
            &format!("rejected-{}", reason.name()),
            m.rejected(reason).into(),
        );
    }
    put("successes-total", m.successes_total.into());
    put("faults-total", m.faults_total.into());
    put("stale-total", m.stale_total.into());
    put("transitions-total", m.transitions_total.into());
    put("time-in-state-ms", (m.time_in_state / MILLISECOND).into());
    put(
        "cooldown-remaining-ms",
        (m.cooldown_remaining / MILLISECOND).into(),
    );
    map
}

/// The vector files, sorted by name.
pub fn vector_files() -> Result<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Runs every vector against `S`; returns how many ran. The error lists every failing
/// vector with its step.
pub fn run_all<S: Subject>() -> Result<usize> {
    let files = vector_files()?;
    ensure!(!files.is_empty(), "no vectors found");
    let mut failures = Vec::new();
    for file in &files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let outcome = std::fs::read_to_string(file)
            .map_err(anyhow::Error::from)
            .and_then(|text| serde_json::from_str::<Value>(&text).map_err(anyhow::Error::from))
            .and_then(|vector| run_vector::<S>(&vector));
        if let Err(error) = outcome {
            failures.push(format!("{name}: {error:#}"));
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    Ok(files.len())
}

fn ms(value: &Value, key: &str) -> Result<u64> {
    let n = value
        .as_u64()
        .ok_or_else(|| anyhow!("{key} must be a whole number of ms"))?;
    n.checked_mul(MILLISECOND)
        .ok_or_else(|| anyhow!("{key} overflows"))
}

/// The core config a vector's `config` object describes.
pub fn core_config(json: &Map<String, Value>) -> Result<Config> {
    let mut config = Config::default();
    for (key, value) in json {
        let int = || {
            value
                .as_u64()
                .ok_or_else(|| anyhow!("{key} must be a whole number"))
        };
        let small = |max: u64| -> Result<u64> {
            let n = int()?;
            ensure!(n <= max, "{key} = {n} does not fit the field");
            Ok(n)
        };
        let codes = || -> Result<Vec<u64>> {
            value
                .as_array()
                .ok_or_else(|| anyhow!("{key} must be an array"))?
                .iter()
                .map(|v| {
                    v.as_u64()
                        .ok_or_else(|| anyhow!("{key} holds a non-number"))
                })
                .collect()
        };
        match key.as_str() {
            "failure-threshold" => {
                config.failure_threshold = u32::try_from(small(u32::MAX.into())?)?
            }
            "min-calls" => config.min_calls = u32::try_from(small(u32::MAX.into())?)?,
            "failure-rate" => config.failure_rate = Some(u8::try_from(small(255)?)?),
            "slow-call-rate" => config.slow_call_rate = Some(u8::try_from(small(255)?)?),
            "slow-call-duration-ms" => config.slow_call_duration = Some(ms(value, key)?),
            "window-ms" => config.window = ms(value, key)?,
            "buckets" => config.buckets = u8::try_from(small(255)?)?,
            "window-calls" => config.window_calls = Some(u16::try_from(small(u16::MAX.into())?)?),
            "cooldown-ms" => config.cooldown = ms(value, key)?,
            "backoff-factor" => {
                config.backoff_factor = value
                    .as_f64()
                    .ok_or_else(|| anyhow!("{key} must be a number"))?
            }
            "max-cooldown-ms" => config.max_cooldown = Some(ms(value, key)?),
            "jitter-percent" => config.jitter_percent = u8::try_from(small(255)?)?,
            "jitter-seed" => config.jitter_seed = int()?,
            "max-in-flight" => config.max_in_flight = Some(u32::try_from(small(u32::MAX.into())?)?),
            "half-open-max-probes" => config.half_open_max_probes = u8::try_from(small(255)?)?,
            "half-open-required-successes" => {
                config.half_open_required_successes = u32::try_from(small(u32::MAX.into())?)?
            }
            "half-open-success-rate" => {
                config.half_open_success_rate = Some(u8::try_from(small(255)?)?)
            }
            "probe-timeout-ms" => config.probe_timeout = ms(value, key)?,
            "fault-statuses" => {
                config.fault_statuses =
                    codes()?.into_iter().try_fold(StatusSet::EMPTY, |set, c| {
                        Ok::<_, anyhow::Error>(set.with(u16::try_from(c)?))
                    })?
            }
            "fault-grpc-codes" => {
                config.fault_grpc_codes =
                    codes()?.into_iter().try_fold(GrpcSet::EMPTY, |set, c| {
                        Ok::<_, anyhow::Error>(set.with(u8::try_from(c)?))
                    })?
            }
            other => bail!("unknown config key {other:?}"),
        }
    }
    Ok(config)
}

fn transitions_of(expect: &Value) -> Result<Vec<Step3>> {
    match expect.get("transitions") {
        None => Ok(Vec::new()),
        Some(list) => serde_json::from_value(list.clone())
            .context("transitions must be [[from, to, reason], ...]"),
    }
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<()> {
    ensure!(got == want, "{what}: got {got:?}, expected {want:?}");
    Ok(())
}

fn expect_bool(expect: &Value, key: &str) -> Option<bool> {
    expect.get(key).and_then(Value::as_bool)
}

/// Runs one parsed vector.
pub fn run_vector<S: Subject>(vector: &Value) -> Result<()> {
    let config_json = vector
        .get("config")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let config = core_config(&config_json)?;
    if let Some(want) = vector.get("config-error") {
        return match S::create(&config, 0) {
            Ok(_) => bail!("config was accepted; expected an error"),
            Err((field, message)) => {
                check(
                    "config-error field",
                    field.as_str(),
                    want["field"].as_str().unwrap_or_default(),
                )?;
                let want_message = want["message"].as_str().unwrap_or_default();
                ensure!(
                    message.contains(want_message),
                    "config-error message {message:?} does not contain {want_message:?}"
                );
                Ok(())
            }
        };
    }
    let mut subject =
        S::create(&config, 0).map_err(|(f, m)| anyhow!("config refused: {f}: {m}"))?;
    let mut permits: BTreeMap<String, S::Permit> = BTreeMap::new();
    let mut snapshots: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut last_at = 0u64;
    let steps = vector["steps"]
        .as_array()
        .ok_or_else(|| anyhow!("steps must be an array"))?;
    for (index, step) in steps.iter().enumerate() {
        let at = ms(&step["at"], "at")?;
        if at < last_at && !step["clock-steps-back"].as_bool().unwrap_or(false) {
            bail!("step {index}: `at` goes backwards without clock-steps-back");
        }
        last_at = last_at.max(at);
        let expect = step
            .get("expect")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        run_step(
            &mut subject,
            &config,
            step,
            &expect,
            at,
            &mut permits,
            &mut snapshots,
        )
        .with_context(|| format!("step {index} ({step})"))?;
    }
    Ok(())
}

fn run_step<S: Subject>(
    subject: &mut S,
    config: &Config,
    step: &Value,
    expect: &Value,
    at: u64,
    permits: &mut BTreeMap<String, S::Permit>,
    snapshots: &mut BTreeMap<String, Vec<u8>>,
) -> Result<()> {
    let op = step["op"].as_str().ok_or_else(|| anyhow!("op missing"))?;
    let want_transitions = transitions_of(expect)?;
    let name = step.get("permit").and_then(Value::as_str);
    match op {
        "acquire" => {
            let count = step.get("count").and_then(Value::as_u64).unwrap_or(1);
            let (mut admitted, mut rejected, mut all) = (0u64, 0u64, Vec::new());
            for _ in 0..count {
                let (decision, transitions) = subject.acquire(at)?;
                all.extend(transitions);
                match decision {
                    Decision::Admitted { permit, probe } => {
                        if count == 1 {
                            if let Some(want) = expect_bool(expect, "admitted") {
                                check("admitted", true, want)?;
                            }
                            if let Some(want) = expect_bool(expect, "probe") {
                                check("probe", probe, want)?;
                            }
                        }
                        if let Some(name) = name {
                            let key = if count == 1 {
                                name.to_string()
                            } else {
                                format!("{name}.{admitted}")
                            };
                            permits.insert(key, permit);
                        }
                        admitted += 1;
                    }
                    Decision::Rejected {
                        reason,
                        retry_after_ns,
                    } => {
                        if count == 1 {
                            if let Some(want) = expect_bool(expect, "admitted") {
                                check("admitted", false, want)?;
                            }
                            if let Some(want) = expect.get("rejected").and_then(Value::as_str) {
                                check("rejected", reason.as_str(), want)?;
                            }
                            if let Some(want) = expect.get("retry-after-ms") {
                                check(
                                    "retry-after-ms",
                                    retry_after_ns / MILLISECOND,
                                    ms(want, "retry-after-ms")? / MILLISECOND,
                                )?;
                            }
                        }
                        rejected += 1;
                    }
                }
            }
            if let Some(want) = expect.get("admitted-count").and_then(Value::as_u64) {
                check("admitted-count", admitted, want)?;
            }
            if let Some(want) = expect.get("rejected-count").and_then(Value::as_u64) {
                check("rejected-count", rejected, want)?;
            }
            check("transitions", all, want_transitions)?;
        }
        "record" => {
            let name = name.ok_or_else(|| anyhow!("record needs a permit"))?;
            let permit = permits
                .remove(name)
                .ok_or_else(|| anyhow!("no permit named {name:?} is held"))?;
            let outcome = VectorOutcome::parse(step["outcome"].as_str().unwrap_or_default())?;
            match subject.record(permit, outcome, at) {
                Ok(report) => {
                    ensure!(
                        !expect_bool(expect, "error").unwrap_or(false),
                        "record succeeded; expected an error"
                    );
                    if let Some(want) = expect.get("class").and_then(Value::as_str) {
                        check("class", report.class.as_str(), want)?;
                    }
                    if let Some(want) = expect_bool(expect, "slow") {
                        check("slow", report.slow, want)?;
                    }
                    if let Some(want) = expect_bool(expect, "stale") {
                        check("stale", report.stale, want)?;
                    }
                    check("transitions", report.transitions, want_transitions)?;
                }
                Err(message) => {
                    ensure!(
                        expect_bool(expect, "error").unwrap_or(false),
                        "record failed unexpectedly: {message}"
                    );
                    ensure!(!message.is_empty(), "record error has no message");
                }
            }
        }
        "state" => {}
        "metrics" => {
            let got = subject.metrics(at)?;
            if let Some(want) = expect.get("metrics").and_then(Value::as_object) {
                for (key, want) in want {
                    let got = got
                        .get(key)
                        .ok_or_else(|| anyhow!("metrics lack {key:?}"))?;
                    check(&format!("metrics.{key}"), got, want)?;
                }
            }
        }
        "isolate" | "release" | "disable" | "reset" => {
            check("transitions", subject.manual(op, at)?, want_transitions)?;
        }
        "export" => {
            let name = step["snapshot"]
                .as_str()
                .ok_or_else(|| anyhow!("export needs snapshot"))?;
            snapshots.insert(name.to_string(), subject.export(at)?);
        }
        "import" => {
            let name = step["snapshot"]
                .as_str()
                .ok_or_else(|| anyhow!("import needs snapshot"))?;
            let mut bytes = snapshots
                .get(name)
                .cloned()
                .ok_or_else(|| anyhow!("no snapshot {name:?}"))?;
            match step.get("damage").and_then(Value::as_str) {
                None => {}
                Some("truncate") => {
                    bytes.pop();
                }
                Some("flip") => {
                    let middle = bytes.len() / 2;
                    bytes[middle] = !bytes[middle];
                }
                Some(other) => bail!("unknown damage {other:?}"),
            }
            let elapsed = ms(
                step.get("elapsed-ms").unwrap_or(&Value::from(0)),
                "elapsed-ms",
            )?;
            if step["fresh"].as_bool().unwrap_or(false) {
                *subject = S::create(config, at).map_err(|(f, m)| anyhow!("{f}: {m}"))?;
                permits.clear();
            }
            let result = subject.import(&bytes, elapsed, at);
            match (result, expect_bool(expect, "error").unwrap_or(false)) {
                (Ok(()), false) => {}
                (Err(message), true) => ensure!(!message.is_empty(), "import error has no message"),
                (Ok(()), true) => bail!("import succeeded; expected an error"),
                (Err(message), false) => bail!("import failed: {message}"),
            }
        }
        other => bail!("unknown op {other:?}"),
    }
    if let Some(want) = expect.get("state").and_then(Value::as_str) {
        check("state", subject.state(at)?.as_str(), want)?;
    }
    Ok(())
}
