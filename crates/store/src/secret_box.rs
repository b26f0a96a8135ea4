//! Encryption of secret values at rest (R-SEC-3): AES-256-GCM with a random
//! 96-bit nonce per value, bound to its workspace and name as associated
//! data so a ciphertext cannot be moved to another row. The same master
//! key also authenticates backups (HMAC-SHA256 with a key derived from
//! it for that use alone).

use std::path::Path;

use aes_gcm::aead::{Aead, Generate, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::StoreError;

/// The 32-byte master key.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

impl MasterKey {
    /// Parse a key given as base64 (44 characters) or hex (64 characters).
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            unhex(text).ok_or_else(|| StoreError::MasterKey("invalid hex".into()))?
        } else {
            STANDARD
                .decode(text)
                .map_err(|_| StoreError::MasterKey("not base64 or hex".into()))?
        };
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| StoreError::MasterKey("the key must be exactly 32 bytes".into()))?;
        Ok(Self(key))
    }

    /// A fresh random key.
    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::fill(&mut key[..]);
        Self(key)
    }

    /// Read the key file, or create it (mode 0600) with a fresh key.
    pub fn load_or_create(path: &Path) -> Result<Self, StoreError> {
        let io = |e: std::io::Error| StoreError::MasterKey(format!("{}: {e}", path.display()));
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate();
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                write_private(path, &STANDARD.encode(key.0)).map_err(io)?;
                Ok(key)
            }
            Err(e) => Err(io(e)),
        }
    }
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

/// Seals and opens secret values; signs and verifies backups.
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
    /// HMAC-SHA256(master key, [`BACKUP_KEY_LABEL`]).
    backup_key: [u8; 32],
}

type HmacSha256 = Hmac<Sha256>;

/// What the backup signing key is derived for.
const BACKUP_KEY_LABEL: &[u8] = b"rtc-agent backup signature v1";

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox")
    }
}

impl SecretBox {
    pub fn new(key: &MasterKey) -> Self {
        Self {
            cipher: Aes256Gcm::new(&key.0.into()),
            backup_key: mac(&key.0, BACKUP_KEY_LABEL).finalize().into_bytes().into(),
        }
    }

    /// `hmac-sha256:<hex>` of `bytes` under the backup key.
    pub(crate) fn sign_backup(&self, bytes: &[u8]) -> String {
        let tag = mac(&self.backup_key, bytes).finalize().into_bytes();
        format!("hmac-sha256:{}", crate::ids::hex(&tag))
    }

    /// Whether `signature` is [`Self::sign_backup`] of `bytes` (compared in
    /// constant time).
    pub(crate) fn verify_backup(&self, bytes: &[u8], signature: &str) -> bool {
        let Some(tag) = signature.strip_prefix("hmac-sha256:").and_then(unhex) else {
            return false;
        };
        mac(&self.backup_key, bytes).verify_slice(&tag).is_ok()
    }

    /// `base64(nonce || ciphertext)`.
    pub fn seal(&self, aad: &str, plaintext: &str) -> Result<String, StoreError> {
        let nonce = Nonce::generate();
        let sealed = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| StoreError::Crypto("encryption failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(STANDARD.encode(out))
    }

    pub fn open(&self, aad: &str, stored: &str) -> Result<String, StoreError> {
        let bytes = STANDARD
            .decode(stored)
            .map_err(|_| StoreError::Crypto("stored secret is not base64"))?;
        if bytes.len() < 12 {
            return Err(StoreError::Crypto("stored secret is truncated"));
        }
        let (nonce, sealed) = bytes.split_at(12);
        let nonce = Nonce::try_from(nonce).map_err(|_| StoreError::Crypto("bad nonce"))?;
        let plain = self
            .cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: sealed,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| StoreError::Crypto("the master key does not open this secret"))?;
        String::from_utf8(plain).map_err(|_| StoreError::Crypto("secret is not UTF-8"))
    }
}

fn mac(key: &[u8], bytes: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(bytes);
    mac
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_round_trip_and_binding() {
        let b = SecretBox::new(&MasterKey::generate());
        let sealed = b.seal("ws_1/secret__k", "s3cr3t").unwrap();
        assert!(!sealed.contains("s3cr3t"));
        assert_ne!(
            sealed,
            b.seal("ws_1/secret__k", "s3cr3t").unwrap(),
            "nonces differ"
        );
        assert_eq!(b.open("ws_1/secret__k", &sealed).unwrap(), "s3cr3t");
        assert!(
            b.open("ws_2/secret__k", &sealed).is_err(),
            "bound to its row"
        );
        let other = SecretBox::new(&MasterKey::generate());
        assert!(other.open("ws_1/secret__k", &sealed).is_err());
    }

    #[test]
    fn backup_signatures_need_the_same_master_key() {
        let key = MasterKey::generate();
        let b = SecretBox::new(&key);
        let signature = b.sign_backup(b"manifest");
        assert!(signature.starts_with("hmac-sha256:"));
        assert!(b.verify_backup(b"manifest", &signature));
        assert!(SecretBox::new(&key).verify_backup(b"manifest", &signature));
        assert!(!b.verify_backup(b"manifesT", &signature));
        assert!(!SecretBox::new(&MasterKey::generate()).verify_backup(b"manifest", &signature));
        for broken in ["", "hmac-sha256:", "hmac-sha256:zz", "sha256:00"] {
            assert!(!b.verify_backup(b"manifest", broken), "{broken}");
        }
    }

    #[test]
    fn key_parsing_and_file() {
        assert!(MasterKey::parse(&"ab".repeat(32)).is_ok());
        assert!(MasterKey::parse(&STANDARD.encode([7u8; 32])).is_ok());
        assert!(MasterKey::parse("short").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/master.key");
        let k1 = MasterKey::load_or_create(&path).unwrap();
        let k2 = MasterKey::load_or_create(&path).unwrap();
        assert_eq!(k1.0, k2.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }
}
