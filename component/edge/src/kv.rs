//! A `wasi:keyvalue@0.2.0-draft2` store (`store` and `atomics`) over one map shared by
//! every instance the server starts, so what one request writes the next one reads.
//!
//! wasmtime-wasi-keyvalue 50 implements the earlier `0.2.0-draft` (no compare-and-swap)
//! and copies its data into each bucket it opens, so writes never reach another
//! instance: it cannot hold a breaker between requests.
//!
//! Every write stamps the key with a new version from one counter; a `cas` handle
//! remembers the version it read, and `swap` writes only if the key still has it. A
//! deleted key keeps a tombstone with its own version, so a handle that read "absent"
//! cannot succeed after a write and a delete in between.
//!
//! [`KeyValue::spin`] makes a store that behaves as Spin's default one does (its
//! `key-value-spin` crate over SQLite): only the labels granted in the manifest
//! (`key_value_stores`) open, any other is `access-denied`; a `swap` compares values,
//! not versions, and a `swap` on a handle that read "absent" is an upsert that always
//! succeeds; counters are 8-byte little-endian integers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use wasmtime::component::{HasData, Linker, Resource, ResourceTable, ResourceTableError};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../component/http-guard/wit/keyvalue.wit",
        world: "wasi:keyvalue/imports",
        with: {
            "wasi:keyvalue/store.bucket": super::Bucket,
            "wasi:keyvalue/atomics.cas": super::CasHandle,
        },
    });
}

use bindings::wasi::keyvalue::{atomics, store};

/// An open bucket: its name.
pub struct Bucket {
    pub(crate) name: String,
}

/// A read that a swap is conditional on.
pub struct CasHandle {
    bucket: String,
    key: String,
    version: u64,
    value: Option<Vec<u8>>,
}

#[derive(Clone, Debug)]
struct Entry {
    version: u64,
    /// `None`: deleted (a tombstone).
    value: Option<Vec<u8>>,
}

/// Operation counts since the store was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvStats {
    /// Reads (`get`, `cas.new`).
    pub reads: u64,
    /// Writes that happened (`set`, `delete`, successful `swap`s, `increment`).
    pub writes: u64,
    /// `swap`s refused because another write came first.
    pub conflicts: u64,
}

/// How `open`, `swap` and `increment` behave.
#[derive(Clone, Debug, Default)]
enum Semantics {
    /// Any label opens; swaps compare versions.
    #[default]
    Versioned,
    /// Spin's default store: these labels open; swaps compare values, and one on an
    /// absent key always writes.
    Spin { granted: Vec<String> },
}

#[derive(Default)]
struct Shared {
    semantics: Semantics,
    entries: Mutex<HashMap<(String, String), Entry>>,
    version: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    conflicts: AtomicU64,
    unavailable: AtomicBool,
    collisions: AtomicU64,
}

/// The store: clones share one map.
#[derive(Clone, Default)]
pub struct KeyValue {
    shared: Arc<Shared>,
}

impl KeyValue {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store with the semantics of Spin's default one, in which a component may open
    /// the `granted` labels only.
    pub fn spin(granted: &[&str]) -> Self {
        KeyValue {
            shared: Arc::new(Shared {
                semantics: Semantics::Spin {
                    granted: granted.iter().map(|&label| label.to_owned()).collect(),
                },
                ..Shared::default()
            }),
        }
    }

    /// The value under `key` in `bucket`.
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        self.entries()
            .get(&(bucket.to_owned(), key.to_owned()))
            .and_then(|entry| entry.value.clone())
    }

    /// Writes `value` under `key` in `bucket`, as a guest's `set` would.
    pub fn set(&self, bucket: &str, key: &str, value: Vec<u8>) {
        self.write(bucket, key, Some(value));
    }

    /// Counts of the operations so far.
    pub fn stats(&self) -> KvStats {
        KvStats {
            reads: self.shared.reads.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
            conflicts: self.shared.conflicts.load(Ordering::Relaxed),
        }
    }

    /// While `true`, every operation fails with `other("the store is unavailable")`, as
    /// an unreachable remote store would.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.shared
            .unavailable
            .store(unavailable, Ordering::Relaxed);
    }

    /// The next `n` swaps each find that another writer came first (the key is written
    /// again with its own value, under a new version): what two instances that decide at
    /// the same moment see, made to happen on demand.
    pub fn collide_next_swaps(&self, n: u64) {
        self.shared.collisions.store(n, Ordering::SeqCst);
    }

    /// Adds `wasi:keyvalue/store` and `wasi:keyvalue/atomics` (draft 2) to `linker`.
    pub fn add_to_linker<T: Send + 'static>(
        linker: &mut Linker<T>,
        view: fn(&mut T) -> KvView<'_>,
    ) -> wasmtime::Result<()> {
        store::add_to_linker::<_, HasKv>(linker, view)?;
        atomics::add_to_linker::<_, HasKv>(linker, view)?;
        Ok(())
    }

    /// A guest's `open` of the bucket `identifier`, in either draft: `denied` when the
    /// host does not grant it, `failed` with what went wrong when the store fails.
    pub(crate) fn open<E>(
        &self,
        table: &mut ResourceTable,
        identifier: String,
        denied: E,
        failed: fn(String) -> E,
    ) -> Result<Resource<Bucket>, E> {
        self.check().map_err(failed)?;
        if let Semantics::Spin { granted } = &self.shared.semantics {
            if !granted.contains(&identifier) {
                return Err(denied);
            }
        }
        table
            .push(Bucket { name: identifier })
            .map_err(|e| failed(bad_handle(e)))
    }

    /// The name of the bucket behind `bucket`, if the store is available.
    pub(crate) fn name(
        &self,
        table: &ResourceTable,
        bucket: &Resource<Bucket>,
    ) -> Result<String, String> {
        self.check()?;
        Ok(table.get(bucket).map_err(bad_handle)?.name.clone())
    }

    /// A guest's read of `key`.
    pub(crate) fn read(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        self.shared.reads.fetch_add(1, Ordering::Relaxed);
        self.get(bucket, key)
    }

    /// The keys of `bucket` that hold values, in order.
    pub(crate) fn keys(&self, bucket: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .entries()
            .iter()
            .filter(|((b, _), entry)| b == bucket && entry.value.is_some())
            .map(|((_, k), _)| k.clone())
            .collect();
        keys.sort();
        keys
    }

    /// A guest's `increment` of the counter under `key` (absent: 0) by `delta`, refused
    /// when the sum does not fit `N`: decimal text, or 8 bytes little-endian in Spin's
    /// store.
    pub(crate) fn increment<N: Into<i128> + TryFrom<i128>>(
        &self,
        table: &ResourceTable,
        bucket: &Resource<Bucket>,
        key: String,
        delta: N,
    ) -> Result<N, String> {
        let bucket = self.name(table, bucket)?;
        let spin = matches!(self.shared.semantics, Semantics::Spin { .. });
        let mut entries = self.entries();
        let place = (bucket, key);
        let current = match entries.get(&place).and_then(|e| e.value.as_ref()) {
            None => Some(0),
            Some(bytes) if spin => <[u8; 8]>::try_from(bytes.as_slice())
                .ok()
                .map(|b| i128::from(i64::from_le_bytes(b))),
            Some(bytes) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|text| text.parse::<i128>().ok()),
        }
        .ok_or_else(|| format!("`{}` does not hold a number", place.1))?;
        let overflow = || format!("`{}` would overflow", place.1);
        let sum = current.checked_add(delta.into()).ok_or_else(overflow)?;
        let fits = N::try_from(sum).map_err(|_| overflow())?;
        let value = if spin {
            // In range of i64 here: Spin's counters are i64.
            (sum as i64).to_le_bytes().to_vec()
        } else {
            sum.to_string().into_bytes()
        };
        let version = self.shared.version.fetch_add(1, Ordering::Relaxed) + 1;
        entries.insert(
            place,
            Entry {
                version,
                value: Some(value),
            },
        );
        self.shared.writes.fetch_add(1, Ordering::Relaxed);
        Ok(fits)
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<(String, String), Entry>> {
        // A panic while the lock was held cannot leave an entry half-written (each
        // critical section is one insert), so a poisoned map is still consistent.
        self.shared
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn write(&self, bucket: &str, key: &str, value: Option<Vec<u8>>) {
        let mut entries = self.entries();
        let version = self.shared.version.fetch_add(1, Ordering::Relaxed) + 1;
        entries.insert(
            (bucket.to_owned(), key.to_owned()),
            Entry { version, value },
        );
        self.shared.writes.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.shared.unavailable.load(Ordering::Relaxed) {
            Err("the store is unavailable".into())
        } else {
            Ok(())
        }
    }
}

/// What the bindings' host traits (of either draft: `kv_draft`) are implemented on: the
/// store and the instance's resource table.
pub struct KvView<'a> {
    pub kv: &'a KeyValue,
    pub table: &'a mut ResourceTable,
}

pub(crate) struct HasKv;

impl HasData for HasKv {
    type Data<'a> = KvView<'a>;
}

fn bad_handle(error: ResourceTableError) -> String {
    format!("bad handle: {error}")
}

fn table_error(error: ResourceTableError) -> store::Error {
    store::Error::Other(bad_handle(error))
}

impl store::Host for KvView<'_> {
    fn open(&mut self, identifier: String) -> Result<Resource<Bucket>, store::Error> {
        self.kv.open(
            self.table,
            identifier,
            store::Error::AccessDenied,
            store::Error::Other,
        )
    }
}

/// A draft's `HostBucket` over [`KvView`]: the buckets of both drafts are the same but
/// for the cursor of `list-keys`, which `$page` (the bucket's keys in order and the
/// cursor, to the page's keys) reads.
macro_rules! host_bucket {
    ($store:ident, $cursor:ty, $page:expr) => {
        impl $store::HostBucket for $crate::kv::KvView<'_> {
            fn get(
                &mut self,
                bucket: wasmtime::component::Resource<$crate::kv::Bucket>,
                key: String,
            ) -> Result<Option<Vec<u8>>, $store::Error> {
                let name = self
                    .kv
                    .name(self.table, &bucket)
                    .map_err($store::Error::Other)?;
                Ok(self.kv.read(&name, &key))
            }

            fn set(
                &mut self,
                bucket: wasmtime::component::Resource<$crate::kv::Bucket>,
                key: String,
                value: Vec<u8>,
            ) -> Result<(), $store::Error> {
                let name = self
                    .kv
                    .name(self.table, &bucket)
                    .map_err($store::Error::Other)?;
                self.kv.write(&name, &key, Some(value));
                Ok(())
            }

            fn delete(
                &mut self,
                bucket: wasmtime::component::Resource<$crate::kv::Bucket>,
                key: String,
            ) -> Result<(), $store::Error> {
                let name = self
                    .kv
                    .name(self.table, &bucket)
                    .map_err($store::Error::Other)?;
                self.kv.write(&name, &key, None);
                Ok(())
            }

            fn exists(
                &mut self,
                bucket: wasmtime::component::Resource<$crate::kv::Bucket>,
                key: String,
            ) -> Result<bool, $store::Error> {
                let name = self
                    .kv
                    .name(self.table, &bucket)
                    .map_err($store::Error::Other)?;
                Ok(self.kv.read(&name, &key).is_some())
            }

            fn list_keys(
                &mut self,
                bucket: wasmtime::component::Resource<$crate::kv::Bucket>,
                cursor: Option<$cursor>,
            ) -> Result<$store::KeyResponse, $store::Error> {
                let name = self
                    .kv
                    .name(self.table, &bucket)
                    .map_err($store::Error::Other)?;
                let page: fn(Vec<String>, Option<$cursor>) -> Vec<String> = $page;
                Ok($store::KeyResponse {
                    keys: page(self.kv.keys(&name), cursor),
                    cursor: None,
                })
            }

            fn drop(
                &mut self,
                bucket: wasmtime::component::Resource<$crate::kv::Bucket>,
            ) -> wasmtime::Result<()> {
                self.table.delete(bucket)?;
                Ok(())
            }
        }
    };
}
pub(crate) use host_bucket;

// One page, after the cursor (the last key of the previous page).
host_bucket!(store, String, |mut keys, cursor| {
    keys.retain(|k| cursor.as_ref().is_none_or(|c| k > c));
    keys
});

impl atomics::Host for KvView<'_> {
    fn increment(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        delta: i64,
    ) -> Result<i64, store::Error> {
        self.kv
            .increment(self.table, &bucket, key, delta)
            .map_err(store::Error::Other)
    }

    fn swap(&mut self, cas: Resource<CasHandle>, value: Vec<u8>) -> Result<(), atomics::CasError> {
        let handle = self
            .table
            .delete(cas)
            .map_err(|e| atomics::CasError::StoreError(table_error(e)))?;
        self.kv
            .check()
            .map_err(|e| atomics::CasError::StoreError(store::Error::Other(e)))?;
        let mut entries = self.kv.entries();
        let place = (handle.bucket, handle.key);
        let collide = self
            .kv
            .shared
            .collisions
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if collide {
            let version = self.kv.shared.version.fetch_add(1, Ordering::Relaxed) + 1;
            let value = entries.get(&place).and_then(|entry| entry.value.clone());
            entries.insert(place.clone(), Entry { version, value });
        }
        let now = entries.get(&place).cloned();
        let current = now.as_ref().and_then(|entry| entry.value.as_ref());
        let stale = match &self.kv.shared.semantics {
            Semantics::Versioned => now.as_ref().map_or(0, |entry| entry.version) != handle.version,
            // `UPDATE … WHERE value = old`, or an upsert when the handle read nothing.
            Semantics::Spin { .. } => handle.value.is_some() && current != handle.value.as_ref(),
        };
        if stale {
            self.kv.shared.conflicts.fetch_add(1, Ordering::Relaxed);
            let (bucket, key) = place;
            let newest = CasHandle {
                bucket,
                key,
                version: now.as_ref().map_or(0, |entry| entry.version),
                value: now.and_then(|entry| entry.value),
            };
            drop(entries);
            let newest = self
                .table
                .push(newest)
                .map_err(|e| atomics::CasError::StoreError(table_error(e)))?;
            return Err(atomics::CasError::CasFailed(newest));
        }
        let version = self.kv.shared.version.fetch_add(1, Ordering::Relaxed) + 1;
        entries.insert(
            place,
            Entry {
                version,
                value: Some(value),
            },
        );
        self.kv.shared.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl atomics::HostCas for KvView<'_> {
    fn new(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
    ) -> Result<Resource<CasHandle>, store::Error> {
        let name = self
            .kv
            .name(self.table, &bucket)
            .map_err(store::Error::Other)?;
        self.kv.shared.reads.fetch_add(1, Ordering::Relaxed);
        let entry = self.kv.entries().get(&(name.clone(), key.clone())).cloned();
        let handle = CasHandle {
            bucket: name,
            key,
            version: entry.as_ref().map_or(0, |entry| entry.version),
            value: entry.and_then(|entry| entry.value),
        };
        self.table.push(handle).map_err(table_error)
    }

    fn current(&mut self, cas: Resource<CasHandle>) -> Result<Option<Vec<u8>>, store::Error> {
        Ok(self.table.get(&cas).map_err(table_error)?.value.clone())
    }

    fn drop(&mut self, cas: Resource<CasHandle>) -> wasmtime::Result<()> {
        self.table.delete(cas)?;
        Ok(())
    }
}
