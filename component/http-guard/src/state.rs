//! Where a breaker lives between instances: one value per upstream authority in a
//! `wasi:keyvalue@0.2.0-draft2` bucket, written only with compare-and-swap.
//!
//! The value is `tge1`, the wall-clock instant of the export (ns since the Unix epoch,
//! u64 little-endian), then the bytes of the breaker's `export-state`. Monotonic clocks of
//! two instances do not compare, so the next instance computes the time that passed from
//! the wall clock, clamped at 0 (a wall clock that stepped back counts as no time).

use wasip2::clocks::wall_clock;

use crate::bindings::tripgate::breaker::circuit_breaker::{Breaker, Config, ConfigError};
use crate::bindings::wasi::keyvalue::atomics::{self, Cas, CasError};
use crate::bindings::wasi::keyvalue::store::{self, Bucket, Error};

const MAGIC: &[u8; 4] = b"tge1";
const HEADER: usize = MAGIC.len() + 8;

/// The key of the breaker for `authority`.
pub fn key(authority: &str) -> String {
    format!("tripgate/breaker/{authority}")
}

/// Now, by the wall clock, in ns since the Unix epoch.
pub fn wall_now() -> u64 {
    let now = wall_clock::now();
    now.seconds
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(now.nanoseconds))
}

/// One breaker's place in the store.
pub struct Place {
    bucket: Bucket,
    key: String,
}

/// A read that a `swap` is conditional on, with the value it read.
pub struct Read {
    cas: Cas,
    pub value: Option<Vec<u8>>,
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

impl Place {
    /// Opens `bucket` for the breaker of `authority`.
    pub fn open(bucket: &str, authority: &str) -> Result<Self, String> {
        let bucket = store::open(bucket)
            .map_err(|e| format!("opening the bucket `{bucket}`: {}", words(&e)))?;
        Ok(Place {
            bucket,
            key: key(authority),
        })
    }

    /// Reads the breaker's value.
    pub fn read(&self) -> Result<Read, String> {
        let cas = Cas::new(&self.bucket, &self.key).map_err(|e| words(&e))?;
        let value = cas.current().map_err(|e| words(&e))?;
        Ok(Read { cas, value })
    }

    /// Writes `breaker`'s state as of `now` if the value is still what `read` read;
    /// returns the value written.
    pub fn swap(&self, read: Read, breaker: &Breaker, now: u64) -> Result<Vec<u8>, Unwritten> {
        let snapshot = breaker.export_state(now).map_err(|_| Unwritten::Failed)?;
        let mut value = Vec::with_capacity(HEADER + snapshot.len());
        value.extend_from_slice(MAGIC);
        value.extend_from_slice(&wall_now().to_le_bytes());
        value.extend_from_slice(&snapshot);
        match atomics::swap(read.cas, &value) {
            Ok(()) => Ok(value),
            // The handle on the newest value is dropped: the caller reads again with
            // a fresh clock.
            Err(CasError::CasFailed(_)) => Err(Unwritten::Conflict),
            Err(CasError::StoreError(_)) => Err(Unwritten::Failed),
        }
    }
}

/// A breaker at `now` with the state in `value`: fresh when there is none, or when the
/// stored value is not a state this configuration can take (another format, another
/// window shape: the next write replaces it).
pub fn restore(value: Option<&[u8]>, config: &Config, now: u64) -> Result<Breaker, ConfigError> {
    let breaker = Breaker::create(config, now)?;
    if let Some((stamp, snapshot)) = value.and_then(split) {
        let elapsed = wall_now().saturating_sub(stamp);
        // A refused import leaves the breaker as created.
        let _ = breaker.import_state(snapshot, elapsed, now);
    }
    Ok(breaker)
}

fn split(value: &[u8]) -> Option<(u64, &[u8])> {
    let rest = value.strip_prefix(MAGIC)?;
    let (stamp, snapshot) = rest.split_at_checked(8)?;
    Some((u64::from_le_bytes(stamp.try_into().ok()?), snapshot))
}
