//! The five states a breaker can be in.

use crate::table::table;

table! {
    /// The breaker's state.
    pub enum State {
        /// Admitting calls and watching the window.
        Closed = 0 => "closed",
        /// Rejecting every call until the cooldown passes.
        Open = 1 => "open",
        /// Admitting a few probes to test the upstream.
        HalfOpen = 2 => "half-open",
        /// Forced open by the operator until released.
        Isolated = 3 => "isolated",
        /// Admitting everything and never tripping, still measuring.
        Disabled = 4 => "disabled",
    }
}
