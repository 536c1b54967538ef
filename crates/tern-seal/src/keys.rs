//! Master secrets, key derivation and the key ring (SECURITY.md §3.3).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::{KeyInit as _, XChaCha20Poly1305};
use hkdf::Hkdf;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

/// Shortest master secret accepted: 256 bits (SECURITY.md §3.3).
const MIN_SECRET_LEN: usize = 32;
/// Fewest distinct byte values a master secret must contain; catches
/// `"aaaa…"`, `0x0101…` and other inputs that are not CSPRNG output.
const MIN_DISTINCT_BYTES: usize = 16;
/// HKDF salt of every key (SECURITY.md §3.3).
const HKDF_SALT: &[u8] = b"mcp-mrtr";
/// HKDF info prefix; followed by the suite byte and the kid.
const HKDF_INFO: &[u8] = b"requestState/v1";
/// Suite byte of XChaCha20-Poly1305 in the HKDF info. The key record fixes
/// the suite; the token never names it (SECURITY.md §3.1).
const SUITE_XCHACHA20_POLY1305: u8 = 0x01;

/// Why a master secret was refused (SECURITY.md §3.3: startup refuses short,
/// all-zero or non-random-looking input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// Fewer than 32 bytes.
    #[error("master secret is {len} bytes; at least 32 are required")]
    TooShort {
        /// Length of the refused input, in bytes.
        len: usize,
    },
    /// Every byte is zero: an unset or wiped secret.
    #[error("master secret is all zero bytes")]
    AllZero,
    /// Fewer than 16 distinct byte values: not CSPRNG output.
    #[error("master secret has only {distinct} distinct byte values; at least 16 are required")]
    TooFewDistinct {
        /// Number of distinct byte values found.
        distinct: usize,
    },
    /// Not strict unpadded base64url.
    #[error("master secret is not unpadded base64url")]
    Encoding,
    /// The OS random source failed.
    #[error("the OS random source failed: {0}")]
    Random(String),
}

/// The secret every key of the ring is derived from.
///
/// Held in [`Zeroizing`] memory and never printed: `Debug` shows
/// `MasterSecret(..)`. Constructors refuse weak input (SECURITY.md §3.3).
#[derive(Clone)]
pub struct MasterSecret(Zeroizing<Vec<u8>>);

impl MasterSecret {
    /// Takes a secret from raw bytes, refusing fewer than 32 bytes, all zero
    /// bytes or fewer than 16 distinct byte values.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SecretError> {
        if bytes.len() < MIN_SECRET_LEN {
            return Err(SecretError::TooShort { len: bytes.len() });
        }
        if bytes.iter().all(|&b| b == 0) {
            return Err(SecretError::AllZero);
        }
        let mut seen = [false; 256];
        for &b in bytes {
            seen[usize::from(b)] = true;
        }
        let distinct = seen.iter().filter(|&&s| s).count();
        if distinct < MIN_DISTINCT_BYTES {
            return Err(SecretError::TooFewDistinct { distinct });
        }
        Ok(Self(Zeroizing::new(bytes.to_vec())))
    }

    /// Takes a secret from unpadded base64url text, as held in an environment
    /// variable or a key file. The decoder is strict: no padding, no
    /// whitespace, no non-canonical trailing bits.
    pub fn from_base64url(text: &str) -> Result<Self, SecretError> {
        let bytes = Zeroizing::new(
            URL_SAFE_NO_PAD
                .decode(text)
                .map_err(|_| SecretError::Encoding)?,
        );
        Self::from_bytes(&bytes)
    }

    /// Draws a fresh 32-byte secret from the OS CSPRNG.
    pub fn generate() -> Result<Self, SecretError> {
        let mut bytes = Zeroizing::new([0u8; MIN_SECRET_LEN]);
        // 32 uniform bytes with fewer than 16 distinct values is so unlikely
        // that a second draw never happens in practice; the loop only keeps
        // `generate` within the rule that `from_bytes` enforces.
        loop {
            getrandom::fill(bytes.as_mut()).map_err(|e| SecretError::Random(e.to_string()))?;
            if let Ok(secret) = Self::from_bytes(bytes.as_ref()) {
                return Ok(secret);
            }
        }
    }

    /// The secret as unpadded base64url, for writing a key file. The text is
    /// itself a secret, so it comes back in zeroizing memory.
    pub fn to_base64url(&self) -> Zeroizing<String> {
        Zeroizing::new(URL_SAFE_NO_PAD.encode(self.0.as_slice()))
    }

    /// Derives the AEAD key for `kid`:
    /// `HKDF-SHA256(ikm = master, salt = "mcp-mrtr", info = "requestState/v1" ‖ suite ‖ kid BE)`
    /// (SECURITY.md §3.3), so keys of different kids and suites are separate
    /// by construction.
    fn derive_xchacha(&self, kid: u32) -> XChaCha20Poly1305 {
        let mut info = [0u8; HKDF_INFO.len() + 1 + 4];
        info[..HKDF_INFO.len()].copy_from_slice(HKDF_INFO);
        info[HKDF_INFO.len()] = SUITE_XCHACHA20_POLY1305;
        info[HKDF_INFO.len() + 1..].copy_from_slice(&kid.to_be_bytes());
        let mut okm = Zeroizing::new([0u8; 32]);
        Hkdf::<Sha256>::new(Some(HKDF_SALT), &self.0)
            .expand(&info, okm.as_mut())
            .expect("32 bytes is far below HKDF-SHA256's 255 * 32 byte output limit");
        XChaCha20Poly1305::new(&(*okm).into())
    }
}

impl fmt::Debug for MasterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterSecret(..)")
    }
}

/// What a key may do (SECURITY.md §3.3, rotation in three steps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyRole {
    /// Seals new tokens and opens them. Exactly one key of a ring is Active.
    Active,
    /// Opens tokens but never seals: a key being published before
    /// activation, or a former Active key during its grace period.
    VerifyOnly,
    /// Opens nothing. Kept so that its kid is reported precisely and never
    /// reused.
    Retired,
}

/// One key of a ring: its id, the secret it is derived from and its role.
#[derive(Debug, Clone)]
pub struct KeySpec {
    /// Key id, carried in clear in every token (SECURITY.md §3.1).
    pub kid: u32,
    /// Master secret the key is derived from.
    pub secret: MasterSecret,
    /// What the key may do.
    pub role: KeyRole,
    /// For a VerifyOnly key: the last unix second at which it still opens
    /// tokens. `None` means no deadline (a key published ahead of its
    /// activation). Ignored for other roles.
    pub verify_until: Option<u64>,
}

/// Why a key ring could not be built (SECURITY.md §3.3: these stop startup).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyRingError {
    /// Two keys share a kid, so a token's kid would be ambiguous.
    #[error("duplicate key id {kid}")]
    DuplicateKid {
        /// The repeated key id.
        kid: u32,
    },
    /// No key is Active, so nothing could be sealed.
    #[error("no active key")]
    NoActiveKey,
    /// More than one key is Active, so sealing would be ambiguous.
    #[error("more than one active key ({first} and {second})")]
    SeveralActiveKeys {
        /// One Active key id.
        first: u32,
        /// Another Active key id.
        second: u32,
    },
    /// Making an ephemeral ring failed.
    #[error(transparent)]
    Secret(#[from] SecretError),
}

/// A key as the ring holds it. Retired keys keep no cipher.
#[derive(Clone)]
pub(crate) struct RingKey {
    pub(crate) role: KeyRole,
    pub(crate) verify_until: Option<u64>,
    pub(crate) aead: Option<XChaCha20Poly1305>,
}

/// The keys a server seals and opens with: one Active, any number of
/// VerifyOnly and Retired, looked up by kid in O(1) with no trial decryption
/// (SECURITY.md §0.3, §3.3).
///
/// Sealing and opening live in [`KeyRing::seal_at`] and [`KeyRing::open_at`].
/// `Debug` lists kids and roles only, never key material.
#[derive(Clone)]
pub struct KeyRing {
    pub(crate) keys: HashMap<u32, RingKey>,
    pub(crate) active: u32,
}

impl KeyRing {
    /// Derives every key and checks the ring: kids unique, exactly one
    /// Active (SECURITY.md §3.3).
    pub fn new(specs: Vec<KeySpec>) -> Result<Self, KeyRingError> {
        let mut keys = HashMap::with_capacity(specs.len());
        let mut active: Option<u32> = None;
        for spec in specs {
            if spec.role == KeyRole::Active {
                if let Some(first) = active {
                    return Err(KeyRingError::SeveralActiveKeys {
                        first,
                        second: spec.kid,
                    });
                }
                active = Some(spec.kid);
            }
            let aead = match spec.role {
                KeyRole::Retired => None,
                KeyRole::Active | KeyRole::VerifyOnly => Some(spec.secret.derive_xchacha(spec.kid)),
            };
            let verify_until = match spec.role {
                KeyRole::VerifyOnly => spec.verify_until,
                KeyRole::Active | KeyRole::Retired => None,
            };
            match keys.entry(spec.kid) {
                Entry::Occupied(_) => return Err(KeyRingError::DuplicateKid { kid: spec.kid }),
                Entry::Vacant(slot) => {
                    slot.insert(RingKey {
                        role: spec.role,
                        verify_until,
                        aead,
                    });
                }
            }
        }
        let active = active.ok_or(KeyRingError::NoActiveKey)?;
        Ok(Self { keys, active })
    }

    /// A ring of one Active key with a random secret and a random kid, for
    /// stdio and development: a restart invalidates every token, and two
    /// local processes cannot open each other's tokens (SECURITY.md §3.3).
    pub fn ephemeral() -> Result<Self, KeyRingError> {
        let secret = MasterSecret::generate()?;
        let kid = getrandom::u32().map_err(|e| SecretError::Random(e.to_string()))?;
        Self::new(vec![KeySpec {
            kid,
            secret,
            role: KeyRole::Active,
            verify_until: None,
        }])
    }

    /// The kid new tokens are sealed under.
    pub fn active_kid(&self) -> u32 {
        self.active
    }

    /// The role of `kid`, or `None` if the ring does not know it.
    pub fn role(&self, kid: u32) -> Option<KeyRole> {
        self.keys.get(&kid).map(|k| k.role)
    }

    /// Every kid of the ring, in ascending order.
    pub fn kids(&self) -> Vec<u32> {
        let mut kids: Vec<u32> = self.keys.keys().copied().collect();
        kids.sort_unstable();
        kids
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for kid in self.kids() {
            if let Some(key) = self.keys.get(&kid) {
                map.entry(&kid, &(key.role, key.verify_until));
            }
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_secrets() {
        let secret = MasterSecret::from_bytes(&(0u8..32).collect::<Vec<_>>()).unwrap();
        assert_eq!(format!("{secret:?}"), "MasterSecret(..)");
        let ring = KeyRing::new(vec![KeySpec {
            kid: 7,
            secret,
            role: KeyRole::Active,
            verify_until: None,
        }])
        .unwrap();
        assert_eq!(format!("{ring:?}"), "{7: (Active, None)}");
    }

    #[test]
    fn derived_keys_differ_by_kid() {
        let secret = MasterSecret::from_bytes(&(0u8..32).collect::<Vec<_>>()).unwrap();
        let a = secret.derive_xchacha(1);
        let b = secret.derive_xchacha(2);
        // Compare through behaviour: the same nonce and plaintext give
        // different ciphertexts under different kids.
        use chacha20poly1305::aead::Aead as _;
        let nonce = chacha20poly1305::XNonce::default();
        assert_ne!(
            a.encrypt(&nonce, &b"x"[..]).unwrap(),
            b.encrypt(&nonce, &b"x"[..]).unwrap()
        );
    }

    #[test]
    fn generated_secrets_round_trip_through_base64url() {
        let secret = MasterSecret::generate().unwrap();
        let again = MasterSecret::from_base64url(&secret.to_base64url()).unwrap();
        assert_eq!(secret.0, again.0);
    }
}
