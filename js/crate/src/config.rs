//! JS options to the core's [`Config`].
//!
//! The JS side passes one `f64` per config field, at the field's code
//! ([`Field::code`], the order of [`tables()`](crate::tables)`.fields`); `NaN` means "not
//! given" (the core's default, or off for optional rules). Each value goes through
//! [`Config::set`] by the field's kind, so the rules, the saturation of narrow fields and
//! the refusal of counts beyond `u32` are the core's. The two code lists come as their
//! own arrays.

use tripgate_core::{Config, ConfigError, Field, FieldKind, GrpcSet, Rule, StatusSet, Words};
use wasm_bindgen::prelude::*;

use crate::time;

/// Builds and validates the core config.
pub fn build(
    values: &[f64],
    statuses: Option<&[u16]>,
    grpc_codes: Option<&[u8]>,
) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    for &field in Field::ALL {
        let Some(value) = values
            .get(usize::from(field.code()))
            .copied()
            .filter(|v| !v.is_nan())
        else {
            continue;
        };
        match field.kind() {
            // `set` takes whole factors only.
            FieldKind::Factor => config.backoff_factor = value,
            FieldKind::Duration => config.set(field, time::duration(value))?,
            // The JS side passes whole numbers >= 0; `as` saturates anything beyond u64,
            // which `set` then refuses for counts (`<= 4294967295`) or `validate` for
            // narrow fields.
            FieldKind::Count | FieldKind::Percent | FieldKind::Seed | FieldKind::Flag => {
                config.set(field, value as u64)?;
            }
            FieldKind::Statuses | FieldKind::GrpcCodes => {}
        }
    }
    if let Some(codes) = statuses {
        config.fault_statuses = codes
            .iter()
            .fold(StatusSet::EMPTY, |set, &code| set.with(code));
    }
    if let Some(codes) = grpc_codes {
        config.fault_grpc_codes = codes
            .iter()
            .fold(GrpcSet::EMPTY, |set, &code| set.with(code));
    }
    config.validate()?;
    Ok(config)
}

/// The core's words, with JS option names for the fields they name.
struct JsWords(String);

impl Words for JsWords {
    fn word(&mut self, text: &str) -> core::fmt::Result {
        self.0.push_str(text);
        Ok(())
    }

    fn field(&mut self, code: u8, name: &str) -> core::fmt::Result {
        match Field::from_code(code) {
            Some(field) => self.word(field.js_name()),
            None => self.word(name),
        }
    }
}

/// `"<option> <rule>"` with JS option names, e.g. `failureThreshold must be >= 1`.
pub fn message(error: ConfigError) -> String {
    match error.rule {
        // `windowMs` is in milliseconds, the core's rule in nanoseconds per bucket.
        Rule::AtLeastField(Field::Buckets) if error.field == Field::Window => format!(
            "{} must be at least one nanosecond per bucket (see buckets)",
            Field::Window.js_name()
        ),
        _ => {
            let mut out = JsWords(String::new());
            let _ = error.describe(&mut out);
            out.0
        }
    }
}

/// Checks a config; `undefined` when valid, else `"<option> <rule>"` naming the first
/// broken rule with its JS option name (e.g. `failureThreshold must be >= 1`).
#[wasm_bindgen]
pub fn check_config(
    values: &[f64],
    statuses: Option<Vec<u16>>,
    grpc_codes: Option<Vec<u8>>,
) -> Option<String> {
    build(values, statuses.as_deref(), grpc_codes.as_deref())
        .err()
        .map(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(Field, f64)]) -> Vec<f64> {
        let mut values = vec![f64::NAN; Field::ALL.len()];
        for &(field, value) in pairs {
            values[usize::from(field.code())] = value;
        }
        values
    }

    fn check(pairs: &[(Field, f64)]) -> Option<String> {
        check_config(&given(pairs), None, None)
    }

    #[test]
    fn messages_use_js_names() {
        assert_eq!(check(&[]), None);
        assert_eq!(
            check(&[(Field::FailureThreshold, 0.0)]).as_deref(),
            Some("failureThreshold must be >= 1")
        );
        assert_eq!(
            check(&[(Field::Cooldown, 10.0), (Field::MaxCooldown, 5.0)]).as_deref(),
            Some("maxCooldownMs must be >= cooldownMs")
        );
        assert_eq!(
            check(&[(Field::Buckets, 300.0)]).as_deref(),
            Some("buckets must be between 1 and 64")
        );
        assert_eq!(
            check(&[(Field::Window, 1e-7)]).as_deref(),
            Some("windowMs must be > 0")
        );
    }

    #[test]
    fn counts_beyond_u32_are_refused_not_clamped() {
        for field in [Field::FailureThreshold, Field::MinCalls, Field::MaxInFlight] {
            let message = check(&[(field, 4_294_967_296.0)]).unwrap();
            assert_eq!(
                message,
                format!("{} must be <= 4294967295", field.js_name())
            );
            assert_eq!(check(&[(field, 1e300)]).unwrap(), message);
            assert_eq!(check(&[(field, 4_294_967_295.0)]), None);
        }
    }

    #[test]
    fn fields_reach_the_config() {
        let config = build(
            &given(&[
                (Field::Cooldown, 1.5),
                (Field::BackoffFactor, 1.5),
                (Field::JitterSeed, 2f64.powi(60)),
                (Field::WindowCalls, 10.0),
            ]),
            Some(&[408]),
            Some(&[2]),
        )
        .unwrap();
        assert_eq!(config.cooldown, 1_500_000);
        assert_eq!(config.backoff_factor, 1.5);
        assert_eq!(config.jitter_seed, 1 << 60);
        assert_eq!(config.window_calls, Some(10));
        assert!(config.fault_statuses.contains(408) && !config.fault_statuses.contains(503));
        assert!(config.fault_grpc_codes.contains(2) && !config.fault_grpc_codes.contains(14));
    }
}
