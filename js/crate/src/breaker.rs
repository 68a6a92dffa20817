//! The breaker JS drives: numbers in, numbers out (see the crate docs for the codes).
//!
//! Clock readings follow [`time`](crate::time): an invalid reading is not observed (the
//! breaker uses the latest instant it has seen). [`Breaker::acquire_closed`] admits
//! without a reading when the core says time cannot matter to admission
//! (`tripgate_core::Breaker::acquire_untimed`: closed, no `slow-call-duration`), and asks
//! for one ([`NEED_CLOCK`]) in every other case. Every `record` takes a fresh reading, so a
//! guarded call costs one `performance.now()` (~40 ns on Node 24) instead of two.

use core::sync::atomic::{AtomicU32, Ordering};

use tripgate_core::{
    Breaker as Core, MetricField, MetricValue, Nanos, Outcome, Permit, RejectReason, Rejection,
    State, Transitions, Verdict, MAX_EXPORT_LEN,
};
use wasm_bindgen::prelude::*;

use crate::time::{duration, ms, reading};
use crate::{config, outcome, BAD_OUTCOME, NEED_CLOCK, NOT_A_PERMIT, SHADOWED, TRANSITIONED};
use tripgate_core::{PermitTable, HANDLE_LIMIT};

/// Numbers per transition in [`Breaker::transitions`]: from, to, reason, at (ms), epoch.
pub const TRANSITION_WIDTH: usize = 5;
/// Numbers in [`Breaker::metrics`] before the rejected totals: the scalar fields, then
/// the last transition (present 0/1, then [`TRANSITION_WIDTH`] numbers).
pub const METRICS_FIXED: usize = MetricField::ALL.len() + 1 + TRANSITION_WIDTH;
/// Numbers [`Breaker::metrics`] writes: the fixed ones, the rejected totals, then the
/// shadow rejections, each by reject-reason code.
pub const METRICS_LEN: usize = METRICS_FIXED + 2 * RejectReason::ALL.len();

/// Breakers created so far, to start each permit counter elsewhere.
static BREAKERS: AtomicU32 = AtomicU32::new(0);
/// 2²⁹ divided by the golden ratio: consecutive breakers' counters start far apart.
const COUNTER_SPREAD: u32 = 331_804_471;

/// One circuit breaker, driven from JS with numbers only.
#[wasm_bindgen]
pub struct Breaker {
    pub(crate) core: Core,
    permits: PermitTable,
    /// Transitions of the last call that caused any.
    transitions: Transitions,
    /// The last rejection's retry-after, state and reason.
    retry_after: Nanos,
    rejected_state: State,
    rejected_reason: Option<RejectReason>,
    /// The last shadow permit's code, as [`Self::acquire`] returns a permit's.
    shadow_permit: i32,
}

#[wasm_bindgen]
impl Breaker {
    /// A closed breaker at `now_ms`. Call [`config::check_config`] first for a JS-named
    /// error; this throws a plain `Error` with the same message.
    #[wasm_bindgen(constructor)]
    pub fn new(
        values: &[f64],
        statuses: Option<Vec<u16>>,
        grpc_codes: Option<Vec<u8>>,
        now_ms: f64,
    ) -> Result<Breaker, JsError> {
        let config = config::build(values, statuses.as_deref(), grpc_codes.as_deref())
            .map_err(|e| JsError::new(&config::message(e)))?;
        let core = Core::new(config, reading(now_ms).unwrap_or(0))
            .map_err(|e| JsError::new(&config::message(e)))?;
        let start = BREAKERS
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(COUNTER_SPREAD);
        Ok(Self {
            permits: PermitTable::new(start, config.probe_timeout),
            core,
            transitions: Transitions::default(),
            retry_after: 0,
            rejected_state: State::Closed,
            rejected_reason: None,
            shadow_permit: 0,
        })
    }

    /// The instant a reading stands for: the reading, or the latest instant seen when it
    /// is not a valid reading.
    #[inline]
    pub(crate) fn now(&self, now_ms: f64) -> Nanos {
        reading(now_ms).unwrap_or_else(|| self.core.latest())
    }

    /// The core breaker and the instant `now_ms` stands for, for the exposition
    /// ([`crate::exposition`]), which reads without changing anything.
    pub(crate) fn core_at(&self, now_ms: f64) -> (&Core, Nanos) {
        (&self.core, self.now(now_ms))
    }

    /// Keeps the transitions of a call; whether there were any.
    #[inline]
    pub(crate) fn note(&mut self, transitions: Transitions) -> bool {
        if transitions.is_empty() {
            return false;
        }
        self.transitions = transitions;
        true
    }

    /// Keeps the transitions a call appended to `caused`, if any; whether there were any.
    /// The core's `_into` forms leave `caused` untouched when a call causes none, so the
    /// hot path neither builds nor copies an empty list.
    #[inline]
    fn caused(&mut self, caused: Option<Transitions>) -> bool {
        match caused {
            Some(transitions) => self.note(transitions),
            None => false,
        }
    }

    /// Admits or rejects a call (see the crate docs for the return code).
    pub fn acquire(&mut self, now_ms: f64) -> i32 {
        let now = self.now(now_ms);
        let mut caused = None;
        let decision = self.core.acquire_into(now, &mut caused);
        let moved = self.caused(caused);
        self.admitted(decision, moved, now)
    }

    /// [`Self::acquire`] without a clock reading, for the common case (see the module
    /// docs). Returns [`NEED_CLOCK`] when admission needs time.
    pub fn acquire_closed(&mut self) -> i32 {
        let mut caused = None;
        match self.core.acquire_untimed_into(&mut caused) {
            Some(decision) => {
                let moved = self.caused(caused);
                let now = self.core.latest();
                self.admitted(decision, moved, now)
            }
            None => NEED_CLOCK,
        }
    }

    /// The code for an admission decided at `now` (`moved`: it caused transitions).
    #[inline]
    fn admitted(&mut self, decision: Result<Permit, Rejection>, moved: bool, now: Nanos) -> i32 {
        let rejection = match decision {
            Ok(permit) => {
                let core = &self.core;
                let shadow = permit.is_shadow();
                // The core says what a permit out still holds: a shadow permit, its epoch.
                let stored = self.permits.insert(
                    permit,
                    |p| core.holds(p, now),
                    || (core.metrics(now).epoch, now),
                );
                match stored {
                    Ok(handle) => {
                        let code = handle as i32 + if moved { TRANSITIONED } else { 0 };
                        if shadow {
                            self.shadow_permit = code;
                            return SHADOWED;
                        }
                        return code;
                    }
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
        retry_after: Nanos,
        state: State,
        moved: bool,
    ) -> i32 {
        self.retry_after = retry_after;
        self.rejected_state = state;
        self.rejected_reason = Some(reason);
        -1 - i32::from(reason.code()) - if moved { TRANSITIONED } else { 0 }
    }

    /// The permit of the last call that [`SHADOWED`] reported, as [`Self::acquire`] returns
    /// a permit (with [`TRANSITIONED`] added when that call caused transitions).
    pub fn shadow_permit(&self) -> i32 {
        self.shadow_permit
    }

    /// The last rejection's retry-after, in milliseconds.
    pub fn retry_after_ms(&self) -> f64 {
        ms(self.retry_after)
    }

    /// The last rejection's reason code, or -1 before any.
    pub fn rejected_reason(&self) -> i32 {
        self.rejected_reason.map_or(-1, |r| i32::from(r.code()))
    }

    /// The state code that made the last rejection.
    pub fn rejected_state(&self) -> u8 {
        self.rejected_state.code()
    }

    /// Records a permit's outcome (see the crate docs for the codes). A handle that names
    /// no permit out (recorded already, dropped, never issued) is recorded as stale.
    pub fn record(&mut self, permit: f64, outcome_code: f64, now_ms: f64) -> i32 {
        self.record_asked(permit, outcome_code, 0, now_ms)
    }

    /// [`Self::record`] for an answer that asked its callers to stay away for
    /// `retry_after_ms` (SPEC § Retry-After; read it with [`crate::retry_after`]): when
    /// this outcome trips the breaker, or fails its probe round, the opening lasts at least
    /// that long, as far as the config lets an opening last (the core's
    /// `record_with_retry_after`). 0, negative or NaN asks nothing.
    pub fn record_after(
        &mut self,
        permit: f64,
        outcome_code: f64,
        retry_after_ms: f64,
        now_ms: f64,
    ) -> i32 {
        self.record_asked(permit, outcome_code, duration(retry_after_ms), now_ms)
    }

    /// Both `record`s: `asked` is the stay-away in ns (0: none).
    #[inline(always)]
    fn record_asked(&mut self, permit: f64, outcome_code: f64, asked: Nanos, now_ms: f64) -> i32 {
        let Some(handle) = handle(permit) else {
            return NOT_A_PERMIT;
        };
        let Some(outcome) = outcome::outcome(outcome_code) else {
            return BAD_OUTCOME;
        };
        let now = self.now(now_ms);
        let mut caused = None;
        let verdict = match self.permits.take(handle) {
            Some(permit) if asked == 0 => self.core.record_into(permit, outcome, now, &mut caused),
            Some(permit) => {
                let recorded = self
                    .core
                    .record_with_retry_after(permit, outcome, asked, now);
                verdict(recorded, &mut caused)
            }
            None => {
                let recorded = self.core.record_stale(outcome, now);
                verdict(recorded, &mut caused)
            }
        };
        let mut code = i32::from(verdict.class.code())
            | i32::from(verdict.slow) << 2
            | i32::from(verdict.stale) << 3;
        if let Some(transitions) = caused {
            if self.note(transitions) {
                code |= (transitions.len() as i32) << 4;
            }
        }
        code
    }

    /// Copies the transitions of the last call that caused any into `out`
    /// ([`TRANSITION_WIDTH`] numbers each: from, to, reason codes, at in ms, epoch);
    /// returns how many.
    pub fn transitions(&self, out: &mut [f64]) -> usize {
        let mut n = 0;
        for (t, chunk) in self
            .transitions
            .iter()
            .zip(out.chunks_exact_mut(TRANSITION_WIDTH))
        {
            chunk.copy_from_slice(&[
                f64::from(t.from.code()),
                f64::from(t.to.code()),
                f64::from(t.reason.code()),
                ms(t.at),
                t.epoch as f64,
            ]);
            n += 1;
        }
        n
    }

    /// The effective state code at `now_ms`.
    pub fn state(&self, now_ms: f64) -> u8 {
        self.core.state(self.now(now_ms)).code()
    }

    /// Fills `out` ([`METRICS_LEN`] numbers) with the metrics at `now_ms`: the scalar
    /// fields in [`MetricField`] order (a state by its code, durations in ms), the last
    /// transition (present 0/1, from, to, reason, at ms, epoch), then the rejected totals
    /// and the shadow rejections (SPEC § Shadow mode), each in reject-reason code order.
    pub fn metrics(&self, now_ms: f64, out: &mut [f64]) {
        let m = self.core.metrics(self.now(now_ms));
        let last = m.last_transition;
        let fields = m.fields().map(|(_, value)| match value {
            MetricValue::State(state) => f64::from(state.code()),
            MetricValue::Count(n) => n as f64,
            MetricValue::Duration(d) => ms(d),
        });
        let transition = [
            f64::from(u8::from(last.is_some())),
            last.map_or(0.0, |t| f64::from(t.from.code())),
            last.map_or(0.0, |t| f64::from(t.to.code())),
            last.map_or(0.0, |t| f64::from(t.reason.code())),
            last.map_or(0.0, |t| ms(t.at)),
            last.map_or(0.0, |t| t.epoch as f64),
        ];
        let rejected = RejectReason::ALL.iter().map(|&r| m.rejected(r) as f64);
        let shadow = RejectReason::ALL
            .iter()
            .map(|&r| m.shadow_rejected(r) as f64);
        let values = fields.chain(transition).chain(rejected).chain(shadow);
        for (o, v) in out.iter_mut().zip(values) {
            *o = v;
        }
    }

    /// Permits handed out and not yet recorded (or dropped).
    pub fn outstanding(&self) -> usize {
        self.permits.live()
    }

    /// An operator's call: keeps its transitions and returns how many there were.
    fn manual(&mut self, op: fn(&mut Core, Nanos) -> Transitions, now_ms: f64) -> usize {
        let now = self.now(now_ms);
        let t = op(&mut self.core, now);
        self.note(t);
        t.len()
    }

    /// Forces the breaker open until `release`; returns the number of transitions.
    pub fn isolate(&mut self, now_ms: f64) -> usize {
        self.manual(Core::isolate, now_ms)
    }

    /// Closes an isolated or disabled breaker; returns the number of transitions.
    pub fn release(&mut self, now_ms: f64) -> usize {
        self.manual(Core::release, now_ms)
    }

    /// Admits everything and never trips until `release`; returns the number of
    /// transitions.
    pub fn disable(&mut self, now_ms: f64) -> usize {
        self.manual(Core::disable, now_ms)
    }

    /// Back to closed with an empty window; returns the number of transitions.
    pub fn reset(&mut self, now_ms: f64) -> usize {
        self.manual(Core::reset, now_ms)
    }

    /// Puts a new config in force at `now_ms` on this live breaker (the core's
    /// `reconfigure`, SPEC § Reconfiguration): `values` and the code lists as
    /// [`Breaker::new`] takes them, built and checked by the same [`config::build`].
    /// `undefined` on success, with `out[0]` 1 when the window kept its outcomes (0 when it
    /// started empty) and `out[1]` the number of transitions time had made due (read them
    /// with [`Self::transitions`]). Else `"<option> <rule>"` worded as
    /// [`config::check_config`] words it, `fleetQuorum cannot change on a live breaker`
    /// among them, and nothing changed: not the breaker, not `out`.
    pub fn reconfigure(
        &mut self,
        values: &[f64],
        statuses: Option<Vec<u16>>,
        grpc_codes: Option<Vec<u8>>,
        now_ms: f64,
        out: &mut [f64],
    ) -> Option<String> {
        let now = self.now(now_ms);
        let reconfigured = config::build(values, statuses.as_deref(), grpc_codes.as_deref())
            .and_then(|config| self.core.reconfigure(config, now));
        match reconfigured {
            Ok(done) => {
                self.note(done.transitions);
                let report = [
                    f64::from(u8::from(done.window_kept)),
                    done.transitions.len() as f64,
                ];
                for (o, v) in out.iter_mut().zip(report) {
                    *o = v;
                }
                None
            }
            Err(error) => Some(config::message(error)),
        }
    }

    /// The state as of `now_ms`, as the core's versioned bytes.
    pub fn export_state(&self, now_ms: f64) -> Result<Vec<u8>, JsError> {
        let mut buf = [0u8; MAX_EXPORT_LEN];
        let len = self
            .core
            .export(self.now(now_ms), &mut buf)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(buf.get(..len).unwrap_or_default().to_vec())
    }

    /// Replaces the state with bytes exported `elapsed_ms` ago; `undefined` on success,
    /// else why (and nothing changed).
    pub fn import_state(&mut self, bytes: &[u8], elapsed_ms: f64, now_ms: f64) -> Option<String> {
        let now = self.now(now_ms);
        self.core
            .import(bytes, crate::time::duration(elapsed_ms), now)
            .err()
            .map(|e| e.to_string())
    }
}

/// The table handle a JS permit names: a handle, or a shadow permit's `handle + 0.5` (the
/// half only marks it); `None` for anything else (negative, another fraction, too big).
#[inline(always)]
fn handle(permit: f64) -> Option<u32> {
    if !(permit >= 0.0 && permit < f64::from(HANDLE_LIMIT)) {
        return None;
    }
    let whole = permit.trunc();
    let half = permit - whole;
    // Exact: a whole number below 2³⁰.
    (half == 0.0 || half == 0.5).then_some(whole as u32)
}

/// A [`tripgate_core::Recorded`] as the verdict `record_into` gives, its transitions
/// appended to `caused`.
fn verdict(recorded: tripgate_core::Recorded, caused: &mut Option<Transitions>) -> Verdict {
    if !recorded.transitions.is_empty() {
        *caused = Some(recorded.transitions);
    }
    Verdict {
        class: recorded.class,
        slow: recorded.slow,
        stale: recorded.stale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tripgate_core::{Class, Field, OutcomeKind};

    const SUCCESS: f64 = (crate::KIND_BASE + OutcomeKind::Success.code() as u32) as f64;

    fn breaker() -> Breaker {
        Breaker::new(&[f64::NAN; Field::ALL.len()], None, None, 0.0).unwrap()
    }

    #[test]
    fn permits_round_trip_and_a_second_record_is_stale() {
        let mut b = breaker();
        let p = b.acquire(1.0);
        assert!((0..TRANSITIONED).contains(&p));
        let first = b.record(f64::from(p), SUCCESS, 2.0);
        assert_eq!(first & 3, i32::from(Class::Success.code()));
        assert_eq!(first & 8, 0, "first record is current");
        let second = b.record(f64::from(p), SUCCESS, 3.0);
        assert_eq!(second & 8, 8, "second record is stale");
        assert_eq!(b.record(-1.0, SUCCESS, 3.0), NOT_A_PERMIT);
        assert_eq!(b.record(0.25, SUCCESS, 3.0), NOT_A_PERMIT);
        assert_eq!(
            b.record(f64::from(HANDLE_LIMIT), SUCCESS, 3.0),
            NOT_A_PERMIT
        );
        let q = b.acquire(4.0);
        assert_eq!(b.record(f64::from(q), 700.0, 5.0), BAD_OUTCOME);
        assert_eq!(b.outstanding(), 1, "a bad outcome leaves the permit held");
    }

    #[test]
    fn leaked_permits_of_ended_epochs_are_dropped_before_the_table_grows() {
        let mut b = breaker();
        for _ in 0..64 {
            assert!(b.acquire(1.0) >= 0);
        }
        let len = b.permits.capacity();
        b.reset(2.0);
        for _ in 0..64 {
            assert!(b.acquire(3.0) >= 0);
        }
        assert_eq!(b.outstanding(), 64);
        assert_eq!(b.permits.capacity(), len);
    }

    /// `values` with the given fields set, the rest not given.
    fn values(pairs: &[(Field, f64)]) -> Vec<f64> {
        let mut values = vec![f64::NAN; Field::ALL.len()];
        for &(field, value) in pairs {
            values[usize::from(field.code())] = value;
        }
        values
    }

    fn fault(b: &mut Breaker, now_ms: f64) -> i32 {
        let p = b.acquire(now_ms);
        b.record(f64::from(p), 503.0, now_ms)
    }

    #[test]
    fn reconfigure_keeps_the_window_and_the_permits_out() {
        let mut b = breaker();
        for _ in 0..3 {
            fault(&mut b, 1.0);
        }
        let out_before = b.acquire(2.0);
        let mut out = [f64::NAN; 2];
        let tighter = values(&[(Field::FailureThreshold, 4.0), (Field::MinCalls, 4.0)]);
        assert_eq!(b.reconfigure(&tighter, None, None, 3.0, &mut out), None);
        assert_eq!(out, [1.0, 0.0], "window kept, no transitions");
        let code = b.record(f64::from(out_before), 503.0, 4.0);
        assert_eq!(code & 8, 0, "the permit out before is current");
        assert_eq!(code >> 4, 1, "the fourth fault trips, by the new rule");
        let mut buf = [0.0; TRANSITION_WIDTH];
        assert_eq!(b.transitions(&mut buf), 1);
        assert_eq!(b.state(4.0), State::Open.code());
    }

    #[test]
    fn reconfigure_refuses_with_the_option_name_and_changes_nothing() {
        let mut b = Breaker::new(
            &values(&[(Field::SlowCallDuration, 100.0)]),
            None,
            None,
            0.0,
        )
        .unwrap();
        for _ in 0..4 {
            fault(&mut b, 1.0);
        }
        let mut out = [7.0; 2];
        let refusals = [
            (
                values(&[(Field::FailureThreshold, 0.0)]),
                "failureThreshold must be >= 1",
            ),
            (
                values(&[(Field::SlowCallDuration, 100.0), (Field::FleetQuorum, 3.0)]),
                "fleetQuorum cannot change on a live breaker",
            ),
            (
                values(&[]),
                "slowCallDurationMs cannot change on a live breaker",
            ),
        ];
        for (config, message) in refusals {
            assert_eq!(
                b.reconfigure(&config, None, None, 2.0, &mut out).as_deref(),
                Some(message)
            );
        }
        assert_eq!(out, [7.0; 2], "out untouched");
        fault(&mut b, 3.0);
        assert_eq!(
            b.state(3.0),
            State::Open.code(),
            "still the fifth fault trips"
        );
    }

    #[test]
    fn reconfigure_reshaped_window_starts_empty() {
        let mut b = breaker();
        for _ in 0..4 {
            fault(&mut b, 1.0);
        }
        let mut out = [f64::NAN; 2];
        let count_window = values(&[(Field::WindowCalls, 20.0)]);
        assert_eq!(
            b.reconfigure(&count_window, None, None, 2.0, &mut out),
            None
        );
        assert_eq!(out, [0.0, 0.0], "window restarted");
        fault(&mut b, 3.0);
        assert_eq!(
            b.state(3.0),
            State::Closed.code(),
            "the faults before no longer count"
        );
    }

    /// A breaker in shadow mode, tripped at 1 ms by five 503s.
    fn tripped_in_shadow() -> Breaker {
        let mut b = Breaker::new(&values(&[(Field::Shadow, 1.0)]), None, None, 0.0).unwrap();
        for _ in 0..5 {
            fault(&mut b, 1.0);
        }
        assert_eq!(b.state(1.0), State::Open.code());
        b
    }

    fn metrics(b: &Breaker, now_ms: f64) -> [f64; METRICS_LEN] {
        let mut m = [f64::NAN; METRICS_LEN];
        b.metrics(now_ms, &mut m);
        m
    }

    const STALE_TOTAL: usize = MetricField::StaleTotal as usize;
    const CALLS: usize = MetricField::Calls as usize;

    #[test]
    fn a_shadow_permit_is_reported_apart_and_its_outcome_counts_nothing() {
        let mut b = tripped_in_shadow();
        assert_eq!(
            b.acquire(2.0),
            SHADOWED,
            "open: admitted only by shadow mode"
        );
        let code = b.shadow_permit();
        assert!((0..TRANSITIONED).contains(&code), "{code}");
        let shadow = f64::from(code) + 0.5;
        let before = metrics(&b, 2.0);
        let recorded = b.record(shadow, 503.0, 3.0);
        assert_eq!(recorded & 3, i32::from(Class::Fault.code()));
        assert_eq!(recorded & !3, 0, "not stale, no transition");
        let after = metrics(&b, 3.0);
        assert_eq!(after[CALLS], before[CALLS]);
        assert_eq!(after[STALE_TOTAL], 0.0);
        let open = usize::from(RejectReason::Open.code());
        let shadow_rejected = METRICS_FIXED + RejectReason::ALL.len();
        assert_eq!(after[METRICS_FIXED + open], 0.0, "no rejection counted");
        assert_eq!(after[shadow_rejected + open], 1.0, "one shadow rejection");
        assert_eq!(
            b.record(shadow, 503.0, 3.0) & 8,
            8,
            "a second record is stale"
        );
        // Past the cooldown, the probe is a real permit: a plain handle.
        let probe = b.acquire(16_000.0);
        assert!(
            probe >= TRANSITIONED,
            "open to half-open on this call: {probe}"
        );
        assert_eq!(
            b.acquire(16_000.0),
            SHADOWED,
            "the probe slot is taken: a shadow rejection"
        );
        assert!(b.shadow_permit() < TRANSITIONED);
    }

    #[test]
    fn shadow_permits_out_survive_the_table_growing() {
        let mut b = tripped_in_shadow();
        let out: Vec<f64> = (0..100)
            .map(|_| {
                assert_eq!(b.acquire(2.0), SHADOWED);
                f64::from(b.shadow_permit()) + 0.5
            })
            .collect();
        for permit in out {
            assert_eq!(b.record(permit, 503.0, 3.0) & 8, 0, "not stale");
        }
        assert_eq!(metrics(&b, 3.0)[STALE_TOTAL], 0.0);
        assert_eq!(b.outstanding(), 0);
    }

    #[test]
    fn a_stay_away_holds_the_breaker_open_that_long() {
        let bounded = values(&[(Field::MaxCooldown, 120_000.0)]);
        let mut b = Breaker::new(&bounded, None, None, 0.0).unwrap();
        for _ in 0..4 {
            fault(&mut b, 1.0);
        }
        let p = b.acquire(1.0);
        let code = b.record_after(f64::from(p), 503.0, 60_000.0, 1.0);
        assert_eq!(code >> 4, 1, "the fifth fault trips");
        assert_eq!(b.acquire(2.0), -1 - i32::from(RejectReason::Open.code()));
        assert_eq!(b.retry_after_ms(), 59_999.0);
        assert_eq!(b.state(60_000.0), State::Open.code());
        assert_eq!(b.state(60_001.0), State::HalfOpen.code());
        // A stay-away with an outcome that trips nothing asks nothing.
        let mut c = Breaker::new(&bounded, None, None, 0.0).unwrap();
        let p = c.acquire(1.0);
        assert_eq!(c.record_after(f64::from(p), 503.0, 60_000.0, 1.0) >> 4, 0);
        for _ in 0..4 {
            fault(&mut c, 1.0);
        }
        assert_eq!(
            c.state(16_001.0),
            State::HalfOpen.code(),
            "the cooldown alone"
        );
        assert_eq!(
            c.record_after(-1.0, 503.0, 1.0, 1.0),
            NOT_A_PERMIT,
            "checked as record"
        );
    }

    #[test]
    fn a_reading_that_is_not_observed_leaves_time_where_it_was() {
        let mut b = breaker();
        for _ in 0..5 {
            let p = b.acquire(1_000.0);
            b.record(f64::from(p), 503.0, 1_000.0);
        }
        for bad in [f64::INFINITY, f64::NAN, -1.0, 1.9e13] {
            assert_eq!(
                b.acquire(bad) + TRANSITIONED,
                TRANSITIONED - 1,
                "rejected as open"
            );
            assert_eq!(b.retry_after_ms(), 15_000.0);
        }
        assert!(b.acquire(16_000.0) >= 0, "the next real reading carries on");
    }
}
