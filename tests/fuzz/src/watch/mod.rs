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

mod calls;
mod snapshots;

use arbitrary::{Result, Unstructured};
use tripgate_core::{
    Breaker, Config, Metrics, Outcome, RawPermit, State, Transition, Transitions, MAX_EXPORT_LEN,
    REJECT_REASONS,
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

/// The longest age exported bytes hold (the state's, the last transition's; the layout is
/// documented in the core's `snapshot.rs`), which may exceed what the metrics show (a
/// projected transition is newer than the stored one).
fn stored_age(bytes: &[u8]) -> u64 {
    let u64_at = |at: usize| {
        bytes
            .get(at..at + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    // The last transition's flag follows the ten lifetime counters and the route counters;
    // its age follows the flag, from, to and reason.
    let flag = 144 + 8 * tripgate_core::ROUTE_COUNT;
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
