//! The closed state's memory of recent outcomes.
//!
//! Two shapes, both fixed-size so memory is O(1) whatever the failure rate:
//!
//! * [`TimeWindow`]: a ring of buckets, each `window / buckets` wide, with running totals.
//!   Buckets the clock has passed are cleared lazily when the next outcome (or read)
//!   arrives, so there are no timers and an idle breaker costs nothing. A fault is
//!   forgotten between `window - window/buckets` and `window` after it was recorded
//!   (with the bucket it landed in), never later.
//! * [`CountWindow`]: the last N outcomes as two bitsets (fault, slow).

use crate::codec::{Invalid, Reader, Writer};
use crate::config::{Config, MAX_BUCKETS, MAX_WINDOW_CALLS};
use crate::time::{since, Nanos};

/// Counts of outcomes that count: successes and faults (neutral outcomes never reach
/// the window).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Calls with a success or fault outcome.
    pub calls: u32,
    /// Of those, faults.
    pub faults: u32,
    /// Of those, slow successes.
    pub slow: u32,
}

impl Tally {
    fn add(&mut self, fault: bool, slow: bool) {
        self.calls = self.calls.saturating_add(1);
        self.faults = self.faults.saturating_add(u32::from(fault));
        self.slow = self.slow.saturating_add(u32::from(slow));
    }

    fn remove(&mut self, other: Tally) {
        self.calls = self.calls.saturating_sub(other.calls);
        self.faults = self.faults.saturating_sub(other.faults);
        self.slow = self.slow.saturating_sub(other.slow);
    }
}

/// The sums of a time window's buckets. Up to 64 buckets of at most `u32::MAX` each never
/// fill a `u64`, so the sums are exact however full the buckets are, and expiring a
/// bucket takes away exactly what it held (a saturated `u32` total took away more than it
/// had counted of it). Read as a [`Tally`], saturated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sums {
    calls: u64,
    faults: u64,
    slow: u64,
}

impl Sums {
    fn add(&mut self, bucket: Tally) {
        self.calls = self.calls.saturating_add(u64::from(bucket.calls));
        self.faults = self.faults.saturating_add(u64::from(bucket.faults));
        self.slow = self.slow.saturating_add(u64::from(bucket.slow));
    }

    /// One more call, as [`Tally::add`] counts it in a bucket that is not full.
    fn count(&mut self, fault: bool, slow: bool) {
        self.calls = self.calls.saturating_add(1);
        self.faults = self.faults.saturating_add(u64::from(fault));
        self.slow = self.slow.saturating_add(u64::from(slow));
    }

    fn remove(&mut self, bucket: Tally) {
        self.calls = self.calls.saturating_sub(u64::from(bucket.calls));
        self.faults = self.faults.saturating_sub(u64::from(bucket.faults));
        self.slow = self.slow.saturating_sub(u64::from(bucket.slow));
    }

    fn tally(&self) -> Tally {
        let read = |sum: u64| u32::try_from(sum).unwrap_or(u32::MAX);
        Tally {
            calls: read(self.calls),
            faults: read(self.faults),
            slow: read(self.slow),
        }
    }
}

/// A window in one of its two shapes.
// Without an allocator there is nothing to box into; the size is bounded and known.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Window {
    Time(TimeWindow),
    Count(CountWindow),
}

impl Window {
    pub(crate) fn new(config: &Config, now: Nanos) -> Self {
        match config.window_calls {
            Some(calls) => Self::Count(CountWindow::new(calls)),
            None => Self::Time(TimeWindow::new(config.buckets, config.bucket_width(), now)),
        }
    }

    /// Counts an outcome. The totals after it, or `None` when the window holds no fault
    /// and no slow call (what a trip rule needs before it reads the totals).
    #[inline(always)]
    pub(crate) fn record(&mut self, now: Nanos, fault: bool, slow: bool) -> Option<Tally> {
        match self {
            Self::Time(w) => w.record(now, fault, slow),
            Self::Count(w) => {
                let total = w.record(fault, slow);
                ((total.faults | total.slow) != 0).then_some(total)
            }
        }
    }

    /// The totals as of `now`, without changing anything.
    pub(crate) fn tally_at(&self, now: Nanos) -> Tally {
        match self {
            Self::Time(w) => w.tally_at(now),
            Self::Count(w) => w.total,
        }
    }

    pub(crate) fn clear(&mut self, now: Nanos) {
        match self {
            Self::Time(w) => w.clear(now),
            Self::Count(w) => w.clear(),
        }
    }

    pub(crate) fn encode(&self, out: &mut Writer<'_>, now: Nanos) {
        match self {
            Self::Time(w) => w.encode(out, now),
            Self::Count(w) => w.encode(out),
        }
    }

    /// Reads a window shaped like `self` (the breaker's own config decides the shape).
    pub(crate) fn decode(
        &self,
        input: &mut Reader<'_>,
        now: Nanos,
        elapsed: Nanos,
    ) -> Result<Self, Invalid> {
        match self {
            Self::Time(w) => {
                TimeWindow::decode(w.len, w.width, input, now, elapsed).map(Self::Time)
            }
            Self::Count(w) => CountWindow::decode(w.len, input).map(Self::Count),
        }
    }
}

/// A sliding time window as a ring of buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TimeWindow {
    buckets: [Tally; MAX_BUCKETS as usize],
    /// Buckets in use (1–64).
    len: u8,
    /// Ring index of the newest bucket.
    head: u8,
    /// Width of one bucket.
    width: Nanos,
    /// Instant the newest bucket began.
    anchor: Nanos,
    /// Sum of all buckets.
    total: Sums,
}

impl TimeWindow {
    pub(crate) fn len(&self) -> u8 {
        self.len
    }

    pub(crate) fn width(&self) -> Nanos {
        self.width
    }

    fn new(len: u8, width: Nanos, now: Nanos) -> Self {
        Self {
            buckets: [Tally::default(); MAX_BUCKETS as usize],
            len: len.clamp(1, MAX_BUCKETS),
            head: 0,
            width: width.max(1),
            anchor: now,
            total: Sums::default(),
        }
    }

    fn next_index(&self, index: u8) -> u8 {
        // `index` is below `len`, so this is `(index + 1) % len` without a division.
        let next = index.wrapping_add(1);
        if next < self.len {
            next
        } else {
            0
        }
    }

    /// How many whole buckets the clock has moved past the newest one.
    fn steps(&self, now: Nanos) -> u64 {
        since(now, self.anchor).checked_div(self.width).unwrap_or(0)
    }

    /// Clears the buckets the clock has passed and moves the head to `now`'s bucket.
    #[inline]
    fn advance(&mut self, now: Nanos) {
        // Most outcomes land in the newest bucket; spare them the division.
        if since(now, self.anchor) < self.width {
            return;
        }
        let steps = self.steps(now);
        for _ in 0..steps.min(u64::from(self.len)) {
            self.head = self.next_index(self.head);
            if let Some(bucket) = self.buckets.get_mut(usize::from(self.head)) {
                self.total.remove(*bucket);
                *bucket = Tally::default();
            }
        }
        self.anchor = self.anchor.wrapping_add(steps.wrapping_mul(self.width));
    }

    #[inline]
    fn record(&mut self, now: Nanos, fault: bool, slow: bool) -> Option<Tally> {
        self.advance(now);
        // The head is always below `len` (at most `MAX_BUCKETS`, a power of two), so the
        // mask changes nothing; it lets the compiler drop the bounds test from the hot
        // path.
        let head = usize::from(self.head) & (MAX_BUCKETS as usize).wrapping_sub(1);
        if let Some(bucket) = self.buckets.get_mut(head) {
            // The total takes what the bucket took: nothing once the bucket is full, so
            // the total stays the sum of the buckets. A bucket's faults and slow calls
            // never outnumber its calls, so one test covers all three.
            if bucket.calls < u32::MAX {
                bucket.add(fault, slow);
                self.total.count(fault, slow);
            }
        }
        // Tested on the sums: a saturated tally is zero exactly when its sum is.
        ((self.total.faults | self.total.slow) != 0).then(|| self.total.tally())
    }

    fn tally_at(&self, now: Nanos) -> Tally {
        let steps = self.steps(now);
        if steps >= u64::from(self.len) {
            return Tally::default();
        }
        let mut total = self.total;
        let mut index = self.head;
        for _ in 0..steps {
            index = self.next_index(index);
            if let Some(bucket) = self.buckets.get(usize::from(index)) {
                total.remove(*bucket);
            }
        }
        total.tally()
    }

    fn clear(&mut self, now: Nanos) {
        *self = Self::new(self.len, self.width, now);
    }

    /// Newest bucket first, with the anchor as an age so the bytes are origin-free.
    fn encode(&self, out: &mut Writer<'_>, now: Nanos) {
        // Export the window as it stands at `now`: lazily expired buckets go out empty.
        let mut current = self.clone();
        current.advance(now);
        out.u64(since(now, current.anchor));
        let mut index = current.head;
        for _ in 0..current.len {
            let bucket = current
                .buckets
                .get(usize::from(index))
                .copied()
                .unwrap_or_default();
            out.u32(bucket.calls);
            out.u32(bucket.faults);
            out.u32(bucket.slow);
            index = index
                .checked_sub(1)
                .unwrap_or(current.len.saturating_sub(1));
        }
    }

    fn decode(
        len: u8,
        width: Nanos,
        input: &mut Reader<'_>,
        now: Nanos,
        elapsed: Nanos,
    ) -> Result<Self, Invalid> {
        let mut window = Self::new(len, width, now);
        let anchor_age = input.u64()?;
        if anchor_age >= width {
            // An exported window always has its anchor inside the newest bucket.
            return Err(Invalid::Corrupt("window anchor"));
        }
        window.anchor = now.wrapping_sub(anchor_age.saturating_add(elapsed));
        let mut index = 0u8;
        for _ in 0..len {
            let bucket = Tally {
                calls: input.u32()?,
                faults: input.u32()?,
                slow: input.u32()?,
            };
            if bucket.faults > bucket.calls || bucket.slow > bucket.calls {
                return Err(Invalid::Corrupt("window bucket"));
            }
            if let Some(slot) = window.buckets.get_mut(usize::from(index)) {
                *slot = bucket;
            }
            window.total.add(bucket);
            // Newest first on the wire; lay them out backwards from the head (index 0).
            index = index.checked_sub(1).unwrap_or(len.saturating_sub(1));
        }
        // Time that passed in transit ages the buckets like any other time.
        window.advance(now);
        Ok(window)
    }
}

const _: () = assert!(MAX_BUCKETS.is_power_of_two());

const COUNT_WORDS: usize = (MAX_WINDOW_CALLS as usize).div_ceil(64);
const _: () = assert!(COUNT_WORDS.is_power_of_two());

/// The last `len` outcomes, as bitsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CountWindow {
    faults: [u64; COUNT_WORDS],
    slow: [u64; COUNT_WORDS],
    /// Outcomes remembered (1–1024).
    len: u16,
    /// Slot the next outcome goes in.
    next: u16,
    /// Slots holding an outcome.
    filled: u16,
    total: Tally,
}

/// Reads or writes one bit of a bitset.
fn bit(set: &mut [u64; COUNT_WORDS], slot: u16, value: Option<bool>) -> bool {
    // Slots are below `len` (at most `MAX_WINDOW_CALLS`, so the word below
    // `COUNT_WORDS`, a power of two): the mask changes nothing and drops a bounds test.
    let word = usize::from(slot.checked_div(64).unwrap_or(0)) & COUNT_WORDS.wrapping_sub(1);
    let mask = 1u64
        .checked_shl(u32::from(slot.checked_rem(64).unwrap_or(0)))
        .unwrap_or(0);
    let Some(w) = set.get_mut(word) else {
        return false;
    };
    let old = *w & mask != 0;
    match value {
        Some(true) => *w |= mask,
        Some(false) => *w &= !mask,
        None => {}
    }
    old
}

impl CountWindow {
    pub(crate) fn len(&self) -> u16 {
        self.len
    }

    fn new(len: u16) -> Self {
        Self {
            faults: [0; COUNT_WORDS],
            slow: [0; COUNT_WORDS],
            len: len.clamp(1, MAX_WINDOW_CALLS),
            next: 0,
            filled: 0,
            total: Tally::default(),
        }
    }

    #[inline(always)]
    fn record(&mut self, fault: bool, slow: bool) -> Tally {
        let was_fault = bit(&mut self.faults, self.next, Some(fault));
        let was_slow = bit(&mut self.slow, self.next, Some(slow));
        if self.filled == self.len {
            self.total.remove(Tally {
                calls: 1,
                faults: u32::from(was_fault),
                slow: u32::from(was_slow),
            });
        } else {
            self.filled = self.filled.saturating_add(1);
        }
        self.total.add(fault, slow);
        // `next` is below `len`: `(next + 1) % len` without a division on every outcome.
        let next = self.next.wrapping_add(1);
        self.next = if next < self.len { next } else { 0 };
        self.total
    }

    fn clear(&mut self) {
        *self = Self::new(self.len);
    }

    fn encode(&self, out: &mut Writer<'_>) {
        out.u16(self.next);
        out.u16(self.filled);
        let words = usize::from(self.len.div_ceil(64));
        for set in [&self.faults, &self.slow] {
            for word in set.iter().take(words) {
                out.u64(*word);
            }
        }
    }

    fn decode(len: u16, input: &mut Reader<'_>) -> Result<Self, Invalid> {
        let mut window = Self::new(len);
        window.next = input.u16()?;
        window.filled = input.u16()?;
        if window.next >= len || window.filled > len {
            return Err(Invalid::Corrupt("count window cursor"));
        }
        let words = usize::from(len.div_ceil(64));
        for set in [&mut window.faults, &mut window.slow] {
            for word in set.iter_mut().take(words) {
                *word = input.u64()?;
            }
        }
        // Rebuild the totals from the bits, refusing bits outside the filled slots.
        for slot in 0..len {
            let fault = bit(&mut window.faults, slot, None);
            let slow = bit(&mut window.slow, slot, None);
            let filled = window.filled == len || slot < window.filled;
            if filled {
                window.total.add(fault, slow);
            } else if fault || slow {
                return Err(Invalid::Corrupt("count window bits"));
            }
            if fault && slow {
                return Err(Invalid::Corrupt("count window bits"));
            }
        }
        if window.filled < len && window.next != window.filled {
            return Err(Invalid::Corrupt("count window cursor"));
        }
        Ok(window)
    }
}
