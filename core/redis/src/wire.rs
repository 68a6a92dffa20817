//! The wire format of `wit/fleet.md`: key names, the channel, and the one-line message
//! with its HMAC. Pure functions, so every rule here is tested without a store.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tripgate_core::{FleetEventKind, MILLISECOND};

/// The format and its version, the message's first field.
pub const VERSION: &str = "tripgate1";

/// A fleet's keys and channel, under `tripgate:{<name>}:` (the braces are a Redis Cluster
/// hash tag, so one fleet's keys share a slot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// `…:gen`: the generation counter.
    pub gen: String,
    /// `…:event`: the last event as published.
    pub event: String,
    /// `…:votes`: the trip votes, member id → the store's time in ms.
    pub votes: String,
    /// `…:lease`: the probe lease, holding the holder's member id.
    pub lease: String,
    /// `…:events`: the channel.
    pub channel: String,
}

impl Keys {
    /// The keys of fleet `name` (already validated).
    pub fn new(name: &str) -> Self {
        let key = |suffix: &str| format!("tripgate:{{{name}}}:{suffix}");
        Self {
            gen: key("gen"),
            event: key("event"),
            votes: key("votes"),
            lease: key("lease"),
            channel: key("events"),
        }
    }
}

/// A member id as the wire writes it: 16 lowercase hex digits.
pub fn member_hex(id: u64) -> String {
    format!("{id:016x}")
}

/// A member id read back, if it has the wire's shape.
pub fn parse_member(text: &str) -> Option<u64> {
    let lower_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    (text.len() == 16 && text.bytes().all(lower_hex))
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

/// A message that parsed and passed its checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The generation it was published under.
    pub generation: u64,
    /// Open or close.
    pub kind: FleetEventKind,
    /// For an open, the remaining cooldown in ms as published (0 for a close).
    pub remaining_ms: u64,
    /// The publisher's member id.
    pub origin: u64,
}

impl Message {
    /// The remaining cooldown in the core's nanoseconds.
    pub fn remaining_ns(&self) -> u64 {
        self.remaining_ms.saturating_mul(MILLISECOND)
    }
}

/// Why a message was ignored (each one counted in the adapter's status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// Not a `tripgate1` line of seven fields that parse.
    Garbage,
    /// Another fleet's name.
    OtherFleet,
    /// A shared key is configured and the mac is `-`.
    Unsigned,
    /// A shared key is configured and the mac is wrong.
    Forged,
}

/// Encodes a message and signs it with `key` (or `-` without one).
pub fn encode(name: &str, m: &Message, key: Option<&[u8]>) -> String {
    let kind = match m.kind {
        FleetEventKind::Open => "open",
        FleetEventKind::Close => "close",
    };
    let body = format!(
        "{VERSION} {name} {} {kind} {} {}",
        m.generation,
        m.remaining_ms,
        member_hex(m.origin)
    );
    let mac = key.map_or_else(|| String::from("-"), |key| sign(key, &body));
    format!("{body} {mac}")
}

/// Reads a message meant for fleet `name`, checking its mac against `key` when there is
/// one. Nothing here panics on any input.
pub fn decode(text: &str, name: &str, key: Option<&[u8]>) -> Result<Message, Ignored> {
    let fields: Vec<&str> = text.split(' ').collect();
    let &[version, fleet, generation, kind, remaining, origin, mac] = fields.as_slice() else {
        return Err(Ignored::Garbage);
    };
    if version != VERSION {
        return Err(Ignored::Garbage);
    }
    let kind = match kind {
        "open" => FleetEventKind::Open,
        "close" => FleetEventKind::Close,
        _ => return Err(Ignored::Garbage),
    };
    let (Some(generation), Some(remaining_ms), Some(origin)) = (
        decimal(generation),
        decimal(remaining),
        parse_member(origin),
    ) else {
        return Err(Ignored::Garbage);
    };
    let mac_shaped = mac == "-" || (mac.len() == 64 && mac.bytes().all(|c| c.is_ascii_hexdigit()));
    // An open for no time, or a close that carries time, is not a shape the format has.
    let sensible = (kind == FleetEventKind::Open) == (remaining_ms > 0);
    if !mac_shaped || !sensible || generation == 0 || !valid_name(fleet) {
        return Err(Ignored::Garbage);
    }
    if fleet != name {
        return Err(Ignored::OtherFleet);
    }
    if let Some(key) = key {
        if mac == "-" {
            return Err(Ignored::Unsigned);
        }
        // The body is everything before the space that precedes the mac.
        let body = text
            .get(..text.len().saturating_sub(mac.len() + 1))
            .unwrap_or("");
        if !verify(key, body, mac) {
            return Err(Ignored::Forged);
        }
    }
    Ok(Message {
        generation,
        kind,
        remaining_ms,
        origin,
    })
}

/// Whether `name` is a fleet name: 1–128 of `A–Z a–z 0–9 . _ - :`.
pub fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._-:".contains(&c))
}

/// Largest number the format carries: below 2^53, so that every host (JavaScript's
/// numbers included) reads it exactly.
pub const MAX_NUMBER: u64 = (1 << 53) - 1;

/// A plain decimal: digits only (no sign, no spaces), at most [`MAX_NUMBER`].
fn decimal(text: &str) -> Option<u64> {
    (!text.is_empty() && text.len() <= 16 && text.bytes().all(|c| c.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
        .filter(|&n| n <= MAX_NUMBER)
}

fn sign(key: &[u8], body: &str) -> String {
    let mut mac = keyed(key);
    mac.update(body.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks in constant time (`verify_slice`), so a forger learns nothing from timing.
fn verify(key: &[u8], body: &str, mac_hex: &str) -> bool {
    let Some(expected) = unhex(mac_hex) else {
        return false;
    };
    let mut mac = keyed(key);
    mac.update(body.as_bytes());
    mac.verify_slice(&expected).is_ok()
}

fn keyed(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length (longer ones are hashed), so this cannot fail; the
    // fallback keeps the function total all the same.
    Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| Hmac::<Sha256>::new(&Default::default()))
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    // Lowercase only, as the format writes it.
    if text.bytes().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(generation: u64) -> Message {
        Message {
            generation,
            kind: FleetEventKind::Open,
            remaining_ms: 1500,
            origin: 0x00ab_cdef_0123_4567,
        }
    }

    #[test]
    fn keys_carry_the_hash_tag() {
        let keys = Keys::new("payments");
        assert_eq!(keys.gen, "tripgate:{payments}:gen");
        assert_eq!(keys.channel, "tripgate:{payments}:events");
        assert_eq!(keys.lease, "tripgate:{payments}:lease");
    }

    #[test]
    fn unsigned_round_trip() {
        let text = encode("payments", &open(7), None);
        assert_eq!(text, "tripgate1 payments 7 open 1500 00abcdef01234567 -");
        assert_eq!(decode(&text, "payments", None), Ok(open(7)));
    }

    #[test]
    fn signed_round_trip_and_forgeries() {
        let key = b"shared secret";
        let text = encode("payments", &open(9), Some(key));
        assert_eq!(decode(&text, "payments", Some(key)), Ok(open(9)));
        // A member without a key accepts a mac it cannot check.
        assert_eq!(decode(&text, "payments", None), Ok(open(9)));
        let unsigned = encode("payments", &open(9), None);
        assert_eq!(
            decode(&unsigned, "payments", Some(key)),
            Err(Ignored::Unsigned)
        );
        let other_key = encode("payments", &open(9), Some(b"another"));
        assert_eq!(
            decode(&other_key, "payments", Some(key)),
            Err(Ignored::Forged)
        );
        let tampered = text.replacen(" 9 ", " 10 ", 1);
        assert_eq!(
            decode(&tampered, "payments", Some(key)),
            Err(Ignored::Forged)
        );
        let upper = format!(
            "{}{}",
            &text[..text.len() - 64],
            text[text.len() - 64..].to_uppercase()
        );
        assert_eq!(decode(&upper, "payments", Some(key)), Err(Ignored::Forged));
    }

    #[test]
    fn garbage_and_other_fleets() {
        for bad in [
            "",
            "hello",
            "tripgate2 payments 7 open 1500 00abcdef01234567 -",
            "tripgate1 payments 7 open 1500 00abcdef01234567",
            "tripgate1 payments 7 open 1500 00abcdef01234567 - extra",
            "tripgate1 payments -7 open 1500 00abcdef01234567 -",
            "tripgate1 payments 0 open 1500 00abcdef01234567 -",
            "tripgate1 payments 7 opened 1500 00abcdef01234567 -",
            "tripgate1 payments 7 open 0 00abcdef01234567 -",
            "tripgate1 payments 7 close 5 00abcdef01234567 -",
            "tripgate1 payments 7 open +15 00abcdef01234567 -",
            "tripgate1 payments 99999999999999999999 open 15 00abcdef01234567 -",
            "tripgate1 payments 9007199254740992 open 15 00abcdef01234567 -",
            "tripgate1 payments 7 open 1500 00ABCDEF01234567 -",
            "tripgate1 payments 7 open 1500 abc -",
            "tripgate1 payments 7 open 1500 00abcdef01234567 xyz",
            "tripgate1  payments 7 open 1500 00abcdef01234567 -",
            "tripgate1 pay{ments 7 open 1500 00abcdef01234567 -",
        ] {
            assert_eq!(
                decode(bad, "payments", None),
                Err(Ignored::Garbage),
                "{bad:?}"
            );
        }
        let other = encode("orders", &open(7), None);
        assert_eq!(decode(&other, "payments", None), Err(Ignored::OtherFleet));
    }

    #[test]
    fn names() {
        assert!(valid_name("payments.v2_eu-west:1"));
        assert!(valid_name(&"a".repeat(128)));
        assert!(!valid_name(""));
        assert!(!valid_name(&"a".repeat(129)));
        assert!(!valid_name("pay ments"));
        assert!(!valid_name("pay{ments}"));
    }
}
