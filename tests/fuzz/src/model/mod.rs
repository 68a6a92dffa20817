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

mod history;

pub use history::{run_history, Manual, Op, Reading, MAX_READING_OFFSET};

use tripgate_core::{Config, Outcome, Reason, RejectReason, State, SECOND as S};

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
        // SPEC.md § Cooldown: capped at `max-cooldown`, or at 64 cooldowns without one.
        let cap = self
            .c
            .max_cooldown
            .unwrap_or(self.c.cooldown.saturating_mul(64));
        grown.min(cap.max(cooldown))
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
