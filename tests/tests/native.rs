//! The native core runs every scenario vector.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::Value;
use tripgate_core::{Breaker, FleetEvent, Permit, Transitions, MAX_EXPORT_LEN};
use tripgate_vectors::{
    fleet_status_map, metric_map, run_all, Decision, Reconfigured, RecordReport, Step3, Subject,
    VectorConfig, VectorOutcome,
};

struct Native(Breaker);

fn steps(transitions: &Transitions) -> Vec<Step3> {
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

impl Subject for Native {
    fn fleet_apply(&mut self, event: FleetEvent, now: u64) -> Result<(String, Vec<Step3>)> {
        let (applied, transitions) = self.0.fleet_apply(event, now);
        Ok((applied.name().to_string(), steps(&transitions)))
    }

    fn fleet_votes(&mut self, votes: &[(u64, u64)], now: u64) -> Result<bool> {
        Ok(self.0.fleet_votes(votes, now))
    }

    fn fleet_store(&mut self, reachable: bool, lease: Option<u64>, now: u64) -> Result<()> {
        self.0.fleet_degraded(!reachable, now);
        self.0.fleet_lease(lease, now);
        Ok(())
    }

    fn fleet_take_announcement(&mut self) -> Result<Option<(String, u64)>> {
        Ok(self
            .0
            .fleet_take_announcement()
            .map(|a| (a.kind.name().to_string(), a.remaining)))
    }

    fn fleet_status(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        Ok(fleet_status_map(&self.0.fleet_status(now)))
    }

    type Permit = Permit;

    fn create(config: &VectorConfig, now: u64) -> Result<Self, (String, String)> {
        config
            .to_core()
            .and_then(|config| Breaker::new(config, now))
            .map(Native)
            .map_err(|e| (e.field.name().to_string(), e.to_string()))
    }

    fn acquire(&mut self, now: u64) -> Result<(Decision<Permit>, Vec<Step3>)> {
        let admission = self.0.acquire(now);
        let decision = match admission.decision {
            Ok(permit) => Decision::Admitted {
                probe: permit.is_probe(),
                permit,
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
        permit: Permit,
        vector: VectorOutcome,
        retry_after: u64,
        now: u64,
    ) -> Result<RecordReport, String> {
        let outcome = vector.to_core()?;
        let recorded = self
            .0
            .record_with_retry_after(permit, outcome, retry_after, now);
        Ok(RecordReport {
            class: format!("{:?}", recorded.class).to_lowercase(),
            slow: recorded.slow,
            stale: recorded.stale,
            transitions: steps(&recorded.transitions),
        })
    }

    fn state(&mut self, now: u64) -> Result<String> {
        Ok(self.0.state(now).name().to_string())
    }

    fn metrics(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        Ok(metric_map(&self.0.metrics(now)))
    }

    fn manual(&mut self, op: &str, now: u64) -> Result<Vec<Step3>> {
        let transitions = match op {
            "isolate" => self.0.isolate(now),
            "release" => self.0.release(now),
            "disable" => self.0.disable(now),
            "reset" => self.0.reset(now),
            other => anyhow::bail!("unknown manual op {other}"),
        };
        Ok(steps(&transitions))
    }

    fn reconfigure(&mut self, config: &VectorConfig, now: u64) -> Result<Reconfigured> {
        let refused = |e: tripgate_core::ConfigError| (e.field.name().to_string(), e.to_string());
        Ok(config
            .to_core()
            .and_then(|config| self.0.reconfigure(config, now))
            .map(|done| (done.window_kept, steps(&done.transitions)))
            .map_err(refused))
    }

    fn export(&mut self, now: u64) -> Result<Vec<u8>> {
        let mut buf = [0u8; MAX_EXPORT_LEN];
        let len = self.0.export(now, &mut buf)?;
        Ok(buf[..len].to_vec())
    }

    fn import(&mut self, bytes: &[u8], elapsed: u64, now: u64) -> Result<(), String> {
        self.0
            .import(bytes, elapsed, now)
            .map_err(|e| e.to_string())
    }
}

#[test]
fn every_vector_passes_on_the_native_core() {
    let count = run_all::<Native>().unwrap();
    assert!(count >= 12, "only {count} vectors");
}
