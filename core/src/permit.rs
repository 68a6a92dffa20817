//! Permits: the token an admitted call carries back with its outcome.

use core::fmt;

use crate::config::MAX_PROBES;
use crate::time::Nanos;

/// Admission for one call. Hand it back, exactly once, to
/// [`Breaker::record`](crate::Breaker::record) with the call's outcome.
///
/// It is neither `Clone` nor `Copy`, so the type system stops a second outcome for the
/// same call. A permit from an earlier epoch (the breaker has changed state since) is
/// accepted and changes nothing.
#[must_use = "a permit must be handed back to `Breaker::record` with the call's outcome"]
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Permit {
    /// Epoch and slot as in [`RawPermit::ticket`]: two words with no padding, so a
    /// permit moves through a host's hot path as two registers.
    pub(crate) ticket: u64,
    pub(crate) started: Nanos,
}

impl Permit {
    /// A permit of `epoch` (kept to its low 57 bits, as every ticket; see `MAX_EPOCH`)
    /// for slot `slot`: 0 for a normal call, `n` for the probe in slot `n - 1`.
    #[inline(always)]
    pub(crate) fn new(epoch: u64, started: Nanos, slot: u8) -> Self {
        Self {
            ticket: epoch.wrapping_shl(TICKET_SLOT_BITS) | (u64::from(slot) & TICKET_SLOT_MASK),
            started,
        }
    }

    /// A shadow permit of `epoch`: a call a breaker in shadow mode would have turned away,
    /// admitted anyway; its outcome counts nothing.
    #[inline(always)]
    pub(crate) fn shadow(epoch: u64, started: Nanos) -> Self {
        Self::new(epoch, started, SHADOW_SLOT)
    }

    /// Whether this call was admitted only because its breaker is in shadow mode: an
    /// enforcing breaker would have turned it away, and its outcome counts nothing.
    #[inline(always)]
    pub fn is_shadow(&self) -> bool {
        self.slot() == SHADOW_SLOT
    }

    /// The epoch the permit was issued in.
    #[inline(always)]
    pub fn epoch(&self) -> u64 {
        self.ticket >> TICKET_SLOT_BITS
    }

    /// 0 for a normal call; `n` for the probe in slot `n - 1`.
    #[inline(always)]
    pub(crate) fn slot(&self) -> u8 {
        // The mask keeps 7 bits, which always fit.
        u8::try_from(self.ticket & TICKET_SLOT_MASK).unwrap_or(0)
    }

    /// Whether the permit was issued in `epoch` (compared on a ticket's 57 bits).
    #[inline(always)]
    pub(crate) fn is_of_epoch(&self, epoch: u64) -> bool {
        self.epoch() == epoch & MAX_EPOCH
    }

    /// Whether this is a normal call's permit (not a probe's) issued in `epoch`: one
    /// comparison of tickets, for the hot path.
    #[inline(always)]
    pub(crate) fn is_call_of_epoch(&self, epoch: u64) -> bool {
        self.ticket == epoch.wrapping_shl(TICKET_SLOT_BITS)
    }

    /// The instant the call was admitted.
    pub fn started(&self) -> Nanos {
        self.started
    }

    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.slot() != 0 && !self.is_shadow()
    }

    /// The plain-number form, for adapters that cannot hold a Rust value.
    pub fn into_raw(self) -> RawPermit {
        RawPermit {
            ticket: self.ticket,
            started: self.started,
        }
    }
}

const TICKET_SLOT_BITS: u32 = 7;
/// The slot of a shadow permit: above every probe slot (1 to `MAX_PROBES`), within the
/// ticket's 7 bits.
const SHADOW_SLOT: u8 = 127;
/// The largest epoch a ticket can carry (2⁵⁷ − 1: a billion transitions a second for four
/// years). Imports refuse states beyond it.
pub(crate) const MAX_EPOCH: u64 = u64::MAX >> TICKET_SLOT_BITS;
const TICKET_SLOT_MASK: u64 = (1 << TICKET_SLOT_BITS) - 1;

/// A [`Permit`] as two plain numbers, for hosts that keep permits outside Rust (a JS
/// number, a table slot).
///
/// `ticket` is `epoch << 7 | slot` (slot 0 for a normal call, 1–64 for a probe); it is an
/// exact JS number while the epoch stays below 2⁴⁶. `started` is the admission instant.
/// Whoever holds a raw permit must record it once: unlike [`Permit`], nothing stops a copy.
/// A raw permit the breaker did not issue in its current epoch is treated as stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawPermit {
    /// Epoch and slot.
    pub ticket: u64,
    /// Admission instant.
    pub started: Nanos,
}

impl RawPermit {
    /// Back to a [`Permit`]; errors on a ticket whose slot no breaker issues.
    pub fn into_permit(self) -> Result<Permit, MalformedPermit> {
        let slot = u8::try_from(self.ticket & TICKET_SLOT_MASK).map_err(|_| MalformedPermit)?;
        if slot > MAX_PROBES && slot != SHADOW_SLOT {
            return Err(MalformedPermit);
        }
        Ok(Permit {
            ticket: self.ticket,
            started: self.started,
        })
    }
}

/// A raw permit that no breaker could have issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MalformedPermit;

impl fmt::Display for MalformedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("permit ticket names a probe slot above 64")
    }
}

impl core::error::Error for MalformedPermit {}
