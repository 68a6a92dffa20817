//! Running vectors: every step of every file against a [`Subject`], each expectation
//! checked.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::{Map, Value};
use tripgate_core::{FleetEvent, FleetEventKind, MILLISECOND};

use crate::config::ms;
use crate::{vector_files, Decision, Step3, Subject, VectorConfig, VectorOutcome};

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
        return config_refused::<S>(&config, want);
    }
    let mut run = Run::<S> {
        subject: S::create(&config, 0).map_err(|(f, m)| anyhow!("config refused: {f}: {m}"))?,
        config,
        permits: BTreeMap::new(),
        snapshots: BTreeMap::new(),
    };
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
        let context = || format!("step {index} ({step})");
        let step = Step {
            json: step,
            at: clock_reading(step, at).with_context(context)?,
            transitions: transitions_of(&expect).with_context(context)?,
            expect: &expect,
        };
        run.step(&step).with_context(context)?;
    }
    Ok(())
}

/// A vector whose configuration the subject must refuse, naming the field.
fn config_refused<S: Subject>(config: &VectorConfig, want: &Value) -> Result<()> {
    match S::create(config, 0) {
        Ok(_) => bail!("config was accepted; expected an error"),
        Err((field, message)) => check_refusal(&field, &message, want),
    }
}

/// A refused configuration's field and message, against the vector's `config-error`.
fn check_refusal(field: &str, message: &str, want: &Value) -> Result<()> {
    check(
        "config-error field",
        field,
        want["field"].as_str().unwrap_or_default(),
    )?;
    let want_message = want["message"].as_str().unwrap_or_default();
    ensure!(
        message.contains(want_message),
        "config-error message {message:?} does not contain {want_message:?}"
    );
    Ok(())
}

/// What the host's clock reads at a step: the scenario's time `at`, or an absurd reading
/// for this step alone (`reading-ns`; the scenario's time stays at `at`).
fn clock_reading(step: &Value, at: u64) -> Result<u64> {
    match step.get("reading-ns") {
        None => Ok(at),
        Some(reading) => reading
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| anyhow!("reading-ns must be a decimal string")),
    }
}

/// One vector's run: its subject, and what earlier steps left for later ones.
struct Run<S: Subject> {
    subject: S,
    config: VectorConfig,
    permits: BTreeMap<String, S::Permit>,
    snapshots: BTreeMap<String, Vec<u8>>,
}

/// One step: its JSON, what it expects, the clock reading and the transitions it must
/// report.
struct Step<'a> {
    json: &'a Value,
    expect: &'a Value,
    at: u64,
    transitions: Vec<Step3>,
}

impl Step<'_> {
    fn permit(&self) -> Option<&str> {
        self.json.get("permit").and_then(Value::as_str)
    }

    fn expects_error(&self) -> bool {
        expect_bool(self.expect, "error").unwrap_or(false)
    }
}

impl<S: Subject> Run<S> {
    fn step(&mut self, step: &Step<'_>) -> Result<()> {
        let op = step.json["op"]
            .as_str()
            .ok_or_else(|| anyhow!("op missing"))?;
        let at = step.at;
        match op {
            "acquire" => self.acquire(step)?,
            "record" => self.record(step)?,
            "state" => {}
            "metrics" => {
                let got = self.subject.metrics(at)?;
                check_fields("metrics", &got, step.expect.get("metrics"))?;
            }
            "isolate" | "release" | "disable" | "reset" => {
                let got = self.subject.manual(op, at)?;
                check("transitions", &got, &step.transitions)?;
            }
            "reconfigure" => self.reconfigure(step)?,
            "export" => {
                let name = step.json["snapshot"]
                    .as_str()
                    .ok_or_else(|| anyhow!("export needs snapshot"))?;
                self.snapshots
                    .insert(name.to_string(), self.subject.export(at)?);
            }
            "import" => self.import(step)?,
            "fleet-apply" => self.fleet_apply(step)?,
            "fleet-votes" => self.fleet_votes(step)?,
            "fleet-store" => self.fleet_store(step)?,
            "fleet-announcement" => self.fleet_announcement(step)?,
            "fleet-status" => {
                let got = self.subject.fleet_status(at)?;
                check_fields("fleet", &got, step.expect.get("fleet"))?;
            }
            other => bail!("unknown op {other:?}"),
        }
        if let Some(want) = step.expect.get("state").and_then(Value::as_str) {
            check("state", self.subject.state(at)?.as_str(), want)?;
        }
        Ok(())
    }

    /// `count` acquisitions (one unless the step says): each decision checked when there is
    /// one, the tallies when there are several.
    fn acquire(&mut self, step: &Step<'_>) -> Result<()> {
        let expect = step.expect;
        let count = step.json.get("count").and_then(Value::as_u64).unwrap_or(1);
        let (mut admitted, mut rejected, mut all) = (0u64, 0u64, Vec::new());
        for _ in 0..count {
            let (decision, transitions) = self.subject.acquire(step.at)?;
            all.extend(transitions);
            match decision {
                Decision::Admitted { permit, probe } => {
                    if count == 1 {
                        check_admitted(expect, probe)?;
                    }
                    if let Some(name) = step.permit() {
                        let key = if count == 1 {
                            name.to_string()
                        } else {
                            format!("{name}.{admitted}")
                        };
                        self.permits.insert(key, permit);
                    }
                    admitted += 1;
                }
                Decision::Rejected {
                    reason,
                    retry_after_ns,
                } => {
                    if count == 1 {
                        check_rejected(expect, &reason, retry_after_ns)?;
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
        check("transitions", &all, &step.transitions)
    }

    /// A new configuration (`config`, whole: absent fields take their defaults): the
    /// window kept or not and the transitions, or the refusal the step expects.
    fn reconfigure(&mut self, step: &Step<'_>) -> Result<()> {
        let json = step.json["config"].as_object().cloned().unwrap_or_default();
        let config = VectorConfig::parse(&json)?;
        match (
            self.subject.reconfigure(&config, step.at)?,
            step.expect.get("config-error"),
        ) {
            (Ok((kept, transitions)), None) => {
                if let Some(want) = expect_bool(step.expect, "window-kept") {
                    check("window-kept", kept, want)?;
                }
                self.config = config;
                check("transitions", &transitions, &step.transitions)
            }
            (Err((field, message)), Some(want)) => check_refusal(&field, &message, want),
            (Ok(_), Some(_)) => bail!("config was accepted; expected an error"),
            (Err((field, message)), None) => bail!("config refused: {field}: {message}"),
        }
    }

    fn record(&mut self, step: &Step<'_>) -> Result<()> {
        let expect = step.expect;
        let name = step
            .permit()
            .ok_or_else(|| anyhow!("record needs a permit"))?;
        let permit = self
            .permits
            .remove(name)
            .ok_or_else(|| anyhow!("no permit named {name:?} is held"))?;
        let outcome = VectorOutcome::parse(step.json["outcome"].as_str().unwrap_or_default())?;
        let retry_after = match step.json.get("retry-after-ms") {
            Some(value) => ms(value, "retry-after-ms")?,
            None => 0,
        };
        match self.subject.record(permit, outcome, retry_after, step.at) {
            Ok(report) => {
                ensure!(!step.expects_error(), "record succeeded; expected an error");
                if let Some(want) = expect.get("class").and_then(Value::as_str) {
                    check("class", report.class.as_str(), want)?;
                }
                if let Some(want) = expect_bool(expect, "slow") {
                    check("slow", report.slow, want)?;
                }
                if let Some(want) = expect_bool(expect, "stale") {
                    check("stale", report.stale, want)?;
                }
                check("transitions", &report.transitions, &step.transitions)
            }
            Err(message) => {
                ensure!(
                    step.expects_error(),
                    "record failed unexpectedly: {message}"
                );
                ensure!(!message.is_empty(), "record error has no message");
                Ok(())
            }
        }
    }

    /// Imports a snapshot an earlier step exported, damaged if the step says, into this
    /// subject or (`fresh`) a new one.
    fn import(&mut self, step: &Step<'_>) -> Result<()> {
        let json = step.json;
        let name = json["snapshot"]
            .as_str()
            .ok_or_else(|| anyhow!("import needs snapshot"))?;
        let mut bytes = self
            .snapshots
            .get(name)
            .cloned()
            .ok_or_else(|| anyhow!("no snapshot {name:?}"))?;
        match json.get("damage").and_then(Value::as_str) {
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
            json.get("elapsed-ms").unwrap_or(&Value::from(0)),
            "elapsed-ms",
        )?;
        if json["fresh"].as_bool().unwrap_or(false) {
            // The importer's own configuration, when the step gives one.
            let own = match json.get("config").and_then(Value::as_object) {
                Some(config) => VectorConfig::parse(config)?,
                None => self.config.clone(),
            };
            self.subject = S::create(&own, step.at).map_err(|(f, m)| anyhow!("{f}: {m}"))?;
            self.permits.clear();
        }
        match (
            self.subject.import(&bytes, elapsed, step.at),
            step.expects_error(),
        ) {
            (Ok(()), false) => Ok(()),
            (Err(message), true) => {
                ensure!(!message.is_empty(), "import error has no message");
                Ok(())
            }
            (Ok(()), true) => bail!("import succeeded; expected an error"),
            (Err(message), false) => bail!("import failed: {message}"),
        }
    }

    fn fleet_apply(&mut self, step: &Step<'_>) -> Result<()> {
        let json = step.json;
        let kind = json["kind"].as_str().unwrap_or_default();
        let event = FleetEvent {
            generation: json["generation"]
                .as_u64()
                .ok_or_else(|| anyhow!("fleet-apply needs a generation"))?,
            kind: FleetEventKind::from_name(kind)
                .ok_or_else(|| anyhow!("unknown fleet event kind {kind:?}"))?,
            remaining: json
                .get("remaining-ms")
                .map_or(Ok(0), |v| ms(v, "remaining-ms"))?,
        };
        let (applied, transitions) = self.subject.fleet_apply(event, step.at)?;
        if let Some(want) = step.expect.get("fleet-applied").and_then(Value::as_str) {
            check("fleet-applied", applied.as_str(), want)?;
        }
        check("transitions", &transitions, &step.transitions)
    }

    fn fleet_votes(&mut self, step: &Step<'_>) -> Result<()> {
        let votes = step.json["votes"]
            .as_array()
            .ok_or_else(|| anyhow!("fleet-votes needs votes"))?
            .iter()
            .map(|vote| {
                let member = vote[0].as_u64().ok_or_else(|| anyhow!("bad member"))?;
                Ok((member, ms(&vote[1], "age")?))
            })
            .collect::<Result<Vec<_>>>()?;
        let reached = self.subject.fleet_votes(&votes, step.at)?;
        if let Some(want) = expect_bool(step.expect, "quorum") {
            check("quorum", reached, want)?;
        }
        Ok(())
    }

    fn fleet_store(&mut self, step: &Step<'_>) -> Result<()> {
        let lease = match step.json.get("lease-ms") {
            None | Some(Value::Null) => None,
            Some(v) => Some(ms(v, "lease-ms")?),
        };
        let reachable = step.json["reachable"].as_bool().unwrap_or(true);
        self.subject.fleet_store(reachable, lease, step.at)
    }

    fn fleet_announcement(&mut self, step: &Step<'_>) -> Result<()> {
        let got = self.subject.fleet_take_announcement()?;
        if let Some(want) = step.expect.get("announcement") {
            let got = got.map(|(kind, remaining)| {
                serde_json::json!({ "kind": kind, "remaining-ms": remaining / MILLISECOND })
            });
            check("announcement", &got.unwrap_or(Value::Null), want)?;
        }
        Ok(())
    }
}

fn check_admitted(expect: &Value, probe: bool) -> Result<()> {
    if let Some(want) = expect_bool(expect, "admitted") {
        check("admitted", true, want)?;
    }
    if let Some(want) = expect_bool(expect, "probe") {
        check("probe", probe, want)?;
    }
    Ok(())
}

fn check_rejected(expect: &Value, reason: &str, retry_after_ns: u64) -> Result<()> {
    if let Some(want) = expect_bool(expect, "admitted") {
        check("admitted", false, want)?;
    }
    if let Some(want) = expect.get("rejected").and_then(Value::as_str) {
        check("rejected", reason, want)?;
    }
    if let Some(want) = expect.get("retry-after-ms") {
        check(
            "retry-after-ms",
            retry_after_ns / MILLISECOND,
            ms(want, "retry-after-ms")? / MILLISECOND,
        )?;
    }
    Ok(())
}

/// Each field `want` names (an object, when the step expects one) against `got`'s, named
/// `{what}.{field}` in a failure.
fn check_fields(what: &str, got: &BTreeMap<String, Value>, want: Option<&Value>) -> Result<()> {
    for (key, want) in want.and_then(Value::as_object).into_iter().flatten() {
        let got = got
            .get(key)
            .ok_or_else(|| anyhow!("{what} has no field {key:?}"))?;
        check(&format!("{what}.{key}"), got, want)?;
    }
    Ok(())
}
