//! The instance's budget of ticket places: every breaker's permit table draws its places
//! from one budget, so the tickets of all the instance's breakers together, leaked ones
//! included, fit in a memory the host can size in advance (`wit/breaker.wit`, `ticket`).
//! A table is at most half full, so the budget holds `PLACES / 2` tickets out at once.

use core::cell::Cell;

use tripgate_core::PermitTable;

/// Places in all the instance's permit tables together: 2^19 places of 24 bytes, 12 MiB.
pub(crate) const PLACES: usize = 1 << 19;

/// Places the instance's tables hold now.
pub(crate) struct Places(Cell<usize>);

// SAFETY: a component instance is single-threaded (keys.rs refuses a build with the
// `atomics` feature), so the static is never touched from two threads.
unsafe impl Sync for Places {}

pub(crate) static USED: Places = Places(Cell::new(0));

impl Places {
    /// Runs `change` on `table`, which may grow into the places left, and books the
    /// places it took or gave back.
    #[inline]
    pub(crate) fn change<T>(
        &self,
        table: &mut PermitTable,
        change: impl FnOnce(&mut PermitTable) -> T,
    ) -> T {
        let before = table.capacity();
        let left = PLACES.saturating_sub(self.0.get());
        table.limit_places(before.saturating_add(left));
        let result = change(table);
        let after = table.capacity();
        self.0
            .set(self.0.get().saturating_sub(before).saturating_add(after));
        result
    }

    /// Books a dropped table's places back.
    pub(crate) fn release(&self, table: &PermitTable) {
        self.0.set(self.0.get().saturating_sub(table.capacity()));
    }
}
