//! The wire format of fleet mode (`wit/fleet.md`): key names, the channel, the one-line
//! message and the signed vote entry. Pure functions over bytes, so every adapter reads
//! and writes exactly the same thing; the MAC is a [`Signer`]'s (the feature `sign` has
//! the one every adapter uses, `SharedKey`).

use alloc::format;
use alloc::string::String;

use super::FleetEventKind;
use crate::time::{Nanos, MILLISECOND};

/// The format and its version, the message's first field.
pub const VERSION: &str = "tripgate1";

/// Longest message or vote entry a member reads: anything longer is garbage, dropped
/// before it is split (a fleet name is at most 128 bytes; a whole message, under 300).
pub const MAX_LINE: usize = 512;

/// Largest number the format carries: below 2^53, so that every host (JavaScript's
/// numbers included) reads it exactly.
pub const MAX_NUMBER: u64 = (1 << 53) - 1;

/// The most trip votes the store keeps (the newest): a quorum is at most
/// [`MAX_QUORUM`](crate::MAX_QUORUM) members, so a set filled by a broken or hostile
/// writer still answers a vote with a bounded reply.
pub const MAX_VOTES: usize = 4 * crate::config::MAX_QUORUM as usize;

/// Computes the HMAC-SHA256 of a message body with the fleet's shared key. A trait, so the
/// protocol needs no crypto of its own; `SharedKey` (feature `sign`) is the one signer
/// every adapter uses.
pub trait Signer {
    /// The MAC of `body`.
    fn sign(&self, body: &[u8]) -> [u8; 32];
}

/// A fleet's keys and channel, under `tripgate:{<name>}:` (the braces are a Redis Cluster
/// hash tag, so one fleet's keys share a slot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// `…:gen`: the generation counter.
    pub gen: String,
    /// `…:event`: the last event as published.
    pub event: String,
    /// `…:votes`: the trip votes, signed entry → the store's time in ms.
    pub votes: String,
    /// `…:lease`: the probe lease: its holder ([`holder_hex`]) and when it runs out, in the
    /// store's time.
    pub lease: String,
    /// `…:events`: the channel.
    pub channel: String,
    /// `…:waiters`: the holders the store turned down for the lease, oldest first (holder
    /// → the store's time in ms of its first ask).
    pub waiters: String,
    /// `…:wake:`: the prefix of each holder's own channel, where a lease-free notice wakes
    /// the longest waiter alone ([`Keys::wake_channel`]).
    pub wake: String,
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
            waiters: key("waiters"),
            wake: key("wake:"),
        }
    }

    /// A holder's own channel: `…:wake:<holder>` ([`holder_hex`]), in the keys' slot.
    pub fn wake_channel(&self, holder: &str) -> String {
        format!("{}{}", self.wake, holder)
    }
}

/// Whether `name` is a fleet name: 1–128 of `A–Z a–z 0–9 . _ - :`.
pub fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._-:".contains(&c))
}

/// A member id as the wire writes it: 16 lowercase hex digits.
pub fn member_hex(id: u64) -> String {
    format!("{id:016x}")
}

/// Who holds the probe lease, as the store keeps it: the member id and the member's
/// session, 32 lowercase hex digits. The session is random per member (per process), so
/// two processes that share a member name (and so a vote) never share a lease.
pub fn holder_hex(member: u64, session: u64) -> String {
    format!("{member:016x}{session:016x}")
}

/// A member id read back, if it has the wire's shape (and is not 0).
pub fn parse_member(text: &[u8]) -> Option<u64> {
    let lower_hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    if text.len() != 16 || !text.iter().all(lower_hex) {
        return None;
    }
    let text = core::str::from_utf8(text).ok()?;
    u64::from_str_radix(text, 16).ok().filter(|&id| id != 0)
}

/// A stable member id from a name the operator gives a member (a pod's or host's name):
/// the same name gives the same id in every adapter, so a restarted process is the same
/// member and a quorum counts members, not processes. (64-bit FNV-1a; never 0.)
pub fn member_id(name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}

/// A plain decimal: digits only (no sign, no spaces), at most [`MAX_NUMBER`].
pub fn decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 16 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: u64 = 0;
    for digit in text {
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(digit.wrapping_sub(b'0')))?;
    }
    (value <= MAX_NUMBER).then_some(value)
}

/// The generation counter as stored, if it holds a generation the format can carry: a
/// decimal in canonical form (what `INCR` accepts: no sign, no leading zero) below 2^53.
/// Anything else holds no generation, and a member repairs it.
pub fn decode_generation(text: &[u8]) -> Option<u64> {
    let canonical = text == b"0" || text.first().is_some_and(|&c| c != b'0');
    decimal(text).filter(|_| canonical)
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
    pub fn remaining(&self) -> Nanos {
        self.remaining_ms.saturating_mul(MILLISECOND)
    }
}

crate::table::table! {
    /// Why a message, a stored value or a vote was ignored (each counted).
    pub enum Ignored {
        /// Not a `tripgate1` line of seven fields that parse (or too long to read).
        Garbage = 0 => "garbage",
        /// Another fleet's name.
        OtherFleet = 1 => "wrong-fleet",
        /// A shared key is configured and the mac is `-`.
        Unsigned = 2 => "unsigned",
        /// A shared key is configured and the mac is wrong.
        Forged = 3 => "forged",
        /// At or below the generation this member has applied.
        Stale = 4 => "stale",
        /// The store's generation counter holds no generation (not a decimal below 2^53).
        MalformedGeneration = 5 => "malformed-generation",
    }
}

/// Encodes a message and signs it with `signer` (or `-` without one).
pub fn encode(name: &str, m: &Message, signer: Option<&dyn Signer>) -> String {
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
    signed(body, signer)
}

/// A line of the fleet's channel: an event, or a holder's notice that it gave the probe
/// lease back (so that a member waiting for it asks at once, not when the holder's lease
/// would have run out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// An open or a close.
    Event(Message),
    /// `tripgate1 <fleet> <generation> free 0 <origin> <mac>`: the lease is free. A hint,
    /// not an event: it changes no breaker, and its generation is only the sender's.
    LeaseFree {
        /// The member that gave the lease back.
        origin: u64,
    },
}

/// Encodes a lease-free notice from member `origin`, at its `generation`.
pub fn encode_free(
    name: &str,
    generation: u64,
    origin: u64,
    signer: Option<&dyn Signer>,
) -> String {
    let body = format!(
        "{VERSION} {name} {generation} free 0 {}",
        member_hex(origin)
    );
    signed(body, signer)
}

/// Reads an event meant for fleet `name` (a lease-free notice is not one: what is stored
/// is only ever an event). See [`decode_line`].
pub fn decode(text: &[u8], name: &str, signer: Option<&dyn Signer>) -> Result<Message, Ignored> {
    match decode_line(text, name, signer)? {
        Line::Event(message) => Ok(message),
        Line::LeaseFree { .. } => Err(Ignored::Garbage),
    }
}

/// Reads a line meant for fleet `name`, checking its mac with `signer` when there is one.
/// Nothing here panics on any input, and nothing longer than [`MAX_LINE`] is split.
pub fn decode_line(text: &[u8], name: &str, signer: Option<&dyn Signer>) -> Result<Line, Ignored> {
    if text.len() > MAX_LINE {
        return Err(Ignored::Garbage);
    }
    let mut fields = text.split(|&c| c == b' ');
    let mut next = || fields.next().ok_or(Ignored::Garbage);
    let (version, fleet, generation, kind, remaining, origin, mac) = (
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
    );
    if next().is_ok() || version != VERSION.as_bytes() {
        return Err(Ignored::Garbage);
    }
    let kind = match kind {
        b"open" => Some(FleetEventKind::Open),
        b"close" => Some(FleetEventKind::Close),
        b"free" => None,
        _ => return Err(Ignored::Garbage),
    };
    let (Some(generation), Some(remaining_ms), Some(origin)) = (
        decimal(generation),
        decimal(remaining),
        parse_member(origin),
    ) else {
        return Err(Ignored::Garbage);
    };
    let fleet = core::str::from_utf8(fleet).map_err(|_| Ignored::Garbage)?;
    // An open for no time, a close or notice that carries time, or an event of no
    // generation is not a shape the format has.
    let sensible = match kind {
        Some(FleetEventKind::Open) => remaining_ms > 0 && generation > 0,
        Some(FleetEventKind::Close) => remaining_ms == 0 && generation > 0,
        None => remaining_ms == 0,
    };
    if !mac_shaped(mac) || !sensible || !valid_name(fleet) {
        return Err(Ignored::Garbage);
    }
    if fleet != name {
        return Err(Ignored::OtherFleet);
    }
    // The body is everything before the space that precedes the mac.
    let body = text
        .get(..text.len().saturating_sub(mac.len().saturating_add(1)))
        .unwrap_or_default();
    verify(body, mac, signer)?;
    Ok(match kind {
        Some(kind) => Line::Event(Message {
            generation,
            kind,
            remaining_ms,
            origin,
        }),
        None => Line::LeaseFree { origin },
    })
}

/// A trip vote as the votes set holds it: `<member> <generation> <mac>`, the mac over
/// `tripgate1 vote <fleet> <member> <generation>`. Without the key nobody can vote for a
/// member, and a captured vote counts only in the generation it was cast in (the store
/// deletes the votes with every event, and a member counts no vote older than its own
/// generation).
pub fn vote_entry(name: &str, member: u64, generation: u64, signer: Option<&dyn Signer>) -> String {
    let member = member_hex(member);
    let body = format!("{VERSION} vote {name} {member} {generation}");
    let mac = signed(body, signer);
    let mac = mac.rsplit(' ').next().unwrap_or("-");
    format!("{member} {generation} {mac}")
}

/// A vote read back: the member, if the entry is one and its mac checks, and the vote
/// was cast at `generation` or later.
pub fn decode_vote(
    entry: &[u8],
    name: &str,
    generation: u64,
    signer: Option<&dyn Signer>,
) -> Result<u64, Ignored> {
    if entry.len() > MAX_LINE {
        return Err(Ignored::Garbage);
    }
    let mut fields = entry.split(|&c| c == b' ');
    let mut next = || fields.next().ok_or(Ignored::Garbage);
    let (member_text, cast, mac) = (next()?, next()?, next()?);
    if next().is_ok() || !mac_shaped(mac) {
        return Err(Ignored::Garbage);
    }
    let (Some(member), Some(cast)) = (parse_member(member_text), decimal(cast)) else {
        return Err(Ignored::Garbage);
    };
    let body = format!("{VERSION} vote {name} {} {cast}", member_hex(member));
    verify(body.as_bytes(), mac, signer)?;
    if cast < generation {
        return Err(Ignored::Stale);
    }
    Ok(member)
}

fn mac_shaped(mac: &[u8]) -> bool {
    mac == b"-" || (mac.len() == 64 && mac.iter().all(u8::is_ascii_hexdigit))
}

/// `body` with its mac appended after a space: `-` without a signer.
fn signed(body: String, signer: Option<&dyn Signer>) -> String {
    match signer {
        None => format!("{body} -"),
        Some(signer) => {
            let mac = signer.sign(body.as_bytes());
            let mut out = body;
            out.push(' ');
            for byte in mac {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
    }
}

/// Checks `mac` over `body` with `signer`, in constant time over the mac's bytes. A member
/// without a key accepts any mac it cannot check; with one, `-` is unsigned and a mac
/// that is not the body's (uppercase included: the format writes lowercase) is forged.
fn verify(body: &[u8], mac: &[u8], signer: Option<&dyn Signer>) -> Result<(), Ignored> {
    let Some(signer) = signer else {
        return Ok(());
    };
    if mac == b"-" {
        return Err(Ignored::Unsigned);
    }
    let expected = signer.sign(body);
    let mut differ = 0u8;
    if mac.len() != expected.len().saturating_mul(2) {
        return Err(Ignored::Forged);
    }
    for (pair, want) in mac.chunks_exact(2).zip(expected) {
        let got = match pair {
            [high, low] => match (lower_hex_digit(*high), lower_hex_digit(*low)) {
                (Some(high), Some(low)) => high << 4 | low,
                _ => return Err(Ignored::Forged),
            },
            _ => return Err(Ignored::Forged),
        };
        differ |= got ^ want;
    }
    if differ == 0 {
        Ok(())
    } else {
        Err(Ignored::Forged)
    }
}

fn lower_hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c.wrapping_sub(b'0')),
        b'a'..=b'f' => Some(c.wrapping_sub(b'a').wrapping_add(10)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;
    use alloc::vec::Vec;

    /// A toy signer for the format's tests: not a MAC, but a function of the body.
    struct Toy(u8);
    impl Signer for Toy {
        fn sign(&self, body: &[u8]) -> [u8; 32] {
            let mut out = [self.0; 32];
            for (i, b) in body.iter().enumerate() {
                out[i % 32] = out[i % 32].wrapping_mul(31).wrapping_add(*b);
            }
            out
        }
    }

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
    fn unsigned_and_signed_round_trips_and_forgeries() {
        let text = encode("payments", &open(7), None);
        assert_eq!(text, "tripgate1 payments 7 open 1500 00abcdef01234567 -");
        assert_eq!(decode(text.as_bytes(), "payments", None), Ok(open(7)));
        let key = Toy(7);
        let signed = encode("payments", &open(9), Some(&key));
        assert_eq!(
            decode(signed.as_bytes(), "payments", Some(&key)),
            Ok(open(9))
        );
        assert_eq!(decode(signed.as_bytes(), "payments", None), Ok(open(9)));
        assert_eq!(
            decode(text.as_bytes(), "payments", Some(&key)),
            Err(Ignored::Unsigned)
        );
        let other = encode("payments", &open(9), Some(&Toy(8)));
        assert_eq!(
            decode(other.as_bytes(), "payments", Some(&key)),
            Err(Ignored::Forged)
        );
        let upper = alloc::format!(
            "{}{}",
            &signed[..signed.len() - 64],
            signed[signed.len() - 64..].to_uppercase()
        );
        assert_eq!(
            decode(upper.as_bytes(), "payments", Some(&key)),
            Err(Ignored::Forged)
        );
    }

    #[test]
    fn garbage_is_dropped_before_it_is_split() {
        let spaces = " ".repeat(10 << 20);
        assert_eq!(
            decode(spaces.as_bytes(), "payments", None),
            Err(Ignored::Garbage)
        );
        for bad in [
            "",
            "tripgate2 payments 7 open 1500 00abcdef01234567 -",
            "tripgate1 payments 7 open 1500 00abcdef01234567",
            "tripgate1 payments 7 open 1500 00abcdef01234567 - extra",
            "tripgate1 payments -7 open 1500 00abcdef01234567 -",
            "tripgate1 payments 0 open 1500 00abcdef01234567 -",
            "tripgate1 payments 0007x open 1500 00abcdef01234567 -",
            "tripgate1 payments 9007199254740992 open 15 00abcdef01234567 -",
            "tripgate1 payments 7 open 0 00abcdef01234567 -",
            "tripgate1 payments 7 close 5 00abcdef01234567 -",
            "tripgate1 payments 7 open 1500 00ABCDEF01234567 -",
            "tripgate1 payments 7 open 1500 0000000000000000 -",
        ] {
            assert_eq!(
                decode(bad.as_bytes(), "payments", None),
                Err(Ignored::Garbage),
                "{bad:?}"
            );
        }
        // Leading zeros are a plain decimal: every adapter reads 0007 as 7.
        let zeros = "tripgate1 payments 0007 open 1500 00abcdef01234567 -";
        assert_eq!(decode(zeros.as_bytes(), "payments", None), Ok(open(7)));
        let other = encode("orders", &open(7), None);
        assert_eq!(
            decode(other.as_bytes(), "payments", None),
            Err(Ignored::OtherFleet)
        );
    }

    #[test]
    fn votes_are_signed_and_belong_to_a_generation() {
        let key = Toy(3);
        let entry = vote_entry("payments", 42, 5, Some(&key));
        assert_eq!(
            decode_vote(entry.as_bytes(), "payments", 5, Some(&key)),
            Ok(42)
        );
        assert_eq!(
            decode_vote(entry.as_bytes(), "payments", 4, Some(&key)),
            Ok(42)
        );
        assert_eq!(
            decode_vote(entry.as_bytes(), "payments", 6, Some(&key)),
            Err(Ignored::Stale)
        );
        let made_up = vote_entry("payments", 43, 5, None);
        assert_eq!(
            decode_vote(made_up.as_bytes(), "payments", 5, Some(&key)),
            Err(Ignored::Unsigned)
        );
        let mut forged: Vec<u8> = entry.into_bytes();
        forged[3] = b'f';
        assert_eq!(
            decode_vote(&forged, "payments", 5, Some(&key)),
            Err(Ignored::Forged)
        );
        assert_eq!(
            decode_vote(b"00000000000000aa", "payments", 5, None),
            Err(Ignored::Garbage)
        );
        assert_eq!(member_id("pod-1"), member_id("pod-1"));
        assert_ne!(member_id("pod-1"), member_id("pod-2"));
        assert_eq!(
            parse_member(member_hex(member_id("pod-1")).as_bytes()),
            Some(member_id("pod-1"))
        );
    }
}
