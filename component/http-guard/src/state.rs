//! Where a breaker lives between instances: one value per upstream authority in a
//! `wasi:keyvalue` bucket, written only by a write conditional on the read it came from:
//! compare-and-swap in draft 2 (`cas.rs`), a version counter's `increment` in the earlier
//! draft (`versioned.rs`, the `draft` feature).
//!
//! The value is `tge2`, the wall-clock instant of the export (ns since the Unix epoch,
//! u64 little-endian) and its bitwise complement, then the bytes of the breaker's
//! `export-state`. Monotonic clocks of two instances do not compare, so the next instance
//! computes the time that passed from the wall clock. What a stamp can claim is bounded:
//!
//! - a stamp that does not match its complement is damaged, and the value with it (the
//!   breaker's bytes carry their own checksum, the stamp this one);
//! - a stamp in the reader's future (a wall clock that stepped back, or a host whose clock
//!   is ahead of the reader's) counts as no time, and the reader writes the state back
//!   stamped by its own clock, so time counts from there rather than from an instant its
//!   clock has not reached;
//! - time read from a stamp is counted `TRIPGATE_CLOCK_SKEW_MS` short, so a host whose
//!   clock is ahead of the writer's by up to that does not see a cooldown end early;
//! - whatever the stamp says, the import is bounded by the importing configuration
//!   (SPEC.md § Export and import): no opening outlasts the configured longest one.

use wasip2::clocks::wall_clock;

use crate::bindings::tripgate::breaker::circuit_breaker::{Breaker, Config, ConfigError, Snapshot};
use crate::bindings::wasi::keyvalue::store::Error;

#[cfg(not(feature = "draft"))]
mod cas;
#[cfg(feature = "draft")]
mod versioned;
#[cfg(not(feature = "draft"))]
pub use cas::{Place, Read};
#[cfg(feature = "draft")]
pub use versioned::{Place, Read};

const MAGIC: &[u8; 4] = b"tge2";
const HEADER: usize = MAGIC.len() + 16;

/// The key of the breaker for `authority`.
pub fn key(authority: &str) -> String {
    format!("tripgate/breaker/{authority}")
}

/// Why a write did not happen.
pub enum Unwritten {
    /// Another instance wrote first: read again.
    Conflict,
    /// The store failed, or the breaker could not export.
    Failed,
}

fn words(error: &Error) -> String {
    match error {
        Error::NoSuchStore => "no such store".into(),
        Error::AccessDenied => "access denied".into(),
        Error::Other(text) => text.clone(),
    }
}

/// The value to store for `breaker` as of `now`: the magic, the wall clock, the export.
fn value(breaker: &Breaker, now: u64) -> Result<Vec<u8>, Unwritten> {
    let snapshot = breaker.export_state(now).map_err(|_| Unwritten::Failed)?;
    let mut value = Vec::with_capacity(HEADER + snapshot.len());
    let stamp = wall_now();
    value.extend_from_slice(MAGIC);
    value.extend_from_slice(&stamp.to_le_bytes());
    value.extend_from_slice(&(!stamp).to_le_bytes());
    value.extend_from_slice(&snapshot);
    Ok(value)
}

/// Now, by the wall clock, in ns since the Unix epoch.
pub fn wall_now() -> u64 {
    let now = wall_clock::now();
    now.seconds
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(now.nanoseconds))
}

/// A breaker restored from the store.
pub struct Restored {
    pub breaker: Breaker,
    pub key: u32,
    /// The value's stamp is in this host's future: no time was counted from it, and the
    /// state should be written back with this host's stamp.
    pub ahead: bool,
}

/// A breaker at `now` with the state in `value`, and its key: fresh when there is none,
/// or when the stored value is not a state this configuration can take (another format,
/// a damaged stamp, another window shape: the next write replaces it). `skew`: how much
/// less than the stamps say to count (`TRIPGATE_CLOCK_SKEW_MS`).
pub fn restore(
    value: Option<&[u8]>,
    config: &Config,
    now: u64,
    skew: u64,
) -> Result<Restored, ConfigError> {
    let wall = wall_now();
    let stamped = value.and_then(split);
    let ahead = stamped.is_some_and(|(stamp, _)| stamp > wall);
    let snapshot = stamped.map(|(stamp, bytes)| Snapshot {
        bytes: bytes.to_vec(),
        elapsed: wall.saturating_sub(stamp).saturating_sub(skew),
    });
    // A refused snapshot leaves the breaker as created (`imported` says why).
    let restored = Breaker::restore(config, snapshot.as_ref(), now)?;
    Ok(Restored {
        breaker: restored.breaker,
        key: restored.key,
        ahead,
    })
}

/// The stamp and the breaker's bytes, if the value is the guard's and its stamp intact.
fn split(value: &[u8]) -> Option<(u64, &[u8])> {
    let rest = value.strip_prefix(MAGIC)?;
    let (stamp, rest) = rest.split_at_checked(8)?;
    let (check, snapshot) = rest.split_at_checked(8)?;
    let stamp = u64::from_le_bytes(stamp.try_into().ok()?);
    (u64::from_le_bytes(check.try_into().ok()?) == !stamp).then_some((stamp, snapshot))
}
