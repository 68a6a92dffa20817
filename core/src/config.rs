//! Configuration and its validation.
//!
//! Every field has the default from the specification. [`Config::validate`] checks every
//! rule and names the first broken one as a [`ConfigError`] (`field`, `rule`), whose
//! `Display` reads like `failure-threshold must be >= 1`. Field names are the kebab-case
//! names the WIT interface uses, so every host reports the same words.

use core::fmt;

use crate::outcome::{GrpcSet, StatusSet};
use crate::table::table;
use crate::time::{Nanos, SECOND};
use crate::words::Words;

/// Most members a fleet quorum can count (and the largest `fleet-quorum`).
pub const MAX_QUORUM: u8 = 16;

/// How many cooldowns a backoff without a `max-cooldown` grows to (six doublings): the
/// longest a breaker's own opening, a fleet event or an imported state may make it (see
/// [`Config::longest_opening`]).
pub const UNCAPPED_BACKOFF_BOUND: u64 = 64;

/// Most buckets a time window may have.
pub const MAX_BUCKETS: u8 = 64;
/// Most outcomes a count-based window may hold.
pub const MAX_WINDOW_CALLS: u16 = 1024;
/// Most probes that may be outstanding at once in half-open.
pub const MAX_PROBES: u8 = 64;
/// Largest backoff factor.
pub const MAX_BACKOFF_FACTOR: f64 = MAX_BACKOFF_FACTOR_WHOLE as f64;
/// [`MAX_BACKOFF_FACTOR`] as an integer, so messages need no float formatting (which
/// would add ~20 KB to a WebAssembly guest).
const MAX_BACKOFF_FACTOR_WHOLE: u16 = 1000;

/// How a breaker behaves. Build it with struct-update syntax over the defaults:
///
/// ```
/// use tripgate_core::{Config, SECOND};
/// let config = Config { failure_threshold: 3, cooldown: 5 * SECOND, ..Config::default() };
/// assert!(config.validate().is_ok());
///
/// let bad = Config { failure_threshold: 0, ..Config::default() };
/// assert_eq!(bad.validate().unwrap_err().to_string(), "failure-threshold must be >= 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Faults in the window that trip the breaker (with at least `min_calls` calls).
    pub failure_threshold: u32,
    /// Calls the window must hold before any rate or count rule may trip.
    pub min_calls: u32,
    /// Trip when this percentage (1–100) of the window's calls are faults.
    pub failure_rate: Option<u8>,
    /// Trip when this percentage (1–100) of the window's calls are slow.
    pub slow_call_rate: Option<u8>,
    /// A success slower than this is a slow call. Setting it also turns on hang
    /// detection: `failure_threshold` calls still in flight after this long trip the
    /// breaker before any of them times out.
    pub slow_call_duration: Option<Nanos>,
    /// Span of the sliding time window.
    pub window: Nanos,
    /// Buckets in the time window (its precision is `window / buckets`).
    pub buckets: u8,
    /// Use a count-based window of the last this-many outcomes instead of a time window.
    pub window_calls: Option<u16>,
    /// How long the breaker stays open before it lets probes through.
    pub cooldown: Nanos,
    /// Each re-open straight from half-open multiplies the cooldown by this (≥ 1).
    pub backoff_factor: f64,
    /// Cap on the backed-off cooldown (when `None`, [`UNCAPPED_BACKOFF_BOUND`] cooldowns).
    pub max_cooldown: Option<Nanos>,
    /// Adds up to this percentage (0–100) of the cooldown, drawn from `jitter_seed`, so a
    /// fleet's probes spread out. Jitter only lengthens: the cooldown is a floor.
    pub jitter_percent: u8,
    /// Seed for the jitter; the same seed replays the same cooldowns.
    pub jitter_seed: u64,
    /// Concurrency cap while closed; callers beyond it are rejected as `saturated`.
    pub max_in_flight: Option<u32>,
    /// Probes that may be outstanding at once in half-open (K).
    pub half_open_max_probes: u8,
    /// Consecutive probe successes that close the breaker (M). With
    /// `half_open_success_rate`, the number of probe outcomes that are judged instead.
    pub half_open_required_successes: u32,
    /// Graduate by rate: after M probe outcomes, close if at least this percentage
    /// (1–100) succeeded, else re-open. A probe fault then no longer re-opens at once.
    pub half_open_success_rate: Option<u8>,
    /// A probe with no outcome after this long counts as a timeout fault.
    pub probe_timeout: Nanos,
    /// HTTP statuses that are faults (default: 5xx and 429).
    pub fault_statuses: StatusSet,
    /// gRPC codes that are faults (default: 4, 8, 13, 14).
    pub fault_grpc_codes: GrpcSet,
    /// Fleet mode (`FLEET.md`): this many distinct members must trip within one cooldown
    /// before the fleet opens (1–16). Unset: a breaker of its own.
    pub fleet_quorum: Option<u8>,
    /// Shadow mode (SPEC § Shadow mode): every decision made and counted, every call
    /// admitted; a rejection becomes a shadow rejection, counted by reason, and its call
    /// a shadow permit whose outcome counts nothing. Default off.
    pub shadow: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            min_calls: 5,
            failure_rate: None,
            slow_call_rate: None,
            slow_call_duration: None,
            window: 30 * SECOND,
            buckets: 10,
            window_calls: None,
            cooldown: 15 * SECOND,
            backoff_factor: 1.0,
            max_cooldown: None,
            jitter_percent: 0,
            jitter_seed: 0,
            max_in_flight: None,
            half_open_max_probes: 1,
            half_open_required_successes: 2,
            half_open_success_rate: None,
            probe_timeout: 15 * SECOND,
            fault_statuses: StatusSet::default(),
            fault_grpc_codes: GrpcSet::default(),
            fleet_quorum: None,
            shadow: false,
        }
    }
}

impl Config {
    /// How a breaker with this configuration classifies `outcome` (its fault statuses and
    /// gRPC codes): what a caller that retries outside a breaker needs to judge an answer
    /// as the breaker would.
    pub fn classify(&self, outcome: crate::Outcome) -> crate::Class {
        crate::outcome::classify(outcome, &self.fault_statuses, &self.fault_grpc_codes)
    }

    /// The longest opening a fleet event or an imported state may ask of this breaker (a
    /// stored or replayed event, or stored bytes, cannot hold it open past it, or past
    /// one `probe-timeout` for probes still out): the backed-off cooldown at its cap,
    /// lengthened by the most its jitter adds. Without `max-cooldown`, a backoff that
    /// grows stops at [`UNCAPPED_BACKOFF_BOUND`] times the cooldown, so that nothing in
    /// the store can open a member for longer; set `max-cooldown` to bound it tighter.
    pub fn longest_opening(&self) -> Nanos {
        self.most_jittered(self.longest_cooldown())
    }

    /// The longest opening a cooldown of `cooldown` gives: lengthened by the most this
    /// configuration's jitter adds.
    pub(crate) fn most_jittered(&self, cooldown: Nanos) -> Nanos {
        let percent = u64::from(self.jitter_percent);
        let jitter = (cooldown / 100)
            .saturating_mul(percent)
            .saturating_add((cooldown % 100).saturating_mul(percent) / 100);
        cooldown.saturating_add(jitter)
    }

    /// The longest cooldown this configuration backs off to, before jitter: `max-cooldown`
    /// when set; without it, [`UNCAPPED_BACKOFF_BOUND`] cooldowns when the backoff grows,
    /// else the cooldown itself.
    pub(crate) fn longest_cooldown(&self) -> Nanos {
        match self.max_cooldown {
            Some(max) => max.max(self.cooldown),
            None if self.backoff_factor > 1.0 => {
                self.cooldown.saturating_mul(UNCAPPED_BACKOFF_BOUND)
            }
            None => self.cooldown,
        }
    }

    /// Checks every rule; the error names the first field that breaks one.
    // long: one check per rule, in the order that decides which broken rule is reported
    pub fn validate(&self) -> Result<(), ConfigError> {
        use Field as F;
        use Rule as R;
        let check = |ok: bool, field: Field, rule: Rule| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError { field, rule })
            }
        };
        let percent = |value: Option<u8>, field: Field| {
            check(
                value.is_none_or(|p| (1..=100).contains(&p)),
                field,
                R::Between(1, 100),
            )
        };
        check(
            self.failure_threshold >= 1,
            F::FailureThreshold,
            R::AtLeast(1),
        )?;
        check(self.min_calls >= 1, F::MinCalls, R::AtLeast(1))?;
        percent(self.failure_rate, F::FailureRate)?;
        percent(self.slow_call_rate, F::SlowCallRate)?;
        check(
            self.slow_call_duration.is_none_or(|d| d > 0),
            F::SlowCallDuration,
            R::Positive,
        )?;
        check(self.window > 0, F::Window, R::Positive)?;
        check(
            (1..=MAX_BUCKETS).contains(&self.buckets),
            F::Buckets,
            R::Between(1, u64::from(MAX_BUCKETS)),
        )?;
        check(
            self.window >= u64::from(self.buckets),
            F::Window,
            R::AtLeastField(F::Buckets),
        )?;
        check(
            self.window_calls
                .is_none_or(|n| (1..=MAX_WINDOW_CALLS).contains(&n)),
            F::WindowCalls,
            R::Between(1, u64::from(MAX_WINDOW_CALLS)),
        )?;
        // One window: a count window has no span and no buckets, so a span or a bucket
        // count other than the defaults beside `window-calls` is a mistake, not a choice.
        let default = Self::default();
        for (field, shaped) in [
            (F::Window, self.window != default.window),
            (F::Buckets, self.buckets != default.buckets),
        ] {
            check(
                self.window_calls.is_none() || !shaped,
                F::WindowCalls,
                R::Without(field),
            )?;
        }
        // A count window that can never hold `min-calls` outcomes could never trip.
        check(
            self.window_calls
                .is_none_or(|n| u32::from(n) >= self.min_calls),
            F::WindowCalls,
            R::AtLeastField(F::MinCalls),
        )?;
        check(self.cooldown > 0, F::Cooldown, R::Positive)?;
        check(
            self.backoff_factor.is_finite()
                && (1.0..=MAX_BACKOFF_FACTOR).contains(&self.backoff_factor),
            F::BackoffFactor,
            R::Factor,
        )?;
        check(
            self.max_cooldown.is_none_or(|max| max >= self.cooldown),
            F::MaxCooldown,
            R::AtLeastField(F::Cooldown),
        )?;
        check(
            self.jitter_percent <= 100,
            F::JitterPercent,
            R::Between(0, 100),
        )?;
        check(
            self.max_in_flight.is_none_or(|n| n >= 1),
            F::MaxInFlight,
            R::AtLeast(1),
        )?;
        // Hang detection trips on `failure-threshold` calls hung at once; a cap below it
        // would never let that many out, and the detection would silently never fire.
        check(
            self.slow_call_duration.is_none()
                || self
                    .max_in_flight
                    .is_none_or(|cap| cap >= self.failure_threshold),
            F::MaxInFlight,
            R::AtLeastFieldWhenSet(F::FailureThreshold, F::SlowCallDuration),
        )?;
        check(
            (1..=MAX_PROBES).contains(&self.half_open_max_probes),
            F::HalfOpenMaxProbes,
            R::Between(1, u64::from(MAX_PROBES)),
        )?;
        check(
            self.half_open_required_successes >= 1,
            F::HalfOpenRequiredSuccesses,
            R::AtLeast(1),
        )?;
        percent(self.half_open_success_rate, F::HalfOpenSuccessRate)?;
        check(
            self.fleet_quorum
                .is_none_or(|q| (1..=MAX_QUORUM).contains(&q)),
            F::FleetQuorum,
            R::Between(1, u64::from(MAX_QUORUM)),
        )?;
        check(self.probe_timeout > 0, F::ProbeTimeout, R::Positive)?;
        // A fleet acts as one breaker: a shadow member would vote and announce trips that
        // open the members that enforce.
        check(
            !(self.shadow && self.fleet_quorum.is_some()),
            F::Shadow,
            R::Excludes(F::FleetQuorum),
        )
    }

    /// Sets a numeric field by its [`Field`], for hosts whose options arrive as numbers
    /// keyed by name (JS options, test vectors): counts and percentages as themselves,
    /// durations in nanoseconds, the backoff factor as a whole number (set
    /// [`Config::backoff_factor`] directly for a fraction). Optional fields are switched
    /// on. A count beyond what its field holds is an error naming the field
    /// (`failure-threshold must be <= 4294967295`), never clamped into a valid value; a
    /// value within the field's type but outside its rule is left to [`Config::validate`].
    /// The code lists are not numbers: setting them here is an error.
    pub fn set(&mut self, field: Field, value: u64) -> Result<(), ConfigError> {
        use Field as F;
        // Narrow fields saturate: their rules are far below their types' maxima, so
        // `validate` names the real rule (`buckets must be between 1 and 64`).
        let narrow = |v: u64| u8::try_from(v).unwrap_or(u8::MAX);
        let wide = |v: u64| {
            u32::try_from(v).map_err(|_| ConfigError {
                field,
                rule: Rule::AtMost(u64::from(u32::MAX)),
            })
        };
        match field {
            F::FailureThreshold => self.failure_threshold = wide(value)?,
            F::MinCalls => self.min_calls = wide(value)?,
            F::FailureRate => self.failure_rate = Some(narrow(value)),
            F::SlowCallRate => self.slow_call_rate = Some(narrow(value)),
            F::SlowCallDuration => self.slow_call_duration = Some(value),
            F::Window => self.window = value,
            F::Buckets => self.buckets = narrow(value),
            F::WindowCalls => self.window_calls = Some(u16::try_from(value).unwrap_or(u16::MAX)),
            F::Cooldown => self.cooldown = value,
            // Exact for every whole factor the rule allows.
            #[allow(clippy::cast_precision_loss)]
            F::BackoffFactor => self.backoff_factor = value as f64,
            F::MaxCooldown => self.max_cooldown = Some(value),
            F::JitterPercent => self.jitter_percent = narrow(value),
            F::JitterSeed => self.jitter_seed = value,
            F::MaxInFlight => self.max_in_flight = Some(wide(value)?),
            F::HalfOpenMaxProbes => self.half_open_max_probes = narrow(value),
            F::HalfOpenRequiredSuccesses => self.half_open_required_successes = wide(value)?,
            F::HalfOpenSuccessRate => self.half_open_success_rate = Some(narrow(value)),
            F::ProbeTimeout => self.probe_timeout = value,
            F::FleetQuorum => self.fleet_quorum = Some(narrow(value)),
            F::Shadow => {
                self.shadow = match value {
                    0 => false,
                    1 => true,
                    _ => {
                        return Err(ConfigError {
                            field,
                            rule: Rule::AtMost(1),
                        })
                    }
                }
            }
            F::FaultStatuses | F::FaultGrpcCodes => {
                return Err(ConfigError {
                    field,
                    rule: Rule::List,
                })
            }
        }
        Ok(())
    }

    /// Width of one time-window bucket.
    pub(crate) fn bucket_width(&self) -> Nanos {
        self.window
            .checked_div(u64::from(self.buckets))
            .unwrap_or(self.window)
            .max(1)
    }
}

table! {
    /// What a configuration field holds, which decides how hosts read it from their own
    /// option formats; by the name the hosts' tables give it.
    pub enum FieldKind {
        /// A whole number of things (calls, buckets, probes).
        Count = 0 => "count",
        /// A whole percentage.
        Percent = 1 => "percent",
        /// A duration: nanoseconds in the core, milliseconds in the JS options and the
        /// vectors (whose names then end in `Ms` / `-ms`).
        Duration = 2 => "duration",
        /// A finite number (the backoff factor).
        Factor = 3 => "factor",
        /// A 64-bit seed.
        Seed = 4 => "seed",
        /// A list of HTTP statuses.
        Statuses = 5 => "statuses",
        /// A list of gRPC codes.
        GrpcCodes = 6 => "grpc-codes",
        /// On or off (0 or 1 where a host hands it over as a number).
        Flag = 7 => "flag",
    }
}

table! {
    /// A configuration field, by the name every host uses for it. The WIT names it in
    /// `config-field`; [`Field::js_name`] is the JS package's option.
    pub enum Field {
        /// [`Config::failure_threshold`].
        FailureThreshold = 0 => "failure-threshold",
        /// [`Config::min_calls`].
        MinCalls = 1 => "min-calls",
        /// [`Config::failure_rate`].
        FailureRate = 2 => "failure-rate",
        /// [`Config::slow_call_rate`].
        SlowCallRate = 3 => "slow-call-rate",
        /// [`Config::slow_call_duration`].
        SlowCallDuration = 4 => "slow-call-duration",
        /// [`Config::window`].
        Window = 5 => "window",
        /// [`Config::buckets`].
        Buckets = 6 => "buckets",
        /// [`Config::window_calls`].
        WindowCalls = 7 => "window-calls",
        /// [`Config::cooldown`].
        Cooldown = 8 => "cooldown",
        /// [`Config::backoff_factor`].
        BackoffFactor = 9 => "backoff-factor",
        /// [`Config::max_cooldown`].
        MaxCooldown = 10 => "max-cooldown",
        /// [`Config::jitter_percent`].
        JitterPercent = 11 => "jitter-percent",
        /// [`Config::max_in_flight`].
        MaxInFlight = 12 => "max-in-flight",
        /// [`Config::half_open_max_probes`].
        HalfOpenMaxProbes = 13 => "half-open-max-probes",
        /// [`Config::half_open_required_successes`].
        HalfOpenRequiredSuccesses = 14 => "half-open-required-successes",
        /// [`Config::half_open_success_rate`].
        HalfOpenSuccessRate = 15 => "half-open-success-rate",
        /// [`Config::probe_timeout`].
        ProbeTimeout = 16 => "probe-timeout",
        /// [`Config::fault_statuses`].
        FaultStatuses = 17 => "fault-statuses",
        /// [`Config::fault_grpc_codes`].
        FaultGrpcCodes = 18 => "fault-grpc-codes",
        /// [`Config::jitter_seed`].
        JitterSeed = 19 => "jitter-seed",
        /// [`Config::fleet_quorum`].
        FleetQuorum = 20 => "fleet-quorum",
        /// [`Config::shadow`].
        Shadow = 21 => "shadow",
    }
}

impl Field {
    /// What the field holds.
    pub const fn kind(self) -> FieldKind {
        use FieldKind as K;
        match self {
            Self::FailureThreshold
            | Self::MinCalls
            | Self::Buckets
            | Self::WindowCalls
            | Self::MaxInFlight
            | Self::HalfOpenMaxProbes
            | Self::HalfOpenRequiredSuccesses
            | Self::FleetQuorum => K::Count,
            Self::FailureRate
            | Self::SlowCallRate
            | Self::JitterPercent
            | Self::HalfOpenSuccessRate => K::Percent,
            Self::SlowCallDuration
            | Self::Window
            | Self::Cooldown
            | Self::MaxCooldown
            | Self::ProbeTimeout => K::Duration,
            Self::BackoffFactor => K::Factor,
            Self::JitterSeed => K::Seed,
            Self::FaultStatuses => K::Statuses,
            Self::FaultGrpcCodes => K::GrpcCodes,
            Self::Shadow => K::Flag,
        }
    }

    /// The JS package's option name: camel case, durations in milliseconds with an `Ms`
    /// suffix (`cooldownMs`).
    pub const fn js_name(self) -> &'static str {
        match self {
            Self::FailureThreshold => "failureThreshold",
            Self::MinCalls => "minCalls",
            Self::FailureRate => "failureRate",
            Self::SlowCallRate => "slowCallRate",
            Self::SlowCallDuration => "slowCallDurationMs",
            Self::Window => "windowMs",
            Self::Buckets => "buckets",
            Self::WindowCalls => "windowCalls",
            Self::Cooldown => "cooldownMs",
            Self::BackoffFactor => "backoffFactor",
            Self::MaxCooldown => "maxCooldownMs",
            Self::JitterPercent => "jitterPercent",
            Self::MaxInFlight => "maxInFlight",
            Self::HalfOpenMaxProbes => "halfOpenMaxProbes",
            Self::HalfOpenRequiredSuccesses => "halfOpenRequiredSuccesses",
            Self::HalfOpenSuccessRate => "halfOpenSuccessRate",
            Self::ProbeTimeout => "probeTimeoutMs",
            Self::FaultStatuses => "faultStatuses",
            Self::FaultGrpcCodes => "faultGrpcCodes",
            Self::JitterSeed => "jitterSeed",
            Self::FleetQuorum => "fleetQuorum",
            Self::Shadow => "shadow",
        }
    }
}

/// The rule a field broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Must be at least this.
    AtLeast(u64),
    /// Must be at most this (the largest value the field can hold).
    AtMost(u64),
    /// Must be in this inclusive range.
    Between(u64, u64),
    /// Must be greater than zero.
    Positive,
    /// Must be at least the value of another field.
    AtLeastField(Field),
    /// Must be at least the value of another field (the first) while a third one (the
    /// second) is set.
    AtLeastFieldWhenSet(Field, Field),
    /// Must not be set beside another field (other than at its default): the two choose
    /// between shapes the breaker has one of (`window-calls`, a count window, beside
    /// `window` or `buckets`, a time window's).
    Without(Field),
    /// Must be a finite number from 1 to [`MAX_BACKOFF_FACTOR`].
    Factor,
    /// Must be a list of codes, each valid (an HTTP status in 100–599, a gRPC code in
    /// 0–16).
    List,
    /// Must not be set beside another field, which it cannot work with.
    Excludes(Field),
    /// Must be at least the value of another setting outside the config, by its name (a
    /// retry policy's `base-delay`).
    AtLeastNamed(&'static str),
    /// Must stay as the breaker was made with: a live breaker cannot change it
    /// ([`Breaker::reconfigure`](crate::Breaker::reconfigure)).
    Fixed,
}

impl Rule {
    /// Writes the rule in words (`must be >= 1`).
    pub fn describe<W: Words + ?Sized>(&self, out: &mut W) -> fmt::Result {
        let at_least = |out: &mut W, n| {
            out.word("must be >= ")?;
            out.number(n)
        };
        match *self {
            Self::AtLeast(min) => at_least(out, min),
            Self::AtMost(max) => {
                out.word("must be <= ")?;
                out.number(max)
            }
            Self::Between(lo, hi) => {
                out.word("must be between ")?;
                out.number(lo)?;
                out.word(" and ")?;
                out.number(hi)
            }
            Self::Positive => out.word("must be > 0"),
            Self::AtLeastField(other) => {
                out.word("must be >= ")?;
                out.field(other.code(), other.name())
            }
            Self::AtLeastFieldWhenSet(other, set) => {
                out.word("must be >= ")?;
                out.field(other.code(), other.name())?;
                out.word(" when ")?;
                out.field(set.code(), set.name())?;
                out.word(" is set")
            }
            Self::Without(other) => {
                out.word("must not be set with ")?;
                out.field(other.code(), other.name())?;
                out.word(" (a count of calls has no span and no buckets)")
            }
            Self::List => out.word("must be a list of valid codes"),
            Self::Fixed => out.word("cannot change on a live breaker"),
            Self::Excludes(other) => {
                out.word("cannot be set with ")?;
                out.field(other.code(), other.name())
            }
            Self::AtLeastNamed(other) => {
                out.word("must be >= ")?;
                out.word(other)
            }
            Self::Factor => {
                out.word("must be a finite number between 1 and ")?;
                out.number(u64::from(MAX_BACKOFF_FACTOR_WHOLE))
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f)
    }
}

/// A configuration that breaks a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConfigError {
    /// The offending field.
    pub field: Field,
    /// The rule it breaks.
    pub rule: Rule,
}

impl ConfigError {
    /// Writes the error in words (`failure-threshold must be >= 1`).
    pub fn describe<W: Words + ?Sized>(&self, out: &mut W) -> fmt::Result {
        out.field(self.field.code(), self.field.name())?;
        out.word(" ")?;
        self.rule.describe(out)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f)
    }
}

impl core::error::Error for ConfigError {}
