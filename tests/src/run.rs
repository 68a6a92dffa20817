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
                // The importer's own configuration, when the step gives one.
                let own = match step.get("config").and_then(Value::as_object) {
                    Some(json) => VectorConfig::parse(json)?,
                    None => config.clone(),
                };
                *subject = S::create(&own, at).map_err(|(f, m)| anyhow!("{f}: {m}"))?;
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
