//! The core's messages, written without `core::fmt`.
//!
//! `core::fmt`'s machinery costs a WebAssembly guest about 9 KB, a seventh of the
//! component. So every message the hosts show (`failure-threshold must be >= 1`, a
//! snapshot error) is built here from words and numbers, into any [`Words`] sink: the
//! `Display` impls write into a `Formatter` through it, and the component into a `String`,
//! so both read the same text and only one of them pulls in `fmt`.

use core::fmt;

/// Somewhere to write a message, piece by piece.
pub trait Words {
    /// Appends `text`.
    fn word(&mut self, text: &str) -> fmt::Result;

    /// Appends the name of the config field whose code is `code` (`name`, as the core
    /// spells it): a host whose options are named otherwise (`failureThreshold`) writes
    /// its own name here, so that a message names what its users wrote.
    fn field(&mut self, code: u8, name: &str) -> fmt::Result {
        let _ = code;
        self.word(name)
    }

    /// Appends `n` in decimal.
    fn number(&mut self, n: u64) -> fmt::Result {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        let mut rest = n;
        loop {
            start = start.saturating_sub(1);
            if let Some(digit) = digits.get_mut(start) {
                // `rest % 10` is below 10, so the sum is an ASCII digit.
                *digit = b'0'.saturating_add(u8::try_from(rest % 10).unwrap_or(0));
            }
            rest /= 10;
            if rest == 0 || start == 0 {
                break;
            }
        }
        let text = digits
            .get(start..)
            .and_then(|d| core::str::from_utf8(d).ok())
            .unwrap_or_default();
        self.word(text)
    }
}

impl Words for fmt::Formatter<'_> {
    fn word(&mut self, text: &str) -> fmt::Result {
        self.write_str(text)
    }
}
