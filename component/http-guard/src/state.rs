//! Where a breaker lives between instances: one value per upstream authority in a
//! `wasi:keyvalue` bucket, written only by a write conditional on the read it came from:
//! compare-and-swap in draft 2 (`cas.rs`), a version counter's `increment` in the earlier
//! draft (`versioned.rs`, the `draft` feature).
//!
//! The value is `tge1`, the wall-clock instant of the export (ns since the Unix epoch,
//! u64 little-endian), then the bytes of the breaker's `export-state`. Monotonic clocks of
//! two instances do not compare, so the next instance computes the time that passed from
//! the wall clock, clamped at 0 (a wall clock that stepped back counts as no time).

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

const MAGIC: &[u8; 4] = b"tge1";
const HEADER: usize = MAGIC.len() + 8;

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
    value.extend_from_slice(MAGIC);
    value.extend_from_slice(&wall_now().to_le_bytes());
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

/// A breaker at `now` with the state in `value`, and its key: fresh when there is none,
/// or when the stored value is not a state this configuration can take (another format,
/// another window shape: the next write replaces it).
pub fn restore(
    value: Option<&[u8]>,
    config: &Config,
    now: u64,
) -> Result<(Breaker, u32), ConfigError> {
    let snapshot = value.and_then(split).map(|(stamp, bytes)| Snapshot {
        bytes: bytes.to_vec(),
        elapsed: wall_now().saturating_sub(stamp),
    });
    // A refused snapshot leaves the breaker as created (`imported` says why).
    let restored = Breaker::restore(config, snapshot.as_ref(), now)?;
    Ok((restored.breaker, restored.key))
}

fn split(value: &[u8]) -> Option<(u64, &[u8])> {
    let rest = value.strip_prefix(MAGIC)?;
    let (stamp, snapshot) = rest.split_at_checked(8)?;
    Some((u64::from_le_bytes(stamp.try_into().ok()?), snapshot))
}
