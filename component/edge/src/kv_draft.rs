//! `wasi:keyvalue@0.2.0-draft` (`store`, and `atomics` with `increment` only) for the
//! guard's draft build, as the hosts that have only this draft provide it:
//!
//! - [`DraftStore::Shared`]: over the [`crate::KeyValue`] map every instance shares, as a
//!   wasmCloud key-value provider (Redis, NATS) serves one bucket to every instance; an
//!   `increment` is atomic (under the map's lock) and its counter is decimal text.
//! - [`DraftStore::PerRequest`]: wasmtime-wasi-keyvalue 50.0.1 itself, the store
//!   `wasmtime serve -S keyvalue` links: only the identifier `""` opens, and each bucket
//!   opened starts as a copy of the host's preset data, so nothing one request writes
//!   reaches the next.

use wasmtime::component::{Linker, Resource};

use crate::kv::{host_bucket, Bucket, HasKv, KvView};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../component/http-guard/wit/draft/keyvalue.wit",
        world: "wasi:keyvalue/imports",
        with: {
            "wasi:keyvalue/store.bucket": crate::kv::Bucket,
        },
    });
}

use bindings::wasi::keyvalue::{atomics, store};

/// Which draft store the instances of a server of the draft build get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DraftStore {
    /// The server's [`crate::KeyValue`], one map for every instance (wasmCloud's providers).
    #[default]
    Shared,
    /// A store per request, as `wasmtime serve` has.
    PerRequest,
}

/// Adds the shared draft store's `store` and `atomics` to `linker`.
pub fn add_shared_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> KvView<'_>,
) -> wasmtime::Result<()> {
    store::add_to_linker::<_, HasKv>(linker, view)?;
    atomics::add_to_linker::<_, HasKv>(linker, view)?;
    Ok(())
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

// One page: the keys from the cursor (an index into them) on.
host_bucket!(store, u64, |mut keys, cursor| {
    let from = usize::try_from(cursor.unwrap_or(0))
        .unwrap_or(usize::MAX)
        .min(keys.len());
    keys.split_off(from)
});

impl atomics::Host for KvView<'_> {
    fn increment(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        delta: u64,
    ) -> Result<u64, store::Error> {
        self.kv
            .increment(self.table, &bucket, key, delta)
            .map_err(store::Error::Other)
    }
}
