//! The options every fleet adapter takes and the bounds they keep, so that members of every
//! host refuse the same values and pace themselves alike: the timings, the shared key's
//! least length, and the reconnect backoff.

use crate::time::{Nanos, MILLISECOND, SECOND};

crate::table::table! {
    /// An option of a fleet member, named as the wire format's docs name it.
    pub enum FleetOption {
        /// The fleet's name.
        Name = 0 => "name",
        /// The shared HMAC key.
        Key = 1 => "key",
        /// How often the member reads the fleet's state back from the keys.
        ReconcileInterval = 2 => "reconcile-interval",
        /// A store command that takes longer than this makes the member degraded.
        StoreTimeout = 3 => "store-timeout",
        /// The longest wait between reconnection attempts.
        MaxBackoff = 4 => "max-backoff",
        /// The member's stable name or id.
        Member = 5 => "member",
    }
}

/// The least length of a shared key, in bytes.
pub const MIN_KEY_BYTES: usize = 16;

impl FleetOption {
    /// The default, least and greatest value of a duration option.
    pub const fn bounds(self) -> Option<(Nanos, Nanos, Nanos)> {
        match self {
            Self::ReconcileInterval => Some((SECOND, 10 * MILLISECOND, 3600 * SECOND)),
            Self::StoreTimeout => Some((250 * MILLISECOND, MILLISECOND, 60 * SECOND)),
            Self::MaxBackoff => Some((SECOND, 10 * MILLISECOND, 60 * SECOND)),
            Self::Name | Self::Key | Self::Member => None,
        }
    }

    /// A duration for this option, or the rule it breaks (`must be between 10 ms and
    /// 3600000 ms`); a duration option's default for `None`.
    pub fn duration(self, value: Option<Nanos>) -> Result<Nanos, OptionError> {
        let Some((default, least, most)) = self.bounds() else {
            return Err(OptionError {
                option: self,
                least: 0,
                most: 0,
            });
        };
        match value {
            None => Ok(default),
            Some(value) if (least..=most).contains(&value) => Ok(value),
            Some(_) => Err(OptionError {
                option: self,
                least,
                most,
            }),
        }
    }
}

/// A duration option out of its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// The option.
    pub option: FleetOption,
    /// Its least value, in ns.
    pub least: Nanos,
    /// Its greatest value, in ns.
    pub most: Nanos,
}

impl core::fmt::Display for OptionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} must be between {} ms and {} ms",
            self.option.name(),
            self.least / MILLISECOND,
            self.most / MILLISECOND
        )
    }
}

/// How long to wait between attempts to reach the store: from 10 ms, doubling up to the
/// member's `max-backoff`, spread by a deterministic jitter (so a fleet does not reconnect
/// in step). It starts over only once a session has stayed up for `max-backoff`: a store
/// that answers and then fails at once (a command it refuses, a connection it drops) is
/// retried ever more slowly, not in a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    max: Nanos,
    next: Nanos,
    up_at: Option<Nanos>,
    seed: u64,
}

/// The first wait.
const FIRST: Nanos = 10 * MILLISECOND;

impl Backoff {
    /// A backoff up to `max`, its jitter drawn from `seed` (the member's id, say).
    pub fn new(max: Nanos, seed: u64) -> Self {
        Self {
            max,
            next: FIRST.min(max),
            up_at: None,
            seed,
        }
    }

    /// The store answered at `now`.
    pub fn up(&mut self, now: Nanos) {
        self.up_at = Some(now);
    }

    /// The store failed at `now`: how long to wait before trying again.
    pub fn down(&mut self, now: Nanos) -> Nanos {
        if self
            .up_at
            .take()
            .is_some_and(|at| now.saturating_sub(at) >= self.max)
        {
            self.next = FIRST.min(self.max);
        }
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        // Between three quarters and five quarters of the step, never past `max`.
        self.seed = self
            .seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let spread = (self.seed >> 33) % 1024; // 0..1024
        let jittered = (wait / 1024)
            .saturating_mul(768_u64.saturating_add(spread / 2))
            .saturating_add(wait % 1024);
        jittered.clamp(1, self.max.max(1))
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    #[test]
    fn every_adapter_refuses_the_same_timings_in_the_same_words() {
        let interval = FleetOption::ReconcileInterval;
        assert_eq!(interval.duration(None), Ok(SECOND));
        assert_eq!(
            interval.duration(Some(10 * MILLISECOND)),
            Ok(10 * MILLISECOND)
        );
        let too_long = interval.duration(Some(1 << 62)).unwrap_err();
        assert_eq!(
            alloc::format!("{too_long}"),
            "reconcile-interval must be between 10 ms and 3600000 ms"
        );
        assert!(FleetOption::StoreTimeout.duration(Some(0)).is_err());
        assert!(FleetOption::MaxBackoff.duration(Some(61 * SECOND)).is_err());
    }

    #[test]
    fn backoff_doubles_and_starts_over_only_after_a_healthy_session() {
        let mut b = Backoff::new(SECOND, 7);
        let mut waits = alloc::vec::Vec::new();
        let mut now = 0;
        for _ in 0..10 {
            // Up, then down at once: a session that got going is no reason to start over.
            b.up(now);
            now += MILLISECOND;
            let wait = b.down(now);
            waits.push(wait);
            now += wait;
        }
        assert!(waits[0] <= 13 * MILLISECOND, "{waits:?}");
        assert!(waits.windows(2).take(6).all(|w| w[1] > w[0]), "{waits:?}");
        assert!(
            waits[9] >= 3 * SECOND / 4 && waits[9] <= SECOND,
            "{waits:?}"
        );
        // A session that stays up for max-backoff starts it over.
        b.up(now);
        assert!(b.down(now + SECOND) <= 13 * MILLISECOND);
    }
}
