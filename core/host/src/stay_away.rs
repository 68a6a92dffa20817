//! The upstream's stay-away as a Rust host reads it: the answer's headers through the
//! core's rules ([`tripgate_core::retry_after`]), the HTTP date against the wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

use tripgate_core::{retry_after, Nanos};

/// How long an answer with `status` asked its callers to stay away, from its headers
/// (`header` looks one up by its lower-case name): `Retry-After` on a 429 or a 503, else
/// `grpc-retry-pushback-ms`. 0 when it asked nothing.
pub fn from_headers<'a>(status: u16, mut header: impl FnMut(&str) -> Option<&'a str>) -> Nanos {
    let http = retry_after::applies(status)
        .then(|| header("retry-after"))
        .flatten()
        .and_then(|value| retry_after::http(value, unix_now()));
    http.or_else(|| header("grpc-retry-pushback-ms").and_then(retry_after::grpc_pushback))
        .unwrap_or(0)
}

/// Seconds since 1970 by the wall clock (an HTTP date is one); 0 before 1970.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}
