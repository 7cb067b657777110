//! A worktree run's repository of its own: made beside the worktree (`<runId>.git`), lending
//! the source repository's objects read-only (`objects/info/alternates`), so that what the run's
//! commands write (objects, refs, the index) lands there and never in the source's git dir. Its
//! branch enters the source repository only through [`publish`]: Splice's own git packs what the
//! branch added and the source's `git index-pack --strict` names every object by its content
//! again, so an object whose content is not what its name says, or one that is missing, stops the
//! import before any ref of the source moves.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use super::{WorktreeError, git, git_output};
use crate::git::{Access, GitError};

fn cannot_run(error: GitError) -> WorktreeError {
    match error {
        GitError::Io(message) => WorktreeError::Io(format!("cannot run git: {message}")),
        GitError::Unsafe(message) => WorktreeError::Unsafe(message),
    }
}

fn failed(args: &[&str], output: &Output) -> WorktreeError {
    WorktreeError::Git {
        command: args.join(" "),
        message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    }
}

/// Git in the run's own repository (`git_dir`, work tree `work_tree`), both named outright.
pub(super) fn own_output(
    git_dir: &Path,
    work_tree: &Path,
    access: Access,
    args: &[&str],
) -> Result<Output, WorktreeError> {
    crate::git::command_for(git_dir, work_tree, access)
        .map_err(cannot_run)?
        .args(args)
        .output()
        .map_err(|e| WorktreeError::Io(format!("cannot run git: {e}")))
}

/// As [`own_output`], its trimmed stdout; a failure is an error.
pub(super) fn own(
    git_dir: &Path,
    work_tree: &Path,
    access: Access,
    args: &[&str],
) -> Result<String, WorktreeError> {
    let output = own_output(git_dir, work_tree, access, args)?;
    if !output.status.success() {
        return Err(failed(args, &output));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Make the run's repository: git dir `git_dir`, work tree `work_tree` (its `.git` a file naming
/// the git dir), the source's objects (`common`'s) lent read-only, the identity git has in the
/// source checkout `source`, `branch` made at `base` and checked out.
pub(super) fn init(
    source: &Path,
    (git_dir, work_tree): (&Path, &Path),
    common: &Path,
    branch: &str,
    base: &str,
) -> Result<(), WorktreeError> {
    let parent = work_tree.parent().unwrap_or(Path::new("/"));
    let (git_dir_arg, work_tree_arg) = (
        git_dir.display().to_string(),
        work_tree.display().to_string(),
    );
    // The same object format, or the lent objects would not be readable.
    let format = git(source, &["rev-parse", "--show-object-format"])?;
    let format = format!("--object-format={format}");
    git(
        parent,
        &[
            "init",
            "-q",
            &format,
            "--initial-branch",
            branch,
            "--separate-git-dir",
            &git_dir_arg,
            &work_tree_arg,
        ],
    )?;
    // A commit the run's commands make there is the person's, as in a checkout of the source.
    for key in ["user.name", "user.email"] {
        if let Ok(value) = git(source, &["config", key])
            && !value.is_empty()
        {
            own(git_dir, work_tree, Access::Read, &["config", key, &value])?;
        }
    }
    let lent = common.join("objects");
    let mut alternates = lent.into_os_string().into_encoded_bytes();
    alternates.push(b'\n');
    std::fs::write(git_dir.join("objects/info/alternates"), alternates)
        .map_err(|e| WorktreeError::Io(format!("cannot lend the source's objects: {e}")))?;
    let reference = format!("refs/heads/{branch}");
    own(
        git_dir,
        work_tree,
        Access::Read,
        &["update-ref", &reference, base],
    )?;
    own(
        git_dir,
        work_tree,
        Access::Write,
        &["reset", "-q", "--hard"],
    )?;
    Ok(())
}

/// The commit `branch` names in the run's repository.
pub(super) fn tip(git_dir: &Path, work_tree: &Path, branch: &str) -> Result<String, WorktreeError> {
    let wanted = format!("refs/heads/{branch}^{{commit}}");
    let tip = own(
        git_dir,
        work_tree,
        Access::Read,
        &["rev-parse", "--verify", "--quiet", &wanted],
    )?;
    if tip.is_empty() || !tip.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(WorktreeError::Unsafe(format!(
            "the run's branch {branch} names no commit"
        )));
    }
    Ok(tip)
}

/// Bring the run's branch into the source repository (`source`, its checkout): the objects
/// `tip` has that `base` has not, verified, then the source's `refs/heads/<branch>` set to it.
pub(super) fn publish(
    source: &Path,
    git_dir: &Path,
    branch: &str,
    base: &str,
    tip: &str,
) -> Result<(), WorktreeError> {
    let commit = format!("{tip}^{{commit}}");
    let present = git_output(source, Access::Read, &["cat-file", "-e", &commit])?;
    if !present.status.success() {
        transfer(source, &git_dir.join("objects"), tip, base)?;
    }
    // Everything the branch reaches must now be in the source's own store: a tree naming an
    // object that never came (or came under another name) is refused here.
    let not_base = format!("^{base}");
    let reached = git_output(
        source,
        Access::Read,
        &["rev-list", "--objects", "--quiet", tip, &not_base],
    )?;
    if !reached.status.success() {
        return Err(unverified(&String::from_utf8_lossy(&reached.stderr)));
    }
    let reference = format!("refs/heads/{branch}");
    git(source, &["update-ref", &reference, tip])?;
    Ok(())
}

fn unverified(why: &str) -> WorktreeError {
    WorktreeError::Unsafe(format!(
        "the run's objects did not pass verification ({}), so nothing of its branch entered the \
         repository",
        why.trim()
    ))
}

/// `git pack-objects` in the source, reading the run's store as lent objects (the source's own
/// come first, so none of its objects can be shadowed), piped into the source's `git index-pack
/// --stdin --strict`, which hashes every object it is given and checks what each one links to.
fn transfer(source: &Path, objects: &Path, tip: &str, base: &str) -> Result<(), WorktreeError> {
    let io = |e: std::io::Error| WorktreeError::Io(format!("cannot run git: {e}"));
    let mut pack = crate::git::command(source, Access::Read)
        .map_err(cannot_run)?
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects)
        .args(["pack-objects", "--revs", "--stdout", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(io)?;
    let revisions = format!("{tip}\n^{base}\n");
    let written = pack
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(revisions.as_bytes()));
    let Some(stdout) = pack.stdout.take() else {
        let _ = pack.kill();
        let _ = pack.wait();
        return Err(WorktreeError::Io("cannot read the run's objects".into()));
    };
    let index = crate::git::command(source, Access::Read)
        .map_err(cannot_run)
        .and_then(|mut command| {
            command
                .args(["index-pack", "--stdin", "--strict"])
                .stdin(Stdio::from(stdout))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(io)
        });
    let packed = pack.wait().map_err(io)?;
    let index = index?;
    if !index.status.success() {
        return Err(unverified(&String::from_utf8_lossy(&index.stderr)));
    }
    if !packed.success() || !matches!(written, Some(Ok(()))) {
        return Err(unverified("the run's objects could not be packed"));
    }
    Ok(())
}
