//! The reference model: a second breaker written from SPEC.md alone — plain, allocating,
//! obviously correct (the window is a list of timestamped outcomes; permits are ids in
//! lists) — and [`run_history`], which runs one history of [`Op`]s on it and on the core
//! and compares them decision by decision.
//!
//! Shared by the property tests (`tests/model.rs`, proptest's strategies) and the `model`
//! fuzz target (`arbitrary` bytes), so both check the core against one model.
//!
//! The model covers the time and count windows, the count and rate trip rules,
//! `max-in-flight`, K probes, M consecutive successes, probe timeouts, backoff, the manual
//! states, clocks that step back or give absurd readings, raw permits, and an origin
//! anywhere on the 64-bit circle. Slow calls, hang detection, jitter and rate graduation
//! have their own named tests and vectors (and the `config` and `snapshot` targets check
//! their invariants).
//!
//! The model keeps time relative to the history's start, so it never wraps; the core is
//! given `start + t` (wrapping), which tests that any origin works.

use tripgate_core::{
    Breaker, Config, Outcome, Permit, RawPermit, Reason, RejectReason, State, Transitions,
    MAX_EXPORT_LEN, SECOND as S,
};

#[derive(Debug)]
struct Model {
    c: Config,
    now: u64,
    state: State,
    epoch: u64,
    entered_at: u64,
    open_for: u64,
    cooldown: u64,
    /// (instant, fault) of every counted outcome since the window was last cleared.
    outcomes: Vec<(u64, bool)>,
    window_origin: u64,
    in_flight: Vec<u64>,
    probes: Vec<(u64, u64)>,
    /// Probes of an earlier half-open round, retired by a re-open but maybe still out.
    lingering: Vec<(u64, u64)>,
    successes: u32,
    next_id: u64,
}

#[derive(Debug, PartialEq)]
enum Decision {
    Admitted {
        id: u64,
        probe: bool,
    },
    Rejected {
        reason: RejectReason,
        retry_after: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct ModelPermit {
    id: u64,
    epoch: u64,
    probe: bool,
}

type Moves = Vec<(State, State, Reason)>;

impl Model {
    fn new(c: Config, now: u64) -> Self {
        Self {
            c,
            now,
            state: State::Closed,
            epoch: 0,
            entered_at: now,
            open_for: c.cooldown,
            cooldown: c.cooldown,
            outcomes: Vec::new(),
            window_origin: now,
            in_flight: Vec::new(),
            probes: Vec::new(),
            lingering: Vec::new(),
            successes: 0,
            next_id: 0,
        }
    }

    fn observe(&mut self, now: u64) -> u64 {
        self.now = self.now.max(now);
        self.now
    }

    fn grown(&self, cooldown: u64) -> u64 {
        let grown = ((cooldown as f64 * self.c.backoff_factor) as u64).max(cooldown);
        self.c.max_cooldown.map_or(grown, |m| grown.min(m))
    }

    fn enter(&mut self, to: State, reason: Reason, at: u64, moves: &mut Moves) {
        moves.push((self.state, to, reason));
        if to == State::Open {
            if self.state == State::HalfOpen {
                self.cooldown = self.grown(self.cooldown);
            }
            self.open_for = self.cooldown;
        }
        if to == State::Closed {
            self.cooldown = self.c.cooldown;
            self.outcomes.clear();
            self.window_origin = at;
        }
        match (self.state, to) {
            (State::HalfOpen, State::Open) => self.lingering.append(&mut self.probes),
            (State::Open, State::HalfOpen) => {}
            _ => self.lingering.clear(),
        }
        self.state = to;
        self.epoch += 1;
        self.entered_at = at;
        self.in_flight.clear();
        self.probes.clear();
        self.successes = 0;
    }

    fn settle(&mut self, now: u64, moves: &mut Moves) {
        loop {
            if self.state == State::Open && now - self.entered_at >= self.open_for {
                let at = self.entered_at + self.open_for;
                self.enter(State::HalfOpen, Reason::CooldownElapsed, at, moves);
            } else if self.state == State::HalfOpen {
                let oldest = self.probes.iter().map(|&(_, start)| start).min();
                match oldest {
                    Some(start) if now - start >= self.c.probe_timeout => self.enter(
                        State::Open,
                        Reason::ProbeTimeout,
                        start + self.c.probe_timeout,
                        moves,
                    ),
                    _ => return,
                }
            } else {
                return;
            }
        }
    }

    /// Counted outcomes still inside the window at `now`: with a count window, the last
    /// `window-calls`; with a time window, those whose bucket `(t - origin) / width` is
    /// one of the last `buckets` buckets.
    fn window(&self, now: u64) -> (u32, u32) {
        let live: Vec<bool> = match self.c.window_calls {
            Some(n) => {
                let skip = self.outcomes.len().saturating_sub(usize::from(n));
                self.outcomes[skip..].iter().map(|&(_, f)| f).collect()
            }
            None => {
                let width = (self.c.window / u64::from(self.c.buckets)).max(1);
                let bucket = |t: u64| (t - self.window_origin) / width;
                self.outcomes
                    .iter()
                    .filter(|&&(t, _)| bucket(t) + u64::from(self.c.buckets) > bucket(now))
                    .map(|&(_, fault)| fault)
                    .collect()
            }
        };
        (
            live.len() as u32,
            live.iter().filter(|&&f| f).count() as u32,
        )
    }

    fn acquire(&mut self, now: u64) -> (Decision, Moves) {
        let now = self.observe(now);
        let mut moves = Vec::new();
        self.settle(now, &mut moves);
        let reject = |reason, retry_after| Decision::Rejected {
            reason,
            retry_after,
        };
        let id = self.next_id;
        let decision = match self.state {
            State::Closed
                if self
                    .c
                    .max_in_flight
                    .is_some_and(|cap| self.in_flight.len() as u32 >= cap) =>
            {
                reject(RejectReason::Saturated, 0)
            }
            State::Closed | State::Disabled => {
                self.in_flight.push(id);
                Decision::Admitted { id, probe: false }
            }
            State::Open => reject(RejectReason::Open, self.open_for - (now - self.entered_at)),
            State::HalfOpen => {
                let timeout = self.c.probe_timeout;
                self.lingering.retain(|&(_, start)| now - start < timeout);
                if self.probes.len() + self.lingering.len()
                    < usize::from(self.c.half_open_max_probes)
                {
                    self.probes.push((id, now));
                    Decision::Admitted { id, probe: true }
                } else {
                    let oldest = self
                        .probes
                        .iter()
                        .chain(&self.lingering)
                        .map(|&(_, s)| s)
                        .min()
                        .expect("a full half-open round has a probe out");
                    reject(RejectReason::Probing, (timeout - (now - oldest)).min(S))
                }
            }
            State::Isolated => reject(RejectReason::Isolated, 0),
        };
        self.next_id += 1;
        (decision, moves)
    }

    fn is_fault(outcome: Outcome) -> Option<bool> {
        match outcome {
            Outcome::Success => Some(false),
            // The default sets, from SPEC.md's table (histories use the default config's).
            Outcome::Status(s) => Some(s.get() == 429 || (500..=599).contains(&s.get())),
            Outcome::Grpc(g) => Some([4, 8, 13, 14].contains(&g.get())),
            Outcome::Timeout | Outcome::ConnectionError | Outcome::Failure => Some(true),
            Outcome::Cancelled | Outcome::Ignored => None,
        }
    }

    fn record(&mut self, permit: ModelPermit, outcome: Outcome, now: u64) -> (bool, Moves) {
        let now = self.observe(now);
        let mut moves = Vec::new();
        self.settle(now, &mut moves);
        let fault = Self::is_fault(outcome);
        let current = permit.epoch == self.epoch
            && if permit.probe {
                self.state == State::HalfOpen && self.probes.iter().any(|&(id, _)| id == permit.id)
            } else {
                matches!(self.state, State::Closed | State::Disabled)
                    && self.in_flight.contains(&permit.id)
            };
        if !current {
            // A stale outcome releases what its permit held: a lingering probe's slot.
            if permit.probe {
                self.lingering.retain(|&(id, _)| id != permit.id);
            }
            return (true, moves);
        }
        if permit.probe {
            self.probes.retain(|&(id, _)| id != permit.id);
            match fault {
                None => {}
                Some(true) => self.enter(State::Open, Reason::ProbeFault, now, &mut moves),
                Some(false) => {
                    self.successes += 1;
                    if self.successes >= self.c.half_open_required_successes {
                        self.enter(State::Closed, Reason::ProbesSucceeded, now, &mut moves);
                    }
                }
            }
        } else {
            self.in_flight.retain(|&id| id != permit.id);
            if let Some(fault) = fault {
                self.outcomes.push((now, fault));
                if self.state == State::Closed {
                    let (calls, faults) = self.window(now);
                    if calls >= self.c.min_calls {
                        if faults >= self.c.failure_threshold {
                            self.enter(State::Open, Reason::FailureThreshold, now, &mut moves);
                        } else if self.c.failure_rate.is_some_and(|r| {
                            u64::from(faults) * 100 >= u64::from(r) * u64::from(calls)
                        }) {
                            self.enter(State::Open, Reason::FailureRate, now, &mut moves);
                        }
                    }
                }
            }
        }
        (false, moves)
    }

    fn manual(&mut self, op: Manual, now: u64) -> Moves {
        let now = self.observe(now);
        let mut moves = Vec::new();
        self.settle(now, &mut moves);
        let target = match (op, self.state) {
            (Manual::Isolate, s) if s != State::Isolated => {
                Some((State::Isolated, Reason::Isolated))
            }
            (Manual::Release, State::Isolated | State::Disabled) => {
                Some((State::Closed, Reason::Released))
            }
            (Manual::Disable, s) if s != State::Disabled => {
                Some((State::Disabled, Reason::Disabled))
            }
            (Manual::Reset, _) => Some((State::Closed, Reason::Reset)),
            _ => None,
        };
        if let Some((to, reason)) = target {
            self.enter(to, reason, now, &mut moves);
        }
        moves
    }

    /// Probes out at `now`: this round's, and lingering ones not yet timed out. A probe
    /// that has timed out is out no more: its timeout re-opened the breaker, and the
    /// round's other probes linger.
    fn probes_out(&self, now: u64) -> u8 {
        let live = |&(_, s): &(u64, u64)| now - s < self.c.probe_timeout;
        let round = if self.probes.iter().all(live) {
            self.probes.len()
        } else {
            self.probes.iter().filter(|p| live(p)).count()
        };
        (round + self.lingering.iter().filter(|p| live(p)).count()) as u8
    }

    /// The effective state at `now` (time alone moves open → half-open, and a timed-out
    /// probe half-open → open).
    fn effective_state(&self, now: u64) -> State {
        let now = self.now.max(now);
        let mut state = self.state;
        let (mut entered, mut open_for, mut oldest) = (
            self.entered_at,
            self.open_for,
            self.probes.iter().map(|&(_, s)| s).min(),
        );
        let mut cooldown = self.cooldown;
        loop {
            match state {
                State::Open if now - entered >= open_for => {
                    entered += open_for;
                    state = State::HalfOpen;
                    oldest = None;
                }
                State::HalfOpen if oldest.is_some_and(|s| now - s >= self.c.probe_timeout) => {
                    entered = oldest.unwrap_or_default() + self.c.probe_timeout;
                    cooldown = self.grown(cooldown);
                    open_for = cooldown;
                    state = State::Open;
                }
                _ => return state,
            }
        }
    }
}

// ---------------------------------------------------------------- histories

/// An operator's call.
#[derive(Clone, Copy, Debug)]
pub enum Manual {
    /// [`Breaker::isolate`].
    Isolate,
    /// [`Breaker::release`].
    Release,
    /// [`Breaker::disable`].
    Disable,
    /// [`Breaker::reset`].
    Reset,
}

/// The clock reading one call is given, relative to the history's time `now`.
#[derive(Clone, Copy, Debug)]
pub enum Reading {
    /// `now` itself.
    Now,
    /// A clock that stepped back by this much (below 2⁶²): observed only if still ahead
    /// of the latest reading.
    Behind(u64),
    /// `now + 2⁶³ + k` (k below 2⁶²): from the past on the circle of instants, never
    /// observed.
    Absurd(u64),
}

/// One step of a history.
#[derive(Clone, Debug)]
pub enum Op {
    /// Acquire a permit.
    Acquire(Reading),
    /// Record the held permit at this index (modulo), with this outcome; through its raw
    /// form when `raw`.
    Record {
        /// Which held permit (modulo the number held).
        index: usize,
        /// Its outcome.
        outcome: Outcome,
        /// Round-trip the permit through [`RawPermit`] and record it with `record_raw`.
        raw: bool,
        /// The clock reading.
        reading: Reading,
    },
    /// Move the clock forward.
    Advance(u64),
    /// An operator's call.
    Manual(Manual, Reading),
    /// Export and import into a fresh breaker, as an edge isolate would (only when nothing
    /// is out: permits do not cross instances).
    Recycle,
}

/// Bound on [`Reading::Behind`] and [`Reading::Absurd`] offsets (see there).
pub const MAX_READING_OFFSET: u64 = 1 << 62;

fn moves(t: &Transitions) -> Moves {
    t.iter().map(|t| (t.from, t.to, t.reason)).collect()
}

fn export(b: &Breaker, now: u64) -> Result<Vec<u8>, String> {
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b
        .export(now, &mut buf)
        .map_err(|e| format!("export failed: {e}"))?;
    Ok(buf[..len].to_vec())
}

/// Fails the history with a message when a condition does not hold.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Fails the history when two values differ, showing both.
macro_rules! ensure_eq {
    ($got:expr, $want:expr, $($msg:tt)+) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!("{}: core {:?}, model {:?}", format!($($msg)+), got, want));
        }
    }};
}

/// Runs one history on the core (its clock at `start + t`, wrapping) and on the model
/// (at `t`); the first divergence is the error.
pub fn run_history(config: Config, start: u64, ops: &[Op]) -> Result<(), String> {
    let at = |t: u64| start.wrapping_add(t);
    let mut b = Breaker::new(config, at(0)).map_err(|e| format!("config refused: {e}"))?;
    let mut model = Model::new(config, 0);
    let mut now = 0u64;
    let mut held: Vec<(Permit, ModelPermit)> = Vec::new();
    // The instants a reading hands the core and the model.
    let read = |reading: Reading, now: u64| match reading {
        Reading::Now => (at(now), now),
        Reading::Behind(by) => {
            let by = by % MAX_READING_OFFSET;
            (at(now).wrapping_sub(by), now.saturating_sub(by))
        }
        Reading::Absurd(k) => (at(now).wrapping_add((1 << 63) + k % MAX_READING_OFFSET), 0),
    };
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Acquire(reading) => {
                let (core_now, model_now) = read(reading, now);
                let before_state = b.state(core_now);
                let admission = b.acquire(core_now);
                if before_state == State::Open {
                    ensure!(
                        matches!(admission.decision, Err(r) if r.reason == RejectReason::Open),
                        "step {step}: open admitted"
                    );
                }
                let (want, want_moves) = model.acquire(model_now);
                ensure_eq!(moves(&admission.transitions), want_moves, "step {step}");
                match (admission.decision, want) {
                    (Ok(permit), Decision::Admitted { id, probe }) => {
                        ensure_eq!(permit.is_probe(), probe, "step {step}: probe");
                        ensure_eq!(permit.started(), at(model.now), "step {step}: started");
                        held.push((
                            permit,
                            ModelPermit {
                                id,
                                epoch: model.epoch,
                                probe,
                            },
                        ));
                    }
                    (
                        Err(r),
                        Decision::Rejected {
                            reason,
                            retry_after,
                        },
                    ) => {
                        ensure_eq!(
                            (r.reason, r.retry_after),
                            (reason, retry_after),
                            "step {step}: rejection"
                        );
                    }
                    (got, want) => {
                        return Err(format!("step {step}: core {got:?}, model {want:?}"));
                    }
                }
            }
            Op::Record {
                index,
                outcome,
                raw,
                reading,
            } => {
                if held.is_empty() {
                    continue;
                }
                let (core_now, model_now) = read(reading, now);
                let (permit, mp) = held.swap_remove(index % held.len());
                let before = b.metrics(core_now);
                let recorded = if raw {
                    let raw: RawPermit = permit.into_raw();
                    b.record_raw(raw, outcome, core_now)
                        .map_err(|e| format!("step {step}: an issued permit is malformed: {e}"))?
                } else {
                    b.record(permit, outcome, core_now)
                };
                let (stale, want_moves) = model.record(mp, outcome, model_now);
                ensure_eq!(recorded.stale, stale, "step {step}: stale");
                ensure_eq!(moves(&recorded.transitions), want_moves, "step {step}");
                if stale && recorded.transitions.is_empty() {
                    // A stale outcome changes no counts and no state; it only releases what
                    // its permit held (a lingering probe's slot).
                    let after = b.metrics(core_now);
                    ensure_eq!(after.window, before.window, "step {step}: stale window");
                    ensure_eq!(
                        (after.state, after.epoch, after.in_flight),
                        (before.state, before.epoch, before.in_flight),
                        "step {step}: stale outcome changed the breaker"
                    );
                    ensure!(
                        after.probes_out <= before.probes_out,
                        "step {step}: a stale outcome took a probe slot"
                    );
                }
            }
            Op::Advance(by) => now += by,
            Op::Manual(m, reading) => {
                let (core_now, model_now) = read(reading, now);
                let got = match m {
                    Manual::Isolate => b.isolate(core_now),
                    Manual::Release => b.release(core_now),
                    Manual::Disable => b.disable(core_now),
                    Manual::Reset => b.reset(core_now),
                };
                ensure_eq!(moves(&got), model.manual(m, model_now), "step {step}");
            }
            Op::Recycle => {
                if model.in_flight.is_empty()
                    && model.probes.is_empty()
                    && model.lingering.is_empty()
                {
                    let bytes = export(&b, at(now))?;
                    let mut fresh =
                        Breaker::new(config, at(now)).map_err(|e| format!("step {step}: {e}"))?;
                    fresh
                        .import(&bytes, 0, at(now))
                        .map_err(|e| format!("step {step}: own export refused: {e}"))?;
                    ensure_eq!(export(&fresh, at(now))?, bytes, "step {step}: round trip");
                    ensure_eq!(fresh.metrics(at(now)), b.metrics(at(now)), "step {step}");
                    b = fresh;
                    // The new instance's clock starts at the recycle.
                    model.observe(now);
                    held.clear();
                }
            }
        }
        // Invariants after every step.
        let m = b.metrics(at(now));
        // The route counters add up to the total, projected transitions included (so no
        // transition went by a route missing from ROUTES), the last one is counted, and it
        // entered the state its reason names (the exposition's `to` label relies on it).
        ensure_eq!(
            m.transitions_by_route.iter().sum::<u64>(),
            m.transitions_total,
            "step {step}: transitions by route"
        );
        if let Some(last) = m.last_transition {
            ensure!(
                m.transitions(last.route()) >= 1,
                "step {step}: {last:?} on no route"
            );
            ensure_eq!(last.to, last.reason.to(), "step {step}: {last:?}");
        }
        ensure_eq!(m.state, model.effective_state(now), "step {step}: state");
        ensure!(
            m.probes_out <= config.half_open_max_probes,
            "step {step}: {} probes out",
            m.probes_out
        );
        if m.state == State::HalfOpen && model.state == State::HalfOpen {
            ensure_eq!(
                m.probes_out,
                model.probes_out(model.now.max(now)),
                "step {step}: probes out"
            );
        }
        let (calls, faults) = model.window(model.now.max(now));
        if model.state == State::Closed || model.state == State::Disabled {
            ensure_eq!(
                (m.window.calls, m.window.faults),
                (calls, faults),
                "step {step}: window"
            );
        }
        if m.state == State::Closed {
            ensure_eq!(
                m.in_flight as usize,
                model.in_flight.len(),
                "step {step}: in flight"
            );
        }
    }
    Ok(())
}
