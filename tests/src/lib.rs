//! Runs the scenario vectors in `tests/vectors/` (format: `tests/vectors/README.md`)
//! against any host of the breaker.
//!
//! A host implements [`Subject`], speaking only in the vectors' own words (kebab-case
//! names, raw outcome numbers), and [`run_all`] checks every expectation of every file.
//! The native core and the wasmtime host share this runner, so "the same decisions" means
//! the same code checked them.

pub mod exposition;
pub mod protocol;
pub mod trace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::{Map, Value};
use tripgate_core::{
    Config, Field, FieldKind, FleetEvent, FleetEventKind, GrpcSet, Metrics, Outcome, OutcomeKind,
    RejectReason, StatusSet, MILLISECOND,
};

/// An outcome as a vector spells it (`success`, `status:503`, `grpc:14`, the core's
/// [`OutcomeKind`] names); numbers are unvalidated so hosts can be fed bad ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorOutcome {
    /// `status:N`
    Status(u16),
    /// `grpc:N`
    Grpc(u8),
    /// A kind that carries no code (`success`, `timeout`, …).
    Plain(OutcomeKind),
}

impl VectorOutcome {
    /// Parses `success`, `status:503`, `grpc:14`, ….
    pub fn parse(text: &str) -> Result<Self> {
        let (name, code) = match text.split_once(':') {
            Some((name, code)) => (
                name,
                Some(
                    code.parse::<u64>()
                        .with_context(|| format!("bad outcome {text:?}"))?,
                ),
            ),
            None => (text, None),
        };
        let kind =
            OutcomeKind::from_name(name).ok_or_else(|| anyhow!("unknown outcome {text:?}"))?;
        Ok(match (kind, code) {
            (OutcomeKind::Status, Some(code)) => Self::Status(u16::try_from(code)?),
            (OutcomeKind::Grpc, Some(code)) => Self::Grpc(u8::try_from(code)?),
            (kind, None) if Outcome::of_kind(kind).is_some() => Self::Plain(kind),
            _ => bail!("bad outcome {text:?}"),
        })
    }

    /// The core's outcome, or the core's refusal of a status or code.
    pub fn to_core(self) -> Result<Outcome, String> {
        match self {
            Self::Status(code) => Outcome::status(code).map_err(|e| e.to_string()),
            Self::Grpc(code) => Outcome::grpc(code).map_err(|e| e.to_string()),
            Self::Plain(kind) => {
                Outcome::of_kind(kind).ok_or_else(|| format!("{kind} needs a code"))
            }
        }
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

    /// Creates a breaker at `now` with the vector's fields (absent ones take the host's
    /// defaults); on a bad config, `(field, message)`.
    fn create(config: &VectorConfig, now: u64) -> Result<Self, (String, String)>;
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
    /// Fleet mode: applies an event; what it did (`applied`, `stale`, `held`,
    /// `not-in-fleet`) and the transitions.
    fn fleet_apply(&mut self, event: FleetEvent, now: u64) -> Result<(String, Vec<Step3>)>;
    /// Fleet mode: the store's votes (member, age in ns); whether they reach the quorum.
    fn fleet_votes(&mut self, votes: &[(u64, u64)], now: u64) -> Result<bool>;
    /// Fleet mode: whether the store is reachable, and the lease held for so long (ns).
    fn fleet_store(&mut self, reachable: bool, lease: Option<u64>, now: u64) -> Result<()>;
    /// Fleet mode: the announcement to publish, taken: kind and remaining (ns).
    fn fleet_take_announcement(&mut self) -> Result<Option<(String, u64)>>;
    /// Fleet mode: the status, under the vector key names (see [`fleet_status_map`]).
    fn fleet_status(&mut self, now: u64) -> Result<BTreeMap<String, Value>>;
}

/// A core `FleetStatus` under the vector key names (`generation`, `degraded`,
/// `lease-held`, `wants-lease`, `stale-events`).
pub fn fleet_status_map(s: &tripgate_core::FleetStatus) -> BTreeMap<String, Value> {
    [
        ("generation", Value::from(s.generation)),
        ("degraded", Value::from(s.degraded)),
        ("lease-held", Value::from(s.lease_held)),
        ("wants-lease", Value::from(s.wants_lease)),
        ("stale-events", Value::from(s.stale_events)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
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
            m.rejected(*reason).into(),
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
    json_files("vectors")
}

/// The `.json` files of a folder under `tests/`, sorted by name.
pub fn json_files(folder: &str) -> Result<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
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

/// A value a vector gives a config field, in the core's units (durations in ns).
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// A count, a percentage, a duration or the seed.
    Number(u64),
    /// The backoff factor.
    Factor(f64),
    /// A list of HTTP statuses or gRPC codes, unvalidated (hosts must refuse bad ones).
    Codes(Vec<u64>),
}

/// A vector's `config`: the fields it sets, by the core's [`Field`] table. Fields it does
/// not name are absent, and each host must apply its own defaults to them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VectorConfig {
    /// The fields set, in the vector's order.
    pub fields: Vec<(Field, FieldValue)>,
}

impl VectorConfig {
    /// Reads a vector's `config` object: keys are the core's field names, durations with
    /// an `-ms` suffix in whole milliseconds.
    pub fn parse(json: &Map<String, Value>) -> Result<Self> {
        let mut fields = Vec::new();
        for (key, value) in json {
            let name = key.strip_suffix("-ms").unwrap_or(key);
            let field = Field::from_name(name)
                .filter(|f| (f.kind() == FieldKind::Duration) == (name != key))
                .ok_or_else(|| anyhow!("unknown config key {key:?}"))?;
            let int = || {
                value
                    .as_u64()
                    .ok_or_else(|| anyhow!("{key} must be a whole number"))
            };
            let value = match field.kind() {
                FieldKind::Duration => FieldValue::Number(ms(value, key)?),
                FieldKind::Count | FieldKind::Percent | FieldKind::Seed => {
                    FieldValue::Number(int()?)
                }
                FieldKind::Factor => FieldValue::Factor(
                    value
                        .as_f64()
                        .ok_or_else(|| anyhow!("{key} must be a number"))?,
                ),
                FieldKind::Statuses | FieldKind::GrpcCodes => FieldValue::Codes(
                    value
                        .as_array()
                        .ok_or_else(|| anyhow!("{key} must be an array"))?
                        .iter()
                        .map(|v| {
                            v.as_u64()
                                .ok_or_else(|| anyhow!("{key} holds a non-number"))
                        })
                        .collect::<Result<_>>()?,
                ),
            };
            fields.push((field, value));
        }
        Ok(Self { fields })
    }

    /// The value the vector gives `field`, if any.
    pub fn get(&self, field: Field) -> Option<&FieldValue> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v)
    }

    /// The core config: the defaults, with every field the vector sets. A code outside
    /// its range is an error naming the field (as the component and the JS package refuse
    /// it), not dropped from the set.
    pub fn to_core(&self) -> Result<Config, tripgate_core::ConfigError> {
        let mut config = Config::default();
        for (field, value) in &self.fields {
            let list_error = || tripgate_core::ConfigError {
                field: *field,
                rule: tripgate_core::Rule::List,
            };
            match value {
                FieldValue::Number(n) => config.set(*field, *n)?,
                FieldValue::Factor(f) => config.backoff_factor = *f,
                FieldValue::Codes(codes) if *field == Field::FaultStatuses => {
                    config.fault_statuses = codes.iter().try_fold(StatusSet::EMPTY, |set, &c| {
                        u16::try_from(c)
                            .ok()
                            .filter(|&c| tripgate_core::HttpStatus::new(c).is_ok())
                            .map(|c| set.with(c))
                            .ok_or_else(list_error)
                    })?
                }
                FieldValue::Codes(codes) => {
                    config.fault_grpc_codes = codes.iter().try_fold(GrpcSet::EMPTY, |set, &c| {
                        u8::try_from(c)
                            .ok()
                            .filter(|&c| tripgate_core::GrpcCode::new(c).is_ok())
                            .map(|c| set.with(c))
                            .ok_or_else(list_error)
                    })?
                }
            }
        }
        Ok(config)
    }
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
    let config = VectorConfig::parse(&config_json)?;
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
        let mut at = ms(&step["at"], "at")?;
        if at < last_at && !step["clock-steps-back"].as_bool().unwrap_or(false) {
            bail!("step {index}: `at` goes backwards without clock-steps-back");
        }
        last_at = last_at.max(at);
        if let Some(reading) = step.get("reading-ns") {
            // An absurd clock reading for this step alone (the host's clock, not the
            // scenario's time, which stays at `at`).
            at = reading
                .as_str()
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| anyhow!("step {index}: reading-ns must be a decimal string"))?;
        }
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
    config: &VectorConfig,
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
        "fleet-apply" => {
            let kind = step["kind"].as_str().unwrap_or_default();
            let event = FleetEvent {
                generation: step["generation"]
                    .as_u64()
                    .ok_or_else(|| anyhow!("fleet-apply needs a generation"))?,
                kind: FleetEventKind::from_name(kind)
                    .ok_or_else(|| anyhow!("unknown fleet event kind {kind:?}"))?,
                remaining: step
                    .get("remaining-ms")
                    .map_or(Ok(0), |v| ms(v, "remaining-ms"))?,
            };
            let (applied, transitions) = subject.fleet_apply(event, at)?;
            if let Some(want) = expect.get("fleet-applied").and_then(Value::as_str) {
                check("fleet-applied", applied.as_str(), want)?;
            }
            check("transitions", transitions, want_transitions)?;
        }
        "fleet-votes" => {
            let votes = step["votes"]
                .as_array()
                .ok_or_else(|| anyhow!("fleet-votes needs votes"))?
                .iter()
                .map(|vote| {
                    let member = vote[0].as_u64().ok_or_else(|| anyhow!("bad member"))?;
                    Ok((member, ms(&vote[1], "age")?))
                })
                .collect::<Result<Vec<_>>>()?;
            let reached = subject.fleet_votes(&votes, at)?;
            if let Some(want) = expect_bool(expect, "quorum") {
                check("quorum", reached, want)?;
            }
        }
        "fleet-store" => {
            let lease = match step.get("lease-ms") {
                None | Some(Value::Null) => None,
                Some(v) => Some(ms(v, "lease-ms")?),
            };
            let reachable = step["reachable"].as_bool().unwrap_or(true);
            subject.fleet_store(reachable, lease, at)?;
        }
        "fleet-announcement" => {
            let got = subject.fleet_take_announcement()?;
            if let Some(want) = expect.get("announcement") {
                let got = got.map(|(kind, remaining)| {
                    serde_json::json!({ "kind": kind, "remaining-ms": remaining / MILLISECOND })
                });
                check("announcement", &got.unwrap_or(Value::Null), want)?;
            }
        }
        "fleet-status" => {
            let got = subject.fleet_status(at)?;
            if let Some(want) = expect.get("fleet").and_then(Value::as_object) {
                for (key, want) in want {
                    let got = got
                        .get(key)
                        .ok_or_else(|| anyhow!("fleet status lacks {key:?}"))?;
                    check(&format!("fleet.{key}"), got, want)?;
                }
            }
        }
        other => bail!("unknown op {other:?}"),
    }
    if let Some(want) = expect.get("state").and_then(Value::as_str) {
        check("state", subject.state(at)?.as_str(), want)?;
    }
    Ok(())
}
