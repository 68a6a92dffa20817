//! The metrics scenario every host runs (`tests/metrics/scenario.json`), what its
//! exposition must be (`tests/metrics/expected.prom`), and the two checks each host's
//! exposition passes: Prometheus' own validator (`promtool check metrics`) and, once
//! normalised, equality with the expected one (same families, help, types, label sets
//! and values). The JS package runs the same scenario and checks against the same file
//! (`js/test/exposition.test.js`), so the Rust and Node expositions are compared
//! through it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::Value;

use crate::{VectorConfig, VectorOutcome};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("metrics")
}

/// The expected exposition of the scenario, in the Prometheus text format.
pub fn expected() -> Result<String> {
    let path = dir().join("expected.prom");
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

/// The `tracing` events every Rust host emits for the scenario, as [`event_line`]
/// writes them: level, breaker, route and epoch, in the order the calls made them.
pub const SCENARIO_EVENTS: [&str; 8] = [
    r#"WARN search "eu"\1: closed -> open (hung-calls) epoch 1"#,
    "INFO ledger: closed -> disabled (disabled) epoch 1",
    "INFO ledger: disabled -> closed (reset) epoch 2",
    "WARN payments: closed -> open (failure-threshold) epoch 1",
    "INFO payments: open -> half-open (cooldown-elapsed) epoch 2",
    "INFO payments: half-open -> closed (probes-succeeded) epoch 3",
    "WARN payments: closed -> isolated (isolated) epoch 4",
    "INFO payments: isolated -> closed (released) epoch 5",
];

/// One captured transition event as a line of [`SCENARIO_EVENTS`]; `Err` when it is not
/// a transition event of target `tripgate` with all five fields.
pub fn event_line(event: &crate::trace::Captured) -> Result<String> {
    ensure!(
        event.target == "tripgate",
        "an event of target {}",
        event.target
    );
    let field = |name: &str| {
        event
            .fields
            .get(name)
            .ok_or_else(|| anyhow!("an event without {name}: {event:?}"))
    };
    Ok(format!(
        "{} {}: {} -> {} ({}) epoch {}",
        event.level,
        field("breaker")?,
        field("from")?,
        field("to")?,
        field("reason")?,
        field("epoch")?
    ))
}

/// A host that runs the scenario: named breakers on one fake clock that starts at 0.
pub trait Host {
    /// The host's permit.
    type Permit;
    /// Creates the breaker `name` now.
    fn create(&mut self, name: &str, config: &VectorConfig) -> Result<()>;
    /// Sets the fake clock (milliseconds since the start).
    fn set_time(&mut self, ms: u64);
    /// Acquires on `name`: the permit, or `None` if rejected.
    fn acquire(&mut self, name: &str) -> Result<Option<Self::Permit>>;
    /// Records a permit's outcome on the breaker that issued it.
    fn record(&mut self, name: &str, permit: Self::Permit, outcome: VectorOutcome) -> Result<()>;
    /// `isolate`, `release`, `disable` or `reset` on `name`.
    fn manual(&mut self, name: &str, op: &str) -> Result<()>;
}

fn text<'a>(step: &'a Value, key: &str) -> Result<&'a str> {
    step.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("step {step} needs a string {key:?}"))
}

/// Runs `tests/metrics/scenario.json` on `host`; the clock is left at its last step.
pub fn run_scenario<H: Host>(host: &mut H) -> Result<()> {
    let path = dir().join("scenario.json");
    let scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )?;
    host.set_time(0);
    for breaker in scenario["breakers"].as_array().context("breakers")? {
        let config = breaker["config"].as_object().context("config")?;
        host.create(text(breaker, "name")?, &VectorConfig::parse(config)?)?;
    }
    let mut held: BTreeMap<String, (String, H::Permit)> = BTreeMap::new();
    for step in scenario["steps"].as_array().context("steps")? {
        if let Some(ms) = step.get("at-ms").and_then(Value::as_u64) {
            host.set_time(ms);
        } else if let Some(id) = step.get("hold").and_then(Value::as_str) {
            let name = text(step, "breaker")?;
            let permit = host
                .acquire(name)?
                .ok_or_else(|| anyhow!("{step}: the breaker rejected the held call"))?;
            held.insert(id.to_string(), (name.to_string(), permit));
        } else if let Some(id) = step.get("record").and_then(Value::as_str) {
            let (name, permit) = held
                .remove(id)
                .ok_or_else(|| anyhow!("{step}: nothing held as {id}"))?;
            host.record(&name, permit, VectorOutcome::parse(text(step, "outcome")?)?)?;
        } else if let Some(op) = step.get("manual").and_then(Value::as_str) {
            host.manual(text(step, "breaker")?, op)?;
        } else if let Some(n) = step.get("calls").and_then(Value::as_u64) {
            let (name, outcome) = (text(step, "breaker")?, text(step, "outcome")?);
            for _ in 0..n {
                if let Some(permit) = host.acquire(name)? {
                    host.record(name, permit, VectorOutcome::parse(outcome)?)?;
                }
            }
        } else {
            bail!("unknown step {step}");
        }
    }
    ensure!(
        held.is_empty(),
        "permits still held at the end: {:?}",
        held.keys()
    );
    Ok(())
}

/// Runs `promtool check metrics` on an exposition in the Prometheus text format: `Err`
/// with promtool's findings (a parse error or a lint problem), or naming the package to
/// install when there is no promtool.
pub fn promtool_check(exposition: &str) -> Result<()> {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => bail!(
            "promtool is not installed: it comes with Debian's `prometheus` package \
             (apt-get install -y prometheus; .ci/run installs it)"
        ),
        Err(error) => return Err(error).context("starting promtool"),
    };
    child
        .stdin
        .take()
        .context("promtool's stdin")?
        .write_all(exposition.as_bytes())?;
    let out = child.wait_with_output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {} {said}\n--- exposition ---\n{exposition}",
        out.status
    );
    Ok(())
}

/// One family of a normalised exposition, named as its samples are in the Prometheus
/// text format (an OpenMetrics counter `x` is the family `x_total`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Family {
    /// `# HELP`.
    pub help: Option<String>,
    /// `# TYPE`.
    pub kind: Option<String>,
    /// Values by label set (`{a="1",b="2"}`, labels sorted by name, values escaped one way).
    pub samples: BTreeMap<String, f64>,
}

/// An exposition in either text format, normalised for comparison: families by name,
/// samples by sorted label set, values as numbers (encoders spell them differently: `1`,
/// `1.0`, `1e0`).
pub fn normalise(exposition: &str) -> Result<BTreeMap<String, Family>> {
    let openmetrics = exposition.trim_end().ends_with("# EOF");
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    // OpenMetrics declares counters without `_total`: meta lines are keyed by sample name.
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helps: BTreeMap<String, String> = BTreeMap::new();
    for line in exposition.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (keyword, name, value) = (parts.next(), parts.next(), parts.next());
            match (keyword, name) {
                (Some("TYPE"), Some(name)) => {
                    types.insert(name.to_string(), value.unwrap_or_default().to_string());
                }
                (Some("HELP"), Some(name)) => {
                    helps.insert(name.to_string(), value.unwrap_or_default().to_string());
                }
                _ => {} // `# UNIT`, `# EOF`, comments
            }
            continue;
        }
        let (name, labels, value) = sample(line).with_context(|| format!("sample {line:?}"))?;
        families
            .entry(name)
            .or_default()
            .samples
            .insert(labels, value);
    }
    for (declared, kind) in types {
        let name = if openmetrics && kind == "counter" {
            format!("{declared}_total")
        } else {
            declared.clone()
        };
        let family = families.entry(name).or_default();
        family.kind = Some(kind);
        family.help = helps.remove(&declared);
    }
    ensure!(helps.is_empty(), "HELP without TYPE: {:?}", helps.keys());
    Ok(families)
}

/// `name{labels} value`, with the labels sorted and re-escaped.
fn sample(line: &str) -> Result<(String, String, f64)> {
    let split = line.find(['{', ' ']).ok_or_else(|| anyhow!("no value"))?;
    let (name, mut rest) = (line[..split].to_string(), &line[split..]);
    let mut labels = Vec::new();
    if let Some(mut inner) = rest.strip_prefix('{') {
        loop {
            inner = inner.trim_start_matches([',', ' ']);
            if let Some(after) = inner.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = inner
                .split_once("=\"")
                .ok_or_else(|| anyhow!("a label without =\""))?;
            let mut value = String::new();
            let mut chars = after.chars();
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some(c) => value.push(c),
                        None => bail!("an escape at the end"),
                    },
                    Some('"') => break,
                    Some(c) => value.push(c),
                    None => bail!("an unterminated label value"),
                }
            }
            labels.push((key.to_string(), value));
            inner = chars.as_str();
        }
    }
    labels.sort();
    let labels = labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{v}\"")
        })
        .collect::<Vec<_>>()
        .join(",");
    let value = rest
        .split_whitespace()
        .next()
        .context("no value")?
        .parse::<f64>()?;
    Ok((name, format!("{{{labels}}}"), value))
}

/// Checks a host's exposition (Prometheus text or OpenMetrics) against the expected one,
/// family by family, with a readable difference.
pub fn assert_matches_expected(exposition: &str) -> Result<()> {
    let got = normalise(exposition)?;
    let want = normalise(&expected()?)?;
    let names: std::collections::BTreeSet<&String> = got.keys().chain(want.keys()).collect();
    let mut problems = Vec::new();
    for name in names {
        match (got.get(name), want.get(name)) {
            (Some(g), Some(w)) if g == w => {}
            (g, w) => problems.push(format!("{name}:\n  got      {g:?}\n  expected {w:?}")),
        }
    }
    ensure!(
        problems.is_empty(),
        "the exposition differs from tests/metrics/expected.prom:\n{}\n--- exposition ---\n{exposition}",
        problems.join("\n")
    );
    Ok(())
}
