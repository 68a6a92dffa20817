//! What every Rust host's prometheus-client collectors and `tracing` events must do on the
//! metrics scenario ([`crate::exposition`]): the checks the native breaker
//! (`tests/tests/breaker_metrics.rs`) and the component in wasmtime
//! (`component/wasmtime/tests/metrics.rs`) both run on their own registries.

use std::sync::Arc;

use anyhow::{ensure, Result};
use tripgate_host::prometheus::{client, Exposition};
use tripgate_host::{MakeBreaker, Registry};

use crate::exposition::{self as shared, Host};
use crate::trace::{capture, Captured};

/// An exposition of `metrics` in both encodings: the Prometheus text format, and
/// OpenMetrics.
pub fn scrape(metrics: &client::registry::Registry) -> (String, String) {
    let mut text = String::new();
    let mut openmetrics = String::new();
    client::encoding::prometheus_text::encode(&mut text, metrics).expect("a String takes it");
    client::encoding::text::encode(&mut openmetrics, metrics).expect("a String takes it");
    (text, openmetrics)
}

/// A collector over `registry`, after the scenario ran on it: promtool accepts its
/// exposition, and both encodings equal the expected one. Returns the two encodings.
pub fn the_registry_collector_exposes_the_scenario<B>(
    registry: Arc<Registry<B>>,
) -> Result<(String, String)>
where
    B: MakeBreaker + Send + Sync + 'static,
    B::Maker: Send + Sync,
{
    let mut metrics = client::registry::Registry::default();
    metrics.register_collector(Box::new(Exposition::new().registry(registry)));
    let (text, openmetrics) = scrape(&metrics);
    shared::promtool_check(&text)?;
    shared::assert_matches_expected(&text)?;
    shared::assert_matches_expected(&openmetrics)?;
    Ok((text, openmetrics))
}

/// The scenario on `host` emits one `tracing` event per transition, as
/// [`shared::SCENARIO_EVENTS`] lists them. Returns the events.
pub fn the_scenario_emits_an_event_per_transition<H: Host>(host: &mut H) -> Result<Vec<Captured>> {
    let (ran, events) = capture(|| shared::run_scenario(host));
    ran?;
    let seen = events
        .iter()
        .map(shared::event_line)
        .collect::<Result<Vec<_>>>()?;
    ensure!(seen == shared::SCENARIO_EVENTS, "events: {seen:#?}");
    Ok(events)
}

/// A prometheus-client registry with several collectors of one group writes a valid
/// exposition: promtool accepts it, each family once, every name in `names` with its
/// series of `tripgate_state`.
pub fn each_family_is_written_once(
    metrics: &client::registry::Registry,
    names: &[String],
) -> Result<()> {
    let (text, openmetrics) = scrape(metrics);
    shared::promtool_check(&text)?;
    ensure!(
        text.matches("# HELP tripgate_state ").count() == 1,
        "{text}"
    );
    ensure!(
        openmetrics.matches("# TYPE tripgate_state ").count() == 1,
        "{openmetrics}"
    );
    for name in names {
        let series = format!(r#"tripgate_state{{breaker={name:?},"#);
        ensure!(text.contains(&series), "no series of {name}: {text}");
    }
    Ok(())
}
