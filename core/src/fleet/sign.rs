//! The fleet's one signer (feature `sign`): HMAC-SHA256 under the shared key, as the wire
//! format signs lines and votes (`wit/fleet.md` § Lines, § Votes). Every adapter, in every
//! language, and the protocol vectors' runner sign through it, so a MAC can only differ
//! between members when their keys do.

use core::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::wire::Signer;

/// A fleet's shared key, keyed once; cloning copies the keyed state, not the key.
#[derive(Clone)]
pub struct SharedKey(Hmac<Sha256>);

impl SharedKey {
    /// The key of these bytes. HMAC takes a key of any length (a longer one is hashed
    /// first), so this cannot fail; how short a key the fleet accepts is
    /// [`MIN_KEY_BYTES`](super::options::MIN_KEY_BYTES), checked where options are read.
    pub fn new(key: impl AsRef<[u8]>) -> Self {
        let mac = match Hmac::new_from_slice(key.as_ref()) {
            Ok(mac) => mac,
            // Unreachable for HMAC: any length is a valid key.
            Err(_) => Hmac::new(&Default::default()),
        };
        Self(mac)
    }
}

impl fmt::Debug for SharedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret: a log line must never carry it.
        f.write_str("SharedKey(<set>)")
    }
}

impl Signer for SharedKey {
    fn sign(&self, body: &[u8]) -> [u8; 32] {
        let mut mac = self.0.clone();
        mac.update(body);
        mac.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_4231_case_2() {
        // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?".
        let mac = SharedKey::new(b"Jefe").sign(b"what do ya want for nothing?");
        let hex: alloc::string::String = mac.iter().map(|b| alloc::format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_key_never_prints() {
        let printed = alloc::format!("{:?}", SharedKey::new(b"a secret of 16 bytes"));
        assert!(!printed.contains("secret"));
    }
}
