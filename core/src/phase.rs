//! Where the breaker is now: which state, since when, in which epoch, and how long the
//! current opening lasts. This is the part of the state machine that time alone moves,
//! and the one place a [`Transition`] is made.
//!
//! Kept apart from the counters so that a read (`state`, `metrics`) can copy it and play
//! time forward without touching the breaker: an `open` breaker whose cooldown has passed
//! *reads* `half-open` at once, and the transition is made for real, with the instant it
//! actually became due, by the next call that changes anything.

use crate::config::Config;
use crate::state::State;
use crate::time::{since, Nanos};
use crate::transition::{Reason, Transition};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Phase {
    pub(crate) state: State,
    pub(crate) epoch: u64,
    /// Instant the current state began.
    pub(crate) entered_at: Nanos,
    /// Length of the current opening (cooldown after backoff and jitter).
    pub(crate) open_for: Nanos,
    /// Cooldown after backoff, before jitter; back to the configured one on closing.
    pub(crate) cooldown: Nanos,
    /// Jitter generator state (SplitMix64), advanced once per opening.
    pub(crate) rng: u64,
    /// How long the upstream asked this opening to last (Retry-After; 0: nothing): a
    /// fleet's shorter opening does not cut it short.
    pub(crate) asked: Nanos,
    /// The last reconfiguration: a transition the new configuration makes due is dated
    /// no earlier (one the old one made due was applied at it).
    pub(crate) retuned_at: Option<Nanos>,
}

impl Phase {
    pub(crate) fn new(config: &Config, now: Nanos) -> Self {
        Self {
            state: State::Closed,
            epoch: 0,
            entered_at: now,
            open_for: config.cooldown,
            cooldown: config.cooldown,
            rng: config.jitter_seed,
            asked: 0,
            retuned_at: None,
        }
    }

    /// The transition that time alone has made due by `now`, with the instant it fell due.
    /// `oldest_probe` is the start of the longest-outstanding probe, if any.
    #[inline]
    pub(crate) fn due(
        &self,
        now: Nanos,
        oldest_probe: Option<Nanos>,
        config: &Config,
    ) -> Option<(State, Reason, Nanos)> {
        match self.state {
            State::Open if since(now, self.entered_at) >= self.open_for => Some((
                State::HalfOpen,
                Reason::CooldownElapsed,
                self.entered_at.wrapping_add(self.open_for),
            )),
            State::HalfOpen => oldest_probe
                .filter(|&start| since(now, start) >= config.probe_timeout)
                .map(|start| {
                    let due = start.wrapping_add(config.probe_timeout);
                    let at = self.retuned_at.map_or(due, |retuned| later(due, retuned));
                    (State::Open, Reason::ProbeTimeout, at)
                }),
            _ => None,
        }
    }

    /// Time left in the current opening at `now` (0 once it is over).
    pub(crate) fn remaining(&self, now: Nanos) -> Nanos {
        self.open_for.saturating_sub(since(now, self.entered_at))
    }

    /// Moves to `to` at `at`, for `reason`: a new epoch, and for `open` a new cooldown
    /// (backed off when a probe round failed, then jittered).
    pub(crate) fn enter(
        &mut self,
        to: State,
        reason: Reason,
        at: Nanos,
        config: &Config,
    ) -> Transition {
        match to {
            State::Open => {
                if self.state == State::HalfOpen {
                    self.cooldown = backoff(self.cooldown, config);
                }
                self.open_for = self.jittered(config);
            }
            State::Closed => self.cooldown = config.cooldown,
            _ => {}
        }
        self.switch(to, reason, at)
    }

    /// Opens for exactly `open_for` from `at`, without backoff or jitter, for `reason`:
    /// an imported state whose probes are still out waits for them (`restored`), and a
    /// fleet's open lasts what the fleet says (`fleet-open`); neither is a failed round.
    pub(crate) fn open_exactly(
        &mut self,
        at: Nanos,
        open_for: Nanos,
        reason: Reason,
    ) -> Transition {
        self.open_for = open_for;
        self.switch(State::Open, reason, at)
    }

    /// A transition outside the cooldown machinery (a fleet's close).
    pub(crate) fn close(&mut self, at: Nanos, reason: Reason, config: &Config) -> Transition {
        self.cooldown = config.cooldown;
        self.switch(State::Closed, reason, at)
    }

    /// Every transition is made here.
    fn switch(&mut self, to: State, reason: Reason, at: Nanos) -> Transition {
        let from = self.state;
        self.state = to;
        self.asked = 0;
        self.epoch = self.epoch.wrapping_add(1);
        self.entered_at = at;
        Transition {
            from,
            to,
            reason,
            at,
            epoch: self.epoch,
        }
    }

    fn jittered(&mut self, config: &Config) -> Nanos {
        if config.jitter_percent == 0 {
            return self.cooldown;
        }
        let draw = splitmix64(&mut self.rng) >> 32; // uniform in [0, 2^32)
        let draw = u32::try_from(draw).unwrap_or(u32::MAX);
        self.cooldown
            .saturating_add(jitter_extra(self.cooldown, config.jitter_percent, draw))
    }
}

/// `cooldown × percent × draw / 2³² / 100`, rounded down and saturated, computed exactly
/// in 32-bit limbs: a `u128` product and division would link about 1.2 KB of
/// compiler-builtins into the component, whose size is budgeted.
fn jitter_extra(cooldown: Nanos, percent: u8, draw: u32) -> Nanos {
    const LOW: u64 = 0xFFFF_FFFF;
    // Little-endian limbs of `cooldown × percent × draw` (below 2¹⁰⁴).
    let mut limbs = [cooldown & LOW, cooldown >> 32, 0, 0];
    for factor in [u64::from(percent), u64::from(draw)] {
        let mut carry = 0;
        for limb in &mut limbs {
            // A limb, a factor and a carry are each below 2³², so this stays below 2⁶⁴:
            // the wrapping forms never wrap.
            let t = limb.wrapping_mul(factor).wrapping_add(carry);
            *limb = t & LOW;
            carry = t >> 32;
        }
    }
    // Drop the lowest limb (÷ 2³²), then long division by 100 from the top limb down.
    let [_, l1, l2, l3] = limbs;
    let mut rest = 0;
    let mut quotient = [0u64; 3];
    for (q, limb) in quotient.iter_mut().zip([l3, l2, l1]) {
        let current = rest << 32 | limb;
        *q = current / 100;
        rest = current % 100;
    }
    let [q3, q2, q1] = quotient;
    if q3 != 0 {
        return Nanos::MAX;
    }
    q2 << 32 | q1
}

/// The later of two instants on the circle of instants.
fn later(a: Nanos, b: Nanos) -> Nanos {
    if since(a, b) < crate::time::HALF_CIRCLE {
        a
    } else {
        b
    }
}

/// The next cooldown after a re-open from half-open.
fn backoff(cooldown: Nanos, config: &Config) -> Nanos {
    // `as` from f64 saturates, and the product of two finite positive numbers is finite
    // or +inf, so this never wraps.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let grown = (cooldown as f64 * config.backoff_factor) as u64;
    // At most the longest cooldown the configuration allows (`max-cooldown`, else
    // `UNCAPPED_BACKOFF_BOUND` cooldowns): the bound an imported state or a fleet event is
    // held to, so the breaker's own openings never exceed it either.
    grown
        .max(cooldown)
        .min(config.longest_cooldown().max(cooldown))
}

/// SplitMix64 (Steele, Lea, Flood 2014): one multiply-xorshift step per draw.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limb arithmetic equals the plain `u128` formula it replaces, so jittered
    /// cooldowns (and the vectors that replay them) are unchanged.
    #[test]
    fn jitter_extra_is_the_u128_formula() {
        let reference = |c: u64, p: u8, d: u32| {
            let extra = (u128::from(c) * u128::from(p) * u128::from(d)) >> 32;
            u64::try_from(extra / 100).unwrap_or(u64::MAX)
        };
        let mut rng = 7;
        let edges = [
            0,
            1,
            99,
            100,
            15_000_000_000,
            1 << 32,
            u64::MAX / 100,
            u64::MAX,
        ];
        for round in 0..20_000 {
            let c = edges
                .get(round)
                .copied()
                .unwrap_or_else(|| splitmix64(&mut rng));
            for p in [0, 1, 37, 99, 100, u8::MAX] {
                let draw = splitmix64(&mut rng) >> 32;
                for d in [0, 1, u32::MAX, u32::try_from(draw).unwrap_or(0)] {
                    assert_eq!(jitter_extra(c, p, d), reference(c, p, d), "{c} {p} {d}");
                }
            }
        }
    }
}
