//! Every scenario vector in `tests/vectors/`, through the component in wasmtime: the same
//! runner and the same expectations as the native core (`tests/tests/native.rs`).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use serde_json::Value;
use tripgate_vectors::{
    fleet_status_map, metric_map, run_all, Decision, FieldValue, Reconfigured, RecordReport, Step3,
    Subject, VectorConfig, VectorOutcome,
};
use tripgate_wasmtime::{wit, Breaker, FakeClock, FleetEvent, Outcome, Permit, Transition};

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
                t.from.name().to_string(),
                t.to.name().to_string(),
                t.reason.name().to_string(),
            ]
        })
        .collect()
}

fn outcome(outcome: VectorOutcome) -> Outcome {
    use tripgate_core::OutcomeKind as K;
    match outcome {
        VectorOutcome::Status(code) => Outcome::Status(code),
        VectorOutcome::Grpc(code) => Outcome::Grpc(code),
        VectorOutcome::Plain(kind) => match kind {
            K::Success => Outcome::Success,
            K::Timeout => Outcome::Timeout,
            K::ConnectionError => Outcome::ConnectionError,
            K::Failure => Outcome::Failure,
            K::Cancelled => Outcome::Cancelled,
            K::Ignored | K::Status | K::Grpc => Outcome::Ignored,
        },
    }
}

/// The WIT config record with exactly the fields the vector sets: every other field is
/// absent, so the component's own defaults are what the vectors check.
fn wit_config(config: &VectorConfig) -> wit::Config {
    use tripgate_core::Field as F;
    let mut c = wit::Config::default();
    for (field, value) in &config.fields {
        let n = match value {
            FieldValue::Number(n) => *n,
            FieldValue::Factor(f) => {
                c.backoff_factor = Some(*f);
                continue;
            }
            FieldValue::Codes(codes) => {
                // Out-of-range codes become codes the component must refuse.
                if *field == F::FaultStatuses {
                    c.fault_statuses = Some(
                        codes
                            .iter()
                            .map(|&v| u16::try_from(v).unwrap_or(u16::MAX))
                            .collect(),
                    );
                } else {
                    c.fault_grpc_codes = Some(
                        codes
                            .iter()
                            .map(|&v| u8::try_from(v).unwrap_or(u8::MAX))
                            .collect(),
                    );
                }
                continue;
            }
        };
        let (small, wide) = (
            u8::try_from(n).unwrap_or(u8::MAX),
            u32::try_from(n).unwrap_or(u32::MAX),
        );
        match field {
            F::FailureThreshold => c.failure_threshold = Some(wide),
            F::MinCalls => c.min_calls = Some(wide),
            F::FailureRate => c.failure_rate = Some(small),
            F::SlowCallRate => c.slow_call_rate = Some(small),
            F::SlowCallDuration => c.slow_call_duration = Some(n),
            F::Window => c.window = Some(n),
            F::Buckets => c.buckets = Some(small),
            F::WindowCalls => c.window_calls = Some(u16::try_from(n).unwrap_or(u16::MAX)),
            F::Cooldown => c.cooldown = Some(n),
            F::BackoffFactor => c.backoff_factor = Some(n as f64),
            F::MaxCooldown => c.max_cooldown = Some(n),
            F::JitterPercent => c.jitter_percent = Some(small),
            F::JitterSeed => c.jitter_seed = Some(n),
            F::MaxInFlight => c.max_in_flight = Some(wide),
            F::HalfOpenMaxProbes => c.half_open_max_probes = Some(small),
            F::HalfOpenRequiredSuccesses => c.half_open_required_successes = Some(wide),
            F::HalfOpenSuccessRate => c.half_open_success_rate = Some(small),
            F::ProbeTimeout => c.probe_timeout = Some(n),
            F::FleetQuorum => c.fleet_quorum = Some(small),
            F::Shadow => c.shadow = Some(n != 0),
            F::FaultStatuses | F::FaultGrpcCodes => {}
        }
    }
    c
}

impl Wasm {
    fn at(&self, now: u64) -> &Breaker {
        self.clock.set(now);
        &self.breaker
    }
}

impl Subject for Wasm {
    type Permit = Held;

    fn create(config: &VectorConfig, now: u64) -> Result<Self, (String, String)> {
        let (runtime, clock) = common::fake(now);
        let made = runtime
            .instantiate()
            .and_then(|instance| instance.breaker_from_wit(&wit_config(config)));
        match made {
            Ok(breaker) => Ok(Wasm { clock, breaker }),
            Err(error) => match error.downcast_ref::<tripgate_wasmtime::ConfigError>() {
                Some(e) => Err((e.field_name().to_string(), e.to_string())),
                None => Err(("?".into(), format!("{error:#}"))),
            },
        }
    }

    fn acquire(&mut self, now: u64) -> Result<(Decision<Held>, Vec<Step3>)> {
        let admission = self.at(now).acquire()?;
        let decision = match admission.decision {
            Ok(permit) => Decision::Admitted {
                probe: permit.is_probe(),
                permit: Held(Some(permit)),
            },
            Err(r) => Decision::Rejected {
                reason: r.reason.name().to_string(),
                retry_after_ns: r.retry_after,
            },
        };
        Ok((decision, steps(&admission.transitions)))
    }

    fn record(
        &mut self,
        mut held: Held,
        vector: VectorOutcome,
        retry_after: u64,
        now: u64,
    ) -> Result<RecordReport, String> {
        let permit = held.0.take().ok_or("permit already used")?;
        self.clock.set(now);
        let retry_after = std::time::Duration::from_nanos(retry_after);
        let recorded = permit
            .record_with_retry_after(outcome(vector), retry_after)
            .map_err(|e| format!("{e:#}"))?;
        Ok(RecordReport {
            class: recorded.class.name().to_string(),
            slow: recorded.slow,
            stale: recorded.stale,
            transitions: steps(&recorded.transitions),
        })
    }

    fn state(&mut self, now: u64) -> Result<String> {
        Ok(self.at(now).state()?.name().to_string())
    }

    fn metrics(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        Ok(metric_map(&self.at(now).metrics()?))
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

    fn reconfigure(&mut self, config: &VectorConfig, now: u64) -> Result<Reconfigured> {
        let config = match config.to_core() {
            Ok(config) => config,
            Err(e) => return Ok(Err((e.field.name().to_string(), e.to_string()))),
        };
        match self.at(now).reconfigure(&config) {
            Ok(done) => Ok(Ok((done.window_kept, steps(&done.transitions)))),
            Err(error) => match error.downcast_ref::<tripgate_wasmtime::ConfigError>() {
                Some(e) => Ok(Err((e.field_name().to_string(), e.to_string()))),
                None => Err(error),
            },
        }
    }

    fn export(&mut self, now: u64) -> Result<Vec<u8>> {
        self.at(now).export_state()
    }

    fn import(&mut self, bytes: &[u8], elapsed: u64, now: u64) -> Result<(), String> {
        self.at(now)
            .import_state(bytes, elapsed)
            .map_err(|e| format!("{e:#}"))
    }

    fn fleet_apply(&mut self, event: FleetEvent, now: u64) -> Result<(String, Vec<Step3>)> {
        let (applied, transitions) = self.at(now).fleet_apply(event)?;
        Ok((applied.name().to_string(), steps(&transitions)))
    }

    fn fleet_votes(&mut self, votes: &[(u64, u64)], now: u64) -> Result<bool> {
        self.at(now).fleet_votes(votes)
    }

    fn fleet_store(&mut self, reachable: bool, lease: Option<u64>, now: u64) -> Result<()> {
        self.at(now).fleet_store(reachable, lease)
    }

    fn fleet_take_announcement(&mut self) -> Result<Option<(String, u64)>> {
        Ok(self
            .breaker
            .fleet_take_announcement()?
            .map(|a| (a.kind.name().to_string(), a.remaining)))
    }

    fn fleet_status(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        Ok(fleet_status_map(&self.at(now).fleet_status()?))
    }
}

#[test]
fn every_vector_passes_in_wasmtime() {
    let count = run_all::<Wasm>().unwrap();
    assert!(count >= 25, "only {count} vectors");
    println!("{count} vectors passed through the component");
}
