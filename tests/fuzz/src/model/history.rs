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
