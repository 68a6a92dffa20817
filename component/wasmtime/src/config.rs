//! The core's [`Config`] in WIT form, and the component's config error as a Rust error.

use std::fmt;

use tripgate_core::Config;

use crate::wit;

/// `Config` → the WIT `config` record. Every field is sent (`some`), so the component's
/// defaults never matter on this path; the code sets become lists.
pub(crate) fn to_wit(c: &Config) -> wit::Config {
    wit::Config {
        failure_threshold: Some(c.failure_threshold),
        min_calls: Some(c.min_calls),
        failure_rate: c.failure_rate,
        slow_call_rate: c.slow_call_rate,
        slow_call_duration: c.slow_call_duration,
        window: Some(c.window),
        buckets: Some(c.buckets),
        window_calls: c.window_calls,
        cooldown: Some(c.cooldown),
        backoff_factor: Some(c.backoff_factor),
        max_cooldown: c.max_cooldown,
        jitter_percent: Some(c.jitter_percent),
        jitter_seed: Some(c.jitter_seed),
        max_in_flight: c.max_in_flight,
        half_open_max_probes: Some(c.half_open_max_probes),
        half_open_required_successes: Some(c.half_open_required_successes),
        half_open_success_rate: c.half_open_success_rate,
        probe_timeout: Some(c.probe_timeout),
        fault_statuses: Some(c.fault_statuses.iter().collect()),
        fault_grpc_codes: Some(c.fault_grpc_codes.iter().collect()),
        fleet_quorum: c.fleet_quorum,
        shadow: Some(c.shadow),
    }
}

impl Default for wit::Config {
    /// Every field `None`: the component's defaults.
    fn default() -> Self {
        Self {
            failure_threshold: None,
            min_calls: None,
            failure_rate: None,
            slow_call_rate: None,
            slow_call_duration: None,
            window: None,
            buckets: None,
            window_calls: None,
            cooldown: None,
            backoff_factor: None,
            max_cooldown: None,
            jitter_percent: None,
            jitter_seed: None,
            max_in_flight: None,
            half_open_max_probes: None,
            half_open_required_successes: None,
            half_open_success_rate: None,
            probe_timeout: None,
            fault_statuses: None,
            fault_grpc_codes: None,
            fleet_quorum: None,
            shadow: None,
        }
    }
}

/// A configuration the component refused. `Display` is the rule in words, naming the
/// field (`failure-threshold must be >= 1`), so `anyhow` chains read well.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending field.
    pub field: wit::ConfigField,
    /// The rule it breaks, in words (`must be >= 1`).
    pub rule: String,
    /// The field and its rule in words (`failure-threshold must be >= 1`).
    pub message: String,
}

impl ConfigError {
    /// The field as the core names it (`Field::name` is the kebab-case name of the WIT
    /// and the vectors, `Field::js_name` the JS option).
    pub fn field(&self) -> tripgate_core::Field {
        crate::convert::core_case(tripgate_core::Field::from_code, self.field as u8)
    }

    /// The field's kebab-case name, as in the WIT and the vectors.
    pub fn field_name(&self) -> &'static str {
        self.field().name()
    }
}

impl From<wit::ConfigError> for ConfigError {
    fn from(e: wit::ConfigError) -> Self {
        Self {
            field: e.field,
            rule: e.rule,
            message: e.message,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}
