//! Random ids and bearer tokens, and the hash under which tokens are stored.

use base64::Engine;
use sha2::{Digest, Sha256};

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    rand::fill(&mut buf[..]);
    buf
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new resource id such as `tool_5f0c…` (96 random bits).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", hex(&random_bytes::<12>()))
}

/// A new bearer token such as `rtc_ws_…` (256 random bits, URL-safe).
pub fn new_token(prefix: &str) -> String {
    let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<32>());
    format!("{prefix}_{body}")
}

/// SHA-256 of a token, hex. Tokens carry 256 random bits, so a fast hash
/// is enough; the database never holds a usable key.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_tokens_are_unique_and_prefixed() {
        let (a, b) = (new_id("tool"), new_id("tool"));
        assert!(a.starts_with("tool_") && a.len() == 29 && a != b);
        let t = new_token("rtc_ws");
        assert!(t.starts_with("rtc_ws_") && t.len() > 40);
        assert_eq!(hash_token("x"), hash_token("x"));
        assert_ne!(hash_token(&t), t);
    }
}
