//! The platform's errno numbers for the errno names of the core's error table
//! ([`tripgate_core::errors::RULES`]): a translation, not a rule. A name the platform does
//! not define (Node's `ENOTFOUND`, or any name off unix) has no number, so no OS error
//! carries it.

/// The number this platform gives errno `name`, if it defines it.
#[cfg(unix)]
pub fn code(name: &str) -> Option<i32> {
    Some(match name {
        "ETIMEDOUT" => libc::ETIMEDOUT,
        "ECONNREFUSED" => libc::ECONNREFUSED,
        "ECONNRESET" => libc::ECONNRESET,
        "ECONNABORTED" => libc::ECONNABORTED,
        "ENOTCONN" => libc::ENOTCONN,
        "EPIPE" => libc::EPIPE,
        "EADDRNOTAVAIL" => libc::EADDRNOTAVAIL,
        "EHOSTUNREACH" => libc::EHOSTUNREACH,
        "EHOSTDOWN" => libc::EHOSTDOWN,
        "ENETUNREACH" => libc::ENETUNREACH,
        "ENETDOWN" => libc::ENETDOWN,
        "EINTR" => libc::EINTR,
        _ => return None,
    })
}

/// Off unix, OS errors are not errno numbers.
#[cfg(not(unix))]
pub fn code(_name: &str) -> Option<i32> {
    None
}
