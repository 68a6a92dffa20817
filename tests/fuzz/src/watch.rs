//! A breaker under watch: every call a fuzz input makes goes through [`Watch`], which
//! checks after each one the rules that hold for every config, clock and history — the
//! ones no reference model is needed for:
//!
//! * the clock: the breaker's latest instant is exactly the SPEC's watermark;
//! * transitions: every one is reported by the call that made it, as an unbroken chain
//!   (each `from` is the state the previous one entered, epochs count up by one), and the
//!   metrics agree with what was reported;
//! * reads are pure projections: `metrics(t)` and `state(t)` are exactly what a call at `t`
//!   would leave behind (checked on a clone by a call that changes nothing else);
//! * admission: open and isolated never admit; half-open admits a probe exactly while
//!   fewer than K are out; `max-in-flight` is never exceeded; counters count every
//!   admission and rejection;
//! * outcomes: the class follows the config's fault sets; a permit `holds` calls
//!   holding nothing is stale and changes nothing; a stale outcome changes nothing but
//!   what its permit held;
//! * export and import: an export always fits, imports back exactly (also after time
//!   passed in transit), and refused bytes leave the breaker exactly as it was; an
//!   accepted import makes every permit issued before it stale and carries no permits.

use arbitrary::{Result, Unstructured};
use tripgate_core::{
    Breaker, Class, Config, Metrics, Outcome, RawPermit, Reason, RejectReason, State, Transition,
    Transitions, MAX_EXPORT_LEN, REJECT_REASONS, SECOND,
};

use crate::input;

/// What the breaker was left with by the last call that changed it, when nothing can
/// have been due then (so the next call's transitions must continue from it).
#[derive(Clone, Copy, Debug)]
struct Synced {
    state: State,
    epoch: u64,
    transitions: u64,
    last: Option<Transition>,
}

/// The counters the breaker must keep exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counts {
    admitted: u64,
    rejected: [u64; REJECT_REASONS],
    stale: u64,
}

/// A breaker and what is known about it from outside.
pub struct Watch {
    pub(crate) config: Config,
    pub(crate) b: Breaker,
    /// The watermark the breaker must have.
    latest: u64,
    /// Permits out, in their plain form (so they can be recorded on clones too).
    held: Vec<RawPermit>,
    synced: Option<Synced>,
    counts: Counts,
    /// A forged raw permit was counted as a call of this epoch (raw permits cannot be told
    /// from real ones): the in-flight and hung counts may be off until the next transition.
    forged: bool,
    /// A state was imported: its window may hold slow calls the exporter's config
    /// counted (only the window's shape must match).
    imported: bool,
    /// The longest span this breaker's instants may cover: the time observed since it
    /// was made, or since the oldest instant an import brought. The core's time rules hold
    /// while spans stay under half the circle (292 years); past a quarter, the checks that
    /// compare instants are skipped (the others still run).
    span: u64,
}

/// Every permit a breaker has issued is stale at `now` on `b` (after an import).
fn all_stale(b: &Breaker, held: &[RawPermit], now: u64) {
    for raw in held {
        let mut c = b.clone();
        let recorded = c.record_raw(*raw, Outcome::Success, now).expect("issued");
        assert!(
            recorded.stale,
            "a permit issued before an import still counts: {raw:?}"
        );
    }
}

fn export(b: &Breaker, now: u64) -> Vec<u8> {
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b
        .export(now, &mut buf)
        .expect("a MAX_EXPORT_LEN buffer always suffices");
    buf[..len].to_vec()
}

/// `m` with one more stale outcome counted.
fn plus_stale(m: &Metrics) -> Metrics {
    Metrics {
        stale_total: m.stale_total.saturating_add(1),
        ..*m
    }
}

impl Watch {
    /// A breaker with `config` created at `now`, or `None` if the config is refused.
    pub fn new(config: Config, now: u64) -> Option<Self> {
        let b = Breaker::new(config, now).ok()?;
        Some(Self {
            config,
            b,
            latest: now,
            held: Vec::new(),
            synced: Some(Synced {
                state: State::Closed,
                epoch: 0,
                transitions: 0,
                last: None,
            }),
            counts: Counts::default(),
            forged: false,
            imported: false,
            span: 0,
        })
    }

    /// The breaker's latest instant.
    pub fn latest(&self) -> u64 {
        self.latest
    }

    /// A clock reading, and the instant the breaker will use for it.
    fn reading(&self, u: &mut Unstructured<'_>) -> Result<(u64, u64)> {
        let reading = input::reading(u, self.latest)?;
        Ok((reading, input::observed(self.latest, reading)))
    }

    /// One call chosen by the input. `import_weight` (0–8) makes imports of crafted or
    /// damaged bytes more or less frequent; `donor` is another breaker's export to damage.
    pub fn step(
        &mut self,
        u: &mut Unstructured<'_>,
        import_weight: u8,
        donor: &[u8],
    ) -> Result<()> {
        let choice = u.int_in_range(0..=23 + u32::from(import_weight))?;
        match choice {
            0..=7 => self.acquire(u)?,
            8..=14 => self.record(u)?,
            15 => self.acquire_untimed(),
            16 => self.record_forged(u)?,
            17 => self.record_stale(u)?,
            18..=20 => self.manual(u)?,
            21 => self.drop_permit(u)?,
            22 | 23 => {
                let (_, now) = self.reading(u)?;
                self.round_trip(u, now)?;
            }
            _ => self.import(u, donor)?,
        }
        self.invariants(u)
    }

    /// Checks a call's reported transitions against what was known before it.
    fn after_call(&mut self, observed: u64, transitions: &Transitions, what: &str) {
        assert_eq!(self.b.latest(), observed, "{what}: the clock's watermark");
        self.span = self.span.saturating_add(observed.wrapping_sub(self.latest));
        self.latest = observed;
        let list: Vec<Transition> = transitions.iter().copied().collect();
        for pair in list.windows(2) {
            assert_eq!(
                pair[0].to, pair[1].from,
                "{what}: transitions chain {list:?}"
            );
            assert_eq!(pair[0].epoch + 1, pair[1].epoch, "{what}: epochs {list:?}");
            assert!(
                observed.wrapping_sub(pair[0].at) >= observed.wrapping_sub(pair[1].at),
                "{what}: transitions out of order {list:?}"
            );
        }
        for t in list.iter().filter(|_| self.span < 1 << 62) {
            assert!(
                observed.wrapping_sub(t.at) < input::HALF_CIRCLE,
                "{what}: a transition in the future {t:?} (now {observed})"
            );
        }
        if !list.is_empty() {
            self.forged = false;
        }
        let m = self.b.metrics(observed);
        if let Some(s) = self.synced {
            if let Some(first) = list.first() {
                assert_eq!(first.from, s.state, "{what}: first transition {list:?}");
                assert_eq!(first.epoch, s.epoch + 1, "{what}: first epoch {list:?}");
            }
            assert_eq!(
                m.transitions_total,
                s.transitions + list.len() as u64,
                "{what}: every transition is reported ({list:?})"
            );
            assert_eq!(m.last_transition, list.last().copied().or(s.last), "{what}");
        }
        if let Some(last) = list.last() {
            assert_eq!(m.state, last.to, "{what}: state after {list:?}");
            assert_eq!(m.epoch, last.epoch, "{what}: epoch after {list:?}");
        }
        // After a call nothing is due at its own instant, so the metrics are the stored
        // state and the next call's transitions start from here.
        self.synced = Some(Synced {
            state: m.state,
            epoch: m.epoch,
            transitions: m.transitions_total,
            last: m.last_transition,
        });
        assert_eq!(m.admitted_total, self.counts.admitted, "{what}: admitted");
        assert_eq!(m.rejected_total, self.counts.rejected, "{what}: rejected");
        assert_eq!(m.stale_total, self.counts.stale, "{what}: stale");
    }

    fn acquire(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (reading, now) = self.reading(u)?;
        let before = self.b.metrics(now);
        let admission = self.b.acquire(reading);
        let hang = self.config.slow_call_duration.is_some()
            && before.state == State::Closed
            && before.hung >= self.config.failure_threshold;
        let after = self.b.metrics(now);
        match admission.decision {
            Ok(permit) => {
                self.counts.admitted += 1;
                assert!(
                    matches!(
                        before.state,
                        State::Closed | State::Disabled | State::HalfOpen
                    ),
                    "admitted while {:?}",
                    before.state
                );
                assert!(!hang, "admitted past a hang trip");
                assert_eq!(permit.is_probe(), before.state == State::HalfOpen, "probe");
                assert_eq!(
                    permit.started(),
                    now,
                    "a permit starts at the observed instant"
                );
                assert_eq!(permit.epoch(), after.epoch, "a permit carries the epoch");
                if before.state == State::HalfOpen {
                    assert!(before.probes_out < self.config.half_open_max_probes);
                    assert_eq!(after.probes_out, before.probes_out + 1, "probe slot");
                }
                if before.state == State::Closed {
                    if let Some(cap) = self.config.max_in_flight {
                        assert!(before.in_flight < cap, "admitted past max-in-flight");
                    }
                }
                let raw = permit.into_raw();
                assert_eq!(raw.into_permit().map(|p| p.into_raw()), Ok(raw));
                self.held.push(raw);
            }
            Err(r) => {
                self.counts.rejected[usize::from(r.reason.code())] += 1;
                match r.reason {
                    RejectReason::Open if hang => {
                        assert_eq!(r.state, State::Open);
                        let last = admission.transitions.last().expect("the hang trip");
                        assert_eq!(last.reason, Reason::HungCalls);
                    }
                    RejectReason::Open => {
                        assert_eq!((before.state, r.state), (State::Open, State::Open));
                        assert_eq!(r.retry_after, before.cooldown_remaining, "retry-after");
                        assert!(r.retry_after > 0);
                    }
                    RejectReason::Probing => {
                        assert_eq!((before.state, r.state), (State::HalfOpen, State::HalfOpen));
                        assert_eq!(before.probes_out, self.config.half_open_max_probes);
                        assert!(r.retry_after <= SECOND, "probing retry-after {r:?}");
                    }
                    RejectReason::Isolated => {
                        assert_eq!((before.state, r.state), (State::Isolated, State::Isolated));
                        assert_eq!(r.retry_after, 0);
                    }
                    RejectReason::Saturated => {
                        assert_eq!((before.state, r.state), (State::Closed, State::Closed));
                        assert!(
                            self.config
                                .max_in_flight
                                .is_some_and(|cap| before.in_flight >= cap),
                            "saturated below max-in-flight"
                        );
                        assert_eq!(r.retry_after, 0);
                    }
                    RejectReason::ProbingElsewhere => {
                        // Only a fleet member without the probe lease, which these
                        // breakers never are.
                        assert!(
                            self.config.fleet_quorum.is_some(),
                            "probing-elsewhere off fleet"
                        );
                        assert_eq!((before.state, r.state), (State::HalfOpen, State::HalfOpen));
                    }
                }
            }
        }
        self.after_call(now, &admission.transitions, "acquire");
        Ok(())
    }

    fn acquire_untimed(&mut self) {
        let now = self.latest;
        let timeless =
            self.b.metrics(now).state == State::Closed && self.config.slow_call_duration.is_none();
        match self.b.acquire_untimed() {
            Some(admission) => {
                assert!(timeless, "acquire_untimed admitted where time matters");
                match admission.decision {
                    Ok(permit) => {
                        self.counts.admitted += 1;
                        assert_eq!(permit.started(), now);
                        self.held.push(permit.into_raw());
                    }
                    Err(r) => {
                        assert_eq!(r.reason, RejectReason::Saturated);
                        self.counts.rejected[usize::from(r.reason.code())] += 1;
                    }
                }
                self.after_call(now, &admission.transitions, "acquire_untimed");
            }
            None => assert!(!timeless, "acquire_untimed refused a closed breaker"),
        }
    }

    /// The class SPEC.md gives an outcome under this config's fault sets.
    fn class_of(&self, outcome: Outcome) -> Class {
        let fault = |yes: bool| if yes { Class::Fault } else { Class::Success };
        match outcome {
            Outcome::Success => Class::Success,
            Outcome::Status(s) => fault(self.config.fault_statuses.contains(s.get())),
            Outcome::Grpc(g) => fault(self.config.fault_grpc_codes.contains(g.get())),
            Outcome::Timeout | Outcome::ConnectionError | Outcome::Failure => Class::Fault,
            Outcome::Cancelled | Outcome::Ignored => Class::Neutral,
        }
    }

    fn record(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let index = u.choose_index(self.held.len())?;
        let raw = self.held.swap_remove(index);
        let outcome = input::outcome(u)?;
        let (reading, now) = self.reading(u)?;
        let permit = raw.into_permit().expect("issued permits are well formed");
        let holds = self.b.holds(&permit, now);
        let before = self.b.metrics(now);
        let recorded = if u.arbitrary()? {
            self.b.record(permit, outcome, reading)
        } else {
            self.b.record_raw(raw, outcome, reading).expect("issued")
        };
        let after = self.b.metrics(now);
        assert_eq!(
            recorded.class,
            self.class_of(outcome),
            "class of {outcome:?}"
        );
        assert!(
            !recorded.slow
                || (recorded.class == Class::Success && self.config.slow_call_duration.is_some()),
            "slow {recorded:?}"
        );
        if recorded.stale {
            self.counts.stale += 1;
        }
        let quiet = recorded.transitions.is_empty();
        if !holds {
            assert!(
                recorded.stale,
                "a permit that holds nothing counted: {raw:?}"
            );
            if quiet {
                assert_eq!(
                    after,
                    plus_stale(&before),
                    "a permit holding nothing changed"
                );
            }
        }
        if recorded.stale && quiet {
            assert_eq!(
                (after.state, after.epoch, after.window, after.in_flight),
                (before.state, before.epoch, before.window, before.in_flight),
                "a stale outcome changed the breaker"
            );
            assert!(after.probes_out <= before.probes_out);
        }
        if !recorded.stale && quiet {
            if permit_is_probe(raw) {
                assert_eq!(after.probes_out + 1, before.probes_out, "probe slot freed");
            } else {
                if !self.forged {
                    assert_eq!(after.in_flight + 1, before.in_flight, "in-flight released");
                }
                if recorded.class == Class::Neutral {
                    assert_eq!(after.window, before.window, "a neutral outcome counted");
                } else if self.config.window_calls.is_none() {
                    assert_eq!(after.window.calls, before.window.calls.saturating_add(1));
                }
            }
        }
        self.after_call(now, &recorded.transitions, "record");
        Ok(())
    }

    /// A raw permit nobody issued: refused if its slot is impossible, else counted or
    /// stale, never a panic.
    fn record_forged(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let raw = RawPermit {
            ticket: input::number(u)?,
            started: if u.arbitrary()? {
                self.latest.wrapping_sub(input::duration(u)?)
            } else {
                u.arbitrary()?
            },
        };
        let outcome = input::outcome(u)?;
        let (reading, now) = self.reading(u)?;
        let before = self.b.clone();
        match self.b.record_raw(raw, outcome, reading) {
            Err(_) => {
                assert!(
                    raw.ticket & 127 > 64,
                    "a well-formed ticket refused: {raw:?}"
                );
                assert_eq!(self.b, before, "a refused ticket changed the breaker");
            }
            Ok(recorded) => {
                assert!(
                    raw.ticket & 127 <= 64,
                    "an impossible slot accepted: {raw:?}"
                );
                if recorded.stale {
                    self.counts.stale += 1;
                } else {
                    self.forged = true;
                }
                self.after_call(now, &recorded.transitions, "record_raw (forged)");
            }
        }
        Ok(())
    }

    fn record_stale(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let outcome = input::outcome(u)?;
        let (reading, now) = self.reading(u)?;
        let before = self.b.metrics(now);
        let recorded = self.b.record_stale(outcome, reading);
        assert!(recorded.stale && !recorded.slow);
        assert_eq!(recorded.class, self.class_of(outcome));
        assert_eq!(
            self.b.metrics(now),
            plus_stale(&before),
            "record_stale changed more"
        );
        self.counts.stale += 1;
        self.after_call(now, &recorded.transitions, "record_stale");
        Ok(())
    }

    /// A permit given up without an outcome, as a host that lost it would (raw permits
    /// have no destructor: it stays out until the state changes or it times out).
    fn drop_permit(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if !self.held.is_empty() {
            let index = u.choose_index(self.held.len())?;
            self.held.swap_remove(index);
        }
        Ok(())
    }

    fn manual(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (reading, now) = self.reading(u)?;
        let before = self.b.metrics(now).state;
        let op = u.int_in_range(0..=3)?;
        let (transitions, expected) = match op {
            0 => (
                self.b.isolate(reading),
                (before != State::Isolated).then_some((State::Isolated, Reason::Isolated)),
            ),
            1 => (
                self.b.release(reading),
                matches!(before, State::Isolated | State::Disabled)
                    .then_some((State::Closed, Reason::Released)),
            ),
            2 => (
                self.b.disable(reading),
                (before != State::Disabled).then_some((State::Disabled, Reason::Disabled)),
            ),
            _ => (self.b.reset(reading), Some((State::Closed, Reason::Reset))),
        };
        let own = transitions.last().filter(|t| {
            matches!(
                t.reason,
                Reason::Isolated | Reason::Released | Reason::Disabled | Reason::Reset
            )
        });
        assert_eq!(
            own.map(|t| (t.to, t.reason)),
            expected,
            "manual op {op} from {before:?}: {transitions:?}"
        );
        let m = self.b.metrics(now);
        if expected.is_some_and(|(to, _)| to == State::Closed) {
            assert_eq!((m.window.calls, m.in_flight, m.probes_out), (0, 0, 0));
        }
        self.after_call(now, &transitions, "manual");
        Ok(())
    }

    /// Export at `now`, import into a fresh breaker: exact; and with time passed in
    /// transit, the same as that time passing after an import.
    fn round_trip(&mut self, u: &mut Unstructured<'_>, now: u64) -> Result<()> {
        let bytes = export(&self.b, now);
        assert_eq!(bytes, export(&self.b, now), "export is deterministic");
        let mut fresh = Breaker::new(self.config, self.latest).expect("valid config");
        fresh
            .import(&bytes, 0, now)
            .unwrap_or_else(|e| panic!("own export refused: {e}"));
        assert_eq!(export(&fresh, now), bytes, "round trip is exact");
        if self.span >= 1 << 62 {
            return Ok(());
        }
        let (m, f) = (self.b.metrics(now), fresh.metrics(now));
        if m.probes_out == 0
            && m.in_flight == 0
            && !self.forged
            && self.span < 1 << 62
            && oldest_span(&m, now).max(stored_age(&bytes)) < input::HALF_CIRCLE - 1
        {
            // Nothing out that an import forgets, and no span the bytes store as the
            // longest there is: the same breaker.
            assert_eq!(f, m, "imported state reads differently");
        }
        // Time in transit: importing after `elapsed` is the same as importing at once
        // and then letting `elapsed` pass — while every span stays under half the circle,
        // beyond which a span is stored as the longest there is.
        let elapsed = input::duration(u)? % (1 << 62);
        let later = now.wrapping_add(elapsed);
        if stored_age(&bytes).saturating_add(elapsed) >= input::HALF_CIRCLE
            || self.config.window >= 1 << 62
        {
            return Ok(());
        }
        let mut delayed = Breaker::new(self.config, later).expect("valid config");
        delayed
            .import(&bytes, elapsed, later)
            .unwrap_or_else(|e| panic!("own export refused after {elapsed} ns: {e}"));
        assert_eq!(
            delayed.metrics(later),
            fresh.metrics(later),
            "{elapsed} ns in transit"
        );
        assert_eq!(export(&delayed, later), export(&fresh, later));
        Ok(())
    }

    fn import(&mut self, u: &mut Unstructured<'_>, donor: &[u8]) -> Result<()> {
        let (reading, now) = self.reading(u)?;
        let own = export(&self.b, now);
        let source = if u.arbitrary()? { &own[..] } else { donor };
        let bytes = input::snapshot(u, source)?;
        let elapsed = if u.arbitrary()? {
            input::duration(u)?
        } else {
            input::number(u)?
        };
        let before = self.b.clone();
        let mut fresh = Breaker::new(self.config, self.latest).expect("valid config");
        let fresh_result = fresh.import(&bytes, elapsed, reading);
        let result = self.b.import(&bytes, elapsed, reading);
        assert_eq!(
            result, fresh_result,
            "import depends on more than the bytes and the window's shape"
        );
        match result {
            Err(_) => {
                assert_eq!(self.b, before, "refused bytes changed the breaker");
                assert_eq!(export(&self.b, now), own);
            }
            Ok(()) => {
                assert_eq!(self.b.latest(), now, "import observes its instant");
                self.span = stored_age(&bytes).saturating_add(elapsed);
                self.latest = now;
                all_stale(&self.b, &self.held, now);
                let (m, f) = (self.b.metrics(now), fresh.metrics(now));
                // The same state but for the epoch a used breaker starts past its own
                // (which a projected transition carries too).
                let last_transition = m.last_transition.map(|t| Transition {
                    epoch: if t.epoch == m.epoch { f.epoch } else { t.epoch },
                    ..t
                });
                assert_eq!(
                    Metrics {
                        epoch: f.epoch,
                        last_transition,
                        ..m
                    },
                    f,
                    "import into a used breaker"
                );
                assert!(m.epoch >= f.epoch);
                assert_eq!((m.in_flight, m.probes_out), (0, 0), "permits carried over");
                // Transitions that fell due in transit are made by the next call.
                self.synced = None;
                self.imported = true;
                self.counts = Counts {
                    admitted: m.admitted_total,
                    rejected: m.rejected_total,
                    stale: m.stale_total,
                };
                self.round_trip(u, now)?;
            }
        }
        Ok(())
    }

    /// The rules that hold between any two calls, at the latest instant and at one the
    /// input picks.
    fn invariants(&self, u: &mut Unstructured<'_>) -> Result<()> {
        let later = input::observed(self.latest, input::reading(u, self.latest)?);
        for now in [self.latest, later] {
            let m = self.b.metrics(now);
            assert_eq!(self.b.state(now), m.state, "state() and metrics() disagree");
            // Reads are projections: a call that changes nothing else leaves the breaker
            // reading exactly as it read before.
            let mut settled = self.b.clone();
            let recorded = settled.record_stale(Outcome::Ignored, now);
            assert_eq!(
                settled.metrics(now),
                plus_stale(&m),
                "metrics({now}) is not what a call at {now} leaves ({:?})",
                recorded.transitions
            );
            if now == self.latest && self.synced.is_some() {
                assert!(recorded.transitions.is_empty(), "a transition left due");
            }
            let k = self.config.half_open_max_probes;
            assert!(m.probes_out <= k, "{} probes out of {k}", m.probes_out);
            if matches!(m.state, State::Closed | State::Disabled | State::Isolated) {
                assert_eq!(m.probes_out, 0, "probes out while {:?}", m.state);
            }
            if m.state != State::Closed && m.state != State::Disabled {
                assert_eq!(m.in_flight, 0, "calls in flight while {:?}", m.state);
            }
            assert_eq!(
                m.cooldown_remaining > 0,
                m.state == State::Open,
                "cooldown remaining {} while {:?}",
                m.cooldown_remaining,
                m.state
            );
            if m.state == State::Closed {
                if let Some(cap) = self.config.max_in_flight {
                    assert!(m.in_flight <= cap, "{} in flight, cap {cap}", m.in_flight);
                }
            }
            assert!(m.window.faults <= m.window.calls && m.window.slow <= m.window.calls);
            if let Some(n) = self.config.window_calls {
                assert!(m.window.calls <= u32::from(n), "count window over {n}");
            }
            // Hang buckets are counted from the epoch's start, on spans under half the
            // circle.
            if !self.forged && self.span < 1 << 62 {
                assert!(m.hung <= m.in_flight, "{} hung of {}", m.hung, m.in_flight);
            }
            if self.config.slow_call_duration.is_none() {
                assert_eq!(m.hung, 0);
                if !self.imported {
                    assert_eq!(m.window.slow, 0);
                }
            }
        }
        Ok(())
    }

    /// The state as bytes, for another breaker to import.
    pub fn export(&self) -> Vec<u8> {
        export(&self.b, self.latest)
    }
}

/// The longest age exported bytes hold (the state's, the last transition's; layout
/// versions 1 and 2, documented in the core's `snapshot.rs`), which may exceed what the
/// metrics show (a projected transition is newer than the stored one).
fn stored_age(bytes: &[u8]) -> u64 {
    let u64_at = |at: usize| {
        bytes
            .get(at..at + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    // The last transition's flag follows the lifetime counters: nine in version 1 (an
    // import still takes those bytes), ten in version 2, ten and the route counters in
    // version 3. Its age follows the flag, from, to and reason.
    let flag = match bytes.get(3) {
        Some(1) => 136,
        Some(2) => 144,
        _ => 144 + 8 * tripgate_core::ROUTE_COUNT,
    };
    let last = if bytes.get(flag) == Some(&1) {
        u64_at(flag + 4)
    } else {
        0
    };
    u64_at(24).max(last)
}

/// The longest span the metrics hold (time in state, age of the last transition).
fn oldest_span(m: &Metrics, now: u64) -> u64 {
    m.last_transition
        .map_or(0, |t| now.wrapping_sub(t.at))
        .max(m.time_in_state)
}

fn permit_is_probe(raw: RawPermit) -> bool {
    raw.ticket & 127 != 0
}
