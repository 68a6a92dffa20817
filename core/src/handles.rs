//! A table of outstanding permits, for hosts that hand callers one small number per
//! permit (feature `alloc`).
//!
//! The core's plain-number permit is two `u64`s (ticket and start instant): more than one
//! JS number holds, and more than one WebAssembly scalar. A host keeps the outstanding
//! permits here instead and hands out a *handle*: `counter << 1 | probe`, below 2³⁰, so
//! it is a V8 small integer (a Smi even with pointer compression) and fits in a `u32`.
//! The JS package and the component's keyed hot path (whose tickets carry a handle below
//! the breaker's key) share this table.
//!
//! ## How long a number stays unique
//!
//! `counter` is the breaker's own 29-bit counter, bumped for every permit (it starts at a
//! different place in each breaker). The table is open-addressed by `counter`: a permit
//! sits at `counter mod size`, and a counter value whose place is taken by a permit still
//! out is skipped. The table is never more than half full, so at least half the counter
//! values go to permits: a permit number comes back only after the counter has gone all
//! the way round, that is after more than 2²⁸ − 2²² (over 264 million) further permits
//! from the same breaker (the 2²² allows for the places the table's growth moves). A late
//! or duplicate `record` of an old number is therefore stale (it matches no permit out),
//! instead of landing on a newer call, as it did with 7-bit generations (128 reuses).
//! A permit given to the wrong breaker matches a permit there only if that breaker's
//! counter is within its permits out of the same value: the starting places are spread
//! over the counter's range, so in practice it matches nothing and counts as stale.
//!
//! ## Leaks
//!
//! A permit never recorded keeps its place. Before the table grows, it drops every entry
//! that the core says holds nothing (`Breaker::holds`): normal permits of ended epochs,
//! and probes of ended rounds once past their probe timeout. Leaks therefore cost memory
//! only while they still count. At most 2²⁰ permits can be out at once; beyond, `acquire`
//! rejects as `saturated`.

use alloc::vec;
use alloc::vec::Vec;

use crate::permit::{Permit, RawPermit};
use crate::time::Nanos;

/// Bits of a handle: below 2³⁰, a small integer on every V8 build.
pub const HANDLE_BITS: u32 = 30;
/// Handles are below this.
pub const HANDLE_LIMIT: u32 = 1 << HANDLE_BITS;
const COUNTER_MASK: u32 = (HANDLE_LIMIT >> 1) - 1;
/// Most permits out at once per breaker.
pub const MAX_OUTSTANDING: usize = 1 << 20;
/// Largest table: at most half full.
const MAX_SLOTS: usize = 2 * MAX_OUTSTANDING;
const MIN_SLOTS: usize = 16;
/// A place no permit holds (no handle has all 32 bits set).
const EMPTY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    handle: u32,
    permit: RawPermit,
}

const VACANT: Entry = Entry {
    handle: EMPTY,
    permit: RawPermit {
        ticket: 0,
        started: 0,
    },
};

/// Outstanding permits, by handle.
#[derive(Debug)]
pub struct PermitTable {
    entries: Vec<Entry>,
    live: usize,
    next: u32,
    /// When the table was last swept at its largest size: the epoch and instant. A full
    /// table at its largest is swept again only in another epoch or `resweep` later (when
    /// a retired probe may have passed its probe timeout), so a saturated breaker does not
    /// sweep 2²¹ entries on every rejected call.
    swept_full: Option<(u64, Nanos)>,
    resweep: Nanos,
    /// Most places the table may grow to ([`Self::limit_places`]).
    limit: usize,
}

impl PermitTable {
    /// An empty table whose counter starts at `start`; a full table at its largest is
    /// swept at most once per epoch and `resweep`.
    pub fn new(start: u32, resweep: Nanos) -> Self {
        Self {
            entries: Vec::new(),
            live: 0,
            next: start & COUNTER_MASK,
            swept_full: None,
            resweep,
            limit: MAX_SLOTS,
        }
    }

    /// Caps the places the table may grow to (at most 2²¹, twice the permits it may hold):
    /// a host that keeps many tables in one memory shares a budget of places out among
    /// them. A table never shrinks below its places for this; it only stops growing.
    pub fn limit_places(&mut self, places: usize) {
        self.limit = places.min(MAX_SLOTS);
    }

    /// Permits out (not yet recorded or dropped).
    pub fn live(&self) -> usize {
        self.live
    }

    /// Places in the table.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Stores a permit and returns its handle; the permit back when 2²⁰ are out, or when
    /// the table is as large as its limit allows and full of permits that still hold.
    /// `holds` says whether a stored permit still holds anything; `moment` is the epoch
    /// and instant, asked only when a full table at its largest size might be swept.
    pub fn insert(
        &mut self,
        permit: Permit,
        mut holds: impl FnMut(&Permit) -> bool,
        moment: impl FnOnce() -> (u64, Nanos),
    ) -> Result<u32, Permit> {
        if !self.fits_one_more() && !self.make_room(&mut holds, moment) {
            return Err(permit);
        }
        let probe = u32::from(permit.is_probe());
        let mask = self.entries.len().saturating_sub(1);
        // At most half full: this finds a free place within a few steps.
        loop {
            let counter = self.next;
            self.next = counter.wrapping_add(1) & COUNTER_MASK;
            let Some(entry) = self.entries.get_mut(place(counter, mask)) else {
                return Err(permit);
            };
            if entry.handle == EMPTY {
                let handle = counter << 1 | probe;
                *entry = Entry {
                    handle,
                    permit: permit.into_raw(),
                };
                self.live = self.live.saturating_add(1);
                return Ok(handle);
            }
        }
    }

    /// Sweeps, then grows if the sweep left the table more than 3/8 full (so the next
    /// sweep is at least 1/8 of the table away). Whether one more permit now fits.
    fn make_room(
        &mut self,
        holds: &mut impl FnMut(&Permit) -> bool,
        moment: impl FnOnce() -> (u64, Nanos),
    ) -> bool {
        let len = self.entries.len();
        if len >= self.largest() {
            let (epoch, now) = moment();
            let recent = self
                .swept_full
                .is_some_and(|(e, at)| e == epoch && now.wrapping_sub(at) < self.resweep);
            if recent {
                return false;
            }
            self.swept_full = Some((epoch, now));
        }
        if len > 0 {
            self.sweep(holds);
        }
        let after = self.live.saturating_add(1);
        if after.saturating_mul(8) > len.saturating_mul(3) && len < self.largest() {
            self.grow();
        }
        self.fits_one_more()
    }

    /// The largest the table may grow to: its limit, rounded down to a power of two.
    fn largest(&self) -> usize {
        match self.limit.checked_ilog2() {
            Some(bits) => 1 << bits,
            None => 0,
        }
        .max(MIN_SLOTS)
    }

    /// Whether one more permit keeps the table at most half full.
    fn fits_one_more(&self) -> bool {
        self.live.saturating_add(1).saturating_mul(2) <= self.entries.len()
    }

    /// Drops the entries that hold nothing.
    fn sweep(&mut self, holds: &mut impl FnMut(&Permit) -> bool) {
        for entry in &mut self.entries {
            if entry.handle != EMPTY {
                let keep = entry.permit.into_permit().is_ok_and(|p| holds(&p));
                if !keep {
                    entry.handle = EMPTY;
                    self.live = self.live.saturating_sub(1);
                }
            }
        }
    }

    /// Doubles the table. Each entry moves to `counter mod new size`: two entries apart
    /// modulo the old size are apart modulo the new one too.
    fn grow(&mut self) {
        let len = self
            .entries
            .len()
            .saturating_mul(2)
            .clamp(MIN_SLOTS, self.largest());
        let mask = len.saturating_sub(1);
        let mut entries = vec![VACANT; len];
        for entry in self.entries.iter().filter(|e| e.handle != EMPTY) {
            if let Some(slot) = entries.get_mut(place(entry.handle >> 1, mask)) {
                *slot = *entry;
            }
        }
        self.entries = entries;
        self.swept_full = None;
    }

    /// Takes the permit a handle names back out; `None` when it is not out (recorded
    /// already, dropped, or never issued).
    #[inline]
    pub fn take(&mut self, handle: u32) -> Option<Permit> {
        // No handle reaches 2³⁰; a vacant place holds `EMPTY`, which must match nothing.
        if handle >= HANDLE_LIMIT {
            return None;
        }
        let mask = self.entries.len().checked_sub(1)?;
        let entry = self.entries.get_mut(place(handle >> 1, mask))?;
        if entry.handle != handle {
            return None;
        }
        entry.handle = EMPTY;
        let permit = entry.permit.into_permit().ok();
        self.live = self.live.saturating_sub(1);
        if self.live == 0 && self.entries.len() > MIN_SLOTS {
            // Empty after a burst: give the places back, keeping the smallest table, so
            // a breaker whose calls come one at a time never allocates.
            self.entries = vec![VACANT; MIN_SLOTS];
            self.swept_full = None;
        }
        permit
    }
}

/// The place of a counter value in a table of `mask + 1` places.
fn place(counter: u32, mask: usize) -> usize {
    usize::try_from(counter).unwrap_or(usize::MAX) & mask
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::arithmetic_side_effects
    )]
    extern crate std;
    use super::*;
    use crate::{Breaker, Config, Outcome};
    use std::collections::HashMap;

    fn admit(core: &mut Breaker, now: Nanos) -> Permit {
        core.acquire(now).decision.expect("admitted")
    }

    /// A vacant place holds no handle: a number no permit has (`u32::MAX` among them)
    /// takes nothing and leaves the count of permits out alone.
    #[test]
    fn numbers_no_permit_has_take_nothing() {
        let mut core = Breaker::new(Config::default(), 0).unwrap();
        let mut permits = PermitTable::new(0, 1);
        let handle = permits
            .insert(admit(&mut core, 0), |_| true, || (0, 0))
            .unwrap();
        for forged in [u32::MAX, HANDLE_LIMIT, HANDLE_LIMIT + 2, 2, 3, 12_345] {
            assert!(permits.take(forged).is_none(), "{forged}");
            assert_eq!(permits.live(), 1, "{forged}");
        }
        assert!(permits.take(handle).is_some());
        assert_eq!(permits.live(), 0);
    }

    #[test]
    fn one_call_at_a_time_never_repeats_a_number_in_two_million_permits() {
        let mut core = Breaker::new(Config::default(), 0).unwrap();
        let mut permits = PermitTable::new(12_345, 1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2_000_000 {
            let permit = admit(&mut core, 0);
            let handle = permits.insert(permit, |_| true, || (0, 0)).unwrap();
            assert!(handle < HANDLE_LIMIT);
            assert!(seen.insert(handle), "handle {handle} repeated");
            let permit = permits.take(handle).unwrap();
            let _ = core.record(permit, Outcome::Success, 0);
        }
        assert_eq!(permits.capacity(), MIN_SLOTS);
    }

    #[test]
    fn leaked_and_live_permits_keep_their_places_and_numbers() {
        let mut core = Breaker::new(
            Config {
                max_in_flight: None,
                ..Config::default()
            },
            0,
        )
        .unwrap();
        let mut permits = PermitTable::new(0, 10);
        let mut out = HashMap::new();
        // A mix: most calls return at once, every seventh stays out (a leak or a slow call).
        for i in 0..200_000u32 {
            let permit = admit(&mut core, 0);
            let handle = permits.insert(permit, |_| true, || (0, 0)).unwrap();
            assert!(
                out.insert(handle, i).is_none(),
                "handle {handle} is already out"
            );
            if i % 7 != 0 {
                out.remove(&handle);
                let permit = permits.take(handle).unwrap();
                let _ = core.record(permit, Outcome::Success, 0);
            }
            assert!(2 * permits.live() <= permits.capacity());
        }
        for &handle in out.keys() {
            assert!(permits.take(handle).is_some());
        }
        assert_eq!(permits.live(), 0);
    }

    #[test]
    fn a_full_table_at_its_largest_is_swept_once_per_epoch_and_period() {
        let mut core = Breaker::new(Config::default(), 0).unwrap();
        let mut permits = PermitTable::new(0, 10);
        let sweeps = std::cell::Cell::new(0);
        for _ in 0..MAX_OUTSTANDING {
            permits
                .insert(admit(&mut core, 0), |_| true, || (0, 0))
                .unwrap();
        }
        let mut holds = |_: &Permit| {
            sweeps.set(sweeps.get() + 1);
            true
        };
        assert!(permits
            .insert(admit(&mut core, 0), &mut holds, || (0, 0))
            .is_err());
        assert!(permits
            .insert(admit(&mut core, 0), &mut holds, || (0, 9))
            .is_err());
        assert_eq!(
            sweeps.get(),
            MAX_OUTSTANDING,
            "one sweep per epoch and resweep period"
        );
        assert!(permits
            .insert(admit(&mut core, 0), &mut holds, || (0, 10))
            .is_err());
        assert_eq!(
            sweeps.get(),
            2 * MAX_OUTSTANDING,
            "swept again a period later"
        );
        assert!(permits
            .insert(admit(&mut core, 0), |_| false, || (1, 10))
            .is_ok());
        assert_eq!(permits.live(), 1, "the next epoch's sweep dropped the rest");
    }
}
