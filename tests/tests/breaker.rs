//! The thread-safe breaker runs every scenario vector, on a fake clock, with the
//! transitions each call caused taken from its listener.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;
use tripgate::{Breaker, FakeClock, OwnedPermit, Transition, Transitions};
use tripgate_core::FleetEvent;
use tripgate_vectors::{
    fleet_status_map, metric_map, run_all, Decision, Reconfigured, RecordReport, Step3, Subject,
    VectorConfig, VectorOutcome,
};

struct Native {
    breaker: Arc<Breaker<Arc<FakeClock>>>,
    clock: Arc<FakeClock>,
    /// What the listener has been told since the last step.
    heard: Arc<Mutex<Vec<Transition>>>,
}

fn step3(t: &Transition) -> Step3 {
    [
        t.from.name().to_string(),
        t.to.name().to_string(),
        t.reason.name().to_string(),
    ]
}

impl Native {
    /// The transitions the listener heard during the last call, checked against the ones
    /// the call itself returned where it returns any (manual operations).
    fn heard(&self, returned: Option<&Transitions>) -> Vec<Step3> {
        let heard: Vec<Transition> = std::mem::take(&mut *self.heard.lock().unwrap());
        if let Some(returned) = returned {
            assert_eq!(returned.as_slice(), heard.as_slice(), "listener and result");
        }
        heard.iter().map(step3).collect()
    }
}

impl Subject for Native {
    type Permit = OwnedPermit<Arc<FakeClock>>;

    fn create(config: &VectorConfig, now: u64) -> Result<Self, (String, String)> {
        let config = config
            .to_core()
            .map_err(|e| (e.field.name().to_string(), e.to_string()))?;
        let clock = Arc::new(FakeClock::new(now));
        let breaker = Breaker::with_clock(config, Arc::clone(&clock))
            .map_err(|e| (e.field.name().to_string(), e.to_string()))?;
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        breaker.on_transition(move |t| sink.lock().unwrap().push(*t));
        Ok(Self {
            breaker: Arc::new(breaker),
            clock,
            heard,
        })
    }

    fn acquire(&mut self, now: u64) -> Result<(Decision<Self::Permit>, Vec<Step3>)> {
        self.clock.set(now);
        let decision = match self.breaker.acquire_owned() {
            Ok(permit) => Decision::Admitted {
                probe: permit.is_probe(),
                permit,
            },
            Err(r) => Decision::Rejected {
                reason: r.reason.name().to_string(),
                retry_after_ns: r.retry_after,
            },
        };
        Ok((decision, self.heard(None)))
    }

    fn record(
        &mut self,
        permit: Self::Permit,
        vector: VectorOutcome,
        retry_after: u64,
        now: u64,
    ) -> Result<RecordReport, String> {
        // An outcome the core refuses (a bad status) never reaches the breaker; the
        // permit then goes back as `cancelled`, as a caller's would when it drops it.
        let outcome = vector.to_core()?;
        self.clock.set(now);
        let recorded = if retry_after > 0 {
            permit.record_with_retry_after(outcome, Duration::from_nanos(retry_after))
        } else {
            permit.record(outcome)
        };
        Ok(RecordReport {
            class: recorded.class.name().to_string(),
            slow: recorded.slow,
            stale: recorded.stale,
            transitions: self.heard(None),
        })
    }

    fn state(&mut self, now: u64) -> Result<String> {
        self.clock.set(now);
        Ok(self.breaker.state().name().to_string())
    }

    fn metrics(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        self.clock.set(now);
        Ok(metric_map(&self.breaker.metrics()))
    }

    fn manual(&mut self, op: &str, now: u64) -> Result<Vec<Step3>> {
        self.clock.set(now);
        let transitions = match op {
            "isolate" => self.breaker.isolate(),
            "release" => self.breaker.release(),
            "disable" => self.breaker.disable(),
            "reset" => self.breaker.reset(),
            other => anyhow::bail!("unknown manual op {other}"),
        };
        Ok(self.heard(Some(&transitions)))
    }

    fn reconfigure(&mut self, config: &VectorConfig, now: u64) -> Result<Reconfigured> {
        self.clock.set(now);
        let refused = |e: tripgate::ConfigError| (e.field.name().to_string(), e.to_string());
        match config.to_core().and_then(|c| self.breaker.reconfigure(c)) {
            Ok(done) => Ok(Ok((done.window_kept, self.heard(Some(&done.transitions))))),
            Err(e) => Ok(Err(refused(e))),
        }
    }

    fn export(&mut self, now: u64) -> Result<Vec<u8>> {
        self.clock.set(now);
        Ok(self.breaker.export_state())
    }

    fn import(&mut self, bytes: &[u8], elapsed: u64, now: u64) -> Result<(), String> {
        self.clock.set(now);
        self.breaker
            .import_state(bytes, elapsed)
            .map_err(|e| e.to_string())
    }

    fn fleet_apply(&mut self, event: FleetEvent, now: u64) -> Result<(String, Vec<Step3>)> {
        self.clock.set(now);
        let (applied, transitions) = self.breaker.fleet_apply(event);
        Ok((applied.name().to_string(), self.heard(Some(&transitions))))
    }

    fn fleet_votes(&mut self, votes: &[(u64, u64)], now: u64) -> Result<bool> {
        self.clock.set(now);
        Ok(self.breaker.fleet_votes(votes))
    }

    fn fleet_store(&mut self, reachable: bool, lease: Option<u64>, now: u64) -> Result<()> {
        self.clock.set(now);
        self.breaker.fleet_store(reachable, lease);
        Ok(())
    }

    fn fleet_take_announcement(&mut self) -> Result<Option<(String, u64)>> {
        Ok(self
            .breaker
            .fleet_take_announcement()
            .map(|a| (a.kind.name().to_string(), a.remaining)))
    }

    fn fleet_status(&mut self, now: u64) -> Result<BTreeMap<String, Value>> {
        self.clock.set(now);
        Ok(fleet_status_map(&self.breaker.fleet_status()))
    }
}

#[test]
fn every_vector_passes_on_the_thread_safe_breaker() {
    let count = run_all::<Native>().unwrap();
    assert!(count >= 28, "only {count} vectors");
}
