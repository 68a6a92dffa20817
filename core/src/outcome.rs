//! What happened to an admitted call, and how the breaker classifies it.
//!
//! An [`Outcome`] is what the host observed; a [`Class`] is what the breaker makes of it.
//! The defaults follow one idea: a fault is evidence that the *upstream* is unwell. A 404
//! or a 401 means the upstream answered, so it is a success for the breaker; a 503, a 429,
//! a timeout or a refused connection is a fault; a caller that gave up is no evidence at
//! all.
//!
//! HTTP statuses and gRPC codes are validated when the outcome is built
//! ([`Outcome::status`], [`Outcome::grpc`]), so an invalid one never reaches the breaker.

use core::fmt;

use crate::table::table;

/// How deep a host follows an error's chain of causes (Rust's `source()`, JS's `cause`),
/// the error itself included, looking for one it can classify (a refused connection, a
/// timeout): client errors wrap their cause a few levels deep, and a chain that loops back
/// on itself must still end.
pub const MAX_CAUSES: usize = 8;

/// What happened to one admitted call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The call succeeded (for calls that have no status).
    Success,
    /// The upstream answered with this HTTP status.
    Status(HttpStatus),
    /// The upstream answered with this gRPC status code.
    Grpc(GrpcCode),
    /// The caller's own deadline passed before an answer.
    Timeout,
    /// The connection was refused, reset, or could not be made.
    ConnectionError,
    /// Any other infrastructure failure.
    Failure,
    /// The caller gave up before an answer: no evidence either way.
    Cancelled,
    /// The host chose not to count this call.
    Ignored,
}

table! {
    /// The kinds of [`Outcome`], in the order of the WIT's `outcome` variant.
    pub enum OutcomeKind {
        /// [`Outcome::Success`].
        Success = 0 => "success",
        /// [`Outcome::Status`].
        Status = 1 => "status",
        /// [`Outcome::Grpc`].
        Grpc = 2 => "grpc",
        /// [`Outcome::Timeout`].
        Timeout = 3 => "timeout",
        /// [`Outcome::ConnectionError`].
        ConnectionError = 4 => "connection-error",
        /// [`Outcome::Failure`].
        Failure = 5 => "failure",
        /// [`Outcome::Cancelled`].
        Cancelled = 6 => "cancelled",
        /// [`Outcome::Ignored`].
        Ignored = 7 => "ignored",
    }
}

impl Outcome {
    /// The outcome's kind.
    pub const fn kind(&self) -> OutcomeKind {
        match self {
            Self::Success => OutcomeKind::Success,
            Self::Status(_) => OutcomeKind::Status,
            Self::Grpc(_) => OutcomeKind::Grpc,
            Self::Timeout => OutcomeKind::Timeout,
            Self::ConnectionError => OutcomeKind::ConnectionError,
            Self::Failure => OutcomeKind::Failure,
            Self::Cancelled => OutcomeKind::Cancelled,
            Self::Ignored => OutcomeKind::Ignored,
        }
    }

    /// The outcome of a kind that carries no code; `None` for `status` and `grpc`.
    pub const fn of_kind(kind: OutcomeKind) -> Option<Self> {
        match kind {
            OutcomeKind::Success => Some(Self::Success),
            OutcomeKind::Status | OutcomeKind::Grpc => None,
            OutcomeKind::Timeout => Some(Self::Timeout),
            OutcomeKind::ConnectionError => Some(Self::ConnectionError),
            OutcomeKind::Failure => Some(Self::Failure),
            OutcomeKind::Cancelled => Some(Self::Cancelled),
            OutcomeKind::Ignored => Some(Self::Ignored),
        }
    }

    /// An HTTP status outcome; errors unless `code` is in 100–599.
    pub fn status(code: u16) -> Result<Self, OutcomeError> {
        HttpStatus::new(code).map(Self::Status)
    }

    /// A gRPC outcome; errors unless `code` is in 0–16.
    pub fn grpc(code: u8) -> Result<Self, OutcomeError> {
        GrpcCode::new(code).map(Self::Grpc)
    }
}

/// An HTTP status code in 100–599.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HttpStatus(u16);

impl HttpStatus {
    /// The lowest valid status.
    pub const MIN: u16 = 100;
    /// The highest valid status.
    pub const MAX: u16 = 599;

    /// Validates `code`.
    pub const fn new(code: u16) -> Result<Self, OutcomeError> {
        if code >= Self::MIN && code <= Self::MAX {
            Ok(Self(code))
        } else {
            Err(OutcomeError::Status(code))
        }
    }

    /// The numeric code.
    pub const fn get(self) -> u16 {
        self.0
    }
}

/// A gRPC status code in 0 (`OK`) – 16 (`UNAUTHENTICATED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrpcCode(u8);

impl GrpcCode {
    /// The highest valid code (`UNAUTHENTICATED`).
    pub const MAX: u8 = 16;
    /// `DEADLINE_EXCEEDED`.
    pub const DEADLINE_EXCEEDED: Self = Self(4);
    /// `RESOURCE_EXHAUSTED`.
    pub const RESOURCE_EXHAUSTED: Self = Self(8);
    /// `INTERNAL`.
    pub const INTERNAL: Self = Self(13);
    /// `UNAVAILABLE`.
    pub const UNAVAILABLE: Self = Self(14);

    /// Validates `code`.
    pub const fn new(code: u8) -> Result<Self, OutcomeError> {
        if code <= Self::MAX {
            Ok(Self(code))
        } else {
            Err(OutcomeError::GrpcCode(code))
        }
    }

    /// The numeric code.
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// An outcome that cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutcomeError {
    /// An HTTP status outside 100–599.
    Status(u16),
    /// A gRPC code above 16.
    GrpcCode(u8),
}

impl fmt::Display for OutcomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Status(code) => write!(f, "HTTP status {code} is outside 100-599"),
            Self::GrpcCode(code) => write!(f, "gRPC code {code} is above 16"),
        }
    }
}

impl core::error::Error for OutcomeError {}

table! {
    /// What an outcome means to the breaker.
    pub enum Class {
        /// Evidence that the upstream is healthy.
        Success = 0 => "success",
        /// Evidence that the upstream is failing.
        Fault = 1 => "fault",
        /// No evidence: releases the permit and counts as nothing.
        Neutral = 2 => "neutral",
    }
}

/// A set of HTTP statuses (100–599) that count as faults.
///
/// ```
/// use tripgate_core::StatusSet;
/// let faults = StatusSet::default().with(408);
/// assert!(faults.contains(503) && faults.contains(429) && faults.contains(408));
/// assert!(!faults.contains(404));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatusSet([u64; 8]);

impl StatusSet {
    /// No status is a fault.
    pub const EMPTY: Self = Self([0; 8]);

    /// Whether `code` is in the set (codes outside 100–599 never are).
    pub fn contains(&self, code: u16) -> bool {
        match Self::locate(code) {
            Some((word, bit)) => self.0.get(word).is_some_and(|w| w & bit != 0),
            None => false,
        }
    }

    /// The set plus `code` (codes outside 100–599 are ignored).
    #[must_use]
    pub const fn with(mut self, code: u16) -> Self {
        if let Some((word, bit)) = Self::locate(code) {
            // `get_mut` is not `const`.
            if let Some((_, rest)) = self.0.split_at_mut_checked(word) {
                if let Some(w) = rest.first_mut() {
                    *w |= bit;
                }
            }
        }
        self
    }

    /// The set without `code`.
    #[must_use]
    pub fn without(mut self, code: u16) -> Self {
        if let Some((word, bit)) = Self::locate(code) {
            if let Some(w) = self.0.get_mut(word) {
                *w &= !bit;
            }
        }
        self
    }

    /// The set plus every code in `lo..=hi`.
    #[must_use]
    pub const fn with_range(mut self, lo: u16, hi: u16) -> Self {
        let mut code = lo;
        while code <= hi {
            self = self.with(code);
            match code.checked_add(1) {
                Some(next) => code = next,
                None => break,
            }
        }
        self
    }

    /// The codes in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (HttpStatus::MIN..=HttpStatus::MAX).filter(|&code| self.contains(code))
    }

    const fn locate(code: u16) -> Option<(usize, u64)> {
        if code < HttpStatus::MIN || code > HttpStatus::MAX {
            return None;
        }
        let offset = code.wrapping_sub(HttpStatus::MIN);
        // `offset` < 500: the word is below 8, the bit below 64.
        Some((
            offset.wrapping_div(64) as usize,
            1u64.wrapping_shl(offset.wrapping_rem(64) as u32),
        ))
    }

    /// 5xx and 429, built by the compiler: folded at run time, the hundred codes would be
    /// most of what creating a breaker costs where each request creates one (a fresh wasm
    /// instance per request).
    const DEFAULT: Self = Self::EMPTY.with_range(500, 599).with(429);
}

impl Default for StatusSet {
    /// 5xx and 429.
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A set of gRPC codes (0–16) that count as faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GrpcSet(u32);

impl GrpcSet {
    /// No code is a fault.
    pub const EMPTY: Self = Self(0);

    /// Whether `code` is in the set.
    pub fn contains(&self, code: u8) -> bool {
        Self::bit(code).is_some_and(|bit| self.0 & bit != 0)
    }

    /// The set plus `code` (codes above 16 are ignored).
    #[must_use]
    pub const fn with(self, code: u8) -> Self {
        match Self::bit(code) {
            Some(bit) => Self(self.0 | bit),
            None => self,
        }
    }

    /// The set without `code`.
    #[must_use]
    pub fn without(self, code: u8) -> Self {
        Self(self.0 & !Self::bit(code).unwrap_or(0))
    }

    /// The codes in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=GrpcCode::MAX).filter(|&code| self.contains(code))
    }

    const fn bit(code: u8) -> Option<u32> {
        if code > GrpcCode::MAX {
            return None;
        }
        1u32.checked_shl(code as u32)
    }

    /// `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNAVAILABLE`, built by the
    /// compiler (as `StatusSet`'s default).
    const DEFAULT: Self = Self::EMPTY
        .with(GrpcCode::DEADLINE_EXCEEDED.get())
        .with(GrpcCode::RESOURCE_EXHAUSTED.get())
        .with(GrpcCode::INTERNAL.get())
        .with(GrpcCode::UNAVAILABLE.get());
}

impl Default for GrpcSet {
    /// `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNAVAILABLE`.
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Classifies an outcome against the configured fault sets.
#[inline]
pub(crate) fn classify(outcome: Outcome, statuses: &StatusSet, grpc: &GrpcSet) -> Class {
    let fault_if = |fault: bool| if fault { Class::Fault } else { Class::Success };
    match outcome {
        Outcome::Success => Class::Success,
        Outcome::Status(status) => fault_if(statuses.contains(status.get())),
        Outcome::Grpc(code) => fault_if(grpc.contains(code.get())),
        Outcome::Timeout | Outcome::ConnectionError | Outcome::Failure => Class::Fault,
        Outcome::Cancelled | Outcome::Ignored => Class::Neutral,
    }
}
