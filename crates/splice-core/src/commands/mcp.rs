//! `splice mcp add|remove|list`: edit the `mcpServers` of the user's config file (its other
//! keys and their order kept, written atomically), and list the servers by starting them.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{Map, Value, json};

use super::{Error, Io};
use crate::cli::{McpAction, McpArgs};
use crate::config::{read_document, write_document};
use crate::exit::Exit;
use crate::layout::Layout;
use crate::mcp::approval::{self, Approvals, Selection, canonical_root};
use crate::mcp::config::{self, Source, valid_name};
use crate::mcp::hub::{HubOptions, McpHub, ServerState, ServerStatus};

/// `splice mcp add|remove|list`.
pub async fn run(args: &McpArgs, mut io: Io) -> Result<Exit, Error> {
    let (out, err) = (&mut *io.out, &mut *io.err);
    let done = match &args.action {
        McpAction::Add {
            name,
            env,
            env_passthrough,
            url,
            headers,
            force,
            command,
        } => {
            let server = ServerArgs {
                env,
                passthrough: env_passthrough,
                url: url.as_deref(),
                headers,
                command,
            };
            add(name, &server, *force, out)
        }
        McpAction::Remove { name } => remove(name, out),
        McpAction::List {
            json,
            trust_project_mcp,
        } => list(*json, *trust_project_mcp, out).await,
    };
    match done {
        Ok(()) => Ok(Exit::Success),
        Err(message) => {
            let _ = writeln!(err, "splice: {message}");
            Ok(Exit::Usage)
        }
    }
}

/// `splice mcp add`'s description of the server.
#[derive(Default)]
struct ServerArgs<'a> {
    env: &'a [String],
    /// Variable names passed through from Splice's environment (`envPassthrough`).
    passthrough: &'a [String],
    url: Option<&'a str>,
    headers: &'a [String],
    command: &'a [String],
}

/// The server as the config file holds it, from `splice mcp add`'s arguments.
fn server_value(args: &ServerArgs) -> Result<Value, String> {
    let ServerArgs {
        env,
        passthrough,
        url,
        headers,
        command,
    } = *args;
    match (url, command.split_first()) {
        (Some(_), Some(_)) => Err("give either --url or a command after `--`, not both".into()),
        (None, None) => Err(
            "say how to reach the server: `-- COMMAND [ARGS...]` (stdio) or `--url URL` (HTTP)"
                .into(),
        ),
        (Some(url), None) => {
            if !env.is_empty() || !passthrough.is_empty() {
                return Err(
                    "--env and --env-passthrough are for stdio servers (a command after `--`)"
                        .into(),
                );
            }
            let mut map = BTreeMap::new();
            for header in headers {
                // Not quoted back: a malformed header may still be a token.
                let Some((name, value)) = header.split_once(':') else {
                    return Err("a --header is not `Name: value`".into());
                };
                let name = name.trim();
                if name.is_empty() {
                    return Err("--header has an empty name".into());
                }
                map.insert(name.to_string(), value.trim().to_string());
            }
            Ok(json!({"type": "http", "url": url, "headers": map}))
        }
        (None, Some((program, args))) => {
            if !headers.is_empty() {
                return Err("--header is for HTTP servers (--url)".into());
            }
            let mut map = BTreeMap::new();
            for pair in env {
                match pair.split_once('=') {
                    Some((k, v)) if !k.is_empty() => {
                        map.insert(k.to_string(), v.to_string());
                    }
                    _ => return Err(format!("--env `{pair}` is not `NAME=value`")),
                }
            }
            let mut server = json!({"command": program, "args": args, "env": map});
            // Written only when given: the approval fingerprint counts the key when it is set.
            if !passthrough.is_empty() {
                server["envPassthrough"] = json!(passthrough);
            }
            Ok(server)
        }
    }
}

fn add(name: &str, args: &ServerArgs, force: bool, out: &mut dyn Write) -> Result<(), String> {
    if !valid_name(name) {
        return Err(format!(
            "invalid server name `{name}` (letters, digits, `-` and `_`; no `__`, no `_` at \
             either end; at most 32)"
        ));
    }
    let server = server_value(args)?;
    // The server alone must be valid as the config would hold it (a URL's scheme, say).
    config::parse_servers(&json!({ name: server.clone() }), Source::User)
        .map_err(|e| e.to_string())?;
    let (path, mut document) = read_document()?;
    let servers = servers_of(&mut document)?;
    if servers.contains_key(name) && !force {
        return Err(format!(
            "an MCP server named `{name}` is already in {} (--force replaces it)",
            path.display()
        ));
    }
    servers.insert(name.to_string(), server);
    write_document(&path, &document)?;
    let _ = writeln!(out, "Added MCP server `{name}` to {}", path.display());
    Ok(())
}

fn remove(name: &str, out: &mut dyn Write) -> Result<(), String> {
    let (path, mut document) = read_document()?;
    let servers = servers_of(&mut document)?;
    if servers.shift_remove(name).is_none() {
        return Err(format!(
            "no MCP server named `{name}` in {}",
            path.display()
        ));
    }
    if servers.is_empty()
        && let Some(object) = document.as_object_mut()
    {
        object.shift_remove("mcpServers");
    }
    write_document(&path, &document)?;
    let _ = writeln!(out, "Removed MCP server `{name}` from {}", path.display());
    Ok(())
}

fn servers_of(document: &mut Value) -> Result<&mut Map<String, Value>, String> {
    let object = document
        .as_object_mut()
        .ok_or("the config file is not a JSON object")?;
    object
        .entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| "`mcpServers` in the config file is not an object".to_string())
}

async fn list(as_json: bool, trust_project: bool, out: &mut dyn Write) -> Result<(), String> {
    let user = crate::settings::load_config().map_err(|e| e.to_string())?;
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current dir: {e}"))?;
    let root = canonical_root(&cwd);
    let project = config::load_project(&root)
        .map_err(|e| format!("{}: {e}", root.join(config::PROJECT_FILE).display()))?;
    let options = HubOptions::from_env(root.clone()).map_err(|e| e.to_string())?;
    let approvals = (!trust_project).then(|| Approvals::load(Layout::process()));
    let Selection {
        start,
        unapproved,
        shadowed,
    } = approval::select(
        config::user_servers(&user).unwrap_or_default(),
        project,
        &root,
        approvals.as_ref(),
    );
    let hub = McpHub::new(options);
    hub.start(start).await;
    hub.record_unapproved(unapproved);
    let statuses = hub.statuses();
    hub.shutdown().await;
    if as_json {
        let servers: Vec<Value> = statuses.iter().map(status_json).collect();
        let _ = writeln!(out, "{}", json!({"servers": servers, "shadowed": shadowed}));
        return Ok(());
    }
    if statuses.is_empty() {
        let _ = writeln!(
            out,
            "No MCP servers configured (add one with `splice mcp add`)."
        );
    }
    for status in &statuses {
        let _ = writeln!(
            out,
            "{}  {}  ({})  {}",
            status.name,
            status.state.as_str(),
            status.source.as_str(),
            status.target
        );
        if !status.tools.is_empty() {
            let _ = writeln!(
                out,
                "  tools ({}): {}",
                status.tools.len(),
                status.tools.join(", ")
            );
        }
        if status.state == ServerState::Unapproved {
            let _ = writeln!(
                out,
                "  not started: approve it in the terminal UI, or pass --trust-project-mcp"
            );
        }
        if let Some(error) = &status.last_error {
            let _ = writeln!(out, "  last error: {}", error.replace('\n', "\n    "));
        }
    }
    for name in shadowed {
        let _ = writeln!(
            out,
            "note: the project's server `{name}` is left out: your config has a server of that name"
        );
    }
    Ok(())
}

fn status_json(status: &ServerStatus) -> Value {
    let mut value = json!({
        "name": status.name,
        "source": status.source.as_str(),
        "state": status.state.as_str(),
        "target": status.target,
        "tools": status.tools,
    });
    if let (Some(error), Some(object)) = (&status.last_error, value.as_object_mut()) {
        object.insert("lastError".into(), json!(error));
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_arguments_make_the_config_shapes() {
        let stdio = server_value(&ServerArgs {
            env: &["K=v=w".into()],
            command: &["npx".into(), "-y".into(), "pkg".into()],
            ..ServerArgs::default()
        });
        assert_eq!(
            stdio,
            Ok(json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v=w"}}))
        );
        let passed = server_value(&ServerArgs {
            passthrough: &["PIP_INDEX_URL".into()],
            command: &["uvx".into(), "srv".into()],
            ..ServerArgs::default()
        });
        assert_eq!(
            passed,
            Ok(
                json!({"command": "uvx", "args": ["srv"], "env": {}, "envPassthrough": ["PIP_INDEX_URL"]})
            )
        );
        let http = server_value(&ServerArgs {
            url: Some("https://x.invalid/mcp"),
            headers: &["Authorization: Bearer a:b".into()],
            ..ServerArgs::default()
        });
        assert_eq!(
            http,
            Ok(
                json!({"type": "http", "url": "https://x.invalid/mcp", "headers": {"Authorization": "Bearer a:b"}})
            )
        );
        for (env, url, headers, command, needle) in [
            (
                vec![],
                Some("https://x"),
                vec![],
                vec!["c".to_string()],
                "not both",
            ),
            (vec![], None, vec![], vec![], "say how"),
            (
                vec!["K".to_string()],
                None,
                vec![],
                vec!["c".to_string()],
                "NAME=value",
            ),
            (
                vec![],
                Some("https://x"),
                vec!["NoColon secret".to_string()],
                vec![],
                "Name: value",
            ),
            (
                vec!["K=v".to_string()],
                Some("https://x"),
                vec![],
                vec![],
                "--env and --env-passthrough are for stdio",
            ),
        ] {
            let error = server_value(&ServerArgs {
                env: &env,
                url,
                headers: &headers,
                command: &command,
                ..ServerArgs::default()
            })
            .err()
            .unwrap_or_default();
            assert!(error.contains(needle), "{error}");
            assert!(!error.contains("secret"));
        }
    }
}
