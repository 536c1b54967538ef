//! The key file a fleet shares, and its rotation steps (SECURITY.md §3.3).
//!
//! Pure functions over a value: reading and writing the file, and reading
//! the clock, belong to the caller.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use zeroize::Zeroizing;

use crate::keys::{KeyRing, KeyRingError, KeyRole, KeySpec, MasterSecret, SecretError};

/// Grace period of a former Active key: maximum state TTL plus maximum skew
/// plus a margin, 600 + 30 + 60 s (SECURITY.md §3.3, rotation step 3).
pub const DEFAULT_GRACE_SECS: u64 = 600 + 30 + 60;

/// A fleet's keys and the resource id they seal for, as JSON:
///
/// ```json
/// {"resource_id":"https://mcp.example.com","keys":[
///   {"kid":1,"secret":"…base64url…","role":"verify_only","verify_until":1767225600},
///   {"kid":2,"secret":"…base64url…","role":"active"}]}
/// ```
///
/// Every instance loads the same file. Rotation is publish
/// ([`KeyFile::add_key`]), then activate ([`KeyFile::activate`]), then
/// retire ([`KeyFile::retire`]), each step distributed to all instances
/// before the next (SECURITY.md §3.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFile {
    /// The server's canonical resource URI, or a deployment id, that tokens
    /// are bound to through the AAD (SECURITY.md §3.1).
    pub resource_id: String,
    /// Every key, retired ones included so that their kids are never reused.
    pub keys: Vec<KeyFileEntry>,
}

/// One key of a [`KeyFile`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFileEntry {
    /// Key id.
    pub kid: u32,
    /// Master secret, stored as unpadded base64url and checked for strength
    /// on load.
    #[serde(
        serialize_with = "serialize_secret",
        deserialize_with = "deserialize_secret"
    )]
    pub secret: MasterSecret,
    /// `"active"`, `"verify_only"` or `"retired"`.
    pub role: KeyRole,
    /// For a VerifyOnly key, the last unix second it still opens tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_until: Option<u64>,
}

/// Why a key file operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The text is not a valid key file.
    #[error("invalid key file: {0}")]
    Json(#[from] serde_json::Error),
    /// The keys do not form a valid ring.
    #[error(transparent)]
    KeyRing(#[from] KeyRingError),
    /// A secret could not be generated or is weak.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// No key has this kid.
    #[error("no key with id {kid}")]
    UnknownKid {
        /// The kid asked for.
        kid: u32,
    },
    /// The operation would leave no Active key.
    #[error("key id {kid} is the active key; activate another key first")]
    RetiringActiveKey {
        /// The Active kid.
        kid: u32,
    },
    /// A retired key cannot come back: its grace period is over everywhere.
    #[error("key id {kid} is retired and cannot be activated")]
    ActivatingRetiredKey {
        /// The retired kid.
        kid: u32,
    },
    /// Every kid up to `u32::MAX` is taken.
    #[error("no key id left")]
    KidsExhausted,
}

impl KeyFile {
    /// A new file with one Active key (kid 1) and a fresh random secret.
    pub fn generate(resource_id: impl Into<String>) -> Result<Self, KeyFileError> {
        Ok(Self {
            resource_id: resource_id.into(),
            keys: vec![KeyFileEntry {
                kid: 1,
                secret: MasterSecret::generate()?,
                role: KeyRole::Active,
                verify_until: None,
            }],
        })
    }

    /// Rotation step 1: publishes a new VerifyOnly key with a random secret
    /// and kid = highest kid + 1, and returns that kid. Instances that load
    /// it open tokens sealed under it before any instance seals with it.
    pub fn add_key(&mut self) -> Result<u32, KeyFileError> {
        let kid = match self.keys.iter().map(|k| k.kid).max() {
            None => 1,
            Some(max) => max.checked_add(1).ok_or(KeyFileError::KidsExhausted)?,
        };
        self.keys.push(KeyFileEntry {
            kid,
            secret: MasterSecret::generate()?,
            role: KeyRole::VerifyOnly,
            verify_until: None,
        });
        Ok(kid)
    }

    /// Rotation step 2: makes `kid` Active. The previous Active key becomes
    /// VerifyOnly until `now + grace_secs`, so tokens it sealed keep opening
    /// for one state TTL (use [`DEFAULT_GRACE_SECS`] unless the TTL differs).
    /// Activating the Active key changes nothing.
    pub fn activate(&mut self, kid: u32, now: u64, grace_secs: u64) -> Result<(), KeyFileError> {
        let target = self.index_of(kid)?;
        match self.keys[target].role {
            KeyRole::Active => return Ok(()),
            KeyRole::Retired => return Err(KeyFileError::ActivatingRetiredKey { kid }),
            KeyRole::VerifyOnly => {}
        }
        for entry in &mut self.keys {
            if entry.role == KeyRole::Active {
                entry.role = KeyRole::VerifyOnly;
                entry.verify_until = Some(now.saturating_add(grace_secs));
            }
        }
        let entry = &mut self.keys[target];
        entry.role = KeyRole::Active;
        entry.verify_until = None;
        Ok(())
    }

    /// Rotation step 3, or emergency revocation: `kid` opens nothing any
    /// more. Its entry stays so the kid is never reused. The Active key
    /// cannot be retired.
    pub fn retire(&mut self, kid: u32) -> Result<(), KeyFileError> {
        let index = self.index_of(kid)?;
        let entry = &mut self.keys[index];
        if entry.role == KeyRole::Active {
            return Err(KeyFileError::RetiringActiveKey { kid });
        }
        entry.role = KeyRole::Retired;
        entry.verify_until = None;
        Ok(())
    }

    /// Parses a key file and checks it: unknown fields, weak secrets,
    /// duplicate kids and anything but exactly one Active key are refused.
    pub fn from_json(text: &str) -> Result<Self, KeyFileError> {
        let file: Self = serde_json::from_str(text)?;
        file.key_ring()?;
        Ok(file)
    }

    /// The file as pretty JSON. It holds every secret, so it comes back in
    /// zeroizing memory.
    pub fn to_json(&self) -> Result<Zeroizing<String>, KeyFileError> {
        Ok(Zeroizing::new(serde_json::to_string_pretty(self)?))
    }

    /// Derives the ring every instance seals and opens with.
    pub fn key_ring(&self) -> Result<KeyRing, KeyFileError> {
        let specs = self
            .keys
            .iter()
            .map(|e| KeySpec {
                kid: e.kid,
                secret: e.secret.clone(),
                role: e.role,
                verify_until: e.verify_until,
            })
            .collect();
        Ok(KeyRing::new(specs)?)
    }

    fn index_of(&self, kid: u32) -> Result<usize, KeyFileError> {
        self.keys
            .iter()
            .position(|k| k.kid == kid)
            .ok_or(KeyFileError::UnknownKid { kid })
    }
}

fn serialize_secret<S: Serializer>(secret: &MasterSecret, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&secret.to_base64url())
}

fn deserialize_secret<'de, D: Deserializer<'de>>(d: D) -> Result<MasterSecret, D::Error> {
    let text = Zeroizing::new(String::deserialize(d)?);
    MasterSecret::from_base64url(&text).map_err(serde::de::Error::custom)
}
