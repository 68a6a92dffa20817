//! Rejections: a call the breaker turned away, as a value.

use crate::state::State;
use crate::table::table;
use crate::time::Nanos;

table! {
    /// Why a call was rejected.
    pub enum RejectReason {
        /// The breaker is open.
        Open = 0 => "open",
        /// Half-open, and every probe slot is taken.
        Probing = 1 => "probing",
        /// Forced open by the operator.
        Isolated = 2 => "isolated",
        /// Closed, but `max-in-flight` calls are already out.
        Saturated = 3 => "saturated",
        /// Half-open in fleet mode, and another member holds the fleet's probe lease.
        ProbingElsewhere = 4 => "probing-elsewhere",
    }
}

/// A call the breaker turned away. A value, not an error: rejecting is the breaker
/// working.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rejection {
    /// The state that rejected.
    pub state: State,
    /// Why.
    pub reason: RejectReason,
    /// When trying again could succeed, in nanoseconds from now: the rest of the cooldown
    /// when open; when probing, the time until the oldest probe would time out, at most
    /// one second; 0 (no estimate) when isolated or saturated.
    pub retry_after: Nanos,
}
