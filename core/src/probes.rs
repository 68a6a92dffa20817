//! Half-open bookkeeping: which probe slots are taken, when each probe started, and how
//! the probes that answered did.
//!
//! At most K ≤ 64 probes are out at once, so a bitmask and 64 start instants are enough,
//! and a probe's permit names its slot. Knowing every probe's start is what lets a leaked
//! probe time out instead of wedging the breaker.
//!
//! A re-open retires the round's probes, but the calls themselves may still be at the
//! upstream. They *linger*: they keep their slots, so the next half-open round admits only
//! as many new probes as keep the upstream at K, until each lingering probe's (stale)
//! outcome arrives or its `probe-timeout` passes. They count toward nothing else.

use crate::config::MAX_PROBES;
use crate::time::{since, Nanos};

#[derive(Clone, Debug)]
pub(crate) struct Probes {
    /// Bit `i` set: slot `i` has a probe out (of this round, or lingering).
    busy: u64,
    /// The subset of `busy` left over from an earlier round.
    lingering: u64,
    started: [Nanos; MAX_PROBES as usize],
    /// Probe successes this half-open round.
    pub(crate) successes: u32,
    /// Probe outcomes judged (success or fault) this half-open round.
    pub(crate) judged: u32,
}

/// Equal when they hold the same probes: start instants of free slots are left over from
/// earlier probes and mean nothing (see [`Probes::clear`]).
impl PartialEq for Probes {
    fn eq(&self, other: &Self) -> bool {
        (self.busy, self.lingering, self.successes, self.judged)
            == (other.busy, other.lingering, other.successes, other.judged)
            && self.starts(self.busy).eq(other.starts(other.busy))
    }
}

fn bit(slot: u8) -> u64 {
    1u64.checked_shl(u32::from(slot)).unwrap_or(0)
}

impl Probes {
    pub(crate) fn new() -> Self {
        Self {
            busy: 0,
            lingering: 0,
            started: [0; MAX_PROBES as usize],
            successes: 0,
            judged: 0,
        }
    }

    /// Forgets every probe (the breaker closed or tripped, or an operator took over).
    /// The start instants stay: only slots in `busy` are ever read, and rewriting all 64
    /// was most of the cost of the transition that trips a breaker.
    pub(crate) fn clear(&mut self) {
        self.busy = 0;
        self.lingering = 0;
        self.successes = 0;
        self.judged = 0;
    }

    /// Ends a half-open round: its probes linger, its counts start again.
    pub(crate) fn retire(&mut self) {
        self.lingering = self.busy;
        self.successes = 0;
        self.judged = 0;
    }

    /// Probes out, lingering ones included unless `probe_timeout` has passed for them.
    pub(crate) fn out(&self, now: Nanos, probe_timeout: Nanos) -> u8 {
        let expired = self.expired(now, probe_timeout);
        u8::try_from((self.busy & !expired).count_ones()).unwrap_or(MAX_PROBES)
    }

    /// Lingering probes whose `probe_timeout` has passed.
    fn expired(&self, now: Nanos, probe_timeout: Nanos) -> u64 {
        slots(self.lingering)
            .filter(|&slot| {
                self.started
                    .get(usize::from(slot))
                    .is_some_and(|&start| since(now, start) >= probe_timeout)
            })
            .fold(0, |mask, slot| mask | bit(slot))
    }

    /// Takes a free slot if fewer than `limit` probes are out.
    #[inline]
    pub(crate) fn admit(&mut self, limit: u8, now: Nanos, probe_timeout: Nanos) -> Option<u8> {
        if self.lingering != 0 {
            let expired = self.expired(now, probe_timeout);
            self.busy &= !expired;
            self.lingering &= !expired;
        }
        if u8::try_from(self.busy.count_ones()).unwrap_or(MAX_PROBES) >= limit {
            return None;
        }
        let slot = u8::try_from((!self.busy).trailing_zeros()).ok()?;
        let start = self.started.get_mut(usize::from(slot))?;
        *start = now;
        self.busy |= bit(slot);
        Some(slot)
    }

    /// Frees `slot` if `started` is its probe of this round; false otherwise (a permit
    /// recorded twice, or forged).
    pub(crate) fn release(&mut self, slot: u8, started: Nanos) -> bool {
        self.free(slot, started, self.busy & !self.lingering)
    }

    /// Frees `slot` if `started` is its lingering probe: a stale probe's outcome releases
    /// the slot it held, and nothing else.
    pub(crate) fn release_lingering(&mut self, slot: u8, started: Nanos) -> bool {
        self.free(slot, started, self.lingering)
    }

    fn free(&mut self, slot: u8, started: Nanos, among: u64) -> bool {
        let mask = bit(slot);
        let matches = self.started.get(usize::from(slot)) == Some(&started);
        if among & mask == 0 || !matches {
            return false;
        }
        self.busy &= !mask;
        self.lingering &= !mask;
        true
    }

    /// Whether `slot` is held by the probe that started at `started`: of this round when
    /// `current`, else lingering and not yet past `probe_timeout`.
    pub(crate) fn holds(
        &self,
        slot: u8,
        started: Nanos,
        current: bool,
        now: Nanos,
        probe_timeout: Nanos,
    ) -> bool {
        let among = if current {
            self.busy & !self.lingering
        } else {
            self.lingering & !self.expired(now, probe_timeout)
        };
        among & bit(slot) != 0 && self.started.get(usize::from(slot)) == Some(&started)
    }

    /// Start instants of the probes in `mask` (one step per probe, not per slot).
    fn starts(&self, mask: u64) -> impl Iterator<Item = Nanos> + '_ {
        slots(mask).filter_map(|slot| self.started.get(usize::from(slot)).copied())
    }

    /// Start of this round's probe that has been out longest, as seen from `now`: the one
    /// whose timeout re-opens the breaker.
    pub(crate) fn oldest_current(&self, now: Nanos) -> Option<Nanos> {
        self.starts(self.busy & !self.lingering)
            .max_by_key(|&start| since(now, start))
    }

    /// Start of the probe (of any round) that has been out shortest among those whose
    /// `probe_timeout` has not passed: the last one that can still reach the upstream.
    pub(crate) fn newest_out(&self, now: Nanos, probe_timeout: Nanos) -> Option<Nanos> {
        self.starts(self.busy)
            .filter(|&start| since(now, start) < probe_timeout)
            .min_by_key(|&start| since(now, start))
    }

    /// Start of the probe (of any round) that has been out longest.
    pub(crate) fn oldest(&self, now: Nanos) -> Option<Nanos> {
        self.starts(self.busy)
            .max_by_key(|&start| since(now, start))
    }
}

/// The set bits of `mask`, lowest first.
fn slots(mut mask: u64) -> impl Iterator<Item = u8> {
    core::iter::from_fn(move || {
        let slot = u8::try_from(mask.trailing_zeros())
            .ok()
            .filter(|&s| s < MAX_PROBES)?;
        mask &= mask.wrapping_sub(1);
        Some(slot)
    })
}
