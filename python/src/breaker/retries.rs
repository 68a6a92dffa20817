//! Retries that cannot become a storm (`SPEC.md` § Retries): `breaker.retries(**policy)`
//! gives the breaker's `Retries`, the core's retry policy and the budget every caller of
//! the breaker shares (`tripgate::Retries`: the core's `RetryBudget` behind a lock), kept
//! in the breaker's own native object, one per breaker. Every decision and every wait's
//! jitter is the core's (`retry::next`); the guarded calls (`crate::breaker::retrying`)
//! run the attempts and wait.

use std::sync::Arc;

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;

use tripgate::Clock;
use tripgate::{RetryError, RetryField, RetryPolicy};
use tripgate_core::retry::Next;
use tripgate_core::{Class, Nanos, Rule};

use super::Breaker;
use crate::clock::AnyClock;
use crate::options::{option_error, seconds_to_ns, type_name, whole};

/// Every option of `breaker.retries(...)`, in the core's order, the seed last.
pub const OPTIONS: [&str; 6] = [
    "max_attempts",
    "base_delay",
    "max_delay",
    "budget_percent",
    "min_retries_per_second",
    "seed",
];

/// A near option for an unknown one (`base_delay_ms` → `base_delay`, `maxAttempts` →
/// `max_attempts`; `retries` → `max_attempts`, which counts the first attempt too).
fn suggestion(unknown: &str) -> Option<&'static str> {
    let stripped = unknown
        .strip_suffix("_ms")
        .or_else(|| unknown.strip_suffix("Ms"))
        .or_else(|| unknown.strip_suffix("_seconds"))
        .or_else(|| unknown.strip_suffix("_s"))
        .unwrap_or(unknown);
    let mut snake = String::new();
    for c in stripped.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
            snake.push(c.to_ascii_lowercase());
        } else if c == '-' {
            snake.push('_');
        } else {
            snake.push(c);
        }
    }
    if matches!(snake.as_str(), "retries" | "max_retries" | "attempts") {
        return Some("max_attempts");
    }
    OPTIONS.iter().copied().find(|name| *name == snake)
}

/// The policy `breaker.retries(**options)` asks for, checked by the core's rules
/// (`RetryPolicy::validate`): an option not given (or `None`) is the core's default. A
/// wrong type is a `TypeError`, a value out of range a `ValueError`, each naming the
/// option (`error.option`), as the breaker's own options.
pub fn policy(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<RetryPolicy> {
    let mut policy = RetryPolicy::default();
    let Some(options) = options else {
        return Ok(policy);
    };
    for (key, value) in options.iter() {
        let option: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        match option.as_str() {
            "max_attempts" => {
                // Out of a u8's range, the core's rule speaks (`between 1 and 10`).
                let n = whole(py, &option, &value)?;
                policy.max_attempts = u8::try_from(n.max(0)).unwrap_or(u8::MAX);
            }
            "base_delay" => policy.base_delay = seconds_to_ns(py, &option, &value)?,
            "max_delay" => policy.max_delay = seconds_to_ns(py, &option, &value)?,
            "budget_percent" => {
                let n = whole(py, &option, &value)?;
                policy.budget_percent = u16::try_from(n).map_err(|_| {
                    crate::errors::retry_policy(
                        py,
                        RetryError {
                            field: RetryField::BudgetPercent,
                            rule: Rule::Between(
                                0,
                                u64::from(tripgate_core::retry::MAX_BUDGET_PERCENT),
                            ),
                        },
                    )
                })?;
            }
            "min_retries_per_second" => {
                let n = whole(py, &option, &value)?;
                policy.min_retries_per_second = u32::try_from(n).map_err(|_| {
                    let rule = if n < 0 {
                        Rule::AtLeast(0)
                    } else {
                        Rule::AtMost(u64::from(u32::MAX))
                    };
                    crate::errors::retry_policy(
                        py,
                        RetryError {
                            field: RetryField::MinRetriesPerSecond,
                            rule,
                        },
                    )
                })?;
            }
            "seed" => {
                let n = whole(py, &option, &value)?;
                policy.seed = u64::try_from(n).map_err(|_| {
                    option_error(
                        py,
                        false,
                        "seed",
                        "seed must be between 0 and 18446744073709551615".into(),
                    )
                })?;
            }
            other => {
                let hint = suggestion(other)
                    .map(|s| format!(" (did you mean {s}?)"))
                    .unwrap_or_default();
                return Err(option_error(
                    py,
                    true,
                    other,
                    format!("unknown retries option {other}{hint}"),
                ));
            }
        }
    }
    policy
        .validate()
        .map_err(|e| crate::errors::retry_policy(py, e))?;
    Ok(policy)
}

/// A policy's settings, in [`OPTIONS`] order, as Python reads them back (durations in
/// seconds).
fn settings(policy: &RetryPolicy) -> [(&'static str, String); 6] {
    let s = |ns: Nanos| format!("{}", AnyClock::seconds(ns));
    [
        ("max_attempts", policy.max_attempts.to_string()),
        ("base_delay", s(policy.base_delay)),
        ("max_delay", s(policy.max_delay)),
        ("budget_percent", policy.budget_percent.to_string()),
        (
            "min_retries_per_second",
            policy.min_retries_per_second.to_string(),
        ),
        ("seed", policy.seed.to_string()),
    ]
}

/// Refuses `wanted` unless it is the policy in force: a breaker has one policy and one
/// budget. The error names the first option that differs.
pub fn confirm(py: Python<'_>, in_force: &RetryPolicy, wanted: &RetryPolicy) -> PyResult<()> {
    for ((option, have), (_, want)) in settings(in_force).into_iter().zip(settings(wanted)) {
        if have != want {
            return Err(option_error(
                py,
                false,
                option,
                format!(
                    "{option}={want} differs from this breaker's retries, made with \
                     {option}={have}: a breaker has one retry policy, and one budget its \
                     callers share"
                ),
            ));
        }
    }
    Ok(())
}

/// A breaker's retries: the core's policy and the budget all its callers share (threads
/// and tasks alike). `breaker.retries(max_attempts=4, ...)` makes them on its first call
/// and gives the same ones after; hand them to `breaker.guard(retries=...)`. Durations
/// are in seconds. `deposit()` and `next(...)` are the budget's own operations, for a
/// loop of your own.
#[pyclass(frozen, module = "tripgate._native", name = "Retries")]
pub struct Retries {
    pub(crate) breaker: Py<Breaker>,
    pub(crate) inner: Arc<tripgate::Retries>,
}

impl Retries {
    fn policy(&self) -> &RetryPolicy {
        self.inner.policy()
    }
}

#[pymethods]
impl Retries {
    /// The breaker whose callers share these retries.
    #[getter]
    fn breaker(&self, py: Python<'_>) -> Py<Breaker> {
        self.breaker.clone_ref(py)
    }

    /// Attempts in all, the first included (1-10): `max_attempts=4` is three retries.
    #[getter]
    fn max_attempts(&self) -> u8 {
        self.policy().max_attempts
    }

    /// Retry `n` waits a uniform draw from `[0, min(max_delay, base_delay × 2ⁿ⁻¹)]`
    /// seconds (full jitter), or the upstream's `Retry-After` when that is longer.
    #[getter]
    fn base_delay(&self) -> f64 {
        AnyClock::seconds(self.policy().base_delay)
    }

    /// The longest wait between attempts, in seconds: an upstream that asks callers to
    /// stay away for longer ends the retries.
    #[getter]
    fn max_delay(&self) -> f64 {
        AnyClock::seconds(self.policy().max_delay)
    }

    /// Retries may be at most this percentage of the calls the breaker admitted (0-1000).
    #[getter]
    fn budget_percent(&self) -> u16 {
        self.policy().budget_percent
    }

    /// Retries allowed each second whatever the budget, so a quiet service still retries.
    #[getter]
    fn min_retries_per_second(&self) -> u32 {
        self.policy().min_retries_per_second
    }

    /// The jitter's seed: the same seed draws the same waits.
    #[getter]
    fn seed(&self) -> u64 {
        self.policy().seed
    }

    /// A call's first attempt was admitted: it pays `budget_percent` of a retry into the
    /// budget. The guarded calls do it themselves; call it from a loop of your own.
    fn deposit(&self) {
        self.inner.deposit();
    }

    /// After attempt `attempt` (1 for the first) answered with `outcome_class` (`success`,
    /// `fault` or `neutral`: what `permit.record` returned) and asked its callers to stay
    /// away for `retry_after` seconds (or a `timedelta`; None: nothing), the core's
    /// decision at the breaker's clock: `(wait, None)`, a retry taken from the budget,
    /// to be made after `wait` seconds; or `(None, why)`, no retry: `answered` (no fault),
    /// `attempts`, `budget` or `stay-away` (asked for longer than `max_delay`).
    #[pyo3(signature = (attempt, outcome_class, retry_after = None))]
    fn next(
        &self,
        py: Python<'_>,
        attempt: &Bound<'_, PyAny>,
        outcome_class: &str,
        retry_after: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Option<f64>, Option<&'static str>)> {
        let n = whole(py, "attempt", attempt)?;
        if n < 1 {
            return Err(option_error(
                py,
                false,
                "attempt",
                "attempt must be >= 1".into(),
            ));
        }
        let attempt = u8::try_from(n).unwrap_or(u8::MAX);
        let class = Class::from_name(outcome_class).ok_or_else(|| {
            option_error(
                py,
                false,
                "outcome_class",
                format!("outcome_class must be success, fault or neutral, not {outcome_class:?}"),
            )
        })?;
        let asked = match retry_after {
            Some(value) if !value.is_none() => crate::stay_away::seconds_arg(value)?,
            _ => 0,
        };
        let breaker = self.breaker.get();
        breaker.refresh(py);
        let now = breaker.native()?.clock().now();
        Ok(match self.inner.next(attempt, class, asked, now) {
            Next::Retry(wait) => (Some(AnyClock::seconds(wait)), None),
            Next::Stop(stop) => (None, Some(stop.name())),
        })
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Self>()
            .is_ok_and(|o| Arc::ptr_eq(&self.inner, &o.get().inner))
    }

    fn __hash__(&self) -> u64 {
        Arc::as_ptr(&self.inner) as usize as u64
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)
    }

    fn __repr__(&self) -> String {
        let p = self.policy();
        format!(
            "<Retries of {:?}: {} attempts, waits up to {}s from {}s, budget {}% + {}/s>",
            self.breaker.get().name().unwrap_or("?"),
            p.max_attempts,
            AnyClock::seconds(p.max_delay),
            AnyClock::seconds(p.base_delay),
            p.budget_percent,
            p.min_retries_per_second,
        )
    }
}

/// A `retries=` argument: the `Retries` of `breaker`, or None. Another breaker's are
/// refused (their budget is its callers').
pub fn of_breaker<'py>(
    breaker: &Bound<'py, Breaker>,
    retries: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, Retries>>> {
    let py = breaker.py();
    let Some(value) = retries.filter(|r| !r.is_none()) else {
        return Ok(None);
    };
    let Ok(retries) = value.cast::<Retries>() else {
        return Err(option_error(
            py,
            true,
            "retries",
            format!(
                "retries must be the breaker's retries (breaker.retries(...)), not {}",
                type_name(value)
            ),
        ));
    };
    if !retries.get().breaker.bind(py).is(breaker) {
        return Err(option_error(
            py,
            false,
            "retries",
            "retries are another breaker's: their budget is that breaker's callers'; \
             make this breaker's with its retries(...)"
                .into(),
        ));
    }
    Ok(Some(retries.clone()))
}
