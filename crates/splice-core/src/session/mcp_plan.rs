//! A session's MCP servers as it opens (the TUI's and each ACP session's): which servers start
//! at once (the user's and the project servers approved before), and which wait for the person
//! to approve them (the rest of the project's `.mcp.json`). Nothing here waits on a server.

use crate::mcp::ServerEntry;
use crate::mcp::approval::{self, Approvals, Selection, canonical_root};
use crate::mcp::config::{self, PROJECT_FILE};
use crate::settings::RunSettings;

/// How much a [`Note`] matters to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    Warning,
    Info,
}

/// What the session does with its servers when it opens.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Started in the background at once.
    pub start: Vec<ServerEntry>,
    /// Project servers the person has not approved: asked about, never started unasked.
    pub ask: Vec<ServerEntry>,
    /// Said in the transcript: a broken `.mcp.json`, a project server a user server shadows.
    pub notes: Vec<(NoteLevel, String)>,
}

/// The user's servers and the project's `.mcp.json` in `settings.cwd`, split by approval.
pub fn plan(settings: &RunSettings) -> Plan {
    let root = canonical_root(&settings.cwd);
    let mut notes = Vec::new();
    let project = config::load_project(&settings.cwd).unwrap_or_else(|e| {
        // Fails closed: a file that does not parse starts nothing of the project's.
        notes.push((
            NoteLevel::Warning,
            format!("{e}; no server of the project's {PROJECT_FILE} starts"),
        ));
        Vec::new()
    });
    let approvals = Approvals::load(&settings.layout);
    let Selection {
        start,
        unapproved: ask,
        shadowed,
    } = approval::select(
        settings.mcp.servers.clone(),
        project,
        &root,
        Some(&approvals),
    );
    for entry in &ask {
        if let Some(file) = approvals.changed_file(&root, entry) {
            notes.push((
                NoteLevel::Warning,
                crate::mcp::run::changed_warning(&entry.name, &file),
            ));
        }
    }
    for name in shadowed {
        notes.push((
            NoteLevel::Info,
            format!(
                "MCP server `{name}` of {PROJECT_FILE} is left out: your config has a server \
                 of that name"
            ),
        ));
    }
    Plan { start, ask, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::ServerConfig;
    use crate::mcp::Source;

    fn stdio(name: &str, command: &str, source: Source) -> ServerEntry {
        ServerEntry {
            name: name.into(),
            config: ServerConfig::Stdio {
                command: command.into(),
                args: vec![],
                env: Default::default(),
                env_passthrough: Vec::new(),
            },
            source,
            pins: Vec::new(),
        }
    }

    #[test]
    fn only_user_and_approved_project_servers_start_and_a_changed_entry_is_asked_again() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).expect("create root");
        let write_project = |command: &str| {
            let text = serde_json::json!({"mcpServers": {
                "approved": {"command": command},
                "fresh": {"command": "node", "args": ["x.js"]},
                "mine": {"command": "evil"},
            }});
            std::fs::write(root.join(PROJECT_FILE), text.to_string()).expect("write");
        };
        write_project("node");
        let mut settings = super::super::test_settings::settings();
        settings.cwd = root.clone();
        settings.layout = crate::layout::Layout::at(&dir.path().join("data"));
        settings.mcp.servers = vec![stdio("mine", "mine-server", Source::User)];
        // As read from `.mcp.json` (its files pinned).
        let approved = config::load_project(&root)
            .expect("load")
            .into_iter()
            .find(|e| e.name == "approved")
            .expect("approved entry");
        crate::mcp::approval::approve(&settings.layout, &root, &approved).expect("approve");

        let plan = plan(&settings);
        let names = |list: &[ServerEntry]| list.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&plan.start), ["mine", "approved"]);
        assert_eq!(names(&plan.ask), ["fresh"]);
        // The user's `mine` wins over the project's, which is said.
        assert!(
            matches!(plan.start[0].config, ServerConfig::Stdio { ref command, .. } if command == "mine-server")
        );
        assert!(plan.notes.iter().any(|(_, n)| n.contains("`mine`")));

        // A pull that changes the approved server's command: asked again, not started.
        write_project("sh");
        let again = super::plan(&settings);
        assert_eq!(names(&again.start), ["mine"]);
        assert_eq!(names(&again.ask), ["approved", "fresh"]);
    }

    #[test]
    fn a_broken_project_file_starts_none_of_its_servers_and_says_so() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::write(dir.path().join(PROJECT_FILE), "{not json").expect("write");
        let mut settings = super::super::test_settings::settings();
        settings.cwd = dir.path().to_path_buf();
        settings.layout = crate::layout::Layout::at(&dir.path().join("data"));
        settings.mcp.servers = vec![stdio("mine", "mine-server", Source::User)];
        let plan = plan(&settings);
        assert_eq!(plan.start.len(), 1);
        assert!(plan.ask.is_empty());
        assert!(
            plan.notes
                .iter()
                .any(|(level, n)| *level == NoteLevel::Warning && n.contains(PROJECT_FILE)),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn an_approved_server_whose_script_changed_is_asked_again_with_the_file_named() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("tools")).expect("create root");
        std::fs::write(root.join("tools/server.mjs"), "honest").expect("write");
        let text = serde_json::json!({"mcpServers": {
            "proj": {"command": "node", "args": ["tools/server.mjs"]},
        }});
        std::fs::write(root.join(PROJECT_FILE), text.to_string()).expect("write");
        let mut settings = super::super::test_settings::settings();
        settings.cwd = root.clone();
        settings.layout = crate::layout::Layout::at(&dir.path().join("data"));
        for entry in config::load_project(&root).expect("load") {
            crate::mcp::approval::approve(&settings.layout, &root, &entry).expect("approve");
        }
        let plan = plan(&settings);
        assert_eq!(plan.start.len(), 1);
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);

        std::fs::write(root.join("tools/server.mjs"), "pwned").expect("rewrite");
        let again = super::plan(&settings);
        assert!(again.start.is_empty());
        assert_eq!(again.ask.len(), 1);
        assert!(
            again
                .notes
                .iter()
                .any(|(level, n)| *level == NoteLevel::Warning && n.contains("tools/server.mjs")),
            "{:?}",
            again.notes
        );
    }
}
