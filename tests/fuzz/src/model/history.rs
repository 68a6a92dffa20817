//! Histories: the steps a property test or a fuzz input takes ([`Op`]), and
//! [`run_history`], which runs one on the core and on the [`Model`] side by side.

use tripgate_core::{
    Breaker, Config, Outcome, Permit, RawPermit, RejectReason, State, Transitions, MAX_EXPORT_LEN,
};

use super::{Decision, Model, ModelPermit, Moves};

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
    let mut pair = Pair {
        core: Breaker::new(config, start).map_err(|e| format!("config refused: {e}"))?,
        model: Model::new(config, 0),
        config,
        start,
        now: 0,
        held: Vec::new(),
    };
    for (step, op) in ops.iter().enumerate() {
        if matches!(op, Op::Record { .. }) && pair.held.is_empty() {
            continue;
        }
        pair.step(op)
            .and_then(|()| pair.invariants())
            .map_err(|e| format!("step {step}: {e}"))?;
    }
    Ok(())
}

/// The core and the model, run side by side through one history.
struct Pair {
    config: Config,
    /// The core's clock reading at the history's time 0.
    start: u64,
    core: Breaker,
    model: Model,
    /// The history's time.
    now: u64,
    /// The permits both hold, in the order they were admitted.
    held: Vec<(Permit, ModelPermit)>,
}

impl Pair {
    /// The core's clock reading at the history's time `t`.
    fn at(&self, t: u64) -> u64 {
        self.start.wrapping_add(t)
    }

    /// The instants a reading hands the core and the model.
    fn read(&self, reading: Reading) -> (u64, u64) {
        let now = self.now;
        match reading {
            Reading::Now => (self.at(now), now),
            Reading::Behind(by) => {
                let by = by % MAX_READING_OFFSET;
                (self.at(now).wrapping_sub(by), now.saturating_sub(by))
            }
            Reading::Absurd(k) => (
                self.at(now)
                    .wrapping_add((1 << 63) + k % MAX_READING_OFFSET),
                0,
            ),
        }
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Acquire(reading) => self.acquire(reading),
            Op::Record {
                index,
                outcome,
                raw,
                reading,
            } => self.record(index, outcome, raw, reading),
            Op::Advance(by) => {
                self.now += by;
                Ok(())
            }
            Op::Manual(m, reading) => {
                let (core_now, model_now) = self.read(reading);
                let got = match m {
                    Manual::Isolate => self.core.isolate(core_now),
                    Manual::Release => self.core.release(core_now),
                    Manual::Disable => self.core.disable(core_now),
                    Manual::Reset => self.core.reset(core_now),
                };
                ensure_eq!(moves(&got), self.model.manual(m, model_now), "transitions");
                Ok(())
            }
            Op::Recycle => self.recycle(),
        }
    }

    fn acquire(&mut self, reading: Reading) -> Result<(), String> {
        let (core_now, model_now) = self.read(reading);
        let before_state = self.core.state(core_now);
        let admission = self.core.acquire(core_now);
        if before_state == State::Open {
            ensure!(
                matches!(admission.decision, Err(r) if r.reason == RejectReason::Open),
                "open admitted"
            );
        }
        let (want, want_moves) = self.model.acquire(model_now);
        ensure_eq!(moves(&admission.transitions), want_moves, "transitions");
        match (admission.decision, want) {
            (Ok(permit), Decision::Admitted { id, probe }) => {
                ensure_eq!(permit.is_probe(), probe, "probe");
                ensure_eq!(permit.started(), self.at(self.model.now), "started");
                let epoch = self.model.epoch;
                self.held.push((permit, ModelPermit { id, epoch, probe }));
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
                    "rejection"
                );
            }
            (got, want) => return Err(format!("core {got:?}, model {want:?}")),
        }
        Ok(())
    }

    /// Records the held permit at `index` (modulo the number held, which is not zero).
    fn record(
        &mut self,
        index: usize,
        outcome: Outcome,
        raw: bool,
        reading: Reading,
    ) -> Result<(), String> {
        let (core_now, model_now) = self.read(reading);
        let (permit, mp) = self.held.swap_remove(index % self.held.len());
        let before = self.core.metrics(core_now);
        let recorded = if raw {
            let raw: RawPermit = permit.into_raw();
            self.core
                .record_raw(raw, outcome, core_now)
                .map_err(|e| format!("an issued permit is malformed: {e}"))?
        } else {
            self.core.record(permit, outcome, core_now)
        };
        let (stale, want_moves) = self.model.record(mp, outcome, model_now);
        ensure_eq!(recorded.stale, stale, "stale");
        ensure_eq!(moves(&recorded.transitions), want_moves, "transitions");
        if stale && recorded.transitions.is_empty() {
            // A stale outcome changes no counts and no state; it only releases what its
            // permit held (a lingering probe's slot).
            let after = self.core.metrics(core_now);
            ensure_eq!(after.window, before.window, "stale window");
            ensure_eq!(
                (after.state, after.epoch, after.in_flight),
                (before.state, before.epoch, before.in_flight),
                "stale outcome changed the breaker"
            );
            ensure!(
                after.probes_out <= before.probes_out,
                "a stale outcome took a probe slot"
            );
        }
        Ok(())
    }

    /// Export and import into a fresh breaker, when nothing is out.
    fn recycle(&mut self) -> Result<(), String> {
        let model = &mut self.model;
        if !(model.in_flight.is_empty() && model.probes.is_empty() && model.lingering.is_empty()) {
            return Ok(());
        }
        let at = self.at(self.now);
        let bytes = export(&self.core, at)?;
        let mut fresh = Breaker::new(self.config, at).map_err(|e| e.to_string())?;
        fresh
            .import(&bytes, 0, at)
            .map_err(|e| format!("own export refused: {e}"))?;
        ensure_eq!(export(&fresh, at)?, bytes, "round trip");
        ensure_eq!(fresh.metrics(at), self.core.metrics(at), "metrics");
        self.core = fresh;
        // The new instance's clock starts at the recycle.
        self.model.observe(self.now);
        self.held.clear();
        Ok(())
    }

    /// What must hold after every step.
    fn invariants(&self) -> Result<(), String> {
        let (now, model) = (self.now, &self.model);
        let m = self.core.metrics(self.at(now));
        // The route counters add up to the total, projected transitions included (so no
        // transition went by a route missing from ROUTES), the last one is counted, and it
        // entered the state its reason names (the exposition's `to` label relies on it).
        ensure_eq!(
            m.transitions_by_route.iter().sum::<u64>(),
            m.transitions_total,
            "transitions by route"
        );
        if let Some(last) = m.last_transition {
            ensure!(m.transitions(last.route()) >= 1, "{last:?} on no route");
            ensure_eq!(last.to, last.reason.to(), "{last:?}");
        }
        ensure_eq!(m.state, model.effective_state(now), "state");
        ensure!(
            m.probes_out <= self.config.half_open_max_probes,
            "{} probes out",
            m.probes_out
        );
        if m.state == State::HalfOpen && model.state == State::HalfOpen {
            ensure_eq!(
                m.probes_out,
                model.probes_out(model.now.max(now)),
                "probes out"
            );
        }
        let (calls, faults) = model.window(model.now.max(now));
        if model.state == State::Closed || model.state == State::Disabled {
            ensure_eq!((m.window.calls, m.window.faults), (calls, faults), "window");
        }
        if m.state == State::Closed {
            ensure_eq!(m.in_flight as usize, model.in_flight.len(), "in flight");
        }
        Ok(())
    }
}
