//! Draft 2: every write is `atomics.swap` on the `cas` handle of the read it is
//! conditional on.

use super::{key, value, words, Unwritten};
use crate::bindings::tripgate::breaker::circuit_breaker::Breaker;
use crate::bindings::wasi::keyvalue::atomics::{self, Cas, CasError};
use crate::bindings::wasi::keyvalue::store::{self, Bucket};

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
        let value = value(breaker, now)?;
        match atomics::swap(read.cas, &value) {
            Ok(()) => Ok(value),
            // The handle on the newest value is dropped: the caller reads again with
            // a fresh clock.
            Err(CasError::CasFailed(_)) => Err(Unwritten::Conflict),
            Err(CasError::StoreError(_)) => Err(Unwritten::Failed),
        }
    }
}
