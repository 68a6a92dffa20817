//! # tripgate-fuzz
//!
//! The bodies of tripgate's fuzz targets, as plain functions of bytes, so that the same
//! code runs under libFuzzer (`tests/fuzz/cargo-fuzz/`, nightly) and in the replay of the
//! committed corpus (`tests/replay.rs`, stable, part of the test suite). Each body turns
//! its bytes into calls with `arbitrary` and panics when a rule is broken.
//!
//! * [`snapshot`]: imports of arbitrary, damaged and crafted bytes into breakers of
//!   several configs, in the middle of their histories;
//! * [`config`]: arbitrary configs (validation, `Breaker::new`, `Config::set`), and a
//!   short history on every accepted one;
//! * [`model`]: arbitrary histories against the reference model ([`model`](mod@model)),
//!   which the property tests share.
//!
//! The component through wasmtime has its own crate (`tests/fuzz/component/`), so that
//! this one stays free of wasmtime.

use arbitrary::{Result, Unstructured};
use tripgate_core::{Config, ConfigError, Field, Rule, MILLISECOND, SECOND};

pub mod input;
pub mod model;
mod watch;

pub use watch::Watch;

/// Calls per history in the `snapshot` and `config` targets: long enough to reach
/// half-open rounds, short enough for many executions a second.
const MAX_STEPS: usize = 96;

/// Runs `body` on `data`; inputs too short to finish are fine (the history just ends).
fn run(data: &[u8], body: impl FnOnce(&mut Unstructured<'_>) -> Result<()>) {
    let mut u = Unstructured::new(data);
    let _ = body(&mut u);
}

/// Breakers whose state is imported: the shapes hosts use (the default time window, one
/// bucket, 64 buckets, a count window) and the features whose state crosses an import
/// (hang detection, backoff and jitter, several probes, rate graduation).
fn snapshot_configs() -> [Config; 6] {
    let d = Config::default();
    [
        d,
        Config {
            failure_threshold: 2,
            min_calls: 2,
            window: SECOND,
            buckets: 1,
            cooldown: 50 * MILLISECOND,
            probe_timeout: 80 * MILLISECOND,
            half_open_max_probes: 3,
            half_open_required_successes: 1,
            ..d
        },
        Config {
            buckets: 64,
            window: 64 * MILLISECOND,
            failure_rate: Some(50),
            slow_call_rate: Some(50),
            slow_call_duration: Some(5 * MILLISECOND),
            cooldown: 10 * MILLISECOND,
            backoff_factor: 2.0,
            max_cooldown: Some(SECOND),
            jitter_percent: 30,
            jitter_seed: 7,
            ..d
        },
        Config {
            window_calls: Some(100),
            min_calls: 3,
            failure_threshold: 3,
            cooldown: 20 * MILLISECOND,
            half_open_max_probes: 64,
            half_open_required_successes: 4,
            half_open_success_rate: Some(75),
            probe_timeout: 30 * MILLISECOND,
            ..d
        },
        Config {
            window_calls: Some(1),
            min_calls: 1,
            failure_threshold: 1,
            cooldown: 1,
            probe_timeout: 1,
            max_in_flight: Some(2),
            ..d
        },
        Config {
            slow_call_duration: Some(1),
            failure_threshold: 1,
            min_calls: 1,
            window: 1,
            buckets: 1,
            cooldown: u64::MAX,
            probe_timeout: u64::MAX,
            ..d
        },
    ]
}

/// Snapshot import: a breaker of one of [`snapshot_configs`] and a donor (the same config
/// or another) run short histories in which imports of arbitrary, damaged and crafted
/// bytes are frequent. Never a panic; refused bytes leave the breaker exactly as it was;
/// accepted ones leave a breaker that keeps every rule (see [`Watch`]).
pub fn snapshot(data: &[u8]) {
    run(data, |u| {
        let configs = snapshot_configs();
        let config = *u.choose(&configs)?;
        let donor_config = if u.ratio(3, 4)? {
            config
        } else {
            *u.choose(&configs)?
        };
        let start = input::number(u)?;
        let mut donor = Watch::new(donor_config, input::number(u)?).expect("valid config");
        let mut watch = Watch::new(config, start).expect("valid config");
        for _ in 0..u.int_in_range(0..=24)? {
            donor.step(u, 2, &[])?;
        }
        let donated = donor.export();
        for _ in 0..MAX_STEPS {
            watch.step(u, 8, &donated)?;
        }
        Ok(())
    });
}

/// A field's value as [`Config::set`] takes it, or `None` for the code lists.
fn get(c: &Config, field: Field) -> Option<u64> {
    use Field as F;
    let opt = |v: Option<u64>| v.unwrap_or(u64::MAX);
    Some(match field {
        F::FailureThreshold => c.failure_threshold.into(),
        F::MinCalls => c.min_calls.into(),
        F::FailureRate => opt(c.failure_rate.map(u64::from)),
        F::SlowCallRate => opt(c.slow_call_rate.map(u64::from)),
        F::SlowCallDuration => opt(c.slow_call_duration),
        F::Window => c.window,
        F::Buckets => c.buckets.into(),
        F::WindowCalls => opt(c.window_calls.map(u64::from)),
        F::Cooldown => c.cooldown,
        F::BackoffFactor => c.backoff_factor as u64,
        F::MaxCooldown => opt(c.max_cooldown),
        F::JitterPercent => c.jitter_percent.into(),
        F::JitterSeed => c.jitter_seed,
        F::MaxInFlight => opt(c.max_in_flight.map(u64::from)),
        F::HalfOpenMaxProbes => c.half_open_max_probes.into(),
        F::HalfOpenRequiredSuccesses => c.half_open_required_successes.into(),
        F::HalfOpenSuccessRate => opt(c.half_open_success_rate.map(u64::from)),
        F::ProbeTimeout => c.probe_timeout,
        F::FleetQuorum => opt(c.fleet_quorum.map(u64::from)),
        F::Shadow => u64::from(c.shadow),
        F::FaultStatuses | F::FaultGrpcCodes => return None,
    })
}

/// The largest value each field's type holds, which `set` stores as is.
fn capacity(field: Field) -> u64 {
    use Field as F;
    match field {
        F::FailureThreshold | F::MinCalls | F::MaxInFlight | F::HalfOpenRequiredSuccesses => {
            u32::MAX.into()
        }
        F::WindowCalls => u16::MAX.into(),
        F::FailureRate
        | F::SlowCallRate
        | F::Buckets
        | F::JitterPercent
        | F::HalfOpenMaxProbes
        | F::HalfOpenSuccessRate
        | F::FleetQuorum => u8::MAX.into(),
        F::Shadow => 1,
        _ => u64::MAX,
    }
}

/// SPEC.md's configuration rules, written again from the spec: the oracle for
/// `Config::validate`.
fn spec_allows(c: &Config) -> bool {
    let percent = |p: Option<u8>| p.is_none_or(|p| (1..=100).contains(&p));
    c.failure_threshold >= 1
        && c.min_calls >= 1
        && percent(c.failure_rate)
        && percent(c.slow_call_rate)
        && c.slow_call_duration.is_none_or(|d| d > 0)
        && c.window > 0
        && (1..=64).contains(&c.buckets)
        && c.window >= u64::from(c.buckets)
        && c.window_calls
            .is_none_or(|n| (1..=1024).contains(&n) && u32::from(n) >= c.min_calls)
        // One window: a count window with a time window's span or buckets set apart from
        // their defaults (30 s, 10) is refused.
        && (c.window_calls.is_none() || (c.window == 30 * SECOND && c.buckets == 10))
        && c.cooldown > 0
        && c.backoff_factor.is_finite()
        && (1.0..=1000.0).contains(&c.backoff_factor)
        && c.max_cooldown.is_none_or(|m| m >= c.cooldown)
        && c.jitter_percent <= 100
        && c.max_in_flight.is_none_or(|n| n >= 1)
        && (c.slow_call_duration.is_none()
            || c.max_in_flight.is_none_or(|n| n >= c.failure_threshold))
        && (1..=64).contains(&c.half_open_max_probes)
        && c.half_open_required_successes >= 1
        && percent(c.half_open_success_rate)
        && c.probe_timeout > 0
        && c.fleet_quorum.is_none_or(|q| (1..=16).contains(&q))
        && !(c.shadow && c.fleet_quorum.is_some())
}

/// Validation agrees with the spec's rules and with `Breaker::new`, and its error names
/// its field in every host's words.
fn check_validation(c: &Config, now: u64) {
    let validated = c.validate();
    assert_eq!(
        validated.is_ok(),
        spec_allows(c),
        "validate says {validated:?} for {c:?}"
    );
    assert_eq!(
        tripgate_core::Breaker::new(*c, now).err(),
        validated.err(),
        "Breaker::new and validate disagree on {c:?}"
    );
    if let Err(error) = validated {
        check_message(&error);
    }
}

fn check_message(error: &ConfigError) {
    let message = error.to_string();
    assert!(
        message.starts_with(error.field.name()) && message.len() > error.field.name().len(),
        "message {message:?} for {error:?}"
    );
}

/// Arbitrary configs: `validate` follows the spec's rules exactly and agrees with
/// `Breaker::new`; `Config::set` by `Field` stores what it is given or refuses it with an
/// error naming the field, never clamping a count into a valid value; an accepted config
/// runs a short history that keeps every rule (see [`Watch`]).
pub fn config(data: &[u8]) {
    run(data, |u| {
        let mut c = input::config(u)?;
        let now = input::number(u)?;
        check_validation(&c, now);
        for _ in 0..u.int_in_range(0..=4)? {
            let field = Field::from_code(u.int_in_range(0..=Field::ALL.len() as u8 - 1)?)
                .expect("a field code");
            let value = input::number(u)?;
            let before = c;
            match c.set(field, value) {
                Ok(()) => {
                    let stored = get(&c, field).expect("a numeric field");
                    if field == Field::BackoffFactor {
                        assert_eq!(c.backoff_factor, value as f64);
                    } else {
                        assert_eq!(stored, value.min(capacity(field)), "set {field} {value}");
                    }
                    assert!(
                        value <= capacity(field) || capacity(field) < u64::from(u32::MAX),
                        "a wide field clamped {value} instead of refusing it"
                    );
                }
                Err(error) => {
                    // Debug, not ==: a NaN backoff factor is not equal to itself.
                    assert_eq!(
                        format!("{c:?}"),
                        format!("{before:?}"),
                        "a refused set changed the config"
                    );
                    assert_eq!(error.field, field);
                    match get(&c, field) {
                        None => assert_eq!(error.rule, Rule::List),
                        Some(_) => {
                            assert!(value > capacity(field), "set {field} {value}: {error}");
                            assert_eq!(error.rule, Rule::AtMost(capacity(field)));
                        }
                    }
                    check_message(&error);
                }
            }
            check_validation(&c, now);
        }
        let Some(mut watch) = Watch::new(c, now) else {
            return Ok(());
        };
        for _ in 0..u.int_in_range(0..=MAX_STEPS)? {
            watch.step(u, 1, &[])?;
        }
        Ok(())
    });
}

/// A config inside the model's scope (SPEC.md's rules the model implements), with
/// values from the tiny (1 ns windows and cooldowns) to the large.
fn model_config(u: &mut Unstructured<'_>) -> Result<Config> {
    let d = Config::default();
    let min_calls = u.int_in_range(1..=8)?;
    let buckets = u.int_in_range(1..=64)?;
    let cooldown = input::duration(u)?.clamp(1, 3600 * SECOND);
    Ok(one_window(Config {
        failure_threshold: u.int_in_range(1..=8)?,
        min_calls,
        failure_rate: if u.arbitrary()? {
            Some(u.int_in_range(1..=100)?)
        } else {
            None
        },
        window: input::duration(u)?.clamp(u64::from(buckets), 3600 * SECOND),
        buckets,
        window_calls: if u.ratio(1, 4)? {
            Some(u.int_in_range(min_calls as u16..=40)?)
        } else {
            None
        },
        cooldown,
        backoff_factor: *u.choose(&[1.0, 1.0, 1.5, 2.0, 7.25, 1000.0])?,
        max_cooldown: if u.arbitrary()? {
            Some(cooldown.saturating_add(input::duration(u)?.min(3600 * SECOND)))
        } else {
            None
        },
        max_in_flight: if u.ratio(1, 4)? {
            Some(u.int_in_range(1..=6)?)
        } else {
            None
        },
        half_open_max_probes: if u.arbitrary()? {
            u.int_in_range(1..=4)?
        } else {
            u.int_in_range(1..=64)?
        },
        half_open_required_successes: u.int_in_range(1..=5)?,
        probe_timeout: input::duration(u)?.clamp(1, 3600 * SECOND),
        ..d
    }))
}

/// A count window keeps the time window's span and buckets at their defaults (the config
/// rule): the bytes drawn for them go unused, so every input draws the same.
fn one_window(c: Config) -> Config {
    let d = Config::default();
    match c.window_calls {
        Some(_) => Config {
            window: d.window,
            buckets: d.buckets,
            ..c
        },
        None => c,
    }
}

fn model_reading(u: &mut Unstructured<'_>) -> Result<model::Reading> {
    use model::Reading as R;
    Ok(match u.int_in_range(0..=15)? {
        0..=12 => R::Now,
        13 | 14 => R::Behind(input::duration(u)?),
        _ => R::Absurd(u.arbitrary()?),
    })
}

fn model_op(u: &mut Unstructured<'_>) -> Result<model::Op> {
    use model::{Manual, Op};
    Ok(match u.int_in_range(0..=23)? {
        0..=7 => Op::Acquire(model_reading(u)?),
        8..=15 => Op::Record {
            index: u.arbitrary()?,
            outcome: input::outcome(u)?,
            raw: u.arbitrary()?,
            reading: model_reading(u)?,
        },
        // Advances stay within what the model's plain arithmetic holds (its time is
        // relative to the start and never wraps).
        16..=20 => Op::Advance(input::duration(u)? % (1 << 50)),
        21 | 22 => Op::Manual(
            *u.choose(&[
                Manual::Isolate,
                Manual::Release,
                Manual::Disable,
                Manual::Reset,
            ])?,
            model_reading(u)?,
        ),
        _ => Op::Recycle,
    })
}

/// Arbitrary histories (acquire, record, raw permits, clock steps forward, back and to
/// absurd readings, operators, recycling) on an arbitrary config within the model's
/// scope, from an origin anywhere on the clock: the core and the reference model must
/// make every decision alike.
pub fn model(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(config) = model_config(&mut u) else {
        return;
    };
    let Ok(start) = input::number(&mut u) else {
        return;
    };
    let mut ops = Vec::new();
    while ops.len() < 256 {
        match model_op(&mut u) {
            Ok(op) if !u.is_empty() => ops.push(op),
            _ => break,
        }
    }
    if let Err(divergence) = model::run_history(config, start, &ops) {
        panic!("{divergence}\nconfig {config:?}\nstart {start}\nops {ops:?}");
    }
}

/// Runs every file of the committed corpus `tests/fuzz/corpus/<target>/` through `body`
/// and fails naming each input that panics: the replay that `cargo test` runs on the
/// stable toolchain (`tests/replay.rs`, and the component crate's).
pub fn replay(target: &str, body: fn(&[u8])) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    // An empty or missing corpus would make the replay pass without testing anything.
    assert!(
        files.len() >= 20,
        "{}: only {} inputs",
        dir.display(),
        files.len()
    );
    let started = std::time::Instant::now();
    let failed: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let data = std::fs::read(path).expect("a readable corpus file");
            std::panic::catch_unwind(|| body(&data))
                .err()
                .map(|_| path.display().to_string())
        })
        .collect();
    println!(
        "{target}: {} inputs replayed in {:.2?}",
        files.len(),
        started.elapsed()
    );
    assert!(
        failed.is_empty(),
        "{target}: these inputs fail: {failed:#?}"
    );
}
