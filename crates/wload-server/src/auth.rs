//! API tokens. A token is 32 random bytes from the OS, shown once when it
//! is made (`wl_` and base64url); the service keeps only its SHA-256, so a
//! copy of the database gives no one a working token. A fast hash is the
//! right one here: the tokens carry 256 bits of entropy, nothing to guess
//! from a dictionary. Every comparison of a secret runs in constant time,
//! so the response time tells nothing about how much of a token matched.

use anyhow::{Result, anyhow};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The prefix of every token, so that a leaked one is recognisable
/// (secret scanners key on such prefixes).
const PREFIX: &str = "wl_";

/// A new random token.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow!("cannot read random bytes from the OS: {e}"))?;
    Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// What is stored of a token.
pub fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compare two secrets (or their hashes) in constant time.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// A random identifier with a readable prefix (`t_`, `r_`): 12 bytes, so
/// that ids cannot be guessed to probe another tenant's runs either.
pub fn new_id(prefix: &str) -> Result<String> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow!("cannot read random bytes from the OS: {e}"))?;
    Ok(format!("{prefix}{}", hex(&bytes)))
}

/// Bytes as lowercase hex (ids, test digests).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bearer token of an `Authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_prefixed_and_hashed() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert!(a.starts_with("wl_") && a.len() == 3 + 43, "{a}");
        assert_ne!(a, b);
        assert!(same(&hash(&a), &hash(&a)));
        assert!(!same(&hash(&a), &hash(&b)));
        assert!(!same(b"short", b"longer"));
    }

    #[test]
    fn bearer_headers_parse() {
        assert_eq!(bearer("Bearer wl_x"), Some("wl_x"));
        assert_eq!(bearer("bearer  wl_x "), Some("wl_x"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("wl_x"), None);
    }

    #[test]
    fn ids_carry_their_prefix_and_24_hex_digits() {
        let id = new_id("r_").unwrap();
        assert_eq!(id.len(), 26);
        assert!(id[2..].chars().all(|c| c.is_ascii_hexdigit()));
    }
}
