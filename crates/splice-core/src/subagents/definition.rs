//! Agent definitions: markdown files whose front matter says what a subagent is (`name`,
//! `description`, `tools`, `model`, `permissionMode`, `maxTurns`) and whose body is its system
//! prompt. They live in the project's `.splice/agents/` (and `.claude/agents/`, Claude Code's;
//! read beneath the root, as every project file) and in `agents/` beside the user's config
//! file; the project's win over the user's, and both over the built-in `general`. A project definition that may write files or
//! run commands is offered only once the person approved it (as a project MCP server is),
//! until the file changes.

use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::layout::Layout;
use crate::mcp::approval::{Approvals, canonical_root};
use crate::permissions::PermissionMode;
use crate::protocol::{Builtin, SideEffect};

/// Where approvals of project agent definitions are kept in the data dir.
pub const APPROVALS_FILE: &str = "agent-approvals.json";
/// Most definition files read from one folder.
const MAX_FILES: usize = 64;

/// Where a definition was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    BuiltIn,
    /// `.splice/agents/` of the project.
    Project,
    /// `agents/` in the user's config directory.
    User,
}

impl Origin {
    pub fn label(self) -> &'static str {
        match self {
            Origin::BuiltIn => "built-in",
            Origin::Project => "project",
            Origin::User => "user",
        }
    }
}

/// One agent a subagent may be started as.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub description: String,
    /// Its system prompt (the file's body).
    pub prompt: String,
    pub tools: Vec<Builtin>,
    pub model: Option<String>,
    pub mode: Option<PermissionMode>,
    pub max_turns: Option<u32>,
    pub origin: Origin,
    pub path: Option<PathBuf>,
    /// A hash of the file: an approval holds for these exact contents.
    pub fingerprint: String,
}

impl Definition {
    /// The agent started when a call names none: read-only tools, the run's model.
    pub fn general() -> Definition {
        Definition {
            name: "general".into(),
            description: "A general helper with read-only tools (list_files, search_files, \
                          read_file): finds and reads what a question needs and reports it."
                .into(),
            prompt: String::new(),
            tools: read_only(),
            model: None,
            mode: None,
            max_turns: None,
            origin: Origin::BuiltIn,
            path: None,
            fingerprint: String::new(),
        }
    }

    /// Whether it may change the tree: write files or run commands (which can write too).
    pub fn writes(&self) -> bool {
        self.tools.iter().any(|tool| !is_read_only(*tool))
    }

    /// Whether a person must approve it before it runs: a project's that writes.
    pub fn needs_approval(&self) -> bool {
        self.origin == Origin::Project && self.writes()
    }
}

/// Whether built-in `tool` only reads, as its handler says.
fn is_read_only(tool: Builtin) -> bool {
    crate::tools::registry::builtin(tool).is_some_and(|h| h.side_effect() == SideEffect::Read)
}

fn read_only() -> Vec<Builtin> {
    crate::tools::REAL_TOOLS
        .into_iter()
        .filter(|tool| is_read_only(*tool))
        .collect()
}

/// The definitions that may be offered, and what became of the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub offered: Vec<Definition>,
    /// Project definitions that write and were not approved: not offered until they are.
    pub unapproved: Vec<Definition>,
    /// Files that cannot be used, and why.
    pub skipped: Vec<(PathBuf, String)>,
}

/// `agents/` beside the user's config file.
pub fn user_agents_dir() -> Option<PathBuf> {
    crate::layout::Layout::process().beside_config("agents")
}

impl Catalog {
    /// The definitions of the project at `root` and of the user's folder `user`, with the
    /// approvals kept in `layout` for the checkout `project` (the root itself, or in a
    /// `--worktree` run the source checkout the worktree was made from). `ask`: a person can
    /// approve one when it is first used (the TUI), so an unapproved one is offered and asked
    /// about then; otherwise it is not offered. Blocking.
    pub fn load(
        root: &Path,
        project: &Path,
        user: Option<&Path>,
        layout: &Layout,
        ask: bool,
    ) -> Catalog {
        let mut catalog = Catalog::default();
        let approvals = Approvals::load_file(layout, APPROVALS_FILE);
        let canonical = canonical_root(project);
        let mut found = Vec::new();
        // `.claude/agents/` too (after Splice's own), so Claude Code's definitions work.
        for folder in [".splice", ".claude"] {
            let project = root.join(folder).join("agents");
            found.extend(catalog.read_dir(&project, Origin::Project, Some(root)));
        }
        if let Some(user) = user {
            // A user folder inside the project (SPLICE_CONFIG there) is the project's to
            // write: its definitions are read as the project's, approval and all.
            let real = canonical_root(user);
            let within = [root, project]
                .into_iter()
                .find(|top| real.starts_with(canonical_root(top)));
            found.extend(match within {
                Some(top) => catalog.read_dir(user, Origin::Project, Some(top)),
                None => catalog.read_dir(user, Origin::User, None),
            });
        }
        found.push(Definition::general());
        for definition in found {
            // The project's first, then the user's, then the built-in.
            let taken = catalog.offered.iter().chain(&catalog.unapproved);
            if taken.clone().any(|d| d.name == definition.name) {
                continue;
            }
            let approved = !definition.needs_approval()
                || approvals.is_approved_key(&canonical, &definition.name, &definition.fingerprint);
            if approved || ask {
                catalog.offered.push(definition);
            } else {
                catalog.unapproved.push(definition);
            }
        }
        catalog
    }

    fn read_dir(&mut self, dir: &Path, origin: Origin, root: Option<&Path>) -> Vec<Definition> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
            .map(|e| e.path())
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("md"))
            .collect();
        paths.sort();
        let mut found = Vec::new();
        for path in paths.into_iter().take(MAX_FILES) {
            let parsed = crate::slash::read_markdown(&path, root)
                .map_err(|e| format!("cannot be read: {e}"))
                .and_then(|text| parse(&path, &text, origin));
            match parsed {
                Ok(definition) => found.push(definition),
                Err(reason) => self.skipped.push((path, reason)),
            }
        }
        found
    }
}

/// A definition from its file's text.
pub fn parse(path: &Path, text: &str, origin: Origin) -> Result<Definition, String> {
    let (matter, body) = crate::slash::split_front_matter(text);
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let name = matter.name.clone().unwrap_or_else(|| stem.to_string());
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    if !valid {
        return Err(format!(
            "its name `{name}` is not an agent name (letters, digits, `_`, `-`)"
        ));
    }
    let Some(description) = matter.description.clone() else {
        return Err("it has no `description`, which tells the model when to use it".into());
    };
    let mut tools = Vec::new();
    for written in &matter.tools {
        let tool = tool_named(written).ok_or_else(|| {
            format!("`tools` names `{written}`, which is not a tool a subagent can have")
        })?;
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    if tools.is_empty() {
        tools = read_only();
    }
    let mode = match &matter.permission_mode {
        None => None,
        Some(written) => Some(mode_named(written).ok_or_else(|| {
            format!(
                "`permissionMode` `{written}` is not one of {}",
                PermissionMode::NAMES.join(", ")
            )
        })?),
    };
    let max_turns = match &matter.max_turns {
        None => None,
        Some(written) => Some(
            written
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("`maxTurns` `{written}` is not a number of at least 1"))?,
        ),
    };
    let digest = sha2::Sha256::digest(text.as_bytes());
    Ok(Definition {
        name,
        description,
        prompt: body.trim().to_string(),
        tools,
        // Claude Code's `inherit`: the run's model, as without one.
        model: matter.model.clone().filter(|m| m != "inherit"),
        mode,
        max_turns,
        origin,
        path: Some(path.to_path_buf()),
        fingerprint: digest.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// A tool by Splice's name or Claude Code's (so its agent files work unchanged).
fn tool_named(name: &str) -> Option<Builtin> {
    crate::tools::registry::real_tool_named(name.trim())
}

/// A mode by Splice's name or Claude Code's.
fn mode_named(name: &str) -> Option<PermissionMode> {
    PermissionMode::parse(name).or(match name {
        "default" => Some(PermissionMode::Ask),
        "acceptEdits" => Some(PermissionMode::AcceptEdits),
        "plan" => Some(PermissionMode::ReadOnly),
        "bypassPermissions" => Some(PermissionMode::Auto),
        _ => None,
    })
}

/// Remember that the person approved project definition `definition` for the project at
/// `root`, until its file changes.
pub fn approve(layout: &Layout, root: &Path, definition: &Definition) -> std::io::Result<()> {
    // `root`: the checkout the approval is for (the source checkout of a `--worktree` run).
    Approvals::load_file(layout, APPROVALS_FILE).approve_key(
        &canonical_root(root),
        &definition.name,
        &definition.fingerprint,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the folder");
        std::fs::write(path, text).expect("write the file");
    }

    #[test]
    fn project_over_user_over_built_in_and_writers_wait_for_approval() {
        let root = tempfile::tempdir().expect("a root");
        let user = tempfile::tempdir().expect("a user folder");
        let data = tempfile::tempdir().expect("a data dir");
        let agents = root.path().join(".splice/agents");
        write(
            &agents.join("reviewer.md"),
            "---\ndescription: Reviews\ntools: Read, Grep\nmaxTurns: 3\n---\nReview.\n",
        );
        write(
            &agents.join("fixer.md"),
            "---\ndescription: Fixes\ntools: [read_file, write_file]\n---\nFix.\n",
        );
        write(
            &agents.join("bad.md"),
            "---\ndescription: x\ntools: Fly\n---\n",
        );
        write(
            &root.path().join(".claude/agents/helper.md"),
            "---\nname: helper\ndescription: Claude's\nmodel: inherit\n---\n",
        );
        write(
            &root.path().join(".claude/agents/reviewer.md"),
            "---\ndescription: Shadowed by .splice's\n---\n",
        );
        write(
            &user.path().join("reviewer.md"),
            "---\ndescription: Mine\n---\n",
        );
        write(
            &user.path().join("general.md"),
            "---\ndescription: My general\ntools: run_command\n---\n",
        );
        let catalog = Catalog::load(
            root.path(),
            root.path(),
            Some(user.path()),
            &crate::layout::Layout::at(data.path()),
            false,
        );
        let names: Vec<&str> = catalog.offered.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["reviewer", "helper", "general"]);
        assert_eq!(catalog.offered[1].model, None);
        assert_eq!(catalog.offered[0].description, "Reviews");
        assert_eq!(
            catalog.offered[0].tools,
            [Builtin::ReadFile, Builtin::SearchFiles]
        );
        assert_eq!(catalog.offered[0].max_turns, Some(3));
        // A user's definition needs no approval, even one that runs commands.
        assert_eq!(catalog.offered[2].origin, Origin::User);
        assert_eq!(catalog.unapproved.len(), 1);
        assert_eq!(catalog.unapproved[0].name, "fixer");
        assert_eq!(catalog.skipped.len(), 1);
        assert!(
            catalog.skipped[0].1.contains("Fly"),
            "{:?}",
            catalog.skipped
        );

        approve(
            &crate::layout::Layout::at(data.path()),
            root.path(),
            &catalog.unapproved[0],
        )
        .expect("approve");
        let again = Catalog::load(
            root.path(),
            root.path(),
            Some(user.path()),
            &crate::layout::Layout::at(data.path()),
            false,
        );
        assert!(again.unapproved.is_empty());
        assert!(again.offered.iter().any(|d| d.name == "fixer"));
        // A changed file needs approving again.
        write(
            &agents.join("fixer.md"),
            "---\ndescription: Fixes\ntools: [read_file, write_file, run_command]\n---\nFix.\n",
        );
        let changed = Catalog::load(
            root.path(),
            root.path(),
            Some(user.path()),
            &crate::layout::Layout::at(data.path()),
            false,
        );
        assert_eq!(changed.unapproved.len(), 1);
        // Where a person can be asked, it is offered (and asked about when used).
        let asking = Catalog::load(
            root.path(),
            root.path(),
            Some(user.path()),
            &crate::layout::Layout::at(data.path()),
            true,
        );
        assert!(asking.offered.iter().any(|d| d.name == "fixer"));
    }

    #[test]
    fn a_link_out_of_the_project_is_not_read() {
        let root = tempfile::tempdir().expect("a root");
        let outside = tempfile::tempdir().expect("outside");
        let data = tempfile::tempdir().expect("a data dir");
        write(
            &outside.path().join("secret.md"),
            "---\ndescription: Out\n---\n",
        );
        let agents = root.path().join(".splice/agents");
        std::fs::create_dir_all(&agents).expect("create agents");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), agents.join("out.md"))
            .expect("link");
        let catalog = Catalog::load(
            root.path(),
            root.path(),
            None,
            &crate::layout::Layout::at(data.path()),
            false,
        );
        assert_eq!(catalog.offered.len(), 1, "{:?}", catalog.offered);
        assert_eq!(catalog.skipped.len(), 1);
    }
}
