//! Passwords and tokens. Passwords are hashed with Argon2id (RustCrypto's `argon2`, default
//! parameters: 19 MiB, 2 passes) and a random salt; tokens are 32 random bytes (hex, with a
//! `splice_` prefix so a leaked one is recognisable), and the server keeps only their sha256.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use thiserror::Error;

use splice_core::packages::archive::sha256_hex;

#[derive(Debug, Error)]
pub enum AccountError {
    #[error("no randomness from the system: {0}")]
    Random(String),
    #[error("cannot hash the password: {0}")]
    Hash(String),
}

pub fn random_bytes<const N: usize>() -> Result<[u8; N], AccountError> {
    let mut buf = [0u8; N];
    let mut filled = 0;
    while filled < N {
        let n = rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty())
            .map_err(|e| AccountError::Random(e.to_string()))?;
        filled += n;
    }
    Ok(buf)
}

pub fn hash_password(password: &str) -> Result<String, AccountError> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()?)
        .map_err(|e| AccountError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AccountError::Hash(e.to_string()))
}

/// What the index stores for a user without a web password: no password verifies against it
/// (it is no hash), so the sign-in page refuses the user; `registry approve` approves its
/// logins.
pub const NO_PASSWORD: &str = "";

/// Whether `password` matches the stored hash; a malformed hash (`NO_PASSWORD` among them)
/// matches nothing.
pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|hash| {
        Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok()
    })
}

/// A new bearer token, shown once to the client.
pub fn new_token() -> Result<String, AccountError> {
    Ok(format!(
        "splice_{}",
        splice_core::ids::hex(&random_bytes::<32>()?)
    ))
}

/// What the index stores for a token (or a device code).
pub fn secret_hash(secret: &str) -> String {
    sha256_hex(secret.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_verifies_and_another_does_not() {
        let stored = hash_password("correct horse").expect("hash password correct horse");
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &stored));
        assert!(!verify_password("correct horsE", &stored));
        assert!(!verify_password("correct horse", "not a hash"));
        assert!(!verify_password("", NO_PASSWORD));
        assert!(!verify_password("correct horse", NO_PASSWORD));
        let again = hash_password("correct horse").expect("hash password correct horse");
        assert_ne!(stored, again, "salted");
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (new_token(), new_token());
        let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
        assert_eq!(a.len(), "splice_".len() + 64);
        assert_ne!(a, b);
    }
}
