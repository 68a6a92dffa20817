//! # tripgate-wasm
//!
//! The wasm-bindgen layer of the `tripgate` npm package. It only translates: every
//! decision is `tripgate-core`'s. Everything on the hot path crosses the boundary as a
//! number, so a guarded call allocates no JS object (a number-returning export costs
//! ~8 ns from Node, a class instance ~220 ns).
//!
//! ## Time
//!
//! The JS side passes `now` as milliseconds (`performance.now()` or an injected clock), an
//! `f64`. It becomes the core's nanoseconds as `round(ms × 10⁶)`: exact for whole and
//! fractional milliseconds down to the nanosecond while the clock is below 2⁵³ ns
//! (104 days of process uptime for `performance.now()`), and rounding by less than a
//! nanosecond beyond. Negative or NaN readings count as 0; the core saturates readings
//! that go backwards. Durations go back to JS as `ns / 10⁶`, exact for whole milliseconds.
//!
//! ## Permits
//!
//! The core's plain-number permit is two `u64`s (ticket and start instant), more than one
//! JS number holds. Each breaker keeps a small table of outstanding permits instead, and
//! JS holds a *handle*: `gen << 21 | index << 1 | probe`, below 2²⁸, so it is always a
//! small integer (a V8 Smi: no heap number either). `index` picks the slot (at most 2²⁰
//! outstanding permits), `gen` (7 bits) is bumped each time the slot is freed, so a permit
//! recorded twice (or after its slot was reclaimed) no longer matches and is reported as
//! stale, exactly like a permit from an earlier epoch: classified, counted as stale,
//! changing nothing. Consecutive breakers start their generations apart, so a permit
//! given to the wrong breaker most likely matches no slot there either. Permits that are
//! never recorded (leaked) hold their slot; before the table doubles, it frees the slots
//! of permits from ended epochs, so leaks cost memory only within an epoch.
//!
//! ## Clock readings
//!
//! [`Breaker::acquire_closed`] admits without a clock reading when the core says time
//! cannot matter to admission (`tripgate_core::Breaker::acquire_untimed`: closed, no
//! `slow-call-duration`), and asks for one ([`NEED_CLOCK`]) in every other case. Every
//! `record` takes a fresh reading. A guarded call thus costs one `performance.now()`
//! (~40 ns on Node 24) instead of two.
//!
//! ## Return codes
//!
//! - [`Breaker::acquire`]: a permit handle (≥ 0), or `-(1 + reason)` for a rejection
//!   (`open`, `probing`, `isolated`, `saturated`). [`TRANSITIONED`] is added to a permit,
//!   or 4 subtracted from a rejection, when the call caused transitions (read them with
//!   [`Breaker::transitions`]).
//! - [`Breaker::record`]: `class | slow << 2 | stale << 3 | transitions << 4`, or
//!   [`BAD_OUTCOME`] / [`NOT_A_PERMIT`] (nothing changed).
//! - Outcomes: an HTTP status as itself, [`KIND_BASE`]` + k` for the kinds (success,
//!   timeout, connection-error, failure, cancelled, ignored), [`GRPC_BASE`]` + code`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use core::sync::atomic::{AtomicU32, Ordering};
use tripgate_core as core_;
use tripgate_core::{
    Admission, Breaker as Core, Class, Config, ConfigError, Field, GrpcSet, Outcome, Permit,
    RawPermit, Reason, RejectReason, Rule, State, StatusSet, Transitions, MILLISECOND,
};

use wasm_bindgen::prelude::*;

/// Added to a permit handle returned by `acquire` when the call caused transitions.
pub const TRANSITIONED: i32 = 1 << 28;
/// `record`: the outcome is not valid (status outside 100–599, gRPC code above 16).
pub const BAD_OUTCOME: i32 = -1;
/// `record`: the first argument is not a permit handle (negative, fractional, too big).
pub const NOT_A_PERMIT: i32 = -2;
/// `acquire_closed`: the breaker is not closed (or hang detection is on); call `acquire`
/// with a clock reading.
pub const NEED_CLOCK: i32 = -16;
/// Outcome codes from here are the kinds: success, timeout, connection-error, failure,
/// cancelled, ignored.
pub const KIND_BASE: u32 = 0x1_0000;
/// Outcome codes from here are gRPC codes.
pub const GRPC_BASE: u32 = 0x2_0000;

const INDEX_BITS: u32 = 20;
const GEN_BITS: u32 = 7;
const MAX_SLOTS: usize = 1 << INDEX_BITS;
const HANDLE_LIMIT: f64 = (1u32 << (1 + INDEX_BITS + GEN_BITS)) as f64;
/// The ticket of a permit no breaker issues in practice (an epoch near 2⁵⁷, slot 0): the
/// core treats it as stale.
const STALE_TICKET: u64 = u64::MAX << 7;

/// Milliseconds (JS) to the core's nanoseconds.
#[inline]
fn ns(ms: f64) -> u64 {
    if ms > 0.0 {
        // `as` saturates at u64::MAX for huge values; NaN never gets here.
        (ms * 1e6 + 0.5) as u64
    } else {
        0
    }
}

/// The core's nanoseconds to milliseconds.
#[inline]
fn ms(ns: u64) -> f64 {
    ns as f64 / MILLISECOND as f64
}

/// Index of a state in the JS table `['closed', 'open', 'half-open', 'isolated', 'disabled']`.
fn state_code(state: State) -> u8 {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
        State::Isolated => 3,
        State::Disabled => 4,
    }
}

/// Index of a reason in the JS table (same order as the core's `Reason` enum).
fn reason_code(reason: Reason) -> u8 {
    match reason {
        Reason::FailureThreshold => 0,
        Reason::FailureRate => 1,
        Reason::SlowCallRate => 2,
        Reason::HungCalls => 3,
        Reason::CooldownElapsed => 4,
        Reason::ProbeFault => 5,
        Reason::ProbeTimeout => 6,
        Reason::ProbesSucceeded => 7,
        Reason::ProbeRateMissed => 8,
        Reason::Isolated => 9,
        Reason::Released => 10,
        Reason::Disabled => 11,
        Reason::Reset => 12,
        Reason::Restored => 13,
    }
}

fn reject_code(reason: RejectReason) -> i32 {
    match reason {
        RejectReason::Open => 0,
        RejectReason::Probing => 1,
        RejectReason::Isolated => 2,
        RejectReason::Saturated => 3,
    }
}

fn class_code(class: Class) -> i32 {
    match class {
        Class::Success => 0,
        Class::Fault => 1,
        Class::Neutral => 2,
    }
}

/// An outcome code (see the crate docs) as a core outcome; `None` when invalid.
fn outcome(code: f64) -> Option<Outcome> {
    if !(code >= 0.0 && code.fract() == 0.0 && code < f64::from(GRPC_BASE + 0x1_0000)) {
        return None;
    }
    let code = code as u32;
    if code < KIND_BASE {
        Outcome::status(u16::try_from(code).ok()?).ok()
    } else if code < GRPC_BASE {
        Some(match code - KIND_BASE {
            0 => Outcome::Success,
            1 => Outcome::Timeout,
            2 => Outcome::ConnectionError,
            3 => Outcome::Failure,
            4 => Outcome::Cancelled,
            5 => Outcome::Ignored,
            _ => return None,
        })
    } else {
        Outcome::grpc(u8::try_from(code - GRPC_BASE).ok()?).ok()
    }
}

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// The JS option name of a core config field (durations carry an `Ms` suffix).
fn option_name(field: Field) -> &'static str {
    match field {
        Field::FailureThreshold => "failureThreshold",
        Field::MinCalls => "minCalls",
        Field::FailureRate => "failureRate",
        Field::SlowCallRate => "slowCallRate",
        Field::SlowCallDuration => "slowCallDurationMs",
        Field::Window => "windowMs",
        Field::Buckets => "buckets",
        Field::WindowCalls => "windowCalls",
        Field::Cooldown => "cooldownMs",
        Field::BackoffFactor => "backoffFactor",
        Field::MaxCooldown => "maxCooldownMs",
        Field::JitterPercent => "jitterPercent",
        Field::MaxInFlight => "maxInFlight",
        Field::HalfOpenMaxProbes => "halfOpenMaxProbes",
        Field::HalfOpenRequiredSuccesses => "halfOpenRequiredSuccesses",
        Field::HalfOpenSuccessRate => "halfOpenSuccessRate",
        Field::ProbeTimeout => "probeTimeoutMs",
        // `Field` may grow; fall back to the core's own (kebab-case) name.
        #[allow(unreachable_patterns)]
        other => other.name(),
    }
}

/// `"<option> <rule>"` with JS option names, e.g. `failureThreshold must be >= 1`.
fn config_message(error: ConfigError) -> String {
    let option = option_name(error.field);
    match error.rule {
        Rule::AtLeastField(Field::Buckets) if error.field == Field::Window => {
            format!("{option} must be at least one nanosecond per bucket (see buckets)")
        }
        Rule::AtLeastField(other) => format!("{option} must be >= {}", option_name(other)),
        rule => format!("{option} {rule}"),
    }
}

/// Positions in the `f64` array the JS side passes; `NaN` means "not given" (the core's
/// default, or off for optional rules). Durations are in milliseconds.
mod slot {
    pub const FAILURE_THRESHOLD: usize = 0;
    pub const MIN_CALLS: usize = 1;
    pub const FAILURE_RATE: usize = 2;
    pub const SLOW_CALL_RATE: usize = 3;
    pub const SLOW_CALL_DURATION_MS: usize = 4;
    pub const WINDOW_MS: usize = 5;
    pub const BUCKETS: usize = 6;
    pub const WINDOW_CALLS: usize = 7;
    pub const COOLDOWN_MS: usize = 8;
    pub const BACKOFF_FACTOR: usize = 9;
    pub const MAX_COOLDOWN_MS: usize = 10;
    pub const JITTER_PERCENT: usize = 11;
    pub const JITTER_SEED: usize = 12;
    pub const MAX_IN_FLIGHT: usize = 13;
    pub const HALF_OPEN_MAX_PROBES: usize = 14;
    pub const HALF_OPEN_REQUIRED_SUCCESSES: usize = 15;
    pub const HALF_OPEN_SUCCESS_RATE: usize = 16;
    pub const PROBE_TIMEOUT_MS: usize = 17;
    pub const LEN: usize = 18;
}

/// Builds the core config. Out-of-range numbers saturate (`300 as u8 == 255`), so they
/// still break the core's rule and are reported by it, never wrapped into a valid value.
fn build_config(values: &[f64], statuses: Option<&[u16]>, grpc_codes: Option<&[u8]>) -> Config {
    let get = |i: usize| values.get(i).copied().filter(|v| !v.is_nan());
    let mut c = Config::default();
    if let Some(v) = get(slot::FAILURE_THRESHOLD) {
        c.failure_threshold = v as u32;
    }
    if let Some(v) = get(slot::MIN_CALLS) {
        c.min_calls = v as u32;
    }
    c.failure_rate = get(slot::FAILURE_RATE).map(|v| v as u8).or(c.failure_rate);
    c.slow_call_rate = get(slot::SLOW_CALL_RATE)
        .map(|v| v as u8)
        .or(c.slow_call_rate);
    c.slow_call_duration = get(slot::SLOW_CALL_DURATION_MS)
        .map(ns)
        .or(c.slow_call_duration);
    if let Some(v) = get(slot::WINDOW_MS) {
        c.window = ns(v);
    }
    if let Some(v) = get(slot::BUCKETS) {
        c.buckets = v as u8;
    }
    c.window_calls = get(slot::WINDOW_CALLS).map(|v| v as u16).or(c.window_calls);
    if let Some(v) = get(slot::COOLDOWN_MS) {
        c.cooldown = ns(v);
    }
    if let Some(v) = get(slot::BACKOFF_FACTOR) {
        c.backoff_factor = v;
    }
    c.max_cooldown = get(slot::MAX_COOLDOWN_MS).map(ns).or(c.max_cooldown);
    if let Some(v) = get(slot::JITTER_PERCENT) {
        c.jitter_percent = v as u8;
    }
    if let Some(v) = get(slot::JITTER_SEED) {
        c.jitter_seed = v as u64;
    }
    c.max_in_flight = get(slot::MAX_IN_FLIGHT)
        .map(|v| v as u32)
        .or(c.max_in_flight);
    if let Some(v) = get(slot::HALF_OPEN_MAX_PROBES) {
        c.half_open_max_probes = v as u8;
    }
    if let Some(v) = get(slot::HALF_OPEN_REQUIRED_SUCCESSES) {
        c.half_open_required_successes = v as u32;
    }
    c.half_open_success_rate = get(slot::HALF_OPEN_SUCCESS_RATE)
        .map(|v| v as u8)
        .or(c.half_open_success_rate);
    if let Some(v) = get(slot::PROBE_TIMEOUT_MS) {
        c.probe_timeout = ns(v);
    }
    if let Some(codes) = statuses {
        c.fault_statuses = codes
            .iter()
            .fold(StatusSet::EMPTY, |set, &code| set.with(code));
    }
    if let Some(codes) = grpc_codes {
        c.fault_grpc_codes = codes
            .iter()
            .fold(GrpcSet::EMPTY, |set, &code| set.with(code));
    }
    c
}

/// Number of `f64` slots the config array has.
#[wasm_bindgen]
pub fn config_len() -> usize {
    slot::LEN
}

/// Checks a config; `undefined` when valid, else `"<option> <rule>"` naming the first
/// broken rule with its JS option name (e.g. `failureThreshold must be >= 1`).
#[wasm_bindgen]
pub fn check_config(
    values: &[f64],
    statuses: Option<Vec<u16>>,
    grpc_codes: Option<Vec<u8>>,
) -> Option<String> {
    build_config(values, statuses.as_deref(), grpc_codes.as_deref())
        .validate()
        .err()
        .map(config_message)
}

// ---------------------------------------------------------------------------------------
// The permit table
// ---------------------------------------------------------------------------------------

struct Slot {
    permit: Option<Permit>,
    gen: u8,
}

/// Outstanding permits, indexed by handle.
struct Permits {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    /// Table length at which a full table is swept for permits of ended epochs before it
    /// grows.
    sweep_at: usize,
    /// Generation of new slots: differs between consecutive breakers, so a permit handed
    /// to the wrong breaker most likely matches no slot there (and counts as stale).
    first_gen: u8,
}

const GEN_MASK: u8 = (1 << GEN_BITS) - 1;

/// Breakers created so far, for [`Permits::first_gen`].
static BREAKERS: AtomicU32 = AtomicU32::new(0);

impl Permits {
    fn new() -> Self {
        let n = BREAKERS.fetch_add(1, Ordering::Relaxed);
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            sweep_at: 64,
            // An odd step spreads consecutive breakers over all 128 generations.
            first_gen: (n.wrapping_mul(37) as u8) & GEN_MASK,
        }
    }

    /// Frees the slots of normal permits from epochs other than `epoch` (stale whatever
    /// happens). Probe permits stay: a retired probe's stale outcome still frees the probe
    /// slot it holds in the core, and there are at most 64 of them.
    fn sweep(&mut self, epoch: u64) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot
                .permit
                .as_ref()
                .is_some_and(|p| p.epoch() != epoch && !p.is_probe())
            {
                slot.permit = None;
                slot.gen = slot.gen.wrapping_add(1) & GEN_MASK;
                self.live -= 1;
                self.free.push(index as u32);
            }
        }
        self.sweep_at = (self.live * 2).max(64);
    }

    /// Stores a permit; its handle, or gives it back when 2²⁰ permits are out.
    #[inline]
    fn insert(
        &mut self,
        permit: Permit,
        current_epoch: impl FnOnce() -> u64,
    ) -> Result<i32, Permit> {
        if self.free.is_empty() && self.slots.len() >= self.sweep_at {
            self.sweep(current_epoch());
        }
        let probe = i32::from(permit.is_probe());
        let index = match self.free.pop() {
            Some(index) => index as usize,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot {
                    permit: None,
                    gen: self.first_gen,
                });
                self.slots.len() - 1
            }
            None => return Err(permit),
        };
        let Some(slot) = self.slots.get_mut(index) else {
            return Err(permit);
        };
        slot.permit = Some(permit);
        self.live += 1;
        Ok(i32::from(slot.gen) << (1 + INDEX_BITS) | (index as i32) << 1 | probe)
    }

    /// Takes the permit a handle names back out; `None` when it is not outstanding
    /// (recorded already, reclaimed, or never issued).
    #[inline]
    fn take(&mut self, handle: u32) -> Option<Permit> {
        let index = (handle >> 1) as usize & (MAX_SLOTS - 1);
        let gen = (handle >> (1 + INDEX_BITS)) as u8;
        let slot = self.slots.get_mut(index)?;
        if slot.gen != gen || slot.permit.as_ref()?.is_probe() != (handle & 1 == 1) {
            return None;
        }
        let permit = slot.permit.take()?;
        slot.gen = slot.gen.wrapping_add(1) & GEN_MASK;
        self.live -= 1;
        self.free.push(index as u32);
        Some(permit)
    }
}

// ---------------------------------------------------------------------------------------
// The breaker
// ---------------------------------------------------------------------------------------

/// One circuit breaker, driven from JS with numbers only.
#[wasm_bindgen]
pub struct Breaker {
    core: Core,
    permits: Permits,
    /// Transitions of the last call that caused any.
    transitions: Transitions,
    /// The last rejection's retry-after and state.
    retry_after: u64,
    rejected_state: State,
    rejected_reason: Option<RejectReason>,
}

/// Copies transitions into `out` as `[from, to, reason, at_ms, epoch]` each.
fn write_transitions(transitions: &Transitions, out: &mut [f64]) -> usize {
    let mut n = 0;
    for (t, chunk) in transitions.iter().zip(out.chunks_exact_mut(5)) {
        chunk.copy_from_slice(&[
            f64::from(state_code(t.from)),
            f64::from(state_code(t.to)),
            f64::from(reason_code(t.reason)),
            ms(t.at),
            t.epoch as f64,
        ]);
        n += 1;
    }
    n
}

#[wasm_bindgen]
impl Breaker {
    /// A closed breaker at `now_ms`. Call [`check_config`] first for a JS-named error;
    /// this throws a plain `Error` with the same message.
    #[wasm_bindgen(constructor)]
    pub fn new(
        values: &[f64],
        statuses: Option<Vec<u16>>,
        grpc_codes: Option<Vec<u8>>,
        now_ms: f64,
    ) -> Result<Breaker, JsError> {
        let config = build_config(values, statuses.as_deref(), grpc_codes.as_deref());
        let core = Core::new(config, ns(now_ms)).map_err(|e| JsError::new(&config_message(e)))?;
        Ok(Self {
            core,
            permits: Permits::new(),
            transitions: Transitions::default(),
            retry_after: 0,
            rejected_state: State::Closed,
            rejected_reason: None,
        })
    }

    /// Keeps the transitions of a call; whether there were any.
    fn note(&mut self, transitions: Transitions) -> bool {
        if transitions.is_empty() {
            return false;
        }
        self.transitions = transitions;
        true
    }

    /// Admits or rejects a call (see the crate docs for the return code).
    pub fn acquire(&mut self, now_ms: f64) -> i32 {
        let now = ns(now_ms);
        let admission = self.core.acquire(now);
        self.admitted(admission, now)
    }

    /// [`Self::acquire`] without a clock reading, for the common case (see the core's
    /// `acquire_untimed`). Returns [`NEED_CLOCK`] when admission needs time: call
    /// [`Self::acquire`] with a reading then. The outcome's `record` always takes a fresh
    /// reading, so the window still sees every outcome at its real time.
    pub fn acquire_closed(&mut self) -> i32 {
        match self.core.acquire_untimed() {
            Some(admission) => {
                let now = self.core.latest();
                self.admitted(admission, now)
            }
            None => NEED_CLOCK,
        }
    }

    /// The code for an admission decided at `now`.
    #[inline]
    fn admitted(&mut self, admission: Admission, now: u64) -> i32 {
        let moved = self.note(admission.transitions);
        let rejection = match admission.decision {
            Ok(permit) => {
                let core = &self.core;
                match self.permits.insert(permit, || core.metrics(now).epoch) {
                    Ok(handle) => return handle + if moved { TRANSITIONED } else { 0 },
                    Err(permit) => {
                        // 2²⁰ permits out: hand this one straight back, uncounted.
                        let released = self.core.record(permit, Outcome::Ignored, now);
                        let moved = self.note(released.transitions) || moved;
                        let state = self.core.state(now);
                        return self.rejected(RejectReason::Saturated, 0, state, moved);
                    }
                }
            }
            Err(rejection) => rejection,
        };
        self.rejected(
            rejection.reason,
            rejection.retry_after,
            rejection.state,
            moved,
        )
    }

    fn rejected(
        &mut self,
        reason: RejectReason,
        retry_after: u64,
        state: State,
        moved: bool,
    ) -> i32 {
        self.retry_after = retry_after;
        self.rejected_state = state;
        self.rejected_reason = Some(reason);
        -(1 + reject_code(reason)) - if moved { 4 } else { 0 }
    }

    /// The last rejection's retry-after, in milliseconds.
    pub fn retry_after_ms(&self) -> f64 {
        ms(self.retry_after)
    }

    /// The last rejection's reason (index into the JS table), or -1 before any.
    pub fn rejected_reason(&self) -> i32 {
        self.rejected_reason.map_or(-1, reject_code)
    }

    /// The state that made the last rejection (index into the JS state table).
    pub fn rejected_state(&self) -> u8 {
        state_code(self.rejected_state)
    }

    /// Records a permit's outcome (see the crate docs for the codes).
    pub fn record(&mut self, permit: f64, outcome_code: f64, now_ms: f64) -> i32 {
        if !((0.0..HANDLE_LIMIT).contains(&permit) && permit.fract() == 0.0) {
            return NOT_A_PERMIT;
        }
        let Some(outcome) = outcome(outcome_code) else {
            return BAD_OUTCOME;
        };
        let now = ns(now_ms);
        let permit = match self.permits.take(permit as u32) {
            Some(permit) => permit,
            // Recorded already, reclaimed, or never issued: a ticket from no epoch, which
            // the core classifies and counts as stale.
            None => match (RawPermit {
                ticket: STALE_TICKET,
                started: now,
            })
            .into_permit()
            {
                Ok(permit) => permit,
                Err(_) => return NOT_A_PERMIT,
            },
        };
        let recorded = self.core.record(permit, outcome, now);
        let mut code = class_code(recorded.class)
            | i32::from(recorded.slow) << 2
            | i32::from(recorded.stale) << 3;
        if self.note(recorded.transitions) {
            code |= (recorded.transitions.len() as i32) << 4;
        }
        code
    }

    /// Copies the transitions of the last call that caused any into `out` (5 numbers
    /// each: from, to, reason, at in ms, epoch); returns how many.
    pub fn transitions(&self, out: &mut [f64]) -> usize {
        write_transitions(&self.transitions, out)
    }

    /// The effective state at `now_ms` (index into the JS state table).
    pub fn state(&self, now_ms: f64) -> u8 {
        state_code(self.core.state(ns(now_ms)))
    }

    /// Fills `out` (at least 25 numbers) with the metrics at `now_ms`: state, epoch,
    /// calls, faults, slow, in-flight, hung, probes-out, admitted-total, rejected open /
    /// probing / isolated / saturated, successes-total, faults-total, stale-total,
    /// transitions-total, time-in-state ms, cooldown-remaining ms, then the last
    /// transition (present 0/1, from, to, reason, at ms, epoch).
    pub fn metrics(&self, now_ms: f64, out: &mut [f64]) {
        let m = self.core.metrics(ns(now_ms));
        let last = m.last_transition;
        let values = [
            f64::from(state_code(m.state)),
            m.epoch as f64,
            f64::from(m.window.calls),
            f64::from(m.window.faults),
            f64::from(m.window.slow),
            f64::from(m.in_flight),
            f64::from(m.hung),
            f64::from(m.probes_out),
            m.admitted_total as f64,
            m.rejected(RejectReason::Open) as f64,
            m.rejected(RejectReason::Probing) as f64,
            m.rejected(RejectReason::Isolated) as f64,
            m.rejected(RejectReason::Saturated) as f64,
            m.successes_total as f64,
            m.faults_total as f64,
            m.stale_total as f64,
            m.transitions_total as f64,
            ms(m.time_in_state),
            ms(m.cooldown_remaining),
            f64::from(u8::from(last.is_some())),
            last.map_or(0.0, |t| f64::from(state_code(t.from))),
            last.map_or(0.0, |t| f64::from(state_code(t.to))),
            last.map_or(0.0, |t| f64::from(reason_code(t.reason))),
            last.map_or(0.0, |t| ms(t.at)),
            last.map_or(0.0, |t| t.epoch as f64),
        ];
        for (o, v) in out.iter_mut().zip(values) {
            *o = v;
        }
    }

    /// Permits handed out and not yet recorded (or reclaimed).
    pub fn outstanding(&self) -> usize {
        self.permits.live
    }

    /// Forces the breaker open until `release`; returns the number of transitions.
    pub fn isolate(&mut self, now_ms: f64) -> usize {
        let now = ns(now_ms);
        let t = self.core.isolate(now);
        self.note(t);
        t.len()
    }

    /// Closes an isolated or disabled breaker; returns the number of transitions.
    pub fn release(&mut self, now_ms: f64) -> usize {
        let now = ns(now_ms);
        let t = self.core.release(now);
        self.note(t);
        t.len()
    }

    /// Admits everything and never trips until `release`; returns the number of
    /// transitions.
    pub fn disable(&mut self, now_ms: f64) -> usize {
        let now = ns(now_ms);
        let t = self.core.disable(now);
        self.note(t);
        t.len()
    }

    /// Back to closed with an empty window; returns the number of transitions.
    pub fn reset(&mut self, now_ms: f64) -> usize {
        let now = ns(now_ms);
        let t = self.core.reset(now);
        self.note(t);
        t.len()
    }

    /// The state as of `now_ms`, as the core's versioned bytes.
    pub fn export_state(&self, now_ms: f64) -> Result<Vec<u8>, JsError> {
        let mut buf = [0u8; core_::MAX_EXPORT_LEN];
        let len = self
            .core
            .export(ns(now_ms), &mut buf)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(buf.get(..len).unwrap_or_default().to_vec())
    }

    /// Replaces the state with bytes exported `elapsed_ms` ago; `undefined` on success,
    /// else why (and nothing changed).
    pub fn import_state(&mut self, bytes: &[u8], elapsed_ms: f64, now_ms: f64) -> Option<String> {
        let now = ns(now_ms);
        match self.core.import(bytes, ns(elapsed_ms), now) {
            Ok(()) => None,
            Err(e) => Some(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_to_ns_rounds() {
        assert_eq!(ns(1.0), 1_000_000);
        assert_eq!(ns(0.1), 100_000);
        assert_eq!(ns(-5.0), 0);
        assert_eq!(ns(f64::NAN), 0);
        assert_eq!(ns(123_456.789_012), 123_456_789_012);
    }

    #[test]
    fn outcome_codes() {
        assert_eq!(outcome(503.0), Some(Outcome::status(503).unwrap()));
        assert_eq!(outcome(600.0), None);
        assert_eq!(outcome(99.0), None);
        assert_eq!(outcome(f64::from(KIND_BASE)), Some(Outcome::Success));
        assert_eq!(outcome(f64::from(KIND_BASE + 5)), Some(Outcome::Ignored));
        assert_eq!(outcome(f64::from(KIND_BASE + 6)), None);
        assert_eq!(
            outcome(f64::from(GRPC_BASE + 14)),
            Some(Outcome::grpc(14).unwrap())
        );
        assert_eq!(outcome(f64::from(GRPC_BASE + 17)), None);
        assert_eq!(outcome(503.5), None);
        assert_eq!(outcome(f64::NAN), None);
    }

    #[test]
    fn config_messages_use_js_names() {
        let mut values = [f64::NAN; slot::LEN];
        assert_eq!(check_config(&values, None, None), None);
        values[slot::FAILURE_THRESHOLD] = 0.0;
        assert_eq!(
            check_config(&values, None, None).as_deref(),
            Some("failureThreshold must be >= 1")
        );
        values[slot::FAILURE_THRESHOLD] = f64::NAN;
        values[slot::COOLDOWN_MS] = 10.0;
        values[slot::MAX_COOLDOWN_MS] = 5.0;
        assert_eq!(
            check_config(&values, None, None).as_deref(),
            Some("maxCooldownMs must be >= cooldownMs")
        );
        values[slot::MAX_COOLDOWN_MS] = f64::NAN;
        values[slot::BUCKETS] = 300.0;
        assert_eq!(
            check_config(&values, None, None).as_deref(),
            Some("buckets must be between 1 and 64")
        );
    }

    #[test]
    fn permits_round_trip_and_detect_double_record() {
        let values = [f64::NAN; slot::LEN];
        let mut b = Breaker::new(&values, None, None, 0.0).unwrap();
        let p = b.acquire(1.0);
        assert!((0..TRANSITIONED).contains(&p));
        let first = b.record(f64::from(p), f64::from(KIND_BASE), 2.0);
        assert_eq!(first & 3, 0);
        assert_eq!(first & 8, 0, "first record is current");
        let second = b.record(f64::from(p), f64::from(KIND_BASE), 3.0);
        assert_eq!(second & 8, 8, "second record is stale");
        assert_eq!(b.record(-1.0, f64::from(KIND_BASE), 3.0), NOT_A_PERMIT);
        assert_eq!(b.record(0.5, f64::from(KIND_BASE), 3.0), NOT_A_PERMIT);
        let q = b.acquire(4.0);
        assert_eq!(b.record(f64::from(q), 700.0, 5.0), BAD_OUTCOME);
        assert_eq!(b.outstanding(), 1, "a bad outcome leaves the permit held");
    }

    #[test]
    fn leaked_permits_of_ended_epochs_are_reclaimed() {
        let values = [f64::NAN; slot::LEN];
        let mut b = Breaker::new(&values, None, None, 0.0).unwrap();
        for _ in 0..64 {
            assert!(b.acquire(1.0) >= 0);
        }
        b.reset(2.0);
        assert!(b.acquire(3.0) >= 0);
        assert_eq!(b.outstanding(), 1);
        assert_eq!(b.permits.slots.len(), 64);
    }
}
