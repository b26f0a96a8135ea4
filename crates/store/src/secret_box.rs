//! Encryption of secret values at rest (R-SEC-3): AES-256-GCM with a random
//! 96-bit nonce per value, bound to its workspace and name as associated
//! data so a ciphertext cannot be moved to another row.

use std::path::Path;

use aes_gcm::aead::{Aead, Generate, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

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
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| StoreError::MasterKey("invalid hex".into()))?
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

/// Seals and opens secret values.
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox")
    }
}

impl SecretBox {
    pub fn new(key: &MasterKey) -> Self {
        Self {
            cipher: Aes256Gcm::new(&key.0.into()),
        }
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
