//! The native breaker's metrics: the `prometheus-client` collector over a registry and
//! over one breaker on the shared scenario (`tests/metrics/`: promtool validates the
//! exposition, and it must equal the expected one that the wasmtime host and the npm
//! package are held to as well), what a scrape costs the breakers (one `metrics()` each),
//! and the `tracing` events of transitions through a recording subscriber. Fake clocks
//! only; nothing sleeps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tripgate::prometheus::{self, client};
use tripgate::{
    Breaker, Clock, CoarseClock, Config, FakeClock, Nanos, OwnedPermit, Registry, MILLISECOND,
};
use tripgate_vectors::collectors::{self, scrape};
use tripgate_vectors::exposition::{self as shared, Host};
use tripgate_vectors::trace::capture;
use tripgate_vectors::{VectorConfig, VectorOutcome};

/// A fake clock that counts its readings: every `metrics()` reads the clock once, so the
/// count of readings during a scrape is the count of `metrics()` calls (of lock holds).
#[derive(Default)]
struct Counted {
    clock: FakeClock,
    reads: AtomicUsize,
}

impl Clock for Counted {
    fn now(&self) -> Nanos {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.clock.now()
    }
}

type Clocked = Arc<Counted>;

struct Native {
    clock: Clocked,
    registry: Arc<Registry<Clocked>>,
}

impl Native {
    fn new() -> Self {
        let clock = Clocked::default();
        let registry = Arc::new(Registry::new(Arc::clone(&clock), Config::default()));
        Self { clock, registry }
    }
}

impl Host for Native {
    type Permit = OwnedPermit<Clocked>;

    fn create(&mut self, name: &str, config: &VectorConfig) -> anyhow::Result<()> {
        self.registry.get_or_create(name, &config.to_core()?)?;
        Ok(())
    }
    fn set_time(&mut self, ms: u64) {
        self.clock.clock.set(ms * MILLISECOND);
    }
    fn acquire(&mut self, name: &str) -> anyhow::Result<Option<Self::Permit>> {
        Ok(self.registry.get(name)?.acquire_owned().ok())
    }
    fn record(
        &mut self,
        _: &str,
        permit: Self::Permit,
        outcome: VectorOutcome,
    ) -> anyhow::Result<()> {
        permit.record(outcome.to_core().map_err(anyhow::Error::msg)?);
        Ok(())
    }
    fn manual(&mut self, name: &str, op: &str) -> anyhow::Result<()> {
        let breaker = self.registry.get(name)?;
        match op {
            "isolate" => breaker.isolate(),
            "release" => breaker.release(),
            "disable" => breaker.disable(),
            "reset" => breaker.reset(),
            other => anyhow::bail!("unknown operation {other}"),
        };
        Ok(())
    }
}

#[test]
fn the_registry_collector_exposes_the_shared_scenario_as_every_host_does() {
    let mut native = Native::new();
    shared::run_scenario(&mut native).unwrap();
    let (_, openmetrics) =
        collectors::the_registry_collector_exposes_the_scenario(Arc::clone(&native.registry))
            .unwrap();
    assert!(openmetrics.contains("# TYPE tripgate_rejections counter\n"));
    assert!(openmetrics.contains("# UNIT tripgate_time_in_state_seconds seconds\n"));
}

#[test]
fn a_scrape_takes_each_breakers_lock_once() {
    let mut native = Native::new();
    shared::run_scenario(&mut native).unwrap();
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(
        prometheus::Exposition::new().registry(Arc::clone(&native.registry)),
    ));
    let before = native.clock.reads.load(Ordering::SeqCst);
    let (text, _) = scrape(&metrics);
    let reads = native.clock.reads.load(Ordering::SeqCst) - before;
    // Two encodings, three breakers: one snapshot per breaker per scrape, not one per
    // family (14) or per series (46).
    assert_eq!(reads, 2 * native.registry.names().len(), "{text}");
}

#[test]
fn a_breaker_collector_labels_its_breaker_and_sees_later_calls() {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(
        prometheus::Exposition::new().breaker("identity", Arc::clone(&breaker)),
    ));
    for _ in 0..5 {
        breaker
            .acquire()
            .unwrap()
            .record(tripgate::Outcome::Timeout);
    }
    clock.advance(1500 * MILLISECOND);
    let (text, _) = scrape(&metrics);
    shared::promtool_check(&text).unwrap();
    let families = shared::normalise(&text).unwrap();
    let value = |family: &str, labels: &str| families[family].samples[labels];
    assert_eq!(
        value("tripgate_state", r#"{breaker="identity",state="open"}"#),
        1.0
    );
    assert_eq!(
        value("tripgate_state", r#"{breaker="identity",state="closed"}"#),
        0.0
    );
    assert_eq!(
        value(
            "tripgate_transitions_total",
            r#"{breaker="identity",from="closed",reason="failure-threshold",to="open"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            "tripgate_outcomes_total",
            r#"{breaker="identity",class="fault"}"#
        ),
        5.0
    );
    assert_eq!(
        value("tripgate_time_in_state_seconds", r#"{breaker="identity"}"#),
        1.5
    );
    assert_eq!(
        value(
            "tripgate_cooldown_remaining_seconds",
            r#"{breaker="identity"}"#
        ),
        13.5
    );
    // A collector over an empty registry writes nothing at all.
    let mut empty = client::registry::Registry::default();
    empty.register_collector(Box::new(prometheus::Exposition::new().registry(Arc::new(
        Registry::new(CoarseClock::new(), Config::default()),
    ))));
    assert_eq!(scrape(&empty).0, "");
}

#[test]
fn a_registrys_breakers_emit_a_tracing_event_per_transition() {
    let events =
        collectors::the_scenario_emits_an_event_per_transition(&mut Native::new()).unwrap();
    assert_eq!(
        events[0].field("message"),
        r#"circuit breaker search "eu"\1: closed -> open (hung-calls)"#
    );
}

#[test]
fn a_breaker_of_your_own_emits_events_through_the_listener() {
    let breaker = Breaker::with_clock(Config::default(), Arc::new(FakeClock::new(0))).unwrap();
    breaker.on_transition(tripgate::trace::listener("payments"));
    let (_, events) = capture(|| breaker.isolate());
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].field("breaker"), "payments");
    assert_eq!(events[0].field("to"), "isolated");
    // Nothing is emitted by a call that changes no state.
    let (_, events) = capture(|| breaker.acquire().map(drop));
    assert!(events.is_empty());
}

/// Any number of collectors in one prometheus-client registry give a valid exposition:
/// the registry's collector, two collectors of one breaker each, and one that repeats a
/// name the registry holds. Each family is written once, with every breaker's series, and
/// a repeated name once (two `HELP` lines for one family, or a series twice, is what
/// promtool refuses).
#[test]
fn any_number_of_collectors_in_one_registry_give_a_valid_exposition() {
    let mut native = Native::new();
    shared::run_scenario(&mut native).unwrap();
    let clock = Arc::new(FakeClock::new(0));
    let ledger = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let audit = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let group = prometheus::Exposition::new();
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(group.registry(Arc::clone(&native.registry))));
    metrics.register_collector(Box::new(group.breaker("ledger", Arc::clone(&ledger))));
    metrics.register_collector(Box::new(group.breaker("audit", Arc::clone(&audit))));
    let first = native.registry.names()[0].clone();
    metrics.register_collector(Box::new(group.breaker(first.clone(), Arc::clone(&ledger))));
    let mut names = native.registry.names();
    names.extend(["ledger".to_string(), "audit".to_string()]);
    for _ in 0..2 {
        collectors::each_family_is_written_once(&metrics, &names).unwrap();
        let (text, _) = scrape(&metrics);
        let families = shared::normalise(&text).unwrap();
        let states = &families["tripgate_state"].samples;
        let named = |name: &str| {
            states
                .keys()
                .filter(|labels| labels.contains(&format!("breaker={name:?}")))
                .count()
        };
        for name in native.registry.names() {
            assert_eq!(named(&name), 5, "{name}: one series per state, once");
        }
        assert_eq!((named("ledger"), named("audit")), (5, 5));
    }
}

/// The free functions' collectors share the process's group: two of them in one registry
/// still write each family once.
#[test]
fn two_breaker_collectors_of_the_default_group_give_a_valid_exposition() {
    let clock = Arc::new(FakeClock::new(0));
    let a = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let b = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(prometheus::breaker("default-a", a)));
    metrics.register_collector(Box::new(prometheus::breaker("default-b", b)));
    let names = ["default-a".to_string(), "default-b".to_string()];
    collectors::each_family_is_written_once(&metrics, &names).unwrap();
}
