//! The `mcpServers` config: the user's config file and a project's `.mcp.json`, in the shape
//! Claude Code reads: `{ "<name>": { "command", "args", "env" } }` for a stdio server,
//! `{ "<name>": { "url", "headers" } }` for streamable HTTP (either may say `"type"`). A stdio
//! server may also name `envPassthrough`: variables of Splice's environment it gets, by name.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::config::ConfigFile;

/// The project file a repository names its servers in.
pub const PROJECT_FILE: &str = ".mcp.json";
/// Largest `.mcp.json` read; a bigger one is an error.
const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerConfig {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Exactly what the child gets besides PATH, HOME, the locale and the passed-through
        /// variables.
        env: BTreeMap<String, String>,
        /// Names of variables of Splice's environment it gets too (besides the default proxy
        /// and CA set); never one whose name says secret.
        env_passthrough: Vec<String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// Where a server was configured: a project's servers start only once approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    User,
    Project,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    pub name: String,
    pub config: ServerConfig,
    pub source: Source,
    /// A project server's files as they were when `.mcp.json` was read
    /// ([`crate::permissions::pinned`]): the files its command, arguments and environment
    /// values name where the model could write them. Its approval covers them, and it starts
    /// only while they hold what was approved. Empty for the user's servers.
    pub pins: Vec<crate::permissions::pinned::Pinned>,
}

impl ServerEntry {
    /// The files (and directories, whole) the approval covers that exist, by content, for
    /// the approval question.
    pub fn files(&self) -> Vec<std::path::PathBuf> {
        crate::permissions::pinned::covered(&self.pins)
    }

    /// Why what it runs cannot be pinned (so it never runs), for the approval question.
    pub fn refused(&self) -> Option<&str> {
        crate::permissions::pinned::refused(&self.pins)
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum McpConfigError {
    #[error(
        "mcpServers: invalid server name `{0}` (letters, digits, `-` and `_`; no `__`, no `_` at either end)"
    )]
    Name(String),
    #[error("mcpServers.{name}: {message}")]
    Server { name: String, message: String },
    #[error("mcpServers: {0}")]
    Shape(String),
}

/// One server as written: `type` is optional (`stdio`, or `http` / `streamable-http`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_passthrough: Vec<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// A server name is part of every tool's wire name and of permission rules. With no `__` in
/// it and no `_` at either end, `mcp__<server>__` is found again in a wire name: server `a_`
/// would make `mcp__a___tool`, which `mcp__a__*` (a rule for server `a`) covers.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A name `envPassthrough` may list: a variable name (letters, digits, `_`; not starting with a
/// digit) that does not say secret. A secret is given to one server on purpose, in its `env`,
/// never taken from Splice's environment by name (where the provider keys live).
pub fn passthrough_name(name: &str) -> Result<(), PassthroughError> {
    let shaped = name.len() <= 128 && crate::packages::names::env_name_problem(name).is_none();
    if !shaped {
        return Err(PassthroughError::NotAName(
            crate::sanitize::terminal::strip_controls(name).into_owned(),
        ));
    }
    if crate::sanitize::redact::is_secret_name(name) {
        return Err(PassthroughError::Secret(name.to_string()));
    }
    Ok(())
}

/// The user's servers: the config file's `mcpServers` section, in name order.
pub fn user_servers(config: &ConfigFile) -> Result<Vec<ServerEntry>, McpConfigError> {
    match &config.mcp_servers {
        Some(servers) => parse_servers(servers, Source::User),
        None => Ok(Vec::new()),
    }
}

/// Why `envPassthrough` cannot list a name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PassthroughError {
    #[error("`envPassthrough` names variables (letters, digits and `_`), not `{0}`")]
    NotAName(String),
    #[error(
        "`envPassthrough` cannot pass `{0}`: its name says secret (it contains KEY, TOKEN, \
         SECRET, PASSWORD or CREDENTIAL), and no secret of Splice's environment reaches a \
         server; give the server its own value in `env` instead"
    )]
    Secret(String),
}

/// The servers of an `mcpServers` value, in name order.
pub fn parse_servers(value: &Value, source: Source) -> Result<Vec<ServerEntry>, McpConfigError> {
    let Some(object) = value.as_object() else {
        return Err(McpConfigError::Shape(
            "expected an object of servers".into(),
        ));
    };
    let mut entries = Vec::with_capacity(object.len());
    let mut names: Vec<&String> = object.keys().collect();
    names.sort();
    for name in names {
        if !valid_name(name) {
            return Err(McpConfigError::Name(name.clone()));
        }
        let server = |message: String| McpConfigError::Server {
            name: name.clone(),
            message,
        };
        let raw: RawServer =
            serde_json::from_value(object[name].clone()).map_err(|e| server(e.to_string()))?;
        let config = match (raw.kind.as_deref(), raw.command, raw.url) {
            (None | Some("stdio"), Some(command), None) => {
                if !raw.headers.is_empty() {
                    return Err(server("`headers` is for HTTP servers (`url`)".into()));
                }
                if command.trim().is_empty() {
                    return Err(server("`command` is empty".into()));
                }
                for variable in &raw.env_passthrough {
                    passthrough_name(variable).map_err(|e| server(e.to_string()))?;
                }
                ServerConfig::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    env_passthrough: raw.env_passthrough,
                }
            }
            (None | Some("http" | "streamable-http"), None, Some(url)) => {
                if !raw.args.is_empty() || !raw.env.is_empty() || !raw.env_passthrough.is_empty() {
                    return Err(server(
                        "`args`, `env` and `envPassthrough` are for stdio servers".into(),
                    ));
                }
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    return Err(server(format!("`url` must be http(s): `{url}`")));
                }
                ServerConfig::Http {
                    url,
                    headers: raw.headers,
                }
            }
            (Some("sse"), _, _) => {
                return Err(server(
                    "the old SSE transport is not supported; use streamable HTTP (`url`)".into(),
                ));
            }
            (Some(other), _, _) if !matches!(other, "stdio" | "http" | "streamable-http") => {
                return Err(server(format!("unknown `type` `{other}`")));
            }
            (_, Some(_), Some(_)) => {
                return Err(server("give `command` or `url`, not both".into()));
            }
            _ => {
                return Err(server(
                    "needs `command` (stdio) or `url` (streamable HTTP) matching its `type`".into(),
                ));
            }
        };
        entries.push(ServerEntry {
            name: name.clone(),
            config,
            source,
            pins: Vec::new(),
        });
    }
    Ok(entries)
}

/// A project's servers from `<root>/.mcp.json` (`{"mcpServers": {...}}`); none when the file
/// is absent. Its servers are [`Source::Project`]: not started until approved.
pub fn load_project(root: &std::path::Path) -> Result<Vec<ServerEntry>, McpConfigError> {
    // A file Splice reads on its own: beneath the root, a regular file, bounded, so a link out
    // of the repository, a FIFO or `/dev/zero` can neither choose the servers nor hang the run.
    let path = root.join(PROJECT_FILE);
    let bytes = match crate::confine::beneath::read_at_most(root, &path, MAX_PROJECT_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(McpConfigError::Shape(format!(
                "cannot read {PROJECT_FILE}: {e}"
            )));
        }
    };
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| McpConfigError::Shape(format!("{PROJECT_FILE} is not JSON: {e}")))?;
    match value.get("mcpServers") {
        Some(servers) => {
            let mut entries = parse_servers(servers, Source::Project)?;
            let canonical = super::approval::canonical_root(root);
            for entry in &mut entries {
                entry.pins = pin(&entry.config, &canonical);
            }
            Ok(entries)
        }
        None => Err(McpConfigError::Shape(format!(
            "{PROJECT_FILE} has no `mcpServers` object"
        ))),
    }
}

/// The files a server's config names where the model could write them, as they are now in
/// `root` (where a stdio server runs): its command, arguments and environment values. An
/// HTTP server runs nothing here.
fn pin(config: &ServerConfig, root: &std::path::Path) -> Vec<crate::permissions::pinned::Pinned> {
    match config {
        ServerConfig::Stdio {
            command, args, env, ..
        } => crate::permissions::pinned::pin_argv(
            std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .chain(env.values().map(String::as_str)),
            root,
        ),
        ServerConfig::Http { .. } => Vec::new(),
    }
}

/// The user's servers and the project's, a project server with a user server's name left out
/// (the user's config wins: a repository cannot take over a name the user's rules trust).
/// Returns the servers and the names of the project servers left out.
pub fn merge(user: Vec<ServerEntry>, project: Vec<ServerEntry>) -> (Vec<ServerEntry>, Vec<String>) {
    let mut shadowed = Vec::new();
    let mut servers = user;
    for entry in project {
        if servers.iter().any(|s| s.name == entry.name) {
            shadowed.push(entry.name);
        } else {
            servers.push(entry);
        }
    }
    (servers, shadowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed refusals read as the messages they replaced.
    #[test]
    fn passthrough_refusals_keep_their_words() {
        assert_eq!(
            passthrough_name("GITHUB_TOKEN").map_err(|e| e.to_string()),
            Err(
                "`envPassthrough` cannot pass `GITHUB_TOKEN`: its name says secret (it contains \
                 KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL), and no secret of Splice's \
                 environment reaches a server; give the server its own value in `env` instead"
                    .to_string()
            )
        );
        assert_eq!(
            passthrough_name("A B").map_err(|e| e.to_string()),
            Err(
                "`envPassthrough` names variables (letters, digits and `_`), not `A B`".to_string()
            )
        );
    }
    use serde_json::json;

    #[test]
    fn both_shapes_parse_and_mistakes_are_named() {
        let servers = parse_servers(
            &json!({
                "web": {"type": "http", "url": "https://x.invalid/mcp", "headers": {"A": "b"}},
                "everything": {"command": "npx", "args": ["-y", "s"], "env": {"K": "v"}}
            }),
            Source::User,
        )
        .expect("parse servers");
        assert_eq!(servers[0].name, "everything");
        assert!(matches!(&servers[0].config, ServerConfig::Stdio { args, .. } if args.len() == 2));
        assert!(
            matches!(&servers[1].config, ServerConfig::Http { headers, .. } if headers["A"] == "b")
        );
        let passing = parse_servers(
            &json!({"s": {"command": "npx", "envPassthrough": ["PIP_INDEX_URL", "_X1"]}}),
            Source::User,
        )
        .expect("parse servers");
        assert!(matches!(
            &passing[0].config,
            ServerConfig::Stdio { env_passthrough, .. } if env_passthrough == &["PIP_INDEX_URL", "_X1"]
        ));
        for (bad, needle) in [
            (json!({"a__b": {"command": "x"}}), "a__b"),
            (json!({"a_": {"command": "x"}}), "`a_`"),
            (json!({"_a": {"command": "x"}}), "`_a`"),
            (json!({"s": {"command": "x", "cwd": "/"}}), "cwd"),
            (json!({"s": {"type": "sse", "url": "http://x"}}), "SSE"),
            (
                json!({"s": {"command": "x", "url": "http://x"}}),
                "not both",
            ),
            (json!({"s": {"url": "file:///etc/passwd"}}), "http(s)"),
            (json!({"s": {}}), "needs"),
            (json!([]), "object"),
            (
                json!({"s": {"command": "x", "envPassthrough": ["GITHUB_TOKEN"]}}),
                "cannot pass `GITHUB_TOKEN`",
            ),
            (
                json!({"s": {"command": "x", "envPassthrough": ["OPENAI_API_KEY"]}}),
                "says secret",
            ),
            (
                json!({"s": {"command": "x", "envPassthrough": ["A=B"]}}),
                "not `A=B`",
            ),
            (
                json!({"s": {"url": "http://x", "envPassthrough": ["HTTPS_PROXY"]}}),
                "for stdio servers",
            ),
            (
                json!({"s": {"command": "x", "envpassthrough": ["HTTPS_PROXY"]}}),
                "unknown field `envpassthrough`",
            ),
        ] {
            let error = parse_servers(&bad, Source::Project)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(needle), "{bad}: {error}");
        }
    }
}
