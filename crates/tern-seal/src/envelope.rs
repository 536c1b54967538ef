//! Envelope v1: sealing and opening (SECURITY.md §3.1, §3.5).
//!
//! ```text
//! token = base64url_nopad( 0x01 ‖ kid:u32 BE ‖ nonce[24] ‖ XChaCha20-Poly1305(key[kid], postcard(claims), aad) )
//! aad   = "mcp-mrtr-state" ‖ 0x00 ‖ resource_id ‖ 0x00 ‖ token_bytes[0..5]
//! ```

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::{AeadInOut as _, XChaCha20Poly1305, XNonce};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::keys::{KeyRing, KeyRole};

/// Longest token, in characters, that is sealed or even decoded
/// (SECURITY.md §3.1, size limits).
pub const MAX_TOKEN_CHARS: usize = 8192;

/// Format version byte. It does not name an algorithm: the key record does.
const VERSION: u8 = 0x01;
/// Version byte plus the big-endian kid.
const HEADER_LEN: usize = 5;
/// XChaCha20 nonce length.
const NONCE_LEN: usize = 24;
/// Poly1305 tag length.
const TAG_LEN: usize = 16;
/// First label of the AAD.
const AAD_LABEL: &[u8] = b"mcp-mrtr-state";
/// Domain tag of [`Binding::digest`].
const BINDING_TAG: &[u8] = b"tern-seal/binding/v1";

/// What is sealed: a lifetime, a binding and the caller's body.
///
/// Times are unix seconds. The caller chooses them (`now` is always passed
/// in); [`KeyRing::open_at`] checks them against its own `now` and an
/// [`OpenPolicy`] (SECURITY.md §3.5, step 5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims<T> {
    /// When the token was issued.
    pub issued_at: u64,
    /// Last second at which the token is valid (before skew).
    pub expires_at: u64,
    /// What the token is bound to; must match on open.
    pub binding: Binding,
    /// The caller's payload.
    pub body: T,
}

/// A 32-byte digest of whatever a token is bound to, such as the principal,
/// the method and a params digest (SECURITY.md §0.2, §3.5).
///
/// Equality is constant time, because a binding is compared against a value
/// an attacker may probe.
#[derive(Clone, Copy, Serialize, Deserialize)]
pub struct Binding(pub [u8; 32]);

impl Binding {
    /// SHA-256 over a domain tag and each part with its length prefixed, so
    /// that `["ab", "c"]` and `["a", "bc"]` bind differently.
    pub fn digest(parts: &[&[u8]]) -> Self {
        let mut h = Sha256::new();
        length_prefixed(&mut h, BINDING_TAG);
        for part in parts {
            length_prefixed(&mut h, part);
        }
        Self(h.finalize().into())
    }

    /// Constant-time equality over all 32 bytes.
    pub fn ct_eq(&self, other: &Self) -> bool {
        let diff = self
            .0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

impl PartialEq for Binding {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other)
    }
}

impl Eq for Binding {}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Binding(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        f.write_str("…)")
    }
}

/// Feeds `len:u64 BE ‖ bytes` into a hash, the framing of every domain
/// separated digest of this crate.
pub(crate) fn length_prefixed(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
}

/// Clock tolerance and lifetime ceiling applied by [`KeyRing::open_at`]
/// (SECURITY.md §3.5, step 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenPolicy {
    /// How far clocks of the sealing and opening instances may disagree.
    pub skew_secs: u64,
    /// Longest `expires_at - issued_at` accepted: a backstop against a token
    /// sealed with a lifetime longer than policy allows.
    pub max_ttl_secs: u64,
}

impl Default for OpenPolicy {
    /// 30 s of skew and the hard maximum state TTL of 3 600 s (SECURITY.md §3.4).
    fn default() -> Self {
        Self {
            skew_secs: 30,
            max_ttl_secs: 3600,
        }
    }
}

/// Proof that a token opened: its key was usable, its tag verified, its
/// payload decoded strictly, its lifetime covers `now` and its binding
/// matched. Only [`KeyRing::open_at`] makes one.
#[derive(Debug)]
pub struct Opened<T> {
    claims: Claims<T>,
    kid: u32,
}

impl<T> Opened<T> {
    /// The verified claims.
    pub fn claims(&self) -> &Claims<T> {
        &self.claims
    }

    /// Consumes the proof and returns the verified claims.
    pub fn into_claims(self) -> Claims<T> {
        self.claims
    }

    /// The kid the token was sealed under, for logs and rotation metrics.
    pub fn kid(&self) -> u32 {
        self.kid
    }

    /// The verified body.
    pub fn body(&self) -> &T {
        &self.claims.body
    }
}

/// Why sealing failed. Each is a bug or an environment failure on the
/// sealing side, never something a peer caused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The token would be longer than [`MAX_TOKEN_CHARS`]; it is refused,
    /// never truncated (SECURITY.md §3.1).
    #[error("sealed token would be {chars} chars; the limit is {MAX_TOKEN_CHARS}")]
    TooLarge {
        /// Length the token would have had.
        chars: usize,
    },
    /// `expires_at` is before `issued_at`.
    #[error("claims expire ({expires_at}) before they are issued ({issued_at})")]
    ExpiresBeforeIssued {
        /// The claims' issue time.
        issued_at: u64,
        /// The claims' expiry.
        expires_at: u64,
    },
    /// The payload could not be encoded with postcard.
    #[error("payload encoding failed: {0}")]
    Encode(#[from] postcard::Error),
    /// The OS random source failed, so no nonce could be drawn.
    #[error("the OS random source failed: {0}")]
    Random(String),
    /// The cipher refused the message.
    #[error("encryption failed")]
    Cipher,
}

/// Why a token did not open, in the order the checks run (SECURITY.md §3.5,
/// steps 1–5).
///
/// `Display` is precise and meant for logs; the peer must only ever see one
/// uniform error, whatever the variant (SECURITY.md §0.5, MRTR-E-A1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Longer than [`MAX_TOKEN_CHARS`]; rejected before decoding.
    #[error("token longer than {MAX_TOKEN_CHARS} chars")]
    TooLong,
    /// Empty, not strict unpadded base64url, or too short for the envelope.
    #[error("token is not a well-formed envelope")]
    Malformed,
    /// The first byte is not the v1 version byte.
    #[error("unknown envelope version {0:#04x}")]
    BadVersion(u8),
    /// The ring has no key with this kid; there is no fallback.
    #[error("unknown key id {kid}")]
    UnknownKey {
        /// The kid the token names.
        kid: u32,
    },
    /// The key was retired.
    #[error("key id {kid} is retired")]
    KeyRetired {
        /// The kid the token names.
        kid: u32,
    },
    /// The key is VerifyOnly and its grace period ended.
    #[error("key id {kid} stopped verifying at {verify_until}")]
    KeyExpired {
        /// The kid the token names.
        kid: u32,
        /// When the key stopped verifying.
        verify_until: u64,
    },
    /// The AEAD tag did not verify: forged, altered, other key, or other
    /// resource id.
    #[error("authentication tag mismatch")]
    Tag,
    /// The plaintext is not exactly one encoded payload of the expected type.
    #[error("payload does not decode strictly")]
    Payload,
    /// Issued more than the allowed skew in the future.
    #[error("token issued at {issued_at}, in the future of {now}")]
    NotYetValid {
        /// The claims' issue time.
        issued_at: u64,
        /// The opening instance's time.
        now: u64,
    },
    /// Past its expiry plus skew.
    #[error("token expired at {expires_at}; now is {now}")]
    Expired {
        /// The claims' expiry.
        expires_at: u64,
        /// The opening instance's time.
        now: u64,
    },
    /// Expires before it was issued.
    #[error("token expires ({expires_at}) before it was issued ({issued_at})")]
    InvertedLifetime {
        /// The claims' issue time.
        issued_at: u64,
        /// The claims' expiry.
        expires_at: u64,
    },
    /// Lifetime longer than the policy's maximum TTL.
    #[error("token lifetime of {ttl} s exceeds the maximum")]
    TtlTooLong {
        /// `expires_at - issued_at`.
        ttl: u64,
    },
    /// Bound to something other than what the caller expected.
    #[error("binding mismatch")]
    Binding,
}

impl OpenError {
    /// A stable snake_case label for logs and metrics (SECURITY.md §3.5).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::TooLong => "too_long",
            Self::Malformed => "malformed",
            Self::BadVersion(_) => "bad_version",
            Self::UnknownKey { .. } => "unknown_key",
            Self::KeyRetired { .. } => "key_retired",
            Self::KeyExpired { .. } => "key_expired",
            Self::Tag => "bad_tag",
            Self::Payload => "bad_payload",
            Self::NotYetValid { .. } => "not_yet_valid",
            Self::Expired { .. } => "expired",
            Self::InvertedLifetime { .. } => "inverted_lifetime",
            Self::TtlTooLong { .. } => "ttl_too_long",
            Self::Binding => "binding_mismatch",
        }
    }
}

impl KeyRing {
    /// Seals `claims` under the Active key with a fresh nonce from the OS
    /// CSPRNG (read through the per-thread pool), binding the token to
    /// `resource_id` through the AAD (SECURITY.md §3.1).
    pub fn seal_at<T: Serialize>(
        &self,
        resource_id: &str,
        claims: &Claims<T>,
    ) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        crate::random::fill(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
        self.seal_with_nonce(resource_id, claims, &nonce)
    }

    /// [`KeyRing::seal_at`] with a caller-chosen nonce, for known-answer
    /// tests only. Reusing a nonce under one key breaks confidentiality and
    /// integrity; production code calls `seal_at`.
    #[doc(hidden)]
    pub fn seal_with_nonce<T: Serialize>(
        &self,
        resource_id: &str,
        claims: &Claims<T>,
        nonce: &[u8; NONCE_LEN],
    ) -> Result<String, SealError> {
        if claims.expires_at < claims.issued_at {
            return Err(SealError::ExpiresBeforeIssued {
                issued_at: claims.issued_at,
                expires_at: claims.expires_at,
            });
        }
        let kid = self.active;
        let aead = self.sealing_aead();

        let mut raw = Vec::with_capacity(HEADER_LEN + NONCE_LEN + 256 + TAG_LEN);
        raw.push(VERSION);
        raw.extend_from_slice(&kid.to_be_bytes());
        raw.extend_from_slice(nonce);
        // The plaintext is encrypted in place below, so the buffer holds no
        // plaintext once sealing returns.
        let mut raw = Zeroizing::new(postcard::to_extend(claims, raw)?);

        let chars = encoded_len(raw.len() + TAG_LEN);
        if chars > MAX_TOKEN_CHARS {
            return Err(SealError::TooLarge { chars });
        }

        let aad = aad(resource_id, &raw[..HEADER_LEN]);
        let tag = aead
            .encrypt_inout_detached(
                &XNonce::from(*nonce),
                &aad,
                raw[HEADER_LEN + NONCE_LEN..].as_mut().into(),
            )
            .map_err(|_| SealError::Cipher)?;
        raw.extend_from_slice(&tag);
        Ok(URL_SAFE_NO_PAD.encode(raw.as_slice()))
    }

    /// Opens a token sealed for `resource_id` and checks it against
    /// `expected` and `now` (SECURITY.md §3.5, steps 1–5). First failure
    /// wins, in this order: length, text, version, kid, tag, payload,
    /// lifetime, binding.
    pub fn open_at<T: DeserializeOwned>(
        &self,
        resource_id: &str,
        token: &str,
        expected: &Binding,
        now: u64,
        policy: &OpenPolicy,
    ) -> Result<Opened<T>, OpenError> {
        // Step 1: bound the work before decoding anything (SECURITY.md §3.1).
        if token.len() > MAX_TOKEN_CHARS {
            return Err(OpenError::TooLong);
        }
        // Step 2: strict base64url, then the header.
        let mut raw = Zeroizing::new(
            URL_SAFE_NO_PAD
                .decode(token)
                .map_err(|_| OpenError::Malformed)?,
        );
        match raw.first() {
            None => return Err(OpenError::Malformed),
            Some(&VERSION) => {}
            Some(&other) => return Err(OpenError::BadVersion(other)),
        }
        if raw.len() < HEADER_LEN + NONCE_LEN + TAG_LEN {
            return Err(OpenError::Malformed);
        }
        let kid = u32::from_be_bytes([raw[1], raw[2], raw[3], raw[4]]);
        let aead = self.opening_aead(kid, now)?;

        // Step 3: the tag comparison happens inside the AEAD.
        let aad = aad(resource_id, &raw[..HEADER_LEN]);
        let (head, rest) = raw.split_at_mut(HEADER_LEN + NONCE_LEN);
        let (ciphertext, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
        let nonce = XNonce::try_from(&head[HEADER_LEN..]).map_err(|_| OpenError::Malformed)?;
        let tag = chacha20poly1305::Tag::try_from(&*tag).map_err(|_| OpenError::Malformed)?;
        aead.decrypt_inout_detached(&nonce, &aad, ciphertext.into(), &tag)
            .map_err(|_| OpenError::Tag)?;

        // Step 4: exactly one payload; `postcard::from_bytes` would ignore
        // trailing bytes (SECURITY.md §3.1).
        let (claims, remainder) =
            postcard::take_from_bytes::<Claims<T>>(ciphertext).map_err(|_| OpenError::Payload)?;
        if !remainder.is_empty() {
            return Err(OpenError::Payload);
        }

        // Step 5: lifetime, then binding.
        check_lifetime(&claims, now, policy)?;
        if !claims.binding.ct_eq(expected) {
            return Err(OpenError::Binding);
        }
        Ok(Opened { claims, kid })
    }

    /// The Active key's cipher.
    fn sealing_aead(&self) -> &XChaCha20Poly1305 {
        self.keys
            .get(&self.active)
            .and_then(|k| k.aead.as_ref())
            .expect("KeyRing::new guarantees the Active kid is present and derived")
    }

    /// The cipher for `kid` if that key may still open tokens at `now`.
    fn opening_aead(&self, kid: u32, now: u64) -> Result<&XChaCha20Poly1305, OpenError> {
        let key = self.keys.get(&kid).ok_or(OpenError::UnknownKey { kid })?;
        match key.role {
            KeyRole::Retired => return Err(OpenError::KeyRetired { kid }),
            KeyRole::VerifyOnly => {
                if let Some(verify_until) = key.verify_until
                    && now > verify_until
                {
                    return Err(OpenError::KeyExpired { kid, verify_until });
                }
            }
            KeyRole::Active => {}
        }
        key.aead.as_ref().ok_or(OpenError::KeyRetired { kid })
    }
}

/// `issued_at <= now + skew`, `now <= expires_at + skew` and
/// `expires_at - issued_at <= max_ttl` (SECURITY.md §3.5, step 5).
fn check_lifetime<T>(claims: &Claims<T>, now: u64, policy: &OpenPolicy) -> Result<(), OpenError> {
    let Claims {
        issued_at,
        expires_at,
        ..
    } = *claims;
    if issued_at > now.saturating_add(policy.skew_secs) {
        return Err(OpenError::NotYetValid { issued_at, now });
    }
    if now > expires_at.saturating_add(policy.skew_secs) {
        return Err(OpenError::Expired { expires_at, now });
    }
    let ttl = expires_at
        .checked_sub(issued_at)
        .ok_or(OpenError::InvertedLifetime {
            issued_at,
            expires_at,
        })?;
    if ttl > policy.max_ttl_secs {
        return Err(OpenError::TtlTooLong { ttl });
    }
    Ok(())
}

/// `"mcp-mrtr-state" ‖ 0x00 ‖ resource_id ‖ 0x00 ‖ header` (SECURITY.md §3.1).
/// The header has a fixed length at the end, so the resource id is
/// unambiguous even if it contains a NUL.
fn aad(resource_id: &str, header: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_LABEL.len() + resource_id.len() + 2 + header.len());
    aad.extend_from_slice(AAD_LABEL);
    aad.push(0);
    aad.extend_from_slice(resource_id.as_bytes());
    aad.push(0);
    aad.extend_from_slice(header);
    aad
}

/// Length of unpadded base64 for `bytes` input bytes.
fn encoded_len(bytes: usize) -> usize {
    bytes / 3 * 4 + [0, 2, 3][bytes % 3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_len_matches_the_encoder() {
        for n in 0..100 {
            assert_eq!(encoded_len(n), URL_SAFE_NO_PAD.encode(vec![0u8; n]).len());
        }
    }

    #[test]
    fn reasons_are_snake_case() {
        let all = [
            OpenError::TooLong,
            OpenError::Malformed,
            OpenError::BadVersion(2),
            OpenError::UnknownKey { kid: 1 },
            OpenError::KeyRetired { kid: 1 },
            OpenError::KeyExpired {
                kid: 1,
                verify_until: 2,
            },
            OpenError::Tag,
            OpenError::Payload,
            OpenError::NotYetValid {
                issued_at: 1,
                now: 0,
            },
            OpenError::Expired {
                expires_at: 1,
                now: 2,
            },
            OpenError::InvertedLifetime {
                issued_at: 2,
                expires_at: 1,
            },
            OpenError::TtlTooLong { ttl: 1 },
            OpenError::Binding,
        ];
        let mut seen = std::collections::HashSet::new();
        for e in &all {
            let r = e.reason();
            assert!(r.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{r}");
            assert!(seen.insert(r), "duplicate reason {r}");
        }
    }

    #[test]
    fn binding_parts_are_length_prefixed() {
        assert_ne!(
            Binding::digest(&[b"ab", b"c"]),
            Binding::digest(&[b"a", b"bc"])
        );
        assert_ne!(Binding::digest(&[]), Binding::digest(&[b""]));
        assert_eq!(Binding::digest(&[b"x"]), Binding::digest(&[b"x"]));
    }
}
