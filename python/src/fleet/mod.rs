//! Fleet mode for Python (`FLEET.md`; the wire format is `wit/fleet.md`): the core's
//! member protocol (`tripgate_core::fleet::protocol`) driving a `tripgate.CircuitBreaker`
//! through the `Member` operations every Rust host implements, the wire format, the option
//! bounds, the reconnect backoff and the store's Lua scripts. The redis-py adapter
//! (`python/tripgate/fleet.py`) only moves bytes: it tells a [`FleetMember`] what happened,
//! runs the one Redis call the protocol asks for, and hands back Redis's raw reply, which
//! is read here.
//!
//! A member is stepped by its store's background thread. A breaker's transitions reach
//! that thread through a [`Watcher`] that only sets a flag and writes a byte to a
//! [`FleetWaker`] socket the thread selects on: a call never waits on the store.

mod member;
mod reply;
mod waker;
mod wire;

pub use member::FleetMember;
pub use waker::{FleetBackoff, FleetWaker};
pub use wire::{
    add_tables, fleet_decode, fleet_encode, fleet_eviction, fleet_member_id, fleet_options,
    fleet_scripts, fleet_valid_name, fleet_vote_entry,
};
