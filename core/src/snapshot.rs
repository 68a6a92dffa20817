//! Export and import of a breaker's state, for runtimes that recycle instances.
//!
//! The bytes are versioned, little-endian, end in an FNV-1a checksum, and store every
//! instant as an *age* at the export moment, because two processes' monotonic clocks
//! share no origin. Import takes the time that passed since export and rebuilds the
//! instants on the new clock; with the same `now` and no time passed the round trip is
//! exact. Garbage, truncated bytes, or bytes from a breaker with a different window shape
//! are an error, and the breaker is left as it was. What an import takes is bounded by the
//! importer's configuration: no opening longer than it allows (`bound_by_config`).
//!
//! Outstanding permits belong to the dead instance and are not carried. A breaker
//! exported half-open with probes out comes back open until the newest of those probes
//! would have timed out, and one exported open while a retired probe is still out stays
//! open at least that long, so probes sent by the dead instance never overlap new ones (at
//! most K at the upstream, across the recycle too); with no probes out it comes back
//! exactly as it was.
//!
//! Layout (version 3): `"TGB" 3`, window shape (kind u8, length u16, bucket width u64),
//! phase (state u8, epoch, state age, open-for, cooldown, rng: u64), probe successes and
//! judged (u32), ten lifetime counters (u64: admitted, rejected by each of the five
//! reasons, successes, faults, stale, transitions), the transitions by route (u64 each, in
//! `ROUTES` order), last transition (flag u8, then from, to, reason: u8, age, epoch: u64),
//! the window, the checksum (u32). An import reads this version only. Fleet membership is
//! not carried.

use core::fmt;

use crate::codec::{Invalid, Writer};
use crate::permit::MAX_EPOCH;
use crate::table::table;
use crate::time::{since, Nanos, HALF_CIRCLE};
use crate::window::Window;
use crate::words::Words;

/// Bytes that hold the largest export: a 64-bucket time window, 1,176 bytes (checked by
/// `tests/spec.rs`), rounded up. The default 10-bucket window exports 509 bytes.
pub const MAX_EXPORT_LEN: usize = 1184;

/// The largest epoch an import accepts: half of what a raw permit's ticket can carry, so
/// the importer has 2⁵⁶ transitions of room left (crafted bytes cannot put a breaker where
/// its next transitions would overflow the ticket and make every permit stale).
pub const MAX_IMPORT_EPOCH: u64 = MAX_EPOCH >> 1;

pub(crate) const MAGIC: [u8; 3] = *b"TGB";
/// The layout written and read (the module's docs).
pub(crate) const VERSION: u8 = 3;

/// Why an export or import failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SnapshotError {
    /// The output buffer is smaller than the export (see [`MAX_EXPORT_LEN`]).
    BufferTooSmall,
    /// The bytes end before the state does.
    Truncated,
    /// Bytes follow the end of the state.
    TrailingBytes,
    /// Not a tripgate state (wrong magic).
    NotAState,
    /// A version this build does not read.
    UnsupportedVersion(u8),
    /// The checksum does not match: the bytes were damaged.
    Checksum,
    /// The state was exported by a breaker whose window has another shape.
    WindowShape,
    /// A field holds an impossible value.
    Corrupt(&'static str),
}

table! {
    /// The kinds of [`SnapshotError`], as the WIT's `snapshot-error-kind` names them.
    pub enum SnapshotErrorKind {
        /// [`SnapshotError::BufferTooSmall`].
        BufferTooSmall = 0 => "buffer-too-small",
        /// [`SnapshotError::Truncated`].
        Truncated = 1 => "truncated",
        /// [`SnapshotError::TrailingBytes`].
        TrailingBytes = 2 => "trailing-bytes",
        /// [`SnapshotError::NotAState`].
        NotAState = 3 => "not-a-state",
        /// [`SnapshotError::UnsupportedVersion`].
        UnsupportedVersion = 4 => "unsupported-version",
        /// [`SnapshotError::Checksum`].
        Checksum = 5 => "checksum",
        /// [`SnapshotError::WindowShape`].
        WindowShape = 6 => "window-shape",
        /// [`SnapshotError::Corrupt`].
        Corrupt = 7 => "corrupt",
    }
}

impl SnapshotError {
    /// The error's kind, without its detail.
    pub fn kind(&self) -> SnapshotErrorKind {
        match self {
            Self::BufferTooSmall => SnapshotErrorKind::BufferTooSmall,
            Self::Truncated => SnapshotErrorKind::Truncated,
            Self::TrailingBytes => SnapshotErrorKind::TrailingBytes,
            Self::NotAState => SnapshotErrorKind::NotAState,
            Self::UnsupportedVersion(_) => SnapshotErrorKind::UnsupportedVersion,
            Self::Checksum => SnapshotErrorKind::Checksum,
            Self::WindowShape => SnapshotErrorKind::WindowShape,
            Self::Corrupt(_) => SnapshotErrorKind::Corrupt,
        }
    }
}

impl From<Invalid> for SnapshotError {
    fn from(invalid: Invalid) -> Self {
        match invalid {
            Invalid::Truncated => Self::Truncated,
            Invalid::Corrupt(what) => Self::Corrupt(what),
        }
    }
}

impl SnapshotError {
    /// Writes the error in words.
    pub fn describe<W: Words + ?Sized>(&self, out: &mut W) -> fmt::Result {
        match *self {
            Self::BufferTooSmall => {
                out.word("output buffer is smaller than ")?;
                out.number(u64::try_from(MAX_EXPORT_LEN).unwrap_or(u64::MAX))?;
                out.word(" bytes")
            }
            Self::Truncated => out.word("state bytes are truncated"),
            Self::TrailingBytes => out.word("state bytes have trailing data"),
            Self::NotAState => out.word("bytes are not a tripgate state (bad magic)"),
            Self::UnsupportedVersion(v) => {
                out.word("state version ")?;
                out.number(u64::from(v))?;
                out.word(" is not supported (expected ")?;
                out.number(u64::from(VERSION))?;
                out.word(")")
            }
            Self::Checksum => out.word("state checksum does not match: the bytes are damaged"),
            Self::WindowShape => out.word(
                "state was exported by a breaker with a different window (kind, buckets, width or calls)",
            ),
            Self::Corrupt(what) => {
                out.word("state field `")?;
                out.word(what)?;
                out.word("` holds an impossible value")
            }
        }
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f)
    }
}

impl core::error::Error for SnapshotError {}

pub(crate) fn decode<T>(
    from_code: fn(u8) -> Option<T>,
    code: u8,
    what: &'static str,
) -> Result<T, SnapshotError> {
    from_code(code).ok_or(SnapshotError::Corrupt(what))
}

/// The window's shape, which export and import must agree on.
pub(crate) fn shape(window: &Window, out: &mut Writer<'_>) {
    match window {
        Window::Time(w) => {
            out.u8(0);
            out.u16(u16::from(w.len()));
            out.u64(w.width());
        }
        Window::Count(w) => {
            out.u8(1);
            out.u16(w.len());
            out.u64(0);
        }
    }
}

/// Time from `instant` to `now` as the bytes store it. A span of half the circle (292
/// years) or more cannot be told from an instant after `now`, so it is stored as the
/// longest span there is: long enough for every cooldown and window, and importable.
pub(crate) fn age(now: Nanos, instant: Nanos) -> Nanos {
    since(now, instant).min(HALF_CIRCLE - 1)
}

/// An age plus the time in transit, bounded the same way (an absurd `elapsed` means
/// "long ago", never an instant after the import).
pub(crate) fn age_plus(age: Nanos, elapsed: Nanos) -> Nanos {
    age.saturating_add(elapsed).min(HALF_CIRCLE - 1)
}
