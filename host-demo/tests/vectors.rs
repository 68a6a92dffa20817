//! Every scenario vector in `tests/vectors/`, through the component in wasmtime: the same
//! runner and the same expectations as the native core (`tests/tests/native.rs`).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use host_demo::{Breaker, Class, Config, FakeClock, Outcome, Permit, Transition};
use serde_json::Value;
use tripgate_vectors::{
    metric_map, run_all, Decision, RecordReport, Step3, Subject, VectorOutcome,
};

struct Wasm {
    clock: Arc<FakeClock>,
    breaker: Breaker,
}

/// A permit the runner may drop unrecorded. The native core's `Permit` does nothing
/// when dropped (the call stays in flight), so this wrapper forgets the host permit
/// instead of releasing it as `cancelled`, to compare like with like.
struct Held(Option<Permit>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(permit) = self.0.take() {
            std::mem::forget(permit);
        }
    }
}

fn steps(transitions: &[Transition]) -> Vec<Step3> {
    transitions
        .iter()
        .map(|t| {
            [
                host_demo::state_name(t.from).to_string(),
                host_demo::state_name(t.to).to_string(),
                host_demo::reason_name(t.reason).to_string(),
            ]
        })
        .collect()
}

fn outcome(outcome: VectorOutcome) -> Outcome {
    match outcome {
        VectorOutcome::Success => Outcome::Success,
        VectorOutcome::Status(code) => Outcome::Status(code),
        VectorOutcome::Grpc(code) => Outcome::Grpc(code),
        VectorOutcome::Timeout => Outcome::Timeout,
        VectorOutcome::ConnectionError => Outcome::ConnectionError,
        VectorOutcome::Failure => Outcome::Failure,
        VectorOutcome::Cancelled => Outcome::Cancelled,
        VectorOutcome::Ignored => Outcome::Ignored,
    }
}

impl Wasm {
    fn at(&self, now: u64) -> &Breaker {
        self.clock.set(now);
        &self.breaker
    }
}

impl Subject for Wasm {
    type Permit = Held;

    fn create(config: &Config, now: u64) -> Result<Self, (String, String)> {
        let (runtime, clock) = common::fake(now);
        match runtime.breaker(config) {
            Ok(breaker) => Ok(Wasm { clock, breaker }),
            Err(error) => match error.downcast_ref::<host_demo::ConfigError>() {
                Some(e) => Err((e.field_name().to_string(), e.to_string())),
                None => Err(("?".into(), format!("{error:#}"))),
            },
        }
    }

    fn acquire(&mut self, now: u64) -> Result<(Decision<Held>, Vec<Step3>)> {
        let admission = self.at(now).acquire()?;
        let decision = match admission.decision {
            Ok(permit) => Decision::Admitted {
                probe: permit.is_probe()?,
                permit: Held(Some(permit)),
            },
            Err(r) => Decision::Rejected {
                reason: host_demo::reject_reason_name(r.reason).to_string(),
                retry_after_ns: r.retry_after,
            },
        };
        Ok((decision, steps(&admission.transitions)))
    }

    fn record(
        &mut self,
        mut held: Held,
        vector: VectorOutcome,
        now: u64,
    ) -> Result<RecordReport, String> {
        let permit = held.0.take().ok_or("permit already used")?;
        self.clock.set(now);
        let recorded = permit
            .record(outcome(vector))
            .map_err(|e| format!("{e:#}"))?;
        Ok(RecordReport {
            class: match recorded.class {
                Class::Success => "success",
                Class::Fault => "fault",
                Class::Neutral => "neutral",
            }
            .to_string(),
            slow: recorded.slow,
            stale: recorded.stale,
            transitions: steps(&recorded.transitions),
        })
    }

    fn state(&mut self, now: u64) -> Result<String> {
        Ok(host_demo::state_name(self.at(now).state()?).to_string())
    }

    fn metrics(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        Ok(metric_map(&host_demo::core_metrics(
            &self.at(now).metrics()?,
        )))
    }

    fn manual(&mut self, op: &str, now: u64) -> Result<Vec<Step3>> {
        let breaker = self.at(now);
        let transitions = match op {
            "isolate" => breaker.isolate()?,
            "release" => breaker.release()?,
            "disable" => breaker.disable()?,
            "reset" => breaker.reset()?,
            other => anyhow::bail!("unknown manual op {other}"),
        };
        Ok(steps(&transitions))
    }

    fn export(&mut self, now: u64) -> Result<Vec<u8>> {
        self.at(now).export_state()
    }

    fn import(&mut self, bytes: &[u8], elapsed: u64, now: u64) -> Result<(), String> {
        self.at(now)
            .import_state(bytes, elapsed)
            .map_err(|e| format!("{e:#}"))
    }
}

#[test]
fn every_vector_passes_in_wasmtime() {
    let count = run_all::<Wasm>().unwrap();
    assert!(count >= 25, "only {count} vectors");
    println!("{count} vectors passed through the component");
}
