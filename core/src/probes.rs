//! Half-open bookkeeping: which probe slots are taken, when each probe started, and how
//! the probes that answered did.
//!
//! At most K ≤ 64 probes are out at once, so a bitmask and 64 start instants are enough,
//! and a probe's permit names its slot. Knowing every probe's start is what lets a leaked
//! probe time out instead of wedging the breaker.

use crate::config::MAX_PROBES;
use crate::time::{since, Nanos};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Probes {
    /// Bit `i` set: slot `i` has a probe out.
    busy: u64,
    started: [Nanos; MAX_PROBES as usize],
    /// Probe successes this half-open epoch.
    pub(crate) successes: u32,
    /// Probe outcomes judged (success or fault) this half-open epoch.
    pub(crate) judged: u32,
}

impl Probes {
    pub(crate) fn new() -> Self {
        Self {
            busy: 0,
            started: [0; MAX_PROBES as usize],
            successes: 0,
            judged: 0,
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }

    pub(crate) fn out(&self) -> u8 {
        u8::try_from(self.busy.count_ones()).unwrap_or(MAX_PROBES)
    }

    /// Takes a free slot if fewer than `limit` probes are out.
    #[inline]
    pub(crate) fn admit(&mut self, limit: u8, now: Nanos) -> Option<u8> {
        if self.out() >= limit {
            return None;
        }
        let slot = u8::try_from((!self.busy).trailing_zeros()).ok()?;
        let start = self.started.get_mut(usize::from(slot))?;
        *start = now;
        self.busy |= 1u64.checked_shl(u32::from(slot))?;
        Some(slot)
    }

    /// Frees `slot` if `started` is its probe; false for a slot that is not out (a permit
    /// recorded twice, or forged).
    pub(crate) fn release(&mut self, slot: u8, started: Nanos) -> bool {
        let Some(mask) = 1u64.checked_shl(u32::from(slot)) else {
            return false;
        };
        let matches = self.started.get(usize::from(slot)) == Some(&started);
        if self.busy & mask == 0 || !matches {
            return false;
        }
        self.busy &= !mask;
        true
    }

    /// Start instants of the probes that are out (one step per probe, not per slot).
    fn starts(&self) -> impl Iterator<Item = Nanos> + '_ {
        let mut busy = self.busy;
        core::iter::from_fn(move || {
            let slot = busy.trailing_zeros();
            busy &= busy.wrapping_sub(1);
            let index = usize::try_from(slot).ok()?;
            self.started.get(index).copied()
        })
    }

    /// Start of the probe that has been out longest, as seen from `now`.
    pub(crate) fn oldest(&self, now: Nanos) -> Option<Nanos> {
        self.starts().max_by_key(|&start| since(now, start))
    }

    /// Start of the probe that has been out shortest, as seen from `now`.
    pub(crate) fn newest(&self, now: Nanos) -> Option<Nanos> {
        self.starts().min_by_key(|&start| since(now, start))
    }
}
