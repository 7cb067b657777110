//! Saved registry logins: `credentials.json` beside the config file (`SPLICE_CONFIG`'s
//! directory, else `<config dir>/splice/`), a map `{URL: {"token","user"[,"default":true]}}`
//! (one login, the first unless `--default` moved it, is the default registry). The file is
//! created with mode 0600 (written to a new 0600 file and renamed over, so it is never
//! readable by others, not even briefly), and the token is never shown: its Debug is redacted.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::RegistryError;

/// A bearer token; only `reveal` gives its text (for the Authorization header).
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    pub fn new(text: String) -> Token {
        Token(text)
    }

    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Login {
    pub token: Token,
    pub user: String,
    /// The default registry: commands given no other use it (see `registry_url`). At most one
    /// login has it; written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub default: bool,
}

type Logins = BTreeMap<String, Login>;

/// Where the logins are kept.
pub fn path() -> Option<PathBuf> {
    crate::layout::Layout::process().credentials_file()
}

fn failed(path: &Path, e: impl std::fmt::Display) -> RegistryError {
    RegistryError::Failed(format!("credentials file {}: {e}", path.display()))
}

fn no_path() -> RegistryError {
    RegistryError::Failed("no config directory for the credentials file".into())
}

fn read_all(path: &Path) -> Result<Logins, RegistryError> {
    match std::fs::read(path) {
        // Empty: no logins (the sandbox creates it so no command can plant one; see
        // `permissions/mask.rs`).
        Ok(bytes) if bytes.trim_ascii().is_empty() => Ok(Logins::new()),
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| failed(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Logins::new()),
        Err(e) => Err(failed(path, e)),
    }
}

/// The saved login for `registry`, if any.
pub fn load(registry: &str) -> Result<Option<Login>, RegistryError> {
    let path = path().ok_or_else(no_path)?;
    Ok(read_all(&path)?.remove(registry))
}

/// The registry of the default login, if one is marked (`splice login` marks the first, or
/// the one given `--default`).
pub fn default_registry() -> Result<Option<String>, RegistryError> {
    let Some(path) = path() else { return Ok(None) };
    Ok(read_all(&path)?
        .into_iter()
        .find(|(_, login)| login.default)
        .map(|(url, _)| url))
}

/// Save (or replace) the login for `registry`: the file it is in, and whether it is the
/// default. It becomes the default when `make_default`, when it already was, or when no
/// saved login is (so the first login is the default, as with npm).
pub fn save(
    registry: &str,
    mut login: Login,
    make_default: bool,
) -> Result<(PathBuf, bool), RegistryError> {
    let path = path().ok_or_else(no_path)?;
    let mut logins = read_all(&path)?;
    let was_default = logins.get(registry).is_some_and(|l| l.default);
    login.default = make_default || was_default || !logins.values().any(|l| l.default);
    if login.default {
        for other in logins.values_mut() {
            other.default = false;
        }
    }
    let is_default = login.default;
    logins.insert(registry.to_string(), login);
    write_all(&path, &logins)?;
    Ok((path, is_default))
}

/// Remove the login for `registry`: whether there was one. The file goes when it is empty.
pub fn remove(registry: &str) -> Result<bool, RegistryError> {
    let path = path().ok_or_else(no_path)?;
    let mut logins = read_all(&path)?;
    if logins.remove(registry).is_none() {
        return Ok(false);
    }
    if logins.is_empty() {
        std::fs::remove_file(&path).map_err(|e| failed(&path, e))?;
    } else {
        write_all(&path, &logins)?;
    }
    Ok(true)
}

fn write_all(path: &Path, logins: &Logins) -> Result<(), RegistryError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| failed(dir, e))?;
    let text = serde_json::to_vec_pretty(logins).map_err(|e| failed(path, e))?;
    let temp = dir.join(format!(
        ".credentials.{}.tmp",
        crate::ids::random_suffix(10)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut file| file.write_all(&text).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(failed(path, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let login = Login {
            token: Token::new("secret-token-value".into()),
            user: "alice".into(),
            default: false,
        };
        let shown = format!("{login:?}");
        assert!(!shown.contains("secret-token-value"), "{shown}");
        assert!(shown.contains("alice"));
    }
}
