//! Outcome codes: one JS number per outcome, so `record` takes no object.
//!
//! An HTTP status is itself (100–599); a kind that carries no number is
//! [`KIND_BASE`]` + ` its [`OutcomeKind`] code; a gRPC code is [`GRPC_BASE`]` + code`.
//! The JS side reads the kind codes from [`tables()`](crate::tables) by name.

use tripgate_core::{Outcome, OutcomeKind};

/// Outcome codes from here are the kinds ([`OutcomeKind`] codes).
pub const KIND_BASE: u32 = 0x1_0000;
/// Outcome codes from here are gRPC codes.
pub const GRPC_BASE: u32 = 0x2_0000;

/// An outcome code as a core outcome; `None` when it names none (a status outside
/// 100–599, a kind that needs a number, a gRPC code above 16, a fraction).
#[inline]
pub fn outcome(code: f64) -> Option<Outcome> {
    if !(code >= 0.0 && code.fract() == 0.0 && code < f64::from(GRPC_BASE + KIND_BASE)) {
        return None;
    }
    // Exact: a whole number below 2¹⁸.
    let code = code as u32;
    if code < KIND_BASE {
        Outcome::status(u16::try_from(code).ok()?).ok()
    } else if code < GRPC_BASE {
        OutcomeKind::from_code(u8::try_from(code - KIND_BASE).ok()?).and_then(Outcome::of_kind)
    } else {
        Outcome::grpc(u8::try_from(code - GRPC_BASE).ok()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(kind: OutcomeKind) -> f64 {
        f64::from(KIND_BASE + u32::from(kind.code()))
    }

    #[test]
    fn codes() {
        assert_eq!(outcome(503.0), Some(Outcome::status(503).unwrap()));
        assert_eq!(outcome(600.0), None);
        assert_eq!(outcome(99.0), None);
        assert_eq!(outcome(kind(OutcomeKind::Success)), Some(Outcome::Success));
        assert_eq!(outcome(kind(OutcomeKind::Ignored)), Some(Outcome::Ignored));
        assert_eq!(
            outcome(kind(OutcomeKind::Status)),
            None,
            "a status needs its number"
        );
        assert_eq!(outcome(kind(OutcomeKind::Grpc)), None);
        let past_kinds = KIND_BASE + OutcomeKind::ALL.len() as u32;
        assert_eq!(outcome(f64::from(past_kinds)), None);
        assert_eq!(
            outcome(f64::from(GRPC_BASE + 14)),
            Some(Outcome::grpc(14).unwrap())
        );
        assert_eq!(outcome(f64::from(GRPC_BASE + 17)), None);
        assert_eq!(outcome(503.5), None);
        assert_eq!(outcome(f64::NAN), None);
        assert_eq!(outcome(-503.0), None);
    }
}
