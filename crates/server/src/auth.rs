//! The bootstrap admin token (R-API-3): compared by hash, in constant time.

use rtc_store::hash_token;

/// Holds the hash of the admin token, never the token itself.
#[derive(Clone)]
pub struct AdminAuth {
    hash: String,
}

impl std::fmt::Debug for AdminAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminAuth(<redacted>)")
    }
}

impl AdminAuth {
    /// From the token itself.
    pub fn from_token(token: &str) -> Self {
        Self {
            hash: hash_token(token),
        }
    }

    /// From a stored hash.
    pub fn from_hash(hash: String) -> Self {
        Self { hash }
    }

    pub fn is_admin(&self, token: &str) -> bool {
        let given = hash_token(token);
        given.len() == self.hash.len()
            && given
                .bytes()
                .zip(self.hash.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}
