//! Model-based property tests: random histories of acquire / record / clock advance /
//! manual operations / export-import, run on the breaker and on a reference model written
//! here from SPEC.md alone — plain, allocating, obviously correct (the window is a list of
//! timestamped outcomes; permits are ids in lists) — and compared decision by decision.
//!
//! The model covers the time window, the count and rate trip rules, `max-in-flight`, K
//! probes, M consecutive successes, probe timeouts, backoff and the manual states. Slow
//! calls, hang detection, jitter, the count window and rate graduation have their own
//! named tests and vectors.
//!
//! Cases: `PROPTEST_CASES` overrides the defaults below, whose sum is over 10,000.

use proptest::prelude::*;
use tripgate_core::{
    Breaker, Config, Outcome, Permit, RawPermit, Reason, RejectReason, State, Transitions,
    MAX_EXPORT_LEN, MILLISECOND as MS, SECOND as S,
};

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------- the reference model

#[derive(Clone, Copy, Debug, PartialEq)]
struct Kind {
    fault: Option<bool>, // None = neutral
}

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

    fn enter(&mut self, to: State, reason: Reason, at: u64, moves: &mut Moves) {
        moves.push((self.state, to, reason));
        if to == State::Open {
            if self.state == State::HalfOpen {
                let grown =
                    ((self.cooldown as f64 * self.c.backoff_factor) as u64).max(self.cooldown);
                self.cooldown = self.c.max_cooldown.map_or(grown, |m| grown.min(m));
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

    /// Counted outcomes still inside the window at `now`: bucket `(t - origin) / width`
    /// is remembered while it is one of the last `buckets` buckets.
    fn window(&self, now: u64) -> (u32, u32) {
        let width = self.c.window / u64::from(self.c.buckets);
        let bucket = |t: u64| (t - self.window_origin) / width;
        let live: Vec<bool> = self
            .outcomes
            .iter()
            .filter(|&&(t, _)| bucket(t) + u64::from(self.c.buckets) > bucket(now))
            .map(|&(_, fault)| fault)
            .collect();
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
                        .unwrap();
                    reject(RejectReason::Probing, (timeout - (now - oldest)).min(S))
                }
            }
            State::Isolated => reject(RejectReason::Isolated, 0),
        };
        self.next_id += 1;
        (decision, moves)
    }

    fn classify(&self, outcome: Outcome) -> Kind {
        let fault = match outcome {
            Outcome::Success => Some(false),
            Outcome::Status(s) => Some(s.get() == 429 || (500..=599).contains(&s.get())),
            Outcome::Grpc(g) => Some([4, 8, 13, 14].contains(&g.get())),
            Outcome::Timeout | Outcome::ConnectionError | Outcome::Failure => Some(true),
            Outcome::Cancelled | Outcome::Ignored => None,
        };
        Kind { fault }
    }

    fn record(&mut self, permit: ModelPermit, outcome: Outcome, now: u64) -> (bool, Moves) {
        let now = self.observe(now);
        let mut moves = Vec::new();
        self.settle(now, &mut moves);
        let kind = self.classify(outcome);
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
            match kind.fault {
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
            if let Some(fault) = kind.fault {
                self.outcomes.push((now, fault));
                if self.state == State::Closed {
                    let (calls, faults) = self.window(now);
                    if calls >= self.c.min_calls {
                        if faults >= self.c.failure_threshold {
                            self.enter(State::Open, Reason::FailureThreshold, now, &mut moves);
                        } else if self
                            .c
                            .failure_rate
                            .is_some_and(|r| faults * 100 >= u32::from(r) * calls)
                        {
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

    /// Probes out at `now`: this round's, and lingering ones not yet timed out.
    fn probes_out(&self, now: u64) -> u8 {
        let lingering = self
            .lingering
            .iter()
            .filter(|&&(_, s)| now - s < self.c.probe_timeout)
            .count();
        (self.probes.len() + lingering) as u8
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
                    entered = oldest.unwrap() + self.c.probe_timeout;
                    let grown = ((cooldown as f64 * self.c.backoff_factor) as u64).max(cooldown);
                    cooldown = self.c.max_cooldown.map_or(grown, |m| grown.min(m));
                    open_for = cooldown;
                    state = State::Open;
                }
                _ => return state,
            }
        }
    }
}

// ---------------------------------------------------------------- random histories

#[derive(Clone, Copy, Debug)]
enum Manual {
    Isolate,
    Release,
    Disable,
    Reset,
}

#[derive(Clone, Debug)]
enum Op {
    Acquire,
    /// Record the held permit at this index (modulo), with this outcome.
    Record(usize, Outcome),
    Advance(u64),
    Manual(Manual),
    /// Export and import into a fresh breaker, as an edge isolate would.
    Recycle,
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        4 => (100u16..=599).prop_map(|c| Outcome::status(c).unwrap()),
        3 => prop::sample::select(vec![500u16, 502, 503, 504, 429]).prop_map(|c| Outcome::status(c).unwrap()),
        1 => (0u8..=16).prop_map(|c| Outcome::grpc(c).unwrap()),
        2 => Just(Outcome::Timeout),
        1 => Just(Outcome::ConnectionError),
        1 => Just(Outcome::Failure),
        1 => Just(Outcome::Cancelled),
        1 => Just(Outcome::Ignored),
    ]
}

fn op(with_manual: bool) -> impl Strategy<Value = Op> {
    let manual = prop::sample::select(vec![
        Manual::Isolate,
        Manual::Release,
        Manual::Disable,
        Manual::Reset,
    ]);
    prop_oneof![
        8 => Just(Op::Acquire),
        8 => (any::<usize>(), outcome()).prop_map(|(i, o)| Op::Record(i, o)),
        3 => (0u64..200).prop_map(|ms| Op::Advance(ms * MS)),
        2 => (0u64..40).prop_map(|s| Op::Advance(s * S)),
        1 => (1u64..5).prop_map(|h| Op::Advance(h * 3600 * S)),
        (if with_manual { 1 } else { 0 }) => manual.prop_map(Op::Manual),
        (if with_manual { 1 } else { 0 }) => Just(Op::Recycle),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        (
            1u32..7,
            1u32..7,
            prop::option::of(20u8..=100),
            1u64..61,
            1u8..13,
        ),
        (
            1u64..21,
            1u64..21,
            1u8..5,
            1u32..4,
            prop::option::of(1u32..6),
        ),
        (
            prop::sample::select(vec![1.0f64, 1.5, 2.0]),
            prop::option::of(20u64..120),
        ),
    )
        .prop_map(
            |(
                (threshold, min_calls, rate, window, buckets),
                (cooldown, probe_timeout, k, m, cap),
                (factor, max),
            )| {
                Config {
                    failure_threshold: threshold,
                    min_calls,
                    failure_rate: rate,
                    window: window * S,
                    buckets,
                    cooldown: cooldown * S,
                    probe_timeout: probe_timeout * S,
                    half_open_max_probes: k,
                    half_open_required_successes: m,
                    max_in_flight: cap,
                    backoff_factor: factor,
                    max_cooldown: max.map(|m| m * S).filter(|&m| m >= cooldown * S),
                    ..Config::default()
                }
            },
        )
}

fn moves(t: &Transitions) -> Moves {
    for t in t {
        // Every transition goes by a listed route, into the state its reason names: the
        // route counters (and the exposition's `to` label) rely on both.
        assert!(
            t.route().index().is_some(),
            "{t:?} is on no route in ROUTES"
        );
        assert_eq!(t.to, t.reason.to(), "{t:?}");
    }
    t.iter().map(|t| (t.from, t.to, t.reason)).collect()
}

fn export(b: &Breaker, now: u64) -> Vec<u8> {
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b.export(now, &mut buf).unwrap();
    buf[..len].to_vec()
}

/// Runs one history on both; panics (failing the case) on the first divergence.
fn run_history(config: Config, ops: &[Op]) -> Result<(), TestCaseError> {
    let start = 1_000 * S;
    let mut b = Breaker::new(config, start).unwrap();
    let mut model = Model::new(config, start);
    let mut now = start;
    let mut held: Vec<(Permit, ModelPermit)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let before_state = b.state(now);
        match op {
            Op::Acquire => {
                let admission = b.acquire(now);
                if before_state == State::Open {
                    // Open never admits before its cooldown.
                    prop_assert!(
                        matches!(admission.decision, Err(r) if r.reason == RejectReason::Open),
                        "step {}: open admitted",
                        step
                    );
                }
                let (want, want_moves) = model.acquire(now);
                prop_assert_eq!(moves(&admission.transitions), want_moves, "step {}", step);
                match (admission.decision, want) {
                    (Ok(permit), Decision::Admitted { id, probe }) => {
                        prop_assert_eq!(permit.is_probe(), probe);
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
                        prop_assert_eq!(
                            (r.reason, r.retry_after),
                            (reason, retry_after),
                            "step {}",
                            step
                        );
                    }
                    (got, want) => {
                        prop_assert!(false, "step {}: core {:?}, model {:?}", step, got, want)
                    }
                }
            }
            Op::Record(i, outcome) => {
                if held.is_empty() {
                    continue;
                }
                let (permit, mp) = held.swap_remove(i % held.len());
                let before = b.metrics(now);
                let recorded = b.record(permit, *outcome, now);
                let (stale, want_moves) = model.record(mp, *outcome, now);
                prop_assert_eq!(recorded.stale, stale, "step {}", step);
                prop_assert_eq!(moves(&recorded.transitions), want_moves, "step {}", step);
                if stale {
                    // A stale outcome changes no counts and no state; it only releases what
                    // its permit held (a lingering probe's slot).
                    let after = b.metrics(now);
                    prop_assert_eq!(after.window, before.window);
                    prop_assert_eq!(
                        (after.state, after.epoch, after.in_flight),
                        (before.state, before.epoch, before.in_flight)
                    );
                    prop_assert!(after.probes_out <= before.probes_out);
                }
            }
            Op::Advance(by) => now += by,
            Op::Manual(m) => {
                let got = match m {
                    Manual::Isolate => b.isolate(now),
                    Manual::Release => b.release(now),
                    Manual::Disable => b.disable(now),
                    Manual::Reset => b.reset(now),
                };
                prop_assert_eq!(moves(&got), model.manual(*m, now), "step {}", step);
            }
            Op::Recycle => {
                // Only when nothing is out: permits do not cross instances.
                if model.in_flight.is_empty()
                    && model.probes.is_empty()
                    && model.lingering.is_empty()
                {
                    let bytes = export(&b, now);
                    let mut fresh = Breaker::new(config, now).unwrap();
                    fresh.import(&bytes, 0, now).unwrap();
                    prop_assert_eq!(export(&fresh, now), bytes.clone(), "round trip is exact");
                    prop_assert_eq!(fresh.metrics(now), b.metrics(now));
                    b = fresh;
                    held.clear();
                }
            }
        }
        // Invariants after every step.
        let m = b.metrics(now);
        // The route counters add up to the total, projected transitions included (so no
        // transition went by a route missing from ROUTES), and the last one is counted.
        prop_assert_eq!(
            m.transitions_by_route.iter().sum::<u64>(),
            m.transitions_total,
            "step {}",
            step
        );
        if let Some(last) = m.last_transition {
            prop_assert!(m.transitions(last.route()) >= 1, "step {}", step);
        }
        prop_assert_eq!(m.state, model.effective_state(now), "step {}", step);
        prop_assert!(m.probes_out <= config.half_open_max_probes);
        if m.state == State::HalfOpen && model.state == State::HalfOpen {
            prop_assert_eq!(
                m.probes_out,
                model.probes_out(model.now.max(now)),
                "step {}",
                step
            );
        }
        let (calls, faults) = model.window(model.now.max(now));
        if model.state == State::Closed || model.state == State::Disabled {
            prop_assert_eq!(
                (m.window.calls, m.window.faults),
                (calls, faults),
                "step {}",
                step
            );
        }
        if m.state == State::Closed {
            prop_assert_eq!(m.in_flight as usize, model.in_flight.len());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(6_000))]

    /// The breaker and the model make the same decisions on every random history.
    #[test]
    fn breaker_matches_reference_model(config in config(), ops in prop::collection::vec(op(true), 1..80)) {
        run_history(config, &ops)?;
    }
}

proptest! {
    #![proptest_config(cases(2_000))]

    /// Histories of client errors and successes never trip, whatever the config and timing.
    #[test]
    fn client_errors_never_trip(
        config in config(),
        codes in prop::collection::vec(prop_oneof![(100u16..429), (430u16..500)], 1..200),
        gaps in prop::collection::vec(0u64..5_000, 1..200),
    ) {
        let mut b = Breaker::new(config, 0).unwrap();
        let mut now = 0;
        for (code, gap) in codes.iter().zip(gaps.iter().cycle()) {
            now += gap * MS;
            let permit = b.acquire(now).decision.unwrap();
            let recorded = b.record(permit, Outcome::status(*code).unwrap(), now);
            prop_assert!(recorded.transitions.is_empty());
        }
        prop_assert_eq!(b.metrics(now).transitions_total, 0);
    }

    /// A fault older than the window never counts (the issue asks for "window plus one
    /// bucket"; the ring forgets by `window`), whenever in its bucket it landed, and
    /// whether the window is read or written next.
    #[test]
    fn old_faults_never_count(
        config in config(),
        faults in 1usize..50,
        offset in 0u64..100_000,
        later in 0u64..10_000,
    ) {
        let config = Config { failure_threshold: 1000, failure_rate: None, ..config };
        let mut b = Breaker::new(config, 0).unwrap();
        let at = offset * MS;
        for _ in 0..faults {
            let p = b.acquire(at).decision.unwrap();
            b.record(p, Outcome::Timeout, at);
        }
        let past = at + config.window + later * MS;
        prop_assert_eq!(b.metrics(past).window.faults, 0);
        let p = b.acquire(past).decision.unwrap();
        prop_assert_eq!(b.record(p, Outcome::Success, past).transitions.len(), 0);
        prop_assert_eq!(b.metrics(past).window.faults, 0);
    }
}

proptest! {
    #![proptest_config(cases(2_500))]

    /// No operation panics on any input: random configs, instants, raw permits, bytes.
    #[test]
    fn nothing_panics_on_any_input(
        raw in (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>(), any::<u8>(), any::<u8>(), any::<u16>()),
        steps in prop::collection::vec((any::<u8>(), any::<u64>(), any::<u64>(), any::<u16>()), 1..60),
        bytes in prop::collection::vec(any::<u8>(), 0..1100),
    ) {
        let (threshold, min_calls, window, cooldown, buckets, k, calls) = raw;
        let config = Config {
            failure_threshold: threshold % 8,
            min_calls: min_calls % 8,
            window: window % (100 * S),
            cooldown: cooldown % (100 * S),
            buckets,
            half_open_max_probes: k,
            window_calls: (calls % 3 == 0).then_some(calls),
            slow_call_duration: (calls % 5 == 0).then_some(window % (10 * S)),
            probe_timeout: cooldown % (50 * S),
            ..Config::default()
        };
        let Ok(mut b) = Breaker::new(config, window) else { return Ok(()) };
        for (kind, now, value, code) in steps {
            match kind % 8 {
                0 | 1 => { let _ = b.acquire(now); }
                2 => {
                    let raw = RawPermit { ticket: value, started: now.wrapping_sub(value) };
                    if let Ok(o) = Outcome::status(code) { let _ = b.record_raw(raw, o, now); }
                }
                3 => {
                    if let Ok(p) = b.acquire(now).decision {
                        let _ = b.record(p, Outcome::grpc((code % 20) as u8).unwrap_or(Outcome::Failure), value);
                    }
                }
                4 => { let _ = b.import(&bytes, value, now); }
                5 => { let mut buf = [0u8; MAX_EXPORT_LEN]; b.export(now, &mut buf).unwrap(); }
                6 => { let _ = (b.metrics(now), b.state(value)); }
                _ => { let _ = [b.isolate(now), b.release(now), b.disable(value), b.reset(now)]; }
            }
        }
    }
}
