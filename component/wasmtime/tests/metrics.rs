//! The wasmtime host's metrics: the `prometheus-client` collector over a registry of
//! component breakers on the shared scenario (`tests/metrics/`: promtool validates the
//! exposition, and it must equal the one the native breaker and the npm package are held
//! to), a collector over one breaker, and the `tracing` events of the registry's
//! breakers through a recording subscriber. Fake clocks only.

mod common;

use std::sync::Arc;

use tripgate_vectors::collectors::{self, scrape};
use tripgate_vectors::exposition::{self as shared, Host};
use tripgate_vectors::{VectorConfig, VectorOutcome};
use tripgate_wasmtime::prometheus::{self, client};
use tripgate_wasmtime::{Config, FakeClock, Outcome, Permit, Registry, MILLISECOND};

struct Wasm {
    clock: Arc<FakeClock>,
    registry: Arc<Registry>,
}

impl Wasm {
    fn new() -> Self {
        let (runtime, clock) = common::fake(0);
        let registry = Arc::new(Registry::new(runtime, Config::default()));
        Self { clock, registry }
    }
}

impl Host for Wasm {
    type Permit = Permit;

    fn create(&mut self, name: &str, config: &VectorConfig) -> anyhow::Result<()> {
        self.registry.get_or_create(name, &config.to_core()?)?;
        Ok(())
    }
    fn set_time(&mut self, ms: u64) {
        self.clock.set(ms * MILLISECOND);
    }
    fn acquire(&mut self, name: &str) -> anyhow::Result<Option<Permit>> {
        Ok(self.registry.get(name)?.acquire()?.decision.ok())
    }
    fn record(&mut self, _: &str, permit: Permit, outcome: VectorOutcome) -> anyhow::Result<()> {
        let outcome: Outcome = outcome.to_core().map_err(anyhow::Error::msg)?.into();
        permit.record(outcome)?;
        Ok(())
    }
    fn manual(&mut self, name: &str, op: &str) -> anyhow::Result<()> {
        let breaker = self.registry.get(name)?;
        match op {
            "isolate" => breaker.isolate()?,
            "release" => breaker.release()?,
            "disable" => breaker.disable()?,
            "reset" => breaker.reset()?,
            other => anyhow::bail!("unknown operation {other}"),
        };
        Ok(())
    }
}

#[test]
fn the_registry_collector_exposes_the_shared_scenario_as_every_host_does() {
    let mut wasm = Wasm::new();
    shared::run_scenario(&mut wasm).unwrap();
    collectors::the_registry_collector_exposes_the_scenario(Arc::clone(&wasm.registry)).unwrap();
    let readings = wasm.registry.readings();
    assert_eq!((readings.read.len(), readings.failed.len()), (3, 0));
}

#[test]
fn a_breaker_collector_sees_a_fleet_members_status() {
    let (runtime, clock) = common::fake(0);
    let config = Config {
        fleet_quorum: Some(2),
        ..Config::default()
    };
    let breaker = runtime.breaker(&config).unwrap();
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(
        prometheus::Exposition::new().breaker("ledger", breaker.clone()),
    ));
    breaker
        .fleet_apply(tripgate_wasmtime::FleetEvent {
            generation: 7,
            kind: tripgate_wasmtime::FleetEventKind::Open,
            remaining: 5_000 * MILLISECOND,
        })
        .unwrap();
    breaker.fleet_store(false, None).unwrap();
    clock.set(1_000 * MILLISECOND);
    let (text, _) = scrape(&metrics);
    shared::promtool_check(&text).unwrap();
    let families = shared::normalise(&text).unwrap();
    let value = |family: &str, labels: &str| families[family].samples[labels];
    let me = r#"{breaker="ledger"}"#;
    assert_eq!(value("tripgate_fleet_member", me), 1.0);
    assert_eq!(value("tripgate_fleet_generation", me), 7.0);
    assert_eq!(value("tripgate_fleet_degraded", me), 1.0);
    assert_eq!(value("tripgate_cooldown_remaining_seconds", me), 4.0);
    assert_eq!(
        value(
            "tripgate_transitions_total",
            r#"{breaker="ledger",from="closed",reason="fleet-open",to="open"}"#
        ),
        1.0
    );
}

#[test]
fn a_registrys_breakers_emit_a_tracing_event_per_transition() {
    collectors::the_scenario_emits_an_event_per_transition(&mut Wasm::new()).unwrap();
}

/// Two breaker collectors in one registry (the issue's case: two `HELP` lines for every
/// family) and the registry's own: each family once, every breaker's series in it.
#[test]
fn two_breaker_collectors_and_a_registrys_in_one_registry_give_a_valid_exposition() {
    let mut wasm = Wasm::new();
    shared::run_scenario(&mut wasm).unwrap();
    let (runtime, _clock) = common::fake(0);
    let a = runtime.breaker(&Config::default()).unwrap();
    let b = runtime.breaker(&Config::default()).unwrap();
    let group = prometheus::Exposition::new();
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(group.breaker("wasm-a", a)));
    metrics.register_collector(Box::new(group.breaker("wasm-b", b)));
    metrics.register_collector(Box::new(group.registry(Arc::clone(&wasm.registry))));
    let mut names = wasm.registry.names();
    names.extend(["wasm-a".to_string(), "wasm-b".to_string()]);
    collectors::each_family_is_written_once(&metrics, &names).unwrap();
}
