//! `CircuitBreaker(**options)`: Python keyword options to the core's `Config`.
//!
//! Every core field is an option named as the core names it with `_` for `-`
//! (`failure_threshold`); durations are seconds (an int, a float or a `timedelta`). The
//! core checks the values (`Config::validate`) and its message is given with the Python
//! names: `ValueError: failure_threshold must be >= 1`. A wrong type is a `TypeError`
//! naming the option. Both carry the option's name in `error.option`.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};

use tripgate::RetryField;
use tripgate_core::{Config, ConfigError, Field, FieldKind, GrpcSet, StatusSet};

use crate::clock::{AnyClock, CallableClock, FakeClock};

/// A core field's Python option name.
pub fn option_name(field: Field) -> String {
    field.name().replace('-', "_")
}

/// The Python option of a retry policy's field (`breaker.retries(...)`): the core's name
/// in snake case.
pub fn retry_option(field: RetryField) -> &'static str {
    match field {
        RetryField::MaxAttempts => "max_attempts",
        RetryField::BaseDelay => "base_delay",
        RetryField::MaxDelay => "max_delay",
        RetryField::BudgetPercent => "budget_percent",
        RetryField::MinRetriesPerSecond => "min_retries_per_second",
    }
}

/// A core message (`max-cooldown must be >= cooldown`) in Python option names.
pub fn python_message(message: &str) -> String {
    message
        .split(' ')
        .map(|word| match Field::from_name(word) {
            Some(field) => option_name(field),
            None => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An error of `kind` naming `option` (`error.option`).
pub fn option_error(py: Python<'_>, type_error: bool, option: &str, message: String) -> PyErr {
    let err = if type_error {
        PyTypeError::new_err(message)
    } else {
        PyValueError::new_err(message)
    };
    // Best effort: an exception without the attribute still names the option in its text.
    let _ = err.value(py).setattr("option", option);
    err
}

/// The core's refusal of a config, as `CircuitBreaker(...)` raises it: a `ValueError`
/// naming the option, in the Python names.
pub fn config_error(py: Python<'_>, error: ConfigError) -> PyErr {
    option_error(
        py,
        false,
        &option_name(error.field),
        python_message(&error.to_string()),
    )
}

/// What the Python breaker is made of, besides the core's config.
pub struct Options {
    pub config: Config,
    pub clock: AnyClock,
    pub name: String,
    /// Default budget of `call` and `call_async`, in ns.
    pub timeout: Option<u64>,
    pub fallback: Option<Py<PyAny>>,
    pub classify: Option<Py<PyAny>>,
    pub on_listener_error: Option<Py<PyAny>>,
}

const HOST_OPTIONS: [&str; 6] = [
    "name",
    "clock",
    "timeout",
    "fallback",
    "classify",
    "on_listener_error",
];

/// A value's type name, for messages.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// Seconds (int, float or `timedelta`) as nanoseconds; `None` for a value that is not a
/// number, `Err` for one that is not finite or out of range.
pub fn seconds_to_ns(py: Python<'_>, option: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let wrong = || {
        option_error(
            py,
            true,
            option,
            format!(
                "{option} must be a number of seconds or a timedelta, not {}",
                type_name(value)
            ),
        )
    };
    if value.is_instance_of::<PyBool>() {
        return Err(wrong());
    }
    let seconds: f64 = if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        value
            .extract()
            .map_err(|_| option_error(py, false, option, format!("{option} is too large")))?
    } else if let Ok(total) = value.call_method0("total_seconds") {
        if !value.get_type().name().is_ok_and(|n| n == "timedelta") {
            return Err(wrong());
        }
        total.extract().map_err(|_| wrong())?
    } else {
        return Err(wrong());
    };
    if !seconds.is_finite() {
        return Err(option_error(
            py,
            false,
            option,
            format!("{option} must be a finite number of seconds"),
        ));
    }
    if seconds < 0.0 {
        // The core's own rule for a duration (`must be > 0`).
        return Ok(0);
    }
    let ns = (seconds * 1e9).round();
    if ns >= 18_446_744_073_709_551_615.0 {
        return Err(option_error(
            py,
            false,
            option,
            format!("{option} must be less than 2**64 ns"),
        ));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(ns as u64)
}

pub fn whole(py: Python<'_>, option: &str, value: &Bound<'_, PyAny>) -> PyResult<i128> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(option_error(
            py,
            true,
            option,
            format!("{option} must be an int, not {}", type_name(value)),
        ));
    }
    // Beyond i128 is beyond every field: saturate and let the rules speak.
    Ok(value.extract::<i128>().unwrap_or_else(|_| {
        if value.lt(0i32).unwrap_or(false) {
            i128::MIN
        } else {
            i128::MAX
        }
    }))
}

fn codes(
    py: Python<'_>,
    option: &str,
    value: &Bound<'_, PyAny>,
    valid: impl Fn(i128) -> bool,
) -> PyResult<Vec<i128>> {
    let bad = || {
        option_error(
            py,
            false,
            option,
            format!("{option} must be a list of valid codes"),
        )
    };
    if value.is_instance_of::<PyString>() {
        return Err(option_error(
            py,
            true,
            option,
            format!("{option} must be an iterable of ints, not str"),
        ));
    }
    let iter = value.try_iter().map_err(|_| {
        option_error(
            py,
            true,
            option,
            format!(
                "{option} must be an iterable of ints, not {}",
                type_name(value)
            ),
        )
    })?;
    let mut out = Vec::new();
    for item in iter {
        let item = item.map_err(|e| {
            let err = option_error(py, true, option, format!("{option}: iterating raised {e}"));
            err.set_cause(py, Some(e));
            err
        })?;
        let code = whole(py, option, &item)?;
        if !valid(code) {
            return Err(bad());
        }
        out.push(code);
    }
    Ok(out)
}

/// The error for a negative count: the field's rule, as the core words it for the
/// smallest value or, when that one is allowed, for the largest.
fn below_zero(py: Python<'_>, config: &Config, field: Field, option: &str) -> PyErr {
    for edge in [0, u64::MAX] {
        let mut probe = *config;
        if probe.set(field, edge).is_ok() {
            if let Err(e) = probe.validate() {
                if e.field == field {
                    return config_error(py, e);
                }
            }
        }
    }
    option_error(py, false, option, format!("{option} must be >= 0"))
}

fn set_field(
    py: Python<'_>,
    config: &mut Config,
    field: Field,
    option: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let set = |config: &mut Config, v: u64| config.set(field, v).map_err(|e| config_error(py, e));
    match field.kind() {
        FieldKind::Count | FieldKind::Percent => {
            let n = whole(py, option, value)?;
            if n < 0 {
                return Err(below_zero(py, config, field, option));
            }
            set(config, u64::try_from(n).unwrap_or(u64::MAX))
        }
        FieldKind::Duration => {
            let ns = seconds_to_ns(py, option, value)?;
            set(config, ns)
        }
        FieldKind::Flag => {
            if !value.is_instance_of::<PyBool>() {
                return Err(option_error(
                    py,
                    true,
                    option,
                    format!("{option} must be a bool, not {}", type_name(value)),
                ));
            }
            set(config, u64::from(value.extract::<bool>().unwrap_or(false)))
        }
        FieldKind::Factor => {
            if value.is_instance_of::<PyBool>()
                || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
            {
                return Err(option_error(
                    py,
                    true,
                    option,
                    format!("{option} must be a number, not {}", type_name(value)),
                ));
            }
            config.backoff_factor = value.extract::<f64>().unwrap_or(f64::INFINITY);
            Ok(())
        }
        FieldKind::Seed => {
            let n = whole(py, option, value)?;
            let seed = u64::try_from(n).map_err(|_| {
                option_error(
                    py,
                    false,
                    option,
                    format!("{option} must be between 0 and 18446744073709551615"),
                )
            })?;
            set(config, seed)
        }
        FieldKind::Statuses => {
            let list = codes(py, option, value, |c| (100..=599).contains(&c))?;
            config.fault_statuses = list.iter().fold(StatusSet::EMPTY, |set, &c| {
                set.with(u16::try_from(c).unwrap_or(0))
            });
            Ok(())
        }
        FieldKind::GrpcCodes => {
            let list = codes(py, option, value, |c| (0..=16).contains(&c))?;
            config.fault_grpc_codes = list.iter().fold(GrpcSet::EMPTY, |set, &c| {
                set.with(u8::try_from(c).unwrap_or(u8::MAX))
            });
            Ok(())
        }
    }
}

/// A near option name for an unknown one (`cooldown_ms` → `cooldown`).
fn suggestion(unknown: &str) -> Option<String> {
    let stripped = unknown
        .strip_suffix("_ms")
        .or_else(|| unknown.strip_suffix("_s"))
        .or_else(|| unknown.strip_suffix("_seconds"))
        .unwrap_or(unknown);
    let snake = stripped.replace('-', "_");
    let camel_to_snake: String = stripped
        .chars()
        .flat_map(|c| {
            if c.is_ascii_uppercase() {
                vec!['_', c.to_ascii_lowercase()]
            } else {
                vec![c]
            }
        })
        .collect();
    Field::ALL
        .iter()
        .map(|f| option_name(*f))
        .chain(HOST_OPTIONS.iter().map(|s| s.to_string()))
        .find(|name| *name == snake || *name == camel_to_snake)
}

/// The error for positional arguments to the breaker's class (`cls`, as the caller
/// named it): every option is a keyword.
#[cold]
pub fn positional(cls: &Bound<'_, PyType>, args: &Bound<'_, PyTuple>) -> PyErr {
    let name = cls
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "CircuitBreaker".into());
    let shown = args
        .get_item(0)
        .and_then(|a| a.repr())
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into());
    let count = args.len();
    PyTypeError::new_err(format!(
        "{name}() takes keyword options only, such as {name}(failure_threshold=5, \
         cooldown=15): got {count} positional argument{} ({shown:.60}{})",
        if count == 1 { "" } else { "s" },
        if count > 1 { ", ..." } else { "" },
    ))
}

/// The `name` option: a `str` that is text (UTF-8 has no lone surrogates).
fn name_of(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let Ok(text) = value.cast::<PyString>() else {
        return Err(option_error(
            py,
            true,
            "name",
            format!("name must be a str, not {}", type_name(value)),
        ));
    };
    text.to_cow().map(|t| t.into_owned()).map_err(|_| {
        let shown = value
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "?".into());
        option_error(
            py,
            false,
            "name",
            format!("name must be text, not {shown:.60}: it holds a lone surrogate, which no encoding writes"),
        )
    })
}

pub fn parse(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    parse_given(py, options).map(|(out, _)| out)
}

/// `parse`, and which of the package's own options (`name`, `clock`, `timeout`, ...) were
/// given: `reconfigure` takes the same options, and those must stay as the breaker was
/// made.
pub fn parse_given(
    py: Python<'_>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Options, Vec<&'static str>)> {
    let mut given = Vec::new();
    let mut out = Options {
        config: Config::default(),
        clock: AnyClock::counter(),
        name: String::from("default"),
        timeout: None,
        fallback: None,
        classify: None,
        on_listener_error: None,
    };
    let Some(options) = options else {
        return Ok((out, given));
    };
    for (key, value) in options.iter() {
        let option: String = key.extract()?;
        // `None` is "not given": the default (a fallback of `None` is a value).
        if value.is_none() && option != "fallback" {
            continue;
        }
        match Field::ALL.iter().find(|f| option_name(**f) == option) {
            Some(&field) => set_field(py, &mut out.config, field, &option, &value)?,
            None => {
                host_option(py, &mut out, &option, value)?;
                given.extend(HOST_OPTIONS.iter().find(|name| **name == option));
            }
        }
    }
    out.config.validate().map_err(|e| config_error(py, e))?;
    Ok((out, given))
}

/// One of the package's own options (not the core's config): `name`, `clock`, `timeout`,
/// `fallback`, `classify`, `on_listener_error`; anything else is unknown, with the
/// nearest name suggested.
fn host_option(
    py: Python<'_>,
    out: &mut Options,
    option: &str,
    value: Bound<'_, PyAny>,
) -> PyResult<()> {
    match option {
        "name" => out.name = name_of(py, &value)?,
        "clock" => out.clock = clock_of(py, &value)?,
        "timeout" => {
            let ns = seconds_to_ns(py, "timeout", &value)?;
            if ns == 0 {
                return Err(option_error(
                    py,
                    false,
                    "timeout",
                    "timeout must be > 0".into(),
                ));
            }
            out.timeout = Some(ns);
        }
        "fallback" => out.fallback = Some(value.unbind()),
        "classify" | "on_listener_error" => {
            if !value.is_callable() {
                return Err(option_error(
                    py,
                    true,
                    option,
                    format!("{option} must be callable, not {}", type_name(&value)),
                ));
            }
            if option == "classify" {
                out.classify = Some(value.unbind());
            } else {
                out.on_listener_error = Some(value.unbind());
            }
        }
        other => {
            let hint = suggestion(other)
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            return Err(option_error(
                py,
                true,
                other,
                format!("unknown option {other}{hint}"),
            ));
        }
    }
    Ok(())
}

/// The `clock` option: a `tripgate.FakeClock`, or a callable returning monotonic seconds.
fn clock_of(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<AnyClock> {
    if let Ok(fake) = value.cast::<FakeClock>() {
        return Ok(AnyClock::Fake(Arc::clone(&fake.get().inner)));
    }
    if value.is_callable() {
        let clock = CallableClock::new(py, value.clone().unbind()).inspect_err(|e| {
            // Its own message and cause, naming the option.
            let _ = e.value(py).setattr("option", "clock");
        })?;
        return Ok(AnyClock::Callable(Arc::new(clock)));
    }
    Err(option_error(
        py,
        true,
        "clock",
        format!(
            "clock must be a tripgate.FakeClock or a callable returning monotonic seconds, not {}",
            type_name(value)
        ),
    ))
}
