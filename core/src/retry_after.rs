//! How long an upstream asked its callers to stay away, read from its answer: HTTP's
//! `Retry-After` (delay-seconds or an HTTP date) on a 429 or a 503, and gRPC's
//! `grpc-retry-pushback-ms`. Hosts read the header from their own response types and hand
//! the value here, so every host reads it the same way (`tests/vectors/retry-after/`);
//! the breaker then opens for at least that long when the answer trips it
//! ([`Breaker::record_with_retry_after`](crate::Breaker::record_with_retry_after)).

use crate::time::{Nanos, MILLISECOND, SECOND};

/// Whether an HTTP answer with this status may carry a stay-away the breaker honours:
/// 429 (Too Many Requests) and 503 (Service Unavailable), the two RFC 9110 gives
/// `Retry-After` to for this purpose (on a redirect it means something else).
pub const fn applies(status: u16) -> bool {
    matches!(status, 429 | 503)
}

/// An HTTP `Retry-After` value as a delay: delay-seconds, or an IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`) less `unix_now` (the wall clock, seconds since
/// 1970), 0 for a date already past. `None` for anything else, which asks nothing.
///
/// ```
/// use tripgate_core::{retry_after, SECOND};
///
/// assert_eq!(retry_after::http("120", 0), Some(120 * SECOND));
/// let now = 784_111_717; // Sun, 06 Nov 1994 08:48:37 GMT
/// assert_eq!(retry_after::http("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(60 * SECOND));
/// assert_eq!(retry_after::http("soon", now), None);
/// ```
pub fn http(value: &str, unix_now: u64) -> Option<Nanos> {
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    if let Some(seconds) = digits(value) {
        return Some(seconds.saturating_mul(SECOND));
    }
    let at = imf_fixdate(value)?;
    Some(at.saturating_sub(unix_now).saturating_mul(SECOND))
}

/// gRPC's `grpc-retry-pushback-ms` (a whole number of milliseconds) as a delay; `None`
/// for a negative or malformed value, which gRPC reads as "do not retry" and which asks
/// the breaker nothing.
pub fn grpc_pushback(value: &str) -> Option<Nanos> {
    digits(value.trim_matches(|c| c == ' ' || c == '\t')).map(|ms| ms.saturating_mul(MILLISECOND))
}

/// A run of ASCII digits as a number (saturating); `None` for anything else.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10)
            .saturating_add(u64::from(b.wrapping_sub(b'0')))
    }))
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// An IMF-fixdate as seconds since 1970, checked field by field (the weekday too).
// The fields have at most four digits, so no sum or product here comes near overflow.
#[allow(clippy::arithmetic_side_effects)]
fn imf_fixdate(text: &str) -> Option<u64> {
    let at = |i: usize| text.as_bytes().get(i).copied();
    let punctuated = text.len() == 29
        && text.get(3..5) == Some(", ")
        && text.get(25..) == Some(" GMT")
        && [7, 11, 16].iter().all(|&i| at(i) == Some(b' '))
        && at(19) == Some(b':')
        && at(22) == Some(b':');
    if !punctuated {
        return None;
    }
    let number = |from: usize, to: usize| digits(text.get(from..to)?);
    let day = number(5, 7)?;
    let month = MONTHS.iter().position(|m| Some(*m) == text.get(8..11))?;
    let year = number(12, 16)?;
    let (hour, minute, second) = (number(17, 19)?, number(20, 22)?, number(23, 25)?);
    let month = u64::try_from(month).ok()?.saturating_add(1);
    if !(1..=days_in(year, month)).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_since_1970(year, month, day)?;
    // 1970-01-01 was a Thursday.
    let weekday = DAYS.get(usize::try_from((days + 3) % 7).ok()?)?;
    if Some(*weekday) != text.get(0..3) {
        return None;
    }
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

fn days_in(year: u64, month: u64) -> u64 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (from 1970 on).
// A four-digit year and a checked month and day: no step comes near overflow.
#[allow(clippy::arithmetic_side_effects)]
fn days_since_1970(year: u64, month: u64, day: u64) -> Option<u64> {
    // Howard Hinnant's days-from-civil, with March as the first month of the year.
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let year_of_era = y % 400;
    let m = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    (era * 146_097 + day_of_era).checked_sub(719_468)
}
