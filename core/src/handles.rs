//! A table of outstanding permits, for hosts that hand callers one small number per
//! permit (feature `alloc`).
//!
//! The core's plain-number permit is two `u64`s (ticket and start instant): more than one
//! JS number holds, and more than one WebAssembly scalar. A host keeps the outstanding
//! permits here instead and hands out a *handle*: `counter << 1 | probe`, below 2³⁰, so
//! it is a V8 small integer (a Smi even with pointer compression) and one `u32` across the
//! component boundary. The JS package and the component's scalar path share this table.
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

use crate::outcome::{Class, OutcomeError};
use crate::permit::{Permit, RawPermit};
use crate::rejection::{RejectReason, Rejection};
use crate::state::State;
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
        }
    }

    /// Permits out (not yet recorded or dropped).
    pub fn live(&self) -> usize {
        self.live
    }

    /// Places in the table.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Stores a permit and returns its handle; the permit back when 2²⁰ are out.
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
        if len >= MAX_SLOTS {
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
        if after.saturating_mul(8) > len.saturating_mul(3) && len < MAX_SLOTS {
            self.grow();
        }
        self.fits_one_more()
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
            .clamp(MIN_SLOTS, MAX_SLOTS);
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
        let mask = self.entries.len().checked_sub(1)?;
        let entry = self.entries.get_mut(place(handle >> 1, mask))?;
        if entry.handle != handle {
            return None;
        }
        entry.handle = EMPTY;
        self.live = self.live.saturating_sub(1);
        entry.permit.into_permit().ok()
    }
}

/// The place of a counter value in a table of `mask + 1` places.
fn place(counter: u32, mask: usize) -> usize {
    usize::try_from(counter).unwrap_or(usize::MAX) & mask
}

/// The key the component's `breaker.key()` gives a breaker it cannot file (2^20 alive in
/// the instance, or every slot retired): it names no breaker, so the keyed hot path
/// answers "unknown" for it (wit/breaker.wit).
pub const NO_KEY: u32 = u32::MAX;

/// Why an outcome recorded in scalar form was refused (nothing was counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// An HTTP status outside 100–599 (code -1).
    InvalidStatus,
    /// A gRPC code above 16 (code -2).
    InvalidGrpcCode,
    /// A permit of another breaker (code -3).
    ForeignPermit,
    /// A permit recorded already (code -4).
    MalformedPermit,
    /// A key that names no breaker of the instance (code -5): the keyed hot path's.
    UnknownBreaker,
}

impl Refusal {
    const ALL: [Self; 5] = [
        Self::InvalidStatus,
        Self::InvalidGrpcCode,
        Self::ForeignPermit,
        Self::MalformedPermit,
        Self::UnknownBreaker,
    ];

    /// The refusal as the scalar result carries it: -1 to -5.
    pub fn code(self) -> i32 {
        match self {
            Self::InvalidStatus => -1,
            Self::InvalidGrpcCode => -2,
            Self::ForeignPermit => -3,
            Self::MalformedPermit => -4,
            Self::UnknownBreaker => -5,
        }
    }

    /// The refusal an outcome error is.
    pub fn of(error: OutcomeError) -> Self {
        match error {
            OutcomeError::Status(_) => Self::InvalidStatus,
            OutcomeError::GrpcCode(_) => Self::InvalidGrpcCode,
        }
    }
}

/// What a host that passes one number per call reports for an `acquire` with a handle:
/// the whole admission in one `i64` ([`Self::encode`]), so a WebAssembly call returns a
/// scalar. The layout is the WIT's `acquire-handle`:
///
/// - admitted: the handle (bit 0 set for a probe) plus `transitions << 30`;
/// - rejected: `-(1 + r)`, where `r` is the reason's code | the state's code `<< 3` |
///   `transitions << 6` | retry-after in ns (saturated below 2⁵⁵) `<< 8`.
///
/// `transitions` is how many transitions the call caused (at most three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleAdmission {
    /// A permit, stored under this handle.
    Admitted {
        /// The handle (below 2³⁰; bit 0 set for a probe).
        handle: u32,
        /// Transitions the call caused.
        transitions: u8,
    },
    /// Turned away.
    Rejected {
        /// Why, and when to come back.
        rejection: Rejection,
        /// Transitions the call caused.
        transitions: u8,
    },
}

const RETRY_LIMIT: u64 = (1 << 55) - 1;

impl HandleAdmission {
    /// What the keyed `acquire-handle` answers for a key that names no breaker: -2⁶³,
    /// which no admission encodes (its reason bits are 7), so [`Self::decode`] gives
    /// `None`.
    pub const UNKNOWN_BREAKER: i64 = i64::MIN;

    /// The admission as one number.
    pub fn encode(self) -> i64 {
        let count = |t: u8| u64::from(t.min(3));
        match self {
            Self::Admitted {
                handle,
                transitions,
            } => {
                let value = u64::from(handle & (HANDLE_LIMIT - 1)) | count(transitions) << 30;
                i64::try_from(value).unwrap_or(i64::MAX)
            }
            Self::Rejected {
                rejection,
                transitions,
            } => {
                let r = u64::from(rejection.reason.code())
                    | u64::from(rejection.state.code()) << 3
                    | count(transitions) << 6
                    | rejection.retry_after.min(RETRY_LIMIT) << 8;
                // `r` is below 2⁶³, so `-1 - r` is a valid negative `i64`.
                i64::try_from(r).map_or(i64::MIN, |r| (-1i64).saturating_sub(r))
            }
        }
    }

    /// The admission a number encodes; `None` for a number no encoding produces.
    #[inline]
    pub fn decode(value: i64) -> Option<Self> {
        let count = |bits: u64| u8::try_from(bits & 3).unwrap_or(0);
        if value >= 0 {
            let value = u64::try_from(value).ok()?;
            if value >> 32 != 0 {
                return None;
            }
            return Some(Self::Admitted {
                handle: u32::try_from(value & u64::from(HANDLE_LIMIT - 1)).ok()?,
                transitions: count(value >> 30),
            });
        }
        let r = u64::try_from((-1i64).saturating_sub(value)).ok()?;
        let code = |bits: u64| u8::try_from(bits & 7).ok();
        Some(Self::Rejected {
            rejection: Rejection {
                reason: RejectReason::from_code(code(r)?)?,
                state: State::from_code(code(r >> 3)?)?,
                retry_after: r >> 8,
            },
            transitions: count(r >> 6),
        })
    }
}

/// What recording a handle's outcome did, in one `i32` ([`Self::encode`]; the WIT's
/// `record-handle` and `record-flat`): the class's code | slow `<< 2` | stale `<< 3` |
/// transitions `<< 4`; a refused outcome is a negative [`Refusal::code`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleRecord {
    /// How the outcome was classified.
    pub class: Class,
    /// A success slower than `slow-call-duration`.
    pub slow: bool,
    /// The permit was stale, or the handle named no permit out: nothing was counted.
    pub stale: bool,
    /// Transitions the call caused.
    pub transitions: u8,
}

impl HandleRecord {
    /// The record as one number (never negative).
    pub fn encode(self) -> i32 {
        i32::from(self.class.code())
            | i32::from(self.slow) << 2
            | i32::from(self.stale) << 3
            | i32::from(self.transitions.min(3)) << 4
    }

    /// The record or refusal a number encodes; `None` for a number no encoding produces.
    #[inline]
    pub fn decode_result(value: i32) -> Option<Result<Self, Refusal>> {
        if value < 0 {
            return Refusal::ALL
                .into_iter()
                .find(|r| r.code() == value)
                .map(Err);
        }
        Self::decode(value).map(Ok)
    }

    /// The record a number encodes; `None` for a number no encoding produces.
    #[inline]
    pub fn decode(value: i32) -> Option<Self> {
        if !(0..64).contains(&value) {
            return None;
        }
        let bits = u8::try_from(value).ok()?;
        Some(Self {
            class: Class::from_code(bits & 3)?,
            slow: bits & 4 != 0,
            stale: bits & 8 != 0,
            transitions: bits >> 4,
        })
    }
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

    #[test]
    fn scalar_forms_round_trip() {
        for transitions in 0..=3 {
            for handle in [0, 1, 42, HANDLE_LIMIT - 1] {
                let a = HandleAdmission::Admitted {
                    handle,
                    transitions,
                };
                assert!(a.encode() >= 0);
                assert_eq!(HandleAdmission::decode(a.encode()), Some(a));
            }
            for reason in RejectReason::ALL {
                for state in State::ALL {
                    for retry_after in [0, 1, 15_000_000_000, RETRY_LIMIT] {
                        let a = HandleAdmission::Rejected {
                            rejection: Rejection {
                                state: *state,
                                reason: *reason,
                                retry_after,
                            },
                            transitions,
                        };
                        assert!(a.encode() < 0);
                        assert_eq!(HandleAdmission::decode(a.encode()), Some(a));
                    }
                }
            }
            for class in Class::ALL {
                for (slow, stale) in [(false, false), (true, false), (false, true)] {
                    let r = HandleRecord {
                        class: *class,
                        slow,
                        stale,
                        transitions,
                    };
                    assert_eq!(HandleRecord::decode(r.encode()), Some(r));
                }
            }
        }
        assert_eq!(HandleAdmission::decode(1 << 40), None);
        assert_eq!(
            HandleAdmission::decode(HandleAdmission::UNKNOWN_BREAKER),
            None
        );
        assert_eq!(HandleRecord::decode(-1), None);
        for refusal in Refusal::ALL {
            assert_eq!(
                HandleRecord::decode_result(refusal.code()),
                Some(Err(refusal))
            );
        }
        assert_eq!(HandleRecord::decode_result(-6), None);
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
