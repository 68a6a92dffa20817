//! Calls admitted in the current closed epoch that have no outcome yet, and how many of
//! them have been out for longer than `slow-call-duration` (hung).
//!
//! Hang detection must not track calls one by one (that is memory per call), so starts are
//! counted in a ring of time buckets, each `slow-call-duration / 16` wide. A bucket whose
//! calls are all at least `slow-call-duration` old moves its count into `hung`. So a hang is
//! seen no later than `slow-call-duration × 17/16` after it starts, never earlier than
//! `slow-call-duration`, and an outcome knows which count to release from its permit's
//! start instant.

use crate::time::{since, Nanos};

/// Buckets per `slow-call-duration`.
const SUBDIVISIONS: u64 = 16;
/// Ring length: a power of two larger than `SUBDIVISIONS`, so indices wrap cleanly.
const RING: usize = 32;
const RING_MASK: u64 = (RING as u64).wrapping_sub(1);

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InFlight {
    /// Outstanding calls of this epoch.
    count: u32,
    /// Hang tracking, when `slow-call-duration` is set.
    hang: Option<HangRing>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct HangRing {
    /// Starts per bucket, for buckets not yet hung, indexed by bucket number.
    starts: [u32; RING],
    /// Bucket number of the newest bucket seen, counted from `origin` (not `instant /
    /// width`, which restarts at 0 where the clock wraps from `u64::MAX`).
    head: u64,
    origin: Nanos,
    width: Nanos,
    /// The span of bucket `head`, as offsets from `origin`: `head × width` and
    /// `(head + 1) × width` (saturated). An instant inside it is in bucket `head` without a
    /// division, which nearly every start and outcome is.
    head_from: Nanos,
    head_until: Nanos,
    /// Outstanding calls whose whole start bucket is older than `slow-call-duration`.
    hung: u32,
}

impl InFlight {
    pub(crate) fn new(slow_call_duration: Option<Nanos>, now: Nanos) -> Self {
        let hang = slow_call_duration.map(|slow| {
            let width = slow.div_ceil(SUBDIVISIONS).max(1);
            HangRing::new(width, now)
        });
        Self { count: 0, hang }
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// [`Self::start`] for a breaker without hang tracking (`slow-call-duration` unset),
    /// which the caller has checked: the hot path skips asking again.
    #[inline(always)]
    pub(crate) fn start_untracked(&mut self) {
        self.count = self.count.saturating_add(1);
    }

    /// [`Self::finish`] for a breaker without hang tracking, as [`Self::start_untracked`].
    #[inline(always)]
    pub(crate) fn finish_untracked(&mut self) {
        self.count = self.count.saturating_sub(1);
    }

    /// Forgets every outstanding call (a transition leaves them stale) and restarts at `now`.
    pub(crate) fn clear(&mut self, now: Nanos) {
        if let Some(ring) = &mut self.hang {
            *ring = HangRing::new(ring.width, now);
        }
        self.count = 0;
    }

    #[inline(always)]
    pub(crate) fn start(&mut self, now: Nanos) {
        self.start_untracked();
        if let Some(ring) = &mut self.hang {
            ring.advance(now);
            if let Some(slot) = ring.starts.get_mut(slot(ring.head)) {
                *slot = slot.saturating_add(1);
            }
        }
    }

    #[inline(always)]
    pub(crate) fn finish(&mut self, started: Nanos, now: Nanos) {
        self.finish_untracked();
        if let Some(ring) = &mut self.hang {
            ring.advance(now);
            let bucket = ring.bucket(started);
            if ring.is_hung(bucket) {
                ring.hung = ring.hung.saturating_sub(1);
            } else if let Some(slot) = ring.starts.get_mut(slot(bucket)) {
                *slot = slot.saturating_sub(1);
            }
        }
    }

    /// Calls out for longer than `slow-call-duration` as of `now` (0 without hang tracking).
    pub(crate) fn hung(&mut self, now: Nanos) -> u32 {
        match &mut self.hang {
            Some(ring) => {
                ring.advance(now);
                ring.hung
            }
            None => 0,
        }
    }

    /// Like [`Self::hung`], without changing anything.
    pub(crate) fn hung_at(&self, now: Nanos) -> u32 {
        match &self.hang {
            Some(ring) => {
                let mut ring = ring.clone();
                ring.advance(now);
                ring.hung
            }
            None => 0,
        }
    }
}

/// Ring position of a bucket number.
fn slot(bucket: u64) -> usize {
    usize::try_from(bucket & RING_MASK).unwrap_or(0)
}

impl HangRing {
    fn new(width: Nanos, now: Nanos) -> Self {
        Self {
            starts: [0; RING],
            head: 0,
            origin: now,
            width,
            head_from: 0,
            head_until: width,
            hung: 0,
        }
    }

    /// A bucket is hung once the newest bucket is more than `SUBDIVISIONS` past it: every
    /// start in it is then at least `SUBDIVISIONS × width ≥ slow-call-duration` old.
    fn is_hung(&self, bucket: u64) -> bool {
        self.head.saturating_sub(bucket) > SUBDIVISIONS
    }

    /// The bucket number of `instant`.
    #[inline]
    fn bucket(&self, instant: Nanos) -> u64 {
        let offset = since(instant, self.origin);
        // Exactly `offset / width` when the instant is in the head's span.
        if (self.head_from..self.head_until).contains(&offset) {
            return self.head;
        }
        offset.checked_div(self.width).unwrap_or(0)
    }

    #[inline]
    fn advance(&mut self, now: Nanos) {
        // At or before the head's bucket: no step (the case `steps == 0` below), and no
        // division.
        if since(now, self.origin) < self.head_until {
            return;
        }
        self.advance_to(now);
    }

    #[inline(never)]
    fn advance_to(&mut self, now: Nanos) {
        let current = self.bucket(now);
        let steps = current.saturating_sub(self.head);
        if steps == 0 {
            return;
        }
        // Buckets head-16 ..= head are the only ones that can hold starts; the first
        // `steps` of them (oldest first) become hung.
        let oldest = self.head.wrapping_sub(SUBDIVISIONS);
        for offset in 0..steps.min(SUBDIVISIONS.saturating_add(1)) {
            let slot = slot(oldest.wrapping_add(offset));
            if let Some(starts) = self.starts.get_mut(slot) {
                self.hung = self.hung.saturating_add(*starts);
                *starts = 0;
            }
        }
        self.head = current;
        // `current × width` is at most the offset it was divided from: no overflow.
        self.head_from = current.saturating_mul(self.width);
        self.head_until = self.head_from.saturating_add(self.width);
    }
}
