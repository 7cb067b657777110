//! Finding the command files. Precedence when two define one name: the project's
//! `.splice/commands/`, then its `.claude/commands/`, then the user's `commands/` (the project
//! over the user, as in Claude Code). The TUI's own commands ([`super::RESERVED`]) cannot be
//! shadowed: a file of that name is skipped. Project files are read beneath the root: a link
//! that leads out of the project is refused, as for every project file. A project command
//! that takes the place of one of the user's says so ([`CommandFile::shadows`]): the model can
//! write the project's folders, the user's it cannot.

use std::path::{Path, PathBuf};

use sha2::Digest;

use super::SlashError;
use super::front_matter::{self, FrontMatter};
use crate::confine::beneath;

/// Most folder levels read below a commands folder.
const MAX_DEPTH: usize = 8;
/// Largest command file read.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Where a command was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `.splice/commands/` of the project.
    Project,
    /// `.claude/commands/` of the project.
    Claude,
    /// `commands/` in the user's config directory.
    User,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::Project => "project",
            Source::Claude => "project, .claude",
            Source::User => "user",
        }
    }
}

/// One command file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFile {
    /// `review`, or `git:commit` for `git/commit.md`.
    pub name: String,
    pub source: Source,
    pub path: PathBuf,
    pub matter: FrontMatter,
    pub body: String,
    /// `sha256:HEX` of the file's text: an approval holds for exactly this text.
    pub digest: String,
    /// The user's command file of the same name that this project one takes the place of.
    pub shadows: Option<PathBuf>,
}

impl CommandFile {
    /// What the `/` popup and `/help` show: the description, else the body's first line.
    pub fn help(&self) -> String {
        let text = self.matter.description.clone().unwrap_or_else(|| {
            self.body
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect()
        });
        match &self.shadows {
            Some(_) => format!(
                "{text} ({}; replaces your own /{})",
                self.source.label(),
                self.name
            ),
            None => format!("{text} ({})", self.source.label()),
        }
    }

    /// Whether it comes with the project (which the model can write), not the user's folder.
    pub fn is_project(&self) -> bool {
        self.source != Source::User
    }
}

/// Every command found, by name, and the files skipped with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub commands: Vec<CommandFile>,
    pub skipped: Vec<Skipped>,
}

/// A command file not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The command it would be, when its path makes a name.
    pub name: Option<String>,
    pub path: PathBuf,
    pub reason: String,
}

/// `commands/` beside the user's config file (`SPLICE_CONFIG`'s folder, else
/// `<config dir>/splice/`).
pub fn user_commands_dir() -> Option<PathBuf> {
    crate::layout::Layout::process().beside_config("commands")
}

impl Catalog {
    /// The commands of the project at `root` and of the user's folder `user`.
    pub fn load(root: &Path, user: Option<&Path>) -> Catalog {
        let mut catalog = Catalog::default();
        for (dir, source) in [
            (root.join(".splice").join("commands"), Source::Project),
            (root.join(".claude").join("commands"), Source::Claude),
        ] {
            catalog.read_dir(&dir, &dir, source, Some(root), 0);
        }
        if let Some(user) = user {
            // A user folder inside the project (SPLICE_CONFIG there) is the project's to
            // write: its commands are read as the project's, approval and all.
            let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            if canonical(user).starts_with(canonical(root)) {
                catalog.read_dir(user, user, Source::Project, Some(root), 0);
            } else {
                catalog.read_dir(user, user, Source::User, None, 0);
            }
        }
        catalog.commands.sort_by(|a, b| a.name.cmp(&b.name));
        catalog
    }

    /// The command `name`, or why there is none.
    pub fn lookup(&self, name: &str) -> Result<&CommandFile, SlashError> {
        if let Some(found) = self.commands.iter().find(|c| c.name == name) {
            return Ok(found);
        }
        if let Some(skipped) = self
            .skipped
            .iter()
            .find(|s| s.name.as_deref() == Some(name))
        {
            return Err(SlashError::BadFile {
                path: skipped.path.display().to_string(),
                reason: skipped.reason.clone(),
            });
        }
        if super::RESERVED.contains(&name) {
            return Err(SlashError::Interactive(name.to_string()));
        }
        Err(SlashError::Unknown {
            name: name.to_string(),
            known: self
                .commands
                .iter()
                .map(|c| format!("/{}", c.name))
                .collect(),
        })
    }

    /// Read the `.md` files under `dir` (a folder of `base`); `root` confines project files.
    fn read_dir(
        &mut self,
        base: &Path,
        dir: &Path,
        source: Source,
        root: Option<&Path>,
        depth: usize,
    ) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // A linked folder is not followed: it could lead anywhere.
            if kind.is_dir() {
                if depth < MAX_DEPTH {
                    self.read_dir(base, &path, source, root, depth + 1);
                }
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("md") {
                continue;
            }
            let Some(name) = command_name(base, &path) else {
                self.skipped.push(Skipped {
                    name: None,
                    path,
                    reason: "its name is not a command name (letters, digits, `_`, `-`)".into(),
                });
                continue;
            };
            if super::RESERVED.contains(&name.as_str()) {
                self.skipped.push(Skipped {
                    reason: format!("/{name} is a built-in command, which a file cannot replace"),
                    name: Some(name),
                    path,
                });
                continue;
            }
            // An earlier folder has it already; a project command over the user's says so.
            if let Some(taken) = self.commands.iter_mut().find(|c| c.name == name) {
                if source == Source::User && taken.is_project() {
                    taken.shadows = Some(path);
                }
                continue;
            }
            match read(&path, root) {
                Ok(text) => {
                    let (matter, body) = front_matter::split(&text);
                    let body = body.to_string();
                    let digest = sha2::Sha256::digest(text.as_bytes());
                    self.commands.push(CommandFile {
                        name,
                        source,
                        path,
                        matter,
                        body,
                        digest: format!("sha256:{}", crate::ids::hex(&digest)),
                        shadows: None,
                    });
                }
                Err(reason) => self.skipped.push(Skipped {
                    name: Some(name),
                    path,
                    reason: format!("cannot be read: {reason}"),
                }),
            }
        }
    }
}

/// `git/commit.md` under `base` is `git:commit`; `None` when a part is not a name.
fn command_name(base: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(base).ok()?.with_extension("");
    let parts: Vec<&str> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<_>>()?;
    let valid = |part: &&str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    };
    parts.iter().all(valid).then(|| parts.join(":"))
}

/// The file's text (at most 256 KiB, UTF-8); beneath `root` when given. Agent definitions are
/// read the same way.
pub(crate) fn read(path: &Path, root: Option<&Path>) -> Result<String, String> {
    let bytes = match root {
        Some(root) => beneath::read_at_most(root, path, MAX_FILE_BYTES),
        None => std::fs::File::open(path).and_then(|file| {
            use std::io::Read;
            let mut bytes = Vec::new();
            file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
            Ok(bytes)
        }),
    }
    .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the folder");
        std::fs::write(path, text).expect("write the file");
    }

    #[test]
    fn namespaces_precedence_and_reserved_names() {
        let root = tempfile::tempdir().expect("a root");
        let user = tempfile::tempdir().expect("a user folder");
        let root_path = root.path();
        write(
            &root_path.join(".splice/commands/review.md"),
            "splice review",
        );
        write(
            &root_path.join(".claude/commands/review.md"),
            "claude review",
        );
        write(&root_path.join(".claude/commands/git/commit.md"), "commit");
        write(&root_path.join(".claude/commands/model.md"), "mine");
        write(
            &root_path.join(".claude/commands/notes.txt"),
            "not a command",
        );
        write(&user.path().join("review.md"), "user review");
        write(
            &user.path().join("mine.md"),
            "---\ndescription: Mine\n---\nuser's",
        );
        let catalog = Catalog::load(root_path, Some(user.path()));
        let names: Vec<&str> = catalog.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:commit", "mine", "review"]);
        let review = catalog.lookup("review").expect("review");
        assert_eq!(
            (review.body.as_str(), review.source),
            ("splice review", Source::Project)
        );
        // It takes the place of the user's, and says so.
        assert_eq!(review.shadows, Some(user.path().join("review.md")));
        assert!(review.help().contains("replaces your own /review"));
        assert_eq!(catalog.lookup("mine").expect("mine").shadows, None);
        assert_eq!(catalog.lookup("mine").expect("mine").help(), "Mine (user)");
        assert!(matches!(
            catalog.lookup("model"),
            Err(SlashError::BadFile { .. })
        ));
        assert!(matches!(
            catalog.lookup("nope"),
            Err(SlashError::Unknown { .. })
        ));
    }

    #[test]
    fn a_link_out_of_the_project_is_refused() {
        let root = tempfile::tempdir().expect("a root");
        let outside = tempfile::tempdir().expect("outside");
        write(&outside.path().join("secret.md"), "secret");
        let dir = root.path().join(".splice/commands");
        std::fs::create_dir_all(&dir).expect("commands folder");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.join("leak.md"))
            .expect("link");
        let catalog = Catalog::load(root.path(), None);
        assert!(catalog.commands.is_empty());
        assert!(matches!(
            catalog.lookup("leak"),
            Err(SlashError::BadFile { .. })
        ));
    }
}
