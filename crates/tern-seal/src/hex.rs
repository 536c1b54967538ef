//! Lowercase hex, the one text form Tern gives binary values it shows or
//! keys by (ids, fingerprints, digests, store keys).

use std::fmt;

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two characters per byte.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// A fresh 128-bit identifier as 32 lowercase hex characters: unguessable,
/// so it can name something a principal owns (a session, a task, a held
/// call) without more checks than the owner's.
pub fn random_id() -> String {
    hex(&crate::random_bytes::<16>())
}

/// [`hex`] without the allocation, for `Debug` and `Display`.
pub(crate) struct Hex<'a>(pub(crate) &'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_lowercase_digits_per_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[0xab; 3]), Hex(&[0xab; 3]).to_string());
    }

    #[test]
    fn ids_are_32_hex_characters() {
        let id = random_id();
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_ne!(id, random_id());
    }
}
