//! How long an answer asked its callers to stay away, read by the core's rules
//! ([`tripgate_core::retry_after`], SPEC § Retry-After), so that JS parses no header of its
//! own: HTTP `Retry-After` (delay-seconds, or an IMF-fixdate against the wall clock) and
//! gRPC's `grpc-retry-pushback-ms`. Which statuses a `Retry-After` counts on comes with the
//! tables (`retryAfterStatuses`, the core's `retry_after::applies`). The delays cross as
//! whole milliseconds (rounded down; exact in an `f64`, the largest being `u64::MAX` ns),
//! and a value that asks nothing as `undefined`.

use tripgate_core::{retry_after, Nanos, MILLISECOND};
use wasm_bindgen::prelude::*;

/// Whole milliseconds of a delay.
fn whole_ms(delay: Nanos) -> f64 {
    // Below 2⁵³: exact.
    (delay / MILLISECOND) as f64
}

/// An HTTP `Retry-After` value as whole milliseconds, against the wall clock `unix_now_s`
/// (seconds since 1970; a fraction is dropped, a negative or NaN reading is 1970): 0 for a
/// date already past, `undefined` for anything that asks nothing (the obsolete date forms
/// among them).
#[wasm_bindgen]
pub fn retry_after_http_ms(value: &str, unix_now_s: f64) -> Option<f64> {
    // `as` drops the fraction and saturates: NaN and negatives become 0.
    retry_after::http(value, unix_now_s as u64).map(whole_ms)
}

/// A `grpc-retry-pushback-ms` value as whole milliseconds; `undefined` for a negative or
/// malformed one, which asks nothing.
#[wasm_bindgen]
pub fn retry_after_grpc_ms(value: &str) -> Option<f64> {
    retry_after::grpc_pushback(value).map(whole_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_whole_milliseconds() {
        assert_eq!(retry_after_http_ms("120", 0.0), Some(120_000.0));
        let now = 784_111_717.9; // Sun, 06 Nov 1994 08:48:37 GMT, and most of a second
        assert_eq!(
            retry_after_http_ms("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(60_000.0)
        );
        assert_eq!(retry_after_http_ms("soon", now), None);
        assert_eq!(
            retry_after_http_ms("99999999999999999999999", now),
            Some(18_446_744_073_709.0),
            "u64::MAX ns, rounded down"
        );
        assert_eq!(
            retry_after_http_ms("Thu, 01 Jan 1970 00:00:10 GMT", f64::NAN),
            Some(10_000.0),
            "a clock that is not one reads as 1970"
        );
        assert_eq!(retry_after_grpc_ms("250"), Some(250.0));
        assert_eq!(retry_after_grpc_ms("-1"), None);
    }
}
