//! Attacks on the git dirs under the common dir other than its own: a submodule's
//! (`.git/modules/<name>/`) and a linked worktree's private one (`.git/worktrees/<name>/`). A
//! confined command may write them (`.git` is inside the root); what it plants there that makes
//! git run programs must not outlive the run, so the person's next git command there fires
//! nothing.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::json;
use support::one_call::{one_call, result_of};
use support::{Outcome, Sandbox, git};

/// A script outside the root and outside what a confined command may write, leaving `ran`
/// next to itself when run; only an unconfined process can leave that marker.
struct Marker {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Marker {
    fn new() -> Marker {
        let dir = tempfile::Builder::new()
            .prefix("attack-gitdirs")
            .tempdir_in(support::outside_dir())
            .expect("create a directory outside the root");
        let path = dir.path().canonicalize().expect("canonicalize dir");
        let text = format!("#!/bin/sh\ntouch '{}/ran'\nexit 0\n", path.display());
        std::fs::write(path.join("hook.sh"), text).expect("write hook.sh");
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(path.join("hook.sh"), mode).expect("set the mode of hook.sh");
        Marker { _dir: dir, path }
    }

    fn script(&self) -> String {
        self.path.join("hook.sh").display().to_string()
    }

    fn ran(&self) -> bool {
        self.path.join("ran").exists()
    }
}

/// A repository outside the root, to add as a submodule.
fn library(sandbox: &Sandbox) -> PathBuf {
    let lib = sandbox.root.parent().expect("sandbox base").join("lib");
    std::fs::create_dir_all(&lib).expect("create lib");
    std::fs::write(lib.join("lib.py"), "X = 1\n").expect("write lib.py");
    support::commit_all(&lib);
    lib
}

/// A committed project with the repository `lib` (outside the root) as its submodule `sub`.
fn with_submodule() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "X = 1\n");
    support::commit_all(&sandbox.root);
    let lib = library(&sandbox).display().to_string();
    let add = ["submodule", "--quiet", "add", &lib, "sub"];
    git(
        &sandbox.root,
        &[&["-c", "protocol.file.allow=always"][..], &add].concat(),
    );
    git(&sandbox.root, &["commit", "-q", "-m", "submodule"]);
    sandbox
}

fn confined_run(sandbox: &Sandbox, command: &str) -> Outcome {
    let out = one_call(
        sandbox,
        "run_command",
        json!({ "command": command }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}\n{}", out.stderr);
    out
}

fn restored_message(out: &Outcome) -> String {
    out.of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "git_config_restored")
        .and_then(|w| w["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no git_config_restored warning: {}", out.stdout))
}

fn git_dir(root: &Path) -> PathBuf {
    PathBuf::from(
        git(
            root,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .trim(),
    )
}

#[test]
fn hooks_and_config_planted_in_a_submodules_git_dir_do_not_outlive_the_run() {
    let marker = Marker::new();
    let sandbox = with_submodule();
    let modules = git_dir(&sandbox.root).join("modules/sub");
    let config_before = std::fs::read(modules.join("config")).expect("read config");

    // As a hostile model would: a hook and an fsmonitor in the submodule's own git dir.
    let command = format!(
        "g=$(git -C sub rev-parse --path-format=absolute --git-dir) && \
         cp {hook} \"$g/hooks/post-checkout\" && cp {hook} \"$g/hooks/pre-commit\" && \
         git -C sub config core.fsmonitor {hook}",
        hook = marker.script()
    );
    let out = confined_run(&sandbox, &command);
    assert!(!marker.ran(), "a hook ran during the run");
    let message = restored_message(&out);
    assert!(
        message.contains("modules/sub/hooks/post-checkout")
            && message.contains("modules/sub/config"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(modules.join("config")).ok(),
        Some(config_before)
    );
    assert!(!modules.join("hooks/post-checkout").exists());

    // The person's next git commands in the submodule fire nothing.
    let sub = sandbox.root.join("sub");
    git(&sub, &["status"]);
    git(&sub, &["checkout", "-q", "-b", "other"]);
    std::fs::write(sub.join("lib.py"), "X = 2\n").expect("write lib.py");
    let identity = ["-c", "user.name=T", "-c", "user.email=t@example.com"];
    git(
        &sub,
        &[&identity[..], &["commit", "-q", "-am", "change"]].concat(),
    );
    assert!(!marker.ran(), "a planted hook ran when the person used git");
}

#[test]
fn a_linked_worktrees_config_and_commondir_are_put_back() {
    let marker = Marker::new();
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "X = 1\n");
    support::commit_all(&sandbox.root);
    // The person's own linked worktree, outside the root, with per-worktree config on.
    let linked = sandbox.root.parent().expect("sandbox base").join("linked");
    let linked_arg = linked.display().to_string();
    git(
        &sandbox.root,
        &["worktree", "add", "-q", "-b", "side", &linked_arg],
    );
    git(
        &sandbox.root,
        &["config", "extensions.worktreeConfig", "true"],
    );
    let private = git_dir(&sandbox.root).join("worktrees/linked");
    let commondir_before = std::fs::read(private.join("commondir")).expect("read commondir");

    // An fsmonitor in its config.worktree, and its commondir sent to a git dir the run made,
    // whose hooks would then run for the person's commands in their worktree.
    let command = format!(
        "p=$(git rev-parse --path-format=absolute --git-common-dir)/worktrees/linked && \
         printf '[core]\\n\\tfsmonitor = {hook}\\n' > \"$p/config.worktree\" && \
         cp -r \"$(git rev-parse --path-format=absolute --git-common-dir)\" planted.git && \
         cp {hook} planted.git/hooks/post-checkout && cp {hook} planted.git/hooks/pre-commit && \
         printf '%s\\n' \"$PWD/planted.git\" > \"$p/commondir\"",
        hook = marker.script()
    );
    let out = confined_run(&sandbox, &command);
    assert!(!marker.ran(), "a hook ran during the run");
    let message = restored_message(&out);
    assert!(
        message.contains("worktrees/linked/config.worktree")
            && message.contains("worktrees/linked/commondir"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(private.join("commondir")).ok(),
        Some(commondir_before)
    );
    assert!(!private.join("config.worktree").exists());

    git(&linked, &["status"]);
    git(&linked, &["checkout", "-q", "-b", "other"]);
    std::fs::write(linked.join("calc.py"), "X = 2\n").expect("write calc.py");
    git(&linked, &["commit", "-q", "-am", "change"]);
    assert!(!marker.ran(), "a planted hook ran when the person used git");
}

#[test]
fn a_link_planted_as_the_modules_dir_is_removed_not_followed() {
    let marker = Marker::new();
    let sandbox = with_submodule();
    let common = git_dir(&sandbox.root);

    // `modules` swapped for a link to a copy with a hook planted: git would follow it.
    let command = format!(
        "g=$(git rev-parse --path-format=absolute --git-common-dir) && \
         cp -r \"$g/modules\" planted && cp {hook} planted/sub/hooks/post-checkout && \
         mv \"$g/modules\" moved && ln -s \"$PWD/planted\" \"$g/modules\"",
        hook = marker.script()
    );
    let out = confined_run(&sandbox, &command);
    let message = restored_message(&out);
    assert!(message.contains("modules"), "{message}");
    assert!(!common.join("modules").is_symlink());
    // What the link pointed at is left alone: it is the root's, not the git dir's.
    assert!(
        sandbox
            .root
            .join("planted/sub/hooks/post-checkout")
            .exists()
    );
    // The submodule's git dir went with the moved directory: git there now fails, and runs
    // nothing planted.
    let _ = std::process::Command::new("git")
        .arg("-C")
        .arg(sandbox.root.join("sub"))
        .args(["checkout", "-q", "-b", "other"])
        .output();
    assert!(!marker.ran(), "a planted hook ran when the person used git");
}

/// What a hostile command in a worktree tries on the person's repository (its git dir
/// `common`) besides its own commit: move their branch, add a tag, rewrite their config, plant
/// a hook; `COMMITTED` once its own commit (in its own repository) went through.
fn beyond_its_branch(common: &Path) -> String {
    format!(
        "echo changed > calc.py && git commit -qam inside && echo COMMITTED; g='{}'; \
         git rev-parse HEAD > \"$g/refs/heads/main\"; git --git-dir=\"$g\" tag evil main; \
         git --git-dir=\"$g\" config core.fsmonitor /bin/false; \
         echo '#!/bin/sh' > \"$g/hooks/pre-commit\"; echo > \"$g/packed-refs\"; echo done",
        common.display()
    )
}

fn assert_repository_untouched(sandbox: &Sandbox, main_before: &str, config_before: &[u8]) {
    let common = git_dir(&sandbox.root);
    assert_eq!(
        git(&sandbox.root, &["rev-parse", "main"]).trim(),
        main_before
    );
    assert_eq!(
        std::fs::read(common.join("config")).ok().as_deref(),
        Some(config_before)
    );
    assert!(!common.join("hooks/pre-commit").exists());
    assert!(!common.join("packed-refs").exists());
    assert!(!common.join("refs/tags/evil").exists());
}

#[test]
fn a_worktree_runs_commands_commit_on_its_branch_and_move_no_other() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "X = 1\n");
    support::commit_all(&sandbox.root);
    let main_before = git(&sandbox.root, &["rev-parse", "main"])
        .trim()
        .to_string();
    let config_before = std::fs::read(git_dir(&sandbox.root).join("config")).expect("config");
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": beyond_its_branch(&git_dir(&sandbox.root)) }),
        &["--permission-mode", "auto", "--worktree"],
    );
    let (_, output) = result_of(&out);
    assert!(output.contains("COMMITTED"), "{output}\n{}", out.stderr);
    // Each of the five writes into the person's git dir failed (the kernel's refusal reads
    // "Read-only file system" where HOME, around the repository, is kept read-only).
    let refused = output
        .lines()
        .filter(|l| l.contains("Permission denied") || l.contains("Read-only file system"))
        .count();
    assert_eq!(refused, 5, "{output}");
    assert_repository_untouched(&sandbox, &main_before, &config_before);
    // Its own commit is on its own branch, brought in when the run ended.
    let branch = format!(
        "splice/{}",
        out.lines[0]["runId"].as_str().unwrap_or_default()
    );
    let log = git(&sandbox.root, &["log", "--format=%s", &branch]);
    assert!(log.lines().any(|l| l == "inside"), "{log}");
}

#[test]
fn a_task_side_by_side_cannot_move_the_persons_branch() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "X = 1\n");
    support::commit_all(&sandbox.root);
    let main_before = git(&sandbox.root, &["rev-parse", "main"])
        .trim()
        .to_string();
    let config_before = std::fs::read(git_dir(&sandbox.root).join("config")).expect("config");
    let command = beyond_its_branch(&git_dir(&sandbox.root));
    let output = super::task_side_by_side_runs(&sandbox, &command);
    assert!(output.contains("COMMITTED"), "{output}");
    assert_repository_untouched(&sandbox, &main_before, &config_before);
}

#[test]
fn a_config_file_the_persons_config_includes_from_the_git_dir_is_put_back() {
    let marker = Marker::new();
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "X = 1\n");
    support::commit_all(&sandbox.root);
    let common = git_dir(&sandbox.root);
    std::fs::write(common.join("extra.cfg"), "[color]\n\tui = auto\n").expect("write extra.cfg");
    git(&sandbox.root, &["config", "include.path", "extra.cfg"]);

    let command = format!(
        "g=$(git rev-parse --path-format=absolute --git-common-dir) && \
         printf '[core]\\n\\tfsmonitor = {}\\n' > \"$g/extra.cfg\"",
        marker.script()
    );
    let out = confined_run(&sandbox, &command);
    let message = restored_message(&out);
    assert!(message.contains("extra.cfg"), "{message}");
    assert_eq!(
        std::fs::read_to_string(common.join("extra.cfg"))
            .ok()
            .as_deref(),
        Some("[color]\n\tui = auto\n")
    );
    std::fs::write(sandbox.root.join("calc.py"), "X = 2\n").expect("write calc.py");
    git(&sandbox.root, &["status"]);
    assert!(
        !marker.ran(),
        "a planted fsmonitor ran when the person used git"
    );
}

#[test]
fn git_dirs_past_the_bounds_refuse_the_tools_rather_than_go_unrecorded() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "X = 1\n");
    support::commit_all(&sandbox.root);
    let mut deep = git_dir(&sandbox.root).join("modules");
    for _ in 0..60 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).expect("create deep directories");
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": "touch made.txt" }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "error", "{output}\n{}", out.stderr);
    assert!(output.contains("could not record"), "{output}");
    assert!(!sandbox.root.join("made.txt").exists());

    // A worktree run goes on: its commands write only its own repository, never this git dir.
    let main_before = git(&sandbox.root, &["rev-parse", "main"]);
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": "echo changed > calc.py && git commit -qam inside && echo COMMITTED" }),
        &["--permission-mode", "auto", "--worktree"],
    );
    let (_, output) = result_of(&out);
    assert!(output.contains("COMMITTED"), "{output}");
    assert!(out.stdout.contains("could not record"), "{}", out.stdout);
    assert_eq!(git(&sandbox.root, &["rev-parse", "main"]), main_before);
}
