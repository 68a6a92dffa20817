//! Export and import of the breaker's whole state (the format: `crate::snapshot`).

use super::Breaker;
use crate::codec::{Reader, Writer};
use crate::config::Config;
use crate::inflight::InFlight;
use crate::metrics::{count_route, Stats};
use crate::phase::Phase;
use crate::probes::Probes;
use crate::snapshot::{
    age, age_plus, decode, shape, SnapshotError, MAGIC, MAX_IMPORT_EPOCH, VERSION,
};
use crate::state::State;
use crate::time::{since, Nanos, HALF_CIRCLE};
use crate::transition::{Reason, Transition};
use crate::window::Window;

impl Breaker {
    /// Writes the state as of `now` into `out`; returns the bytes written. A buffer of
    /// [`MAX_EXPORT_LEN`](crate::MAX_EXPORT_LEN) bytes always suffices.
    ///
    /// ```
    /// use tripgate_core::{Breaker, Config, Outcome, State, MAX_EXPORT_LEN, SECOND};
    ///
    /// let mut old = Breaker::new(Config::default(), 0).unwrap();
    /// for _ in 0..5 {
    ///     let permit = old.acquire(0).decision.unwrap();
    ///     old.record(permit, Outcome::Timeout, 0); // trips: open for 15 s
    /// }
    /// let mut bytes = [0u8; MAX_EXPORT_LEN];
    /// let len = old.export(10 * SECOND, &mut bytes).unwrap();
    ///
    /// // A new process whose clock reads 3 s, one second after the export.
    /// let mut new = Breaker::new(Config::default(), 3 * SECOND).unwrap();
    /// new.import(&bytes[..len], SECOND, 3 * SECOND).unwrap();
    /// assert_eq!(new.state(3 * SECOND), State::Open);
    /// assert_eq!(new.metrics(3 * SECOND).cooldown_remaining, 4 * SECOND);
    /// assert!(new.import(&bytes[..len - 1], 0, 3 * SECOND).is_err()); // truncated
    /// ```
    pub fn export(&self, now: Nanos, out: &mut [u8]) -> Result<usize, SnapshotError> {
        let now = self.clock.peek(now);
        // The phase goes out as it is, not as time has moved it: a transition that has
        // fallen due is made, and reported, by the importer's next call, as it would have
        // been here.
        let (mut phase, mut stats) = (self.phase, self.stats);
        let mut probes = self.probes.clone();
        // Probes still at the upstream (of this round or lingering) belong to the dead
        // instance; the importer must not send new ones before they would time out.
        let newest_out = self.probes.newest_out(now, self.config.probe_timeout);
        let projection = self.projected(now);
        if projection.probe_timeouts > 0 {
            // Except a probe timeout: it counts a fault and backs off, which the importer
            // could not redo without the probes, so it is made here.
            phase = projection.phase;
            stats.last = projection.last;
            stats.transitions = stats.transitions.saturating_add(projection.transitions);
            projection.add_routes(&mut stats.routes);
            stats.faults = stats.faults.saturating_add(projection.probe_timeouts);
            probes = Probes::new();
        }
        if let (State::Open, Some(newest)) = (phase.state, newest_out) {
            // Open a little longer if a probe of the dead instance could outlast the
            // cooldown (a cooldown shorter than a call).
            let until_timeout = self.config.probe_timeout.saturating_sub(since(now, newest));
            if until_timeout > phase.remaining(now) {
                phase.open_for = since(now, phase.entered_at).saturating_add(until_timeout);
            }
        }
        if phase.state == State::HalfOpen {
            if let Some(newest) = newest_out {
                // Probes out belong to the dead instance: wait until they would time out.
                let wait = self
                    .config
                    .probe_timeout
                    .saturating_sub(since(now, newest))
                    .max(1);
                let restored = phase.open_exactly(now, wait, Reason::Restored);
                stats.last = Some(restored);
                stats.transitions = stats.transitions.saturating_add(1);
                count_route(&mut stats.routes, restored.route());
                probes = Probes::new();
            }
        }

        let mut w = Writer::new(out);
        w.put(MAGIC);
        w.u8(VERSION);
        shape(&self.window, &mut w);
        w.u8(phase.state.code());
        w.u64(phase.epoch);
        w.u64(age(now, phase.entered_at));
        w.u64(phase.open_for);
        w.u64(phase.cooldown);
        w.u64(phase.rng);
        w.u32(probes.successes);
        w.u32(probes.judged);
        w.u64(stats.admitted);
        w.u64s(&stats.rejected);
        w.u64s(&[
            stats.successes,
            stats.faults,
            stats.stale,
            stats.transitions,
        ]);
        w.u64s(&stats.routes);
        match stats.last {
            Some(t) => {
                w.u8(1);
                w.u8(t.from.code());
                w.u8(t.to.code());
                w.u8(t.reason.code());
                w.u64(age(now, t.at));
                w.u64(t.epoch);
            }
            None => w.u8(0),
        }
        self.window.encode(&mut w, now);
        w.seal().ok_or(SnapshotError::BufferTooSmall)
    }

    /// Replaces the state with one exported `elapsed` nanoseconds ago (by the exporter's
    /// reckoning), as of `now`. On error nothing changes. A breaker that has issued
    /// permits or left epoch 0 starts an epoch past both its own and the imported one, so
    /// none of its permits can count against the imported state, through any number of
    /// imports; a fresh breaker takes the state exactly. Epochs above [`MAX_IMPORT_EPOCH`]
    /// are refused, and so are ages of 2⁶³ ns or more (instants after the export). The
    /// state is bounded by this breaker's configuration: its opening lasts at most
    /// [`Config::longest_opening`](crate::Config::longest_opening) (or one `probe-timeout`
    /// for probes still out), and its backed-off cooldown lies within what the
    /// configuration can make.
    pub fn import(
        &mut self,
        bytes: &[u8],
        elapsed: Nanos,
        now: Nanos,
    ) -> Result<(), SnapshotError> {
        let now = self.clock.peek(now);
        let mut r = self.read_header(bytes)?;
        let ages = Ages { now, elapsed };
        let mut phase = read_phase(&mut r, ages)?;
        let probes = read_probes(&mut r, phase.state)?;
        let stats = read_stats(&mut r, phase.epoch, ages)?;
        bound_by_config(&mut phase, stats.last, &self.config);
        let window = self.window.decode(&mut r, now, elapsed)?;
        if !r.is_empty() {
            return Err(SnapshotError::TrailingBytes);
        }
        self.take_imported(phase, window, probes, stats, now);
        Ok(())
    }

    /// A reader past the header of `bytes`, once they are an intact state of this version
    /// exported by a breaker whose window has this one's shape.
    fn read_header<'b>(&self, bytes: &'b [u8]) -> Result<Reader<'b>, SnapshotError> {
        let (mut r, intact) = Reader::open(bytes)?;
        if r.take::<3>().map_err(|_| SnapshotError::NotAState)? != MAGIC {
            return Err(SnapshotError::NotAState);
        }
        let version = r.u8()?;
        if version != VERSION {
            return Err(SnapshotError::UnsupportedVersion(version));
        }
        if !intact {
            return Err(SnapshotError::Checksum);
        }
        let mut expected = [0u8; 11];
        let mut shape_out = Writer::new(&mut expected);
        shape(&self.window, &mut shape_out);
        if r.take::<11>()? != expected {
            return Err(SnapshotError::WindowShape);
        }
        Ok(r)
    }

    /// Takes the imported state, keeping this breaker's configuration and fleet membership.
    fn take_imported(
        &mut self,
        mut phase: Phase,
        window: Window,
        probes: Probes,
        stats: Stats,
        now: Nanos,
    ) {
        let mut clock = self.clock;
        clock.observe(now);
        // Whether this breaker may have issued permits: it admitted calls, or it has left
        // epoch 0 (by a transition, or by an earlier import, which also replaced the
        // `admitted` counter).
        if self.stats.admitted > 0 || self.phase.epoch > 0 {
            // Permits this breaker issued must not count against the imported state:
            // start an epoch past both, so every one of them is stale.
            phase.epoch = phase.epoch.max(self.phase.epoch).saturating_add(1);
        }
        *self = Breaker {
            config: self.config,
            clock,
            phase,
            window,
            in_flight: InFlight::new(self.config.slow_call_duration, now),
            probes,
            stats,
            // The shadow counters are this breaker's: an export does not carry them.
            shadow_rejected: self.shadow_rejected,
            asked: 0,
            // Fleet membership belongs to the process, not to the state: the adapter
            // reconciles the imported breaker with the store.
            fleet: self.fleet.clone(),
        };
    }
}

/// Instants are rebuilt as `now - (age + elapsed)` on the importer's clock.
#[derive(Clone, Copy)]
struct Ages {
    now: Nanos,
    elapsed: Nanos,
}

impl Ages {
    /// The instant an age read from the bytes stands for. An age of half the circle or more
    /// would be an instant after the export: no exporter writes one (see `age`).
    fn at(self, age: Nanos) -> Result<Nanos, SnapshotError> {
        if age >= HALF_CIRCLE {
            return Err(SnapshotError::Corrupt("age"));
        }
        Ok(self.now.wrapping_sub(age_plus(age, self.elapsed)))
    }
}

fn read_phase(r: &mut Reader<'_>, ages: Ages) -> Result<Phase, SnapshotError> {
    let state = decode(State::from_code, r.u8()?, "state")?;
    let epoch = r.u64()?;
    if epoch > MAX_IMPORT_EPOCH {
        return Err(SnapshotError::Corrupt("epoch"));
    }
    let phase = Phase {
        state,
        epoch,
        entered_at: ages.at(r.u64()?)?,
        open_for: r.u64()?,
        cooldown: r.u64()?,
        rng: r.u64()?,
        asked: 0,
        retuned_at: None,
    };
    if phase.open_for == 0 || phase.cooldown == 0 {
        return Err(SnapshotError::Corrupt("cooldown"));
    }
    Ok(phase)
}

fn read_probes(r: &mut Reader<'_>, state: State) -> Result<Probes, SnapshotError> {
    let mut probes = Probes::new();
    probes.successes = r.u32()?;
    probes.judged = r.u32()?;
    if probes.successes > probes.judged || (state != State::HalfOpen && probes.judged != 0) {
        return Err(SnapshotError::Corrupt("probe counts"));
    }
    Ok(probes)
}

/// The lifetime counters and the last transition, whose epoch is no later than the
/// phase's `epoch`.
fn read_stats(r: &mut Reader<'_>, epoch: u64, ages: Ages) -> Result<Stats, SnapshotError> {
    let mut stats = Stats {
        admitted: r.u64()?,
        ..Stats::default()
    };
    r.u64s(&mut stats.rejected)?;
    stats.successes = r.u64()?;
    stats.faults = r.u64()?;
    stats.stale = r.u64()?;
    stats.transitions = r.u64()?;
    r.u64s(&mut stats.routes)?;
    stats.last = match r.u8()? {
        0 => None,
        1 => Some(Transition {
            from: decode(State::from_code, r.u8()?, "last transition")?,
            to: decode(State::from_code, r.u8()?, "last transition")?,
            reason: decode(Reason::from_code, r.u8()?, "last transition")?,
            at: ages.at(r.u64()?)?,
            epoch: r.u64()?,
        }),
        _ => return Err(SnapshotError::Corrupt("last transition")),
    };
    if stats.last.is_some_and(|t| t.epoch > epoch) {
        return Err(SnapshotError::Corrupt("last transition"));
    }
    Ok(stats)
}

/// SPEC.md § Export and import: an imported state is bounded by the importing breaker's
/// configuration, whatever the bytes (or a clock that stamped them) claim. Its cooldown
/// after backoff lies between the configured cooldown and the longest one the
/// configuration backs off to, and its opening lasts at most the configuration's longest
/// opening, or one `probe-timeout` when it waits for probes still out (a `restored`
/// opening, or one the exporter lengthened past its cooldown for a retired probe). The
/// bound is on the opening's length, counted from when it began, so importing the same
/// bytes again never extends it: a cooldown lowered during an outage shortens the opening
/// under way at the next import.
fn bound_by_config(phase: &mut Phase, last: Option<Transition>, config: &Config) {
    let waits_for_probes = phase.open_for > config.most_jittered(phase.cooldown)
        || last.is_some_and(|t| t.reason == Reason::Restored && t.epoch == phase.epoch);
    phase.cooldown = phase
        .cooldown
        .max(config.cooldown)
        .min(config.longest_cooldown());
    let mut longest = config.longest_opening();
    if waits_for_probes {
        longest = longest.max(config.probe_timeout);
    }
    phase.open_for = phase.open_for.min(longest);
}
