//! Live reconfiguration: a new configuration on a breaker that keeps its state.

use super::Breaker;
use crate::config::{Config, ConfigError, Field, Rule};
use crate::time::Nanos;
use crate::transition::Transitions;
use crate::window::Window;

/// The result of [`Breaker::reconfigure`]: the event that reports the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconfigured {
    /// The window kept its outcomes (its shape did not change), or started empty now.
    pub window_kept: bool,
    /// Transitions time alone had made due, applied under the old configuration first.
    pub transitions: Transitions,
}

impl Breaker {
    /// Puts `config` in force at `now`, on a live breaker (SPEC § Reconfiguration).
    ///
    /// The same validation as [`Breaker::new`]: on a bad config, the error names the
    /// field, and the breaker is unchanged. Kept: the state and its epoch, so every permit
    /// out stays current; an opening in progress and when it ends; the probes out; the
    /// calls in flight; the counters. The window keeps its outcomes while its shape
    /// (`window-calls`, `window`, `buckets`) is the same, and starts empty otherwise. The
    /// next outcome is judged by the new rules; the next opening uses the new cooldown, its
    /// backoff starting over when `cooldown`, `backoff-factor` or `max-cooldown` changed,
    /// its jitter drawn from the new `jitter-seed` when that changed; a probe timeout the
    /// new config makes already past falls due now, not before.
    /// `fleet-quorum` and `slow-call-duration` cannot change on a live breaker (membership
    /// of a fleet, and the ring that tracks the calls in flight for hangs, are made with
    /// the breaker).
    ///
    /// ```
    /// use tripgate_core::{Breaker, Config, Outcome, State};
    ///
    /// let mut breaker = Breaker::new(Config::default(), 0).unwrap();
    /// for i in 0..3 {
    ///     let permit = breaker.acquire(i).decision.unwrap();
    ///     breaker.record(permit, Outcome::ConnectionError, i);
    /// }
    /// let tighter = Config { failure_threshold: 4, min_calls: 4, ..Config::default() };
    /// assert!(breaker.reconfigure(tighter, 10).unwrap().window_kept);
    /// let permit = breaker.acquire(11).decision.unwrap();
    /// breaker.record(permit, Outcome::ConnectionError, 11);
    /// assert_eq!(breaker.state(12), State::Open); // the fourth fault, by the new rule
    /// ```
    pub fn reconfigure(&mut self, config: Config, now: Nanos) -> Result<Reconfigured, ConfigError> {
        config.validate()?;
        fixed(&self.config, &config)?;
        let now = self.clock.observe(now);
        let transitions = self.settle(now);
        let window_kept = same_window(&self.config, &config);
        if !window_kept {
            self.window = Window::new(&config, now);
        }
        if self.config.cooldown != config.cooldown
            || self.config.backoff_factor.to_bits() != config.backoff_factor.to_bits()
            || self.config.max_cooldown != config.max_cooldown
        {
            self.phase.cooldown = config.cooldown;
        }
        if self.config.jitter_seed != config.jitter_seed {
            self.phase.rng = config.jitter_seed;
        }
        self.phase.retuned_at = Some(now);
        self.config = config;
        Ok(Reconfigured {
            window_kept,
            transitions,
        })
    }
}

/// The first field `new` changes that a live breaker must keep.
fn fixed(old: &Config, new: &Config) -> Result<(), ConfigError> {
    let changed = if old.fleet_quorum != new.fleet_quorum {
        Some(Field::FleetQuorum)
    } else if old.slow_call_duration != new.slow_call_duration {
        Some(Field::SlowCallDuration)
    } else {
        None
    };
    changed.map_or(Ok(()), |field| {
        Err(ConfigError {
            field,
            rule: Rule::Fixed,
        })
    })
}

/// Whether two configurations give the window the same shape.
fn same_window(old: &Config, new: &Config) -> bool {
    match (old.window_calls, new.window_calls) {
        (Some(a), Some(b)) => a == b,
        (None, None) => old.window == new.window && old.buckets == new.buckets,
        _ => false,
    }
}
