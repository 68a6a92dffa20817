//! The core's retries ([`tripgate_core::retry`], SPEC § Retries) for the package's
//! `breaker.retries()`: the policy, read and checked by the core's rules, and the budget a
//! breaker's callers share, with the decision after each attempt. JS decides nothing and
//! draws no jitter: its retry loop (`js/src/execute.js`) asks [`RetryBudget::next`].
//!
//! The policy crosses as one `f64` per setting in [`SETTINGS`] order (the core's
//! [`RetryField`]s by code, then the seed, which has no rule); `NaN` means "not given"
//! (the core's default). Durations are milliseconds, as everywhere in the package.

use tripgate_core::retry::RetryPolicy;
use tripgate_core::retry::{self, Next, RetryBudget as Budget, RetryError, RetryField};
use tripgate_core::{Class, FieldKind, Nanos, Rule, Words};
use wasm_bindgen::prelude::*;

use crate::time::{duration, ms, reading};

/// A policy setting as JS names it: the core's name, the JS option and its kind (a
/// [`FieldKind`] name, read as a breaker option of that kind is).
#[derive(Clone, Copy)]
pub struct Setting {
    /// The core's (kebab-case) name.
    pub name: &'static str,
    /// The JS option.
    pub option: &'static str,
    /// How JS reads it.
    pub kind: FieldKind,
}

/// The JS option of a policy field: its name in camel case, a duration with `Ms`, as the
/// breaker's options are named. (The core's [`RetryField`] carries no JS name, unlike a
/// config [`Field`](tripgate_core::Field).) A match, so a field the core adds fails to
/// build here until it is named.
const fn setting(field: RetryField) -> Setting {
    let (option, kind) = match field {
        RetryField::MaxAttempts => ("maxAttempts", FieldKind::Count),
        RetryField::BaseDelay => ("baseDelayMs", FieldKind::Duration),
        RetryField::MaxDelay => ("maxDelayMs", FieldKind::Duration),
        RetryField::BudgetPercent => ("budgetPercent", FieldKind::Percent),
        RetryField::MinRetriesPerSecond => ("minRetriesPerSecond", FieldKind::Count),
    };
    Setting {
        name: field.name(),
        option,
        kind,
    }
}

/// Where the seed sits among the values: after the core's fields.
const SEED: usize = RetryField::ALL.len();

/// Every setting, in the order JS passes the values.
pub const SETTINGS: [Setting; SEED + 1] = [
    setting(RetryField::MaxAttempts),
    setting(RetryField::BaseDelay),
    setting(RetryField::MaxDelay),
    setting(RetryField::BudgetPercent),
    setting(RetryField::MinRetriesPerSecond),
    Setting {
        name: "seed",
        option: "seed",
        kind: FieldKind::Seed,
    },
];

/// The policy the values give, checked by the core's rules; the error names the first
/// field that breaks one, in field order. The values come from JS checked for type and
/// form (whole numbers >= 0 for counts, finite ones for durations); a count too big for
/// its field saturates it, so that the core's rule refuses it (`max-attempts must be
/// between 1 and 10`), and `min-retries-per-second` past `u32` is refused as a breaker
/// count is (`must be <= 4294967295`).
pub fn policy(values: &[f64]) -> Result<RetryPolicy, RetryError> {
    let given = |at: usize| values.get(at).copied().filter(|v| !v.is_nan());
    let mut policy = RetryPolicy::default();
    let mut floor_too_big = false;
    for &field in RetryField::ALL {
        let Some(value) = given(usize::from(field.code())) else {
            continue;
        };
        // `as` saturates and drops fractions (which JS refuses for counts).
        match field {
            RetryField::MaxAttempts => policy.max_attempts = value as u8,
            RetryField::BaseDelay => policy.base_delay = duration(value),
            RetryField::MaxDelay => policy.max_delay = duration(value),
            RetryField::BudgetPercent => policy.budget_percent = value as u16,
            RetryField::MinRetriesPerSecond => {
                floor_too_big = value > f64::from(u32::MAX);
                policy.min_retries_per_second = value as u32;
            }
        }
    }
    if let Some(seed) = given(SEED) {
        policy.seed = seed as u64;
    }
    policy.validate()?;
    if floor_too_big {
        return Err(RetryError {
            field: RetryField::MinRetriesPerSecond,
            rule: Rule::AtMost(u64::from(u32::MAX)),
        });
    }
    Ok(policy)
}

/// The core's words, with the JS option for every policy field they name.
struct JsWords(String);

impl Words for JsWords {
    fn word(&mut self, text: &str) -> core::fmt::Result {
        let named = SETTINGS.iter().find(|s| s.name == text);
        self.0.push_str(named.map_or(text, |s| s.option));
        Ok(())
    }
}

/// `"<option> <rule>"` with JS option names, e.g. `maxDelayMs must be >= baseDelayMs`.
pub fn message(error: RetryError) -> String {
    let mut out = JsWords(String::new());
    let _ = error.describe(&mut out);
    out.0
}

/// Writes `policy` as JS reads it back: [`SETTINGS`] order, durations in ms.
fn write(policy: &RetryPolicy, out: &mut [f64]) {
    let values = [
        f64::from(policy.max_attempts),
        ms(policy.base_delay),
        ms(policy.max_delay),
        f64::from(policy.budget_percent),
        f64::from(policy.min_retries_per_second),
        policy.seed as f64,
    ];
    for (o, v) in out.iter_mut().zip(values) {
        *o = v;
    }
}

/// Checks a policy; `undefined` when valid, with the policy in force written to `out`
/// ([`SETTINGS`] order, the defaults filled in, durations in ms); else `"<option> <rule>"`
/// naming the first broken rule by its JS option, and `out` untouched.
#[wasm_bindgen]
pub fn retry_policy(values: &[f64], out: &mut [f64]) -> Option<String> {
    match policy(values) {
        Ok(policy) => {
            write(&policy, out);
            None
        }
        Err(error) => Some(message(error)),
    }
}

/// A retry policy and the budget of the calls that share it: one per breaker.
#[wasm_bindgen]
pub struct RetryBudget {
    policy: RetryPolicy,
    budget: Budget,
    /// The latest instant a reading gave, for one that is not observed.
    latest: Nanos,
}

#[wasm_bindgen]
impl RetryBudget {
    /// An empty budget at `now_ms` (the breaker's clock) by the policy `values` give.
    /// Call [`retry_policy`] first for a JS-named error; this throws a plain `Error` with
    /// the same message.
    #[wasm_bindgen(constructor)]
    pub fn new(values: &[f64], now_ms: f64) -> Result<RetryBudget, JsError> {
        let policy = policy(values).map_err(|e| JsError::new(&message(e)))?;
        let now = reading(now_ms).unwrap_or(0);
        Ok(Self {
            budget: Budget::new(&policy, now),
            policy,
            latest: now,
        })
    }

    /// A call's first attempt was admitted: it pays `budget-percent` of a retry in.
    pub fn deposit(&mut self) {
        self.budget.deposit(&self.policy);
    }

    /// After attempt `attempt` (1 for the first) answered with the class `class_code` and
    /// asked its callers to stay away for `retry_after_ms` (0: nothing), at `now_ms`: the
    /// wait before the next attempt in ms (>= 0), or `-(1 + code)` of a [`Stop`] reason (the core's table).
    /// A reading that is not observed stands for the latest instant seen; an attempt past
    /// 255 counts as 255 (past every `max-attempts`), an unknown class as neutral.
    pub fn next(&mut self, attempt: f64, class_code: u8, retry_after_ms: f64, now_ms: f64) -> f64 {
        let now = reading(now_ms).unwrap_or(self.latest);
        self.latest = now;
        let class = Class::from_code(class_code).unwrap_or(Class::Neutral);
        let asked = duration(retry_after_ms);
        match retry::next(
            &self.policy,
            &mut self.budget,
            attempt as u8,
            class,
            asked,
            now,
        ) {
            Next::Retry(wait) => ms(wait),
            Next::Stop(stop) => -1.0 - f64::from(stop.code()),
        }
    }

    /// Writes the policy in force to `out` (as [`retry_policy`] does).
    pub fn policy(&self, out: &mut [f64]) {
        write(&self.policy, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(usize, f64)]) -> Vec<f64> {
        let mut values = vec![f64::NAN; SETTINGS.len()];
        for &(at, value) in pairs {
            values[at] = value;
        }
        values
    }

    fn check(pairs: &[(usize, f64)]) -> Option<String> {
        let mut out = [f64::NAN; SETTINGS.len()];
        retry_policy(&values(pairs), &mut out)
    }

    #[test]
    fn settings_follow_the_cores_fields() {
        for field in RetryField::ALL {
            assert_eq!(SETTINGS[usize::from(field.code())].name, field.name());
        }
        assert_eq!(SETTINGS[SEED].option, "seed");
    }

    #[test]
    fn defaults_fill_in_and_read_back_in_ms() {
        let mut out = [f64::NAN; SETTINGS.len()];
        assert_eq!(retry_policy(&values(&[(0, 4.0), (5, 7.0)]), &mut out), None);
        assert_eq!(out, [4.0, 50.0, 2_000.0, 20.0, 10.0, 7.0]);
    }

    #[test]
    fn refusals_name_the_js_option_in_the_cores_words() {
        assert_eq!(
            check(&[(0, 0.0)]).as_deref(),
            Some("maxAttempts must be between 1 and 10")
        );
        assert_eq!(
            check(&[(0, 300.0)]).as_deref(),
            Some("maxAttempts must be between 1 and 10"),
            "saturated, not wrapped to 44"
        );
        assert_eq!(
            check(&[(1, 0.0)]).as_deref(),
            Some("baseDelayMs must be > 0")
        );
        assert_eq!(
            check(&[(1, 100.0), (2, 10.0)]).as_deref(),
            Some("maxDelayMs must be >= baseDelayMs")
        );
        assert_eq!(
            check(&[(3, 70_000.0)]).as_deref(),
            Some("budgetPercent must be between 0 and 1000")
        );
        assert_eq!(
            check(&[(4, 4_294_967_296.0)]).as_deref(),
            Some("minRetriesPerSecond must be <= 4294967295")
        );
        assert_eq!(check(&[(4, 4_294_967_295.0)]), None);
    }

    #[test]
    fn decisions_are_the_cores() {
        let mut budget = RetryBudget::new(&values(&[(5, 7.0)]), 0.0).unwrap();
        for _ in 0..10 {
            budget.deposit();
        }
        let fault = Class::Fault.code();
        let wait = budget.next(1.0, fault, 0.0, 0.0);
        assert_eq!(
            (wait * 1e6).round(),
            19_491_487.0,
            "the vector's first wait"
        );
        assert_eq!(budget.next(3.0, fault, 0.0, 20.0), -2.0, "attempts");
        assert_eq!(
            budget.next(300.0, fault, 0.0, 20.0),
            -2.0,
            "past 255: attempts"
        );
        let success = Class::Success.code();
        assert_eq!(budget.next(1.0, success, 0.0, 20.0), -1.0, "answered");
        assert_eq!(
            budget.next(1.0, fault, 3_000.0, f64::NAN),
            -4.0,
            "a stay-away past max-delay"
        );
        assert_eq!(
            budget.next(1.0, fault, 500.0, f64::NAN),
            500.0,
            "a longer Retry-After is waited"
        );
        let mut out = [f64::NAN; SETTINGS.len()];
        budget.policy(&mut out);
        assert_eq!(out, [3.0, 50.0, 2_000.0, 20.0, 10.0, 7.0]);
    }
}
