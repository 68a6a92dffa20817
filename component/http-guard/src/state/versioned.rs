//! The earlier draft, `wasi:keyvalue@0.2.0-draft`, has no compare-and-swap, only
//! `increment`; a write is made conditional on a version counter instead. For the
//! breaker under key `K`:
//!
//! - `K/version` is a counter, only ever incremented (its stored form is the host's);
//! - `K/<n>` holds the value written as version `n`.
//!
//! A **read** takes the counter (`increment` by 0) and the newest value at or below it:
//! a version taken by a write that has not stored its value yet, or never will (it lost,
//! or its instance died), is empty and skipped, at most `LOOKBACK` of them.
//!
//! A **write** takes the next version (`increment` by 1). It goes ahead only if that is
//! the read's counter + 1, so no other write took a version since the read, and if every
//! version the read skipped is still empty, so none of them was being stored while this
//! request decided; then it stores its value under its version and removes the one
//! `LOOKBACK` below. Otherwise it is a conflict, as a lost swap is, and its version stays
//! empty.
//!
//! What this gives against draft 2's compare-and-swap, given an `increment` that is
//! atomic across instances: the same rule, with one gap. A write stalled between taking
//! its version and storing its value, for as long as another write of the same breaker
//! takes both steps and checks the stalled one's version, is overwritten: its outcome is
//! lost. The store keeps up to `LOOKBACK` values per breaker, and a read may cost a `get`
//! for every empty version above the newest value.

use super::{key, value, words, Unwritten};
use crate::bindings::tripgate::breaker::circuit_breaker::Breaker;
use crate::bindings::wasi::keyvalue::atomics;
use crate::bindings::wasi::keyvalue::store::{self, Bucket};

/// How many versions a read looks back past empty ones, and how many values are kept.
const LOOKBACK: u64 = 64;

/// One breaker's place in the store.
pub struct Place {
    bucket: Bucket,
    key: String,
    counter: String,
}

/// A read a write is conditional on: the counter, the version of the value found (0:
/// none), and the value.
pub struct Read {
    top: u64,
    found: u64,
    pub value: Option<Vec<u8>>,
}

impl Place {
    /// Opens `bucket` for the breaker of `authority`.
    pub fn open(bucket: &str, authority: &str) -> Result<Self, String> {
        let bucket = store::open(bucket)
            .map_err(|e| format!("opening the bucket `{bucket}`: {}", words(&e)))?;
        let key = key(authority);
        Ok(Place {
            bucket,
            counter: format!("{key}/version"),
            key,
        })
    }

    fn slot(&self, version: u64) -> String {
        format!("{}/{version}", self.key)
    }

    /// Reads the breaker's value.
    pub fn read(&self) -> Result<Read, String> {
        let top = atomics::increment(&self.bucket, &self.counter, 0).map_err(|e| words(&e))?;
        let oldest = top.saturating_sub(LOOKBACK).max(1);
        for version in (oldest..=top).rev() {
            if let Some(value) = self
                .bucket
                .get(&self.slot(version))
                .map_err(|e| words(&e))?
            {
                return Ok(Read {
                    top,
                    found: version,
                    value: Some(value),
                });
            }
        }
        Ok(Read {
            top,
            found: 0,
            value: None,
        })
    }

    /// Writes `breaker`'s state as of `now` if no write came between `read` and now;
    /// returns the value written.
    pub fn swap(&self, read: Read, breaker: &Breaker, now: u64) -> Result<Vec<u8>, Unwritten> {
        let value = value(breaker, now)?;
        let version =
            atomics::increment(&self.bucket, &self.counter, 1).map_err(|_| Unwritten::Failed)?;
        if version != read.top.saturating_add(1) {
            return Err(Unwritten::Conflict);
        }
        for skipped in read
            .found
            .saturating_add(1)
            .max(read.top.saturating_sub(LOOKBACK))..=read.top
        {
            if skipped == 0 {
                continue;
            }
            match self.bucket.exists(&self.slot(skipped)) {
                Ok(false) => {}
                Ok(true) => return Err(Unwritten::Conflict),
                Err(_) => return Err(Unwritten::Failed),
            }
        }
        self.bucket
            .set(&self.slot(version), &value)
            .map_err(|_| Unwritten::Failed)?;
        if version > LOOKBACK {
            // Best effort: a value left behind is only space.
            let _ = self.bucket.delete(&self.slot(version - LOOKBACK));
        }
        Ok(value)
    }
}
