//! The user's config file (where it is: [`crate::layout::Layout`]).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};
use thiserror::Error;

use crate::bus::ConfigSave;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigFile {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    pub tier: Option<String>,
    pub max_turns: Option<u32>,
    pub max_iterations: Option<u32>,
    /// Design-plan tasks at once (`--jobs`).
    pub jobs: Option<u32>,
    /// Subagents (the `agent` tool) at once in a light conversation.
    pub max_agents: Option<u32>,
    /// Seconds a subagent may run before it is ended.
    pub agent_timeout_secs: Option<u64>,
    pub test_command: Option<String>,
    pub theme: Option<String>,
    /// Secret-named environment variables that commands may see anyway.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// The Node that runs package tools (after `SPLICE_NODE`, before `node` on PATH).
    pub node: Option<PathBuf>,
    /// The default package registry URL (after `--registry` and `SPLICE_REGISTRY`), raw:
    /// `registry_client` checks it.
    pub registry: Option<String>,
    /// MCP servers (`{ "<name>": { "command", "args", "env" } | { "url", "headers" } }`), raw:
    /// `mcp::config` checks them.
    pub mcp_servers: Option<serde_json::Value>,
    /// Hooks, in Claude Code's shape, raw: `hooks::config` checks them.
    pub hooks: Option<serde_json::Value>,
    /// What confined commands and package tools may reach beyond the defaults.
    #[serde(default)]
    pub sandbox: SandboxConfig,
}

/// The config file's `sandbox` object (named as Claude Code's sandbox settings are).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxConfig {
    /// Let confined commands and package tools connect to every Unix socket (docker.sock,
    /// ssh-agent, D-Bus…), which they otherwise cannot create.
    #[serde(default)]
    pub allow_all_unix_sockets: bool,
    /// Single sockets to allow: not enforceable on Linux (see [`ConfigFile::load`]), so a
    /// non-empty list is refused rather than read as "all".
    #[serde(default)]
    pub allow_unix_sockets: Vec<String>,
    /// Paths confined commands and package tools may read although they are credential stores
    /// or devices (absolute, or `~/…`; see `permissions::reads`).
    #[serde(default)]
    pub allow_read: Vec<String>,
    /// The hosts confined commands may reach through Splice's proxy (`permissions/network.rs`).
    #[serde(default)]
    pub network: NetworkConfig,
}

/// The config file's `sandbox.network` object: confined commands reach no host but these,
/// and only through Splice's proxy.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkConfig {
    /// Host names (`example.com`, `*.example.com` for every name below it) or IP literals.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// The package registries' hosts (crates.io, npm, PyPI, Debian) as well.
    #[serde(default)]
    pub allow_package_registries: bool,
    /// Allowed hosts may resolve to loopback, private and link-local addresses (off: such a
    /// host is refused, whatever its name, so a name cannot be pointed at your machine).
    #[serde(default)]
    pub allow_local_addresses: bool,
}

/// Why `sandbox.allowUnixSockets` is refused: the seccomp filter that blocks Unix sockets sees
/// no paths, so a list would silently have to mean every socket or none.
const PER_SOCKET_REFUSED: &str = "`sandbox.allowUnixSockets`: allowing single Unix sockets by \
     path is not enforced on Linux (the sandbox refuses creating Unix sockets and cannot see which \
     path one would connect to); remove the list, or set `sandbox.allowAllUnixSockets: true` to \
     let confined commands and package tools connect to every Unix socket";

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
}

impl ConfigError {
    /// A section of the file at `path` that its feature refused, and why.
    pub fn invalid(path: &Path, message: String) -> ConfigError {
        ConfigError::Parse {
            path: path.display().to_string(),
            message,
        }
    }
}

/// An environment variable's value; unset, empty and blank all count as not set.
pub fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The user's config file, checked as a run would load it, as a JSON document to edit (its
/// keys keep their order). Unlike a run, a file `SPLICE_CONFIG` names may be missing: writing
/// creates it.
pub fn read_document() -> Result<(PathBuf, Value), String> {
    let path = crate::layout::Layout::process()
        .config_file()
        .ok_or("no config directory: set SPLICE_CONFIG")?
        .to_path_buf();
    crate::settings::load_config_at(Some(&path)).map_err(|e| e.to_string())?;
    let document = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("invalid config file {}: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("cannot read config file {}: {e}", path.display())),
    };
    Ok((path, document))
}

/// Write through a temporary file and a rename, so a crash leaves the old file or the new one.
/// A new file is owner-only: it may hold tokens (headers, env).
pub fn write_document(path: &Path, document: &Value) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let failed = |e: std::io::Error| format!("cannot write config file {}: {e}", path.display());
    let mut text = serde_json::to_string_pretty(document).map_err(|e| e.to_string())?;
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o777);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("config.json");
    let temp = path.with_file_name(format!(".{name}.{}.tmp", crate::ids::random_suffix(8)));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&temp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(failed)
}

/// Write what a person's answer saves into the user's config file (see [`ConfigSave`]); the
/// file written, or why not. Saves in one process are one at a time, so none is lost.
pub fn save(what: &ConfigSave) -> Result<PathBuf, String> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (path, mut document) = read_document()?;
    let ConfigSave::AllowedDomain(host) = what;
    if add_allowed_domain(&mut document, host)? {
        write_document(&path, &document)?;
    }
    Ok(path)
}

/// Add `host` to `sandbox.network.allowedDomains`, the objects and the list made when absent;
/// false when it is there already (in any case, with or without a trailing dot).
fn add_allowed_domain(document: &mut Value, host: &str) -> Result<bool, String> {
    // What the file would then refuse to load is not written.
    if !is_domain_pattern(host) {
        return Err(format!(
            "`{host}` is not a host name or IP address that sandbox.network.allowedDomains takes"
        ));
    }
    let not = |key: &str, what: &str| format!("`{key}` in the config file is not {what}");
    let mut node = document
        .as_object_mut()
        .ok_or("the config file is not a JSON object")?;
    for key in ["sandbox", "network"] {
        node = node
            .entry(key)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| not(key, "an object"))?;
    }
    let list = node
        .entry("allowedDomains")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| not("sandbox.network.allowedDomains", "a list"))?;
    let same = |entry: &Value| {
        entry.as_str().is_some_and(|e| {
            e.trim_end_matches('.')
                .eq_ignore_ascii_case(host.trim_end_matches('.'))
        })
    };
    if list.iter().any(same) {
        return Ok(false);
    }
    list.push(Value::String(host.to_string()));
    Ok(true)
}

impl ConfigFile {
    /// The user's config file (see [`Layout::user_config_file`]), its feature sections
    /// unchecked.
    ///
    /// [`Layout::user_config_file`]: crate::layout::Layout::user_config_file
    pub fn load_user() -> Result<ConfigFile, ConfigError> {
        ConfigFile::load(crate::layout::Layout::process().user_config_file()?)
    }

    /// Load the config file; a missing or empty (blank) file is an empty config, a broken one
    /// an error. Sections that belong to a feature (`registry`, `mcpServers`) are kept raw: the
    /// feature checks its own (see `settings::load_config`).
    pub fn load(path: Option<&Path>) -> Result<ConfigFile, ConfigError> {
        let Some(path) = path else {
            return Ok(ConfigFile::default());
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ConfigFile::default()),
            Err(e) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        // An empty file (just created, or emptied) holds no settings; it is not broken JSON.
        if text.trim().is_empty() {
            return Ok(ConfigFile::default());
        }
        let config: ConfigFile = serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        // An empty name is a mistake, not "the default": the default is leaving the key out.
        for (key, value) in [
            ("provider", &config.provider),
            ("model", &config.model),
            ("permissionMode", &config.permission_mode),
            ("tier", &config.tier),
            ("theme", &config.theme),
            ("registry", &config.registry),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(ConfigError::Parse {
                    path: path.display().to_string(),
                    message: format!("`{key}` is empty (leave the key out for the default)"),
                });
            }
        }
        if let Some(entry) = config
            .sandbox
            .allow_read
            .iter()
            .find(|e| crate::permissions::reads::expand(e).is_none())
        {
            return Err(ConfigError::Parse {
                path: path.display().to_string(),
                message: format!(
                    "`sandbox.allowRead`: `{entry}` is neither an absolute path nor one in HOME \
                     (`~/…`)"
                ),
            });
        }
        if let Some(entry) = config
            .sandbox
            .network
            .allowed_domains
            .iter()
            .find(|e| !is_domain_pattern(e))
        {
            return Err(ConfigError::Parse {
                path: path.display().to_string(),
                message: format!(
                    "`sandbox.network.allowedDomains`: `{entry}` is not a host name, `*.` and a \
                     host name, or an IP address (no scheme, port or path)"
                ),
            });
        }
        if !config.sandbox.allow_unix_sockets.is_empty() {
            return Err(ConfigError::Parse {
                path: path.display().to_string(),
                message: PER_SOCKET_REFUSED.into(),
            });
        }
        Ok(config)
    }
}

/// An `allowedDomains` entry: a host name (`example.com`), every name below one
/// (`*.example.com`) or an IP literal. Anything else (`https://…`, `host:443`, `a/b`) would
/// silently allow nothing, so it is refused.
pub(crate) fn is_domain_pattern(entry: &str) -> bool {
    let name = entry.strip_prefix("*.").unwrap_or(entry);
    let name = name.strip_suffix('.').unwrap_or(name);
    let literal = entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .unwrap_or(entry);
    literal.parse::<std::net::IpAddr>().is_ok()
        || (!name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved host lands in `sandbox.network.allowedDomains`, made where absent, once, and
    /// the file's other keys keep their place.
    #[test]
    fn a_saved_host_is_added_once_beside_the_other_keys() {
        let mut document: Value = serde_json::from_str(
            r#"{"model":"m","sandbox":{"allowRead":["~/x"]},"allow":["read_file"]}"#,
        )
        .expect("parse");
        assert_eq!(add_allowed_domain(&mut document, "docs.rs"), Ok(true));
        assert_eq!(add_allowed_domain(&mut document, "DOCS.rs."), Ok(false));
        assert_eq!(add_allowed_domain(&mut document, "x.org"), Ok(true));
        assert_eq!(
            document.to_string(),
            r#"{"model":"m","sandbox":{"allowRead":["~/x"],"network":{"allowedDomains":["docs.rs","x.org"]}},"allow":["read_file"]}"#
        );
        let mut wrong = json!({"sandbox": {"network": {"allowedDomains": "docs.rs"}}});
        assert!(add_allowed_domain(&mut wrong, "x.org").is_err());
        // A name the proxy passes but the file would refuse to load (an empty label).
        assert!(add_allowed_domain(&mut document, "a..b").is_err());
        assert!(add_allowed_domain(&mut document, "::1").is_ok());
    }

    #[test]
    fn unknown_keys_are_rejected_and_missing_file_is_empty() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let path = dir.path().join("config.json");
        assert_eq!(
            ConfigFile::load(Some(&path)).ok(),
            Some(ConfigFile::default())
        );
        std::fs::write(&path, r#"{"provider":"openai","colour":"red"}"#).expect("write path");
        let error = ConfigFile::load(Some(&path))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("colour"), "{error}");
        std::fs::write(
            &path,
            r#"{"provider":"anthropic","allow":["run_command(cargo test)"]}"#,
        )
        .expect("write path");
        let config = ConfigFile::load(Some(&path)).unwrap_or_default();
        assert_eq!(config.provider.as_deref(), Some("anthropic"));
        assert_eq!(config.allow, vec!["run_command(cargo test)".to_string()]);
    }

    #[test]
    fn unix_sockets_are_allowed_all_at_once_and_a_per_path_list_is_refused() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let path = dir.path().join("config.json");
        let load = |text: &str| {
            std::fs::write(&path, text).expect("write path");
            ConfigFile::load(Some(&path))
        };
        let config = load(r#"{"sandbox":{"allowRead":["~/.aws","/dev/pts"]}}"#).expect("load");
        assert_eq!(config.sandbox.allow_read, ["~/.aws", "/dev/pts"]);
        let error = load(r#"{"sandbox":{"allowRead":[".aws"]}}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("sandbox.allowRead"), "{error}");
        let config = load(r#"{"sandbox":{"allowAllUnixSockets":true}}"#).expect("load");
        assert!(config.sandbox.allow_all_unix_sockets);
        assert!(!ConfigFile::default().sandbox.allow_all_unix_sockets);
        let empty = load(r#"{"sandbox":{"allowUnixSockets":[]}}"#).expect("load");
        assert!(!empty.sandbox.allow_all_unix_sockets);
        for text in [
            r#"{"sandbox":{"allowUnixSockets":["/var/run/docker.sock"]}}"#,
            r#"{"sandbox":{"allowAllUnixSockets":true,"allowUnixSockets":["/tmp/s"]}}"#,
        ] {
            let error = load(text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains("not enforced on Linux"), "{error}");
            assert!(error.contains("allowAllUnixSockets"), "{error}");
        }
        let error = load(r#"{"sandbox":{"allowLocalBinding":true}}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("allowLocalBinding"), "{error}");
    }
}
