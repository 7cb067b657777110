//! The tree a writing subagent works in: a git worktree of its own, made from the checkout as it
//! is now (changes not committed and new files included), so two subagents never write the same
//! tree and nothing reaches the checkout until the parent applies the diff. The worktree and its
//! branch go when the subagent ends, however it ends (an interrupt drops it).

use crate::layout::Layout;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::confine::change::FileChange;
use crate::git::Access;
use crate::worktree::{self, Worktree};

/// A subagent's worktree; removed with its branch when dropped.
pub struct Scratch {
    pub worktree: Worktree,
    /// The git dir of the worktree's own repository (`<id>.git` beside it), the one place
    /// beyond the worktree its confined commands may write; never the repository's git dir
    /// (objects, hooks, config, branches), which the parent's root may not hold.
    pub admin: Option<PathBuf>,
    /// The checkout's top level and the commit the worktree started from (the checkout then).
    top: PathBuf,
    base: String,
    layout: Layout,
    /// The repository's common git dir, asked of the checkout before the subagent ran: its
    /// work is read through this, never through the worktree's `.git` file or its HEAD, which
    /// its commands can rewrite (to commit onto the checkout's branch).
    common: PathBuf,
}

fn git(dir: &Path, access: Access, args: &[&str], index: Option<&Path>) -> Result<Output, String> {
    let mut command = crate::git::command(dir, access).map_err(|e| e.to_string())?;
    if let Some(index) = index {
        command.env("GIT_INDEX_FILE", index);
    }
    command
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))
}

fn text(output: Output, what: &str) -> Result<String, String> {
    if !output.status.success() {
        return Err(format!(
            "`git {what}` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A commit of the checkout `top` as it is now (tracked and new files, ignored ones left out),
/// made with an index of its own: neither the checkout's index nor its files are touched.
fn snapshot(top: &Path, scratch: &Path) -> Result<String, String> {
    let head = text(
        git(
            top,
            Access::Read,
            &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
            None,
        )?,
        "rev-parse HEAD",
    )
    .map_err(|_| "the git repository has no commit yet".to_string())?;
    let index = Some(scratch);
    // A copy of the checkout's index keeps what git knows of unchanged files, so only changed
    // ones are read again; without one, HEAD's tree.
    let real = git(
        top,
        Access::Read,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        None,
    )
    .and_then(|out| text(out, "rev-parse --git-path index"));
    let copied = real.is_ok_and(|real| std::fs::copy(real, scratch).is_ok());
    if !copied {
        text(
            git(top, Access::Read, &["read-tree", &head], index)?,
            "read-tree",
        )?;
    }
    text(git(top, Access::Write, &["add", "-A"], index)?, "add -A")?;
    let tree = text(
        git(top, Access::Read, &["write-tree"], index)?,
        "write-tree",
    )?;
    let message = "Splice: the checkout as a subagent started";
    let mut command = crate::git::command(top, Access::Write).map_err(|e| e.to_string())?;
    // A commit no branch points at: the same identity wherever git has none.
    let made = command
        .env("GIT_AUTHOR_NAME", "Splice")
        .env("GIT_AUTHOR_EMAIL", "splice@localhost")
        .env("GIT_COMMITTER_NAME", "Splice")
        .env("GIT_COMMITTER_EMAIL", "splice@localhost")
        .args(["commit-tree", &tree, "-p", &head, "-m", message])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    text(made, "commit-tree")
}

impl Scratch {
    /// A worktree for subagent run `id` of the checkout `cwd` is in. Err: why a writing
    /// subagent cannot run (no git repository, no commit, git refused). Blocking.
    pub fn create(layout: &Layout, cwd: &Path, id: &str) -> Result<Scratch, String> {
        let top = git(cwd, Access::Read, &["rev-parse", "--show-toplevel"], None)
            .and_then(|out| text(out, "rev-parse --show-toplevel"))
            .map_err(|_| "the project is not in a git repository".to_string())?;
        let top = PathBuf::from(top);
        let common = crate::git::common_dir(&top)
            .ok_or_else(|| "the repository's git dir could not be found".to_string())?;
        std::fs::create_dir_all(layout.worktrees())
            .map_err(|e| format!("cannot create the worktrees dir: {e}"))?;
        let index = layout.worktrees().join(format!("{id}.index"));
        let base = snapshot(&top, &index);
        let _ = std::fs::remove_file(&index);
        let base = base?;
        let worktree = Worktree::create_at(layout, cwd, id, Some(&base))
            .map_err(|e| format!("its worktree could not be made ({e})"))?;
        // Named by Splice's record, never by the worktree's `.git` file.
        let admin = worktree.writable_git_paths().into_iter().next();
        Ok(Scratch {
            worktree,
            admin,
            top: top.canonicalize().unwrap_or(top),
            base,
            layout: layout.clone(),
            common,
        })
    }

    /// The working root inside the worktree (where the parent's root is in the checkout).
    pub fn root(&self) -> &Path {
        &self.worktree.root
    }

    /// The worktree's files now, as a tree object (files git ignores left out), read with an
    /// index of its own through the repository's common git dir and the worktree's path: no
    /// HEAD, branch, index or `.git` file of the worktree takes part, and no ref moves.
    fn work_tree(&self) -> Result<String, String> {
        let index = self
            .layout
            .worktrees()
            .join(format!("{}.work.index", self.worktree.run_id));
        let _ = std::fs::remove_file(&index);
        let tree = (|| {
            let git_dir = format!("--git-dir={}", self.common.display());
            let work = format!("--work-tree={}", self.worktree.path.display());
            let run = |access: Access, args: &[&str], what: &str| {
                let mut all = vec![git_dir.as_str(), work.as_str()];
                all.extend(args);
                git(&self.top, access, &all, Some(&index)).and_then(|out| text(out, what))
            };
            run(Access::Read, &["read-tree", &self.base], "read-tree")?;
            run(Access::Write, &["add", "-A"], "add -A")?;
            run(Access::Read, &["write-tree"], "write-tree")
        })();
        let _ = std::fs::remove_file(&index);
        tree.map_err(|e| format!("its work could not be read ({e})"))
    }

    /// What the subagent changed, as changes to the checkout at `root`. Err when it cannot be
    /// read, or when a file it changed was changed in the checkout since it started (applying
    /// it would undo that change). Blocking.
    pub fn changes(&self, root: &Path) -> Result<Vec<FileChange>, String> {
        let work = self.work_tree()?;
        let started = text(
            git(
                &self.top,
                Access::Read,
                &["rev-parse", &format!("{}^{{tree}}", self.base)],
                None,
            )?,
            "rev-parse",
        )?;
        if work == started {
            return Ok(Vec::new());
        }
        // Only regular files come back: a link would arrive as a file holding its target, a
        // submodule as a deletion. Refused whole, as a file moved under it is.
        let odd = not_files(&self.top, &self.base, &work)?;
        if !odd.is_empty() {
            return Err(format!(
                "it made {} a symbolic link or a git repository (submodule), which a subagent's \
                 changes may not bring into the checkout; its changes were not applied",
                odd.join(", ")
            ));
        }
        let changes = worktree::changes_between(&self.top, root, &self.base, &work)
            .map_err(|e| e.to_string())?;
        let prefix = text(
            git(root, Access::Read, &["rev-parse", "--show-prefix"], None)?,
            "rev-parse --show-prefix",
        )?;
        let mut moved = Vec::new();
        for change in &changes {
            let name = format!("{}:{prefix}{}", self.base, change.shown);
            let blob = git(&self.top, Access::Read, &["cat-file", "blob", &name], None)?;
            let started = blob.status.success().then_some(blob.stdout);
            if started != change.before {
                moved.push(change.shown.clone());
            }
        }
        if !moved.is_empty() {
            return Err(format!(
                "{} changed in the checkout while the subagent worked; its changes were not applied",
                moved.join(", ")
            ));
        }
        Ok(changes)
    }
}

/// The paths of the diff from `base` to `branch` in `top` that are, or were, not a regular
/// file (mode 120000, a symbolic link; 160000, a gitlink), from `git diff --raw -z`.
fn not_files(top: &Path, base: &str, branch: &str) -> Result<Vec<String>, String> {
    let mut args = vec!["diff", "--raw", "-z", "--no-renames"];
    args.extend(crate::git::DIFF_FLAGS);
    args.extend([base, branch]);
    let listed = git(top, Access::Read, &args, None)?;
    if !listed.status.success() {
        return Err(format!(
            "`git diff --raw` failed: {}",
            String::from_utf8_lossy(&listed.stderr).trim()
        ));
    }
    let mut odd = Vec::new();
    let mut fields = listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty());
    // `:old new oldsha newsha status` then the path, for each entry.
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let mut modes = meta.trim_start_matches(':').split(' ').take(2);
        if modes.any(|mode| mode == "120000" || mode == "160000") {
            odd.push(String::from_utf8_lossy(path).into_owned());
        }
    }
    Ok(odd)
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let (worktree, layout) = (&self.worktree, &self.layout);
        let _ = crate::blocking::atomic(|| {
            if worktree.remove(layout, true).is_err() {
                // Git may refuse a worktree whose `.git` file the subagent rewrote: the folder
                // is Splice's own (in the data dir), so it goes anyway, then git forgets it.
                let _ = std::fs::remove_dir_all(&worktree.path);
                worktree.remove(layout, true)
            } else {
                Ok(())
            }
        });
    }
}
