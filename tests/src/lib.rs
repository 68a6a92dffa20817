//! Runs the scenario vectors in `tests/vectors/` (format: `tests/vectors/README.md`)
//! against any host of the breaker.
//!
//! A host implements [`Subject`], speaking only in the vectors' own words (kebab-case
//! names, raw outcome numbers), and [`run_all`] checks every expectation of every file.
//! The native core and the wasmtime host share this runner, so "the same decisions" means
//! the same code checked them.

pub mod collectors;
mod config;
pub mod conformance;
pub mod exposition;
pub mod protocol;
pub mod retry;
mod run;
pub mod trace;

pub use config::{FieldValue, VectorConfig};
pub use run::{run_all, run_vector};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use tripgate_core::{FleetEvent, Metrics, Outcome, OutcomeKind, RejectReason, MILLISECOND};

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

/// What a subject's `reconfigure` did: whether the window kept its outcomes and the
/// transitions, or the refused field and the message.
pub type Reconfigured = Result<(bool, Vec<Step3>), (String, String)>;

/// A breaker under test, in any host.
pub trait Subject: Sized {
    /// The host's permit.
    type Permit;

    /// Creates a breaker at `now` with the vector's fields (absent ones take the host's
    /// defaults); on a bad config, `(field, message)`.
    fn create(config: &VectorConfig, now: u64) -> Result<Self, (String, String)>;
    /// Acquires once.
    fn acquire(&mut self, now: u64) -> Result<(Decision<Self::Permit>, Vec<Step3>)>;
    /// Records an outcome, with the stay-away the answer asked for (`retry_after` ns, 0
    /// for none). `Err` for an outcome the host refuses (bad status or code).
    fn record(
        &mut self,
        permit: Self::Permit,
        outcome: VectorOutcome,
        retry_after: u64,
        now: u64,
    ) -> Result<RecordReport, String>;
    /// The effective state.
    fn state(&mut self, now: u64) -> Result<String>;
    /// The metrics, under the vector key names (`calls`, `rejected-open`, `time-in-state-ms`…).
    fn metrics(&mut self, now: u64) -> Result<BTreeMap<String, Value>>;
    /// `isolate`, `release`, `disable` or `reset`.
    fn manual(&mut self, op: &str, now: u64) -> Result<Vec<Step3>>;
    /// Puts a new configuration in force: whether the window kept its outcomes, and the
    /// transitions; on a bad config, `Ok(Err((field, message)))`.
    fn reconfigure(&mut self, config: &VectorConfig, now: u64) -> Result<Reconfigured>;
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
        put(
            &format!("shadow-rejected-{}", reason.name()),
            m.shadow_rejected(*reason).into(),
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
