//! Attacks on the source repository's object store from a `--worktree` run and from a
//! design-plan task side by side. Git does not hash an object again when it reads it, so a
//! command that replaces the loose object behind `main:calc.py` changes what the person's next
//! checkout writes while no ref moves and `git status` stays clean. A worktree's commands write
//! objects only to a store of their own; what they made enters the source's store only through
//! Splice's own git, every object hashed again.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::json;
use support::one_call::{one_call, result_of};
use support::{Sandbox, git};

const ORIGINAL: &str = "X = 1\n";
const EVIL: &str = "X = 666\n";

/// A committed project outside everything a confined command may write (`/tmp` is writable).
fn project() -> Sandbox {
    let sandbox = Sandbox::new_in(&support::outside_dir());
    sandbox.write("calc.py", ORIGINAL);
    support::commit_all(&sandbox.root);
    sandbox
}

/// The loose object file of `main:calc.py` in the source's store, and a loose object file
/// holding `EVIL` (made in a repository of the test's own), to copy over it.
struct Target {
    blob: String,
    object: PathBuf,
    forged: PathBuf,
    before: Vec<u8>,
}

impl Target {
    fn new(sandbox: &Sandbox) -> Target {
        let blob = git(&sandbox.root, &["rev-parse", "main:calc.py"])
            .trim()
            .to_string();
        let object = loose(&sandbox.root.join(".git/objects"), &blob);
        let before = std::fs::read(&object).expect("read the loose object");
        let scratch = sandbox.dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).expect("create scratch");
        git(&scratch, &["init", "-q"]);
        std::fs::write(scratch.join("evil"), EVIL).expect("write evil");
        let evil = git(&scratch, &["hash-object", "-w", "evil"])
            .trim()
            .to_string();
        let forged = sandbox.dir.path().join("forged-object");
        std::fs::copy(loose(&scratch.join(".git/objects"), &evil), &forged)
            .expect("copy the forged object");
        Target {
            blob,
            object,
            forged,
            before,
        }
    }

    /// What a hostile command tries on the object: write it in place, replace it by a rename,
    /// remove it; `REWROTE` for each that worked.
    fn command(&self) -> String {
        format!(
            "t='{t}'; f='{f}'; chmod u+w \"$t\" \"$(dirname \"$t\")\"; \
             cat \"$f\" > \"$t\" && echo REWROTE; cp \"$f\" \"$t\" && echo REWROTE; \
             cp \"$f\" \"$t.new\" && mv -f \"$t.new\" \"$t\" && echo REWROTE; \
             unlink \"$t\" && echo REWROTE; echo tried",
            t = self.object.display(),
            f = self.forged.display()
        )
    }

    /// The object and what the person's branch holds are as they were.
    fn assert_untouched(&self, sandbox: &Sandbox, output: &str) {
        assert!(output.contains("tried"), "{output}");
        assert!(!output.contains("REWROTE"), "{output}");
        assert!(output.contains("Permission denied"), "{output}");
        assert_eq!(
            std::fs::read(&self.object).ok().as_deref(),
            Some(&self.before[..])
        );
        assert_eq!(
            git(&sandbox.root, &["cat-file", "-p", &self.blob]),
            ORIGINAL
        );
        assert_eq!(git(&sandbox.root, &["status", "--porcelain"]), "");
    }
}

fn loose(objects: &Path, id: &str) -> PathBuf {
    objects.join(&id[..2]).join(&id[2..])
}

#[test]
fn a_worktree_runs_command_cannot_rewrite_an_object_of_the_persons_branch() {
    let sandbox = project();
    let target = Target::new(&sandbox);
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": target.command() }),
        &["--permission-mode", "auto", "--worktree"],
    );
    let (_, output) = result_of(&out);
    eprintln!("OUTPUT: {output}");
    target.assert_untouched(&sandbox, &output);
}

#[test]
fn a_task_side_by_side_cannot_rewrite_an_object_of_the_persons_branch() {
    let sandbox = project();
    let target = Target::new(&sandbox);
    let output = super::task_side_by_side_runs(&sandbox, &target.command());
    // The tasks' work came into the checkout as changes not committed; the objects did not.
    assert!(output.contains("tried"), "{output}");
    assert!(!output.contains("REWROTE"), "{output}");
    assert_eq!(
        std::fs::read(&target.object).ok().as_deref(),
        Some(&target.before[..])
    );
    assert_eq!(
        git(&sandbox.root, &["cat-file", "-p", &target.blob]),
        ORIGINAL
    );
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(ORIGINAL));
}

/// The run's command commits a change, then copies another object's file over the loose
/// object of its own commit's blob in its store (the object's name no longer says what it
/// holds). The merge back must not bring that object into the person's repository.
#[test]
fn an_object_forged_in_the_runs_own_store_never_reaches_the_repository() {
    let sandbox = project();
    let command = "printf 'X = 2\\n' > calc.py && git commit -qam work && \
         b=$(git rev-parse HEAD:calc.py) && o=$(git rev-parse --path-format=absolute --git-path objects) && \
         e=$(printf 'X = 666\\n' | git hash-object -w --stdin) && \
         t=\"$o/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-)\" && \
         chmod u+w \"$t\" && cp \"$o/$(echo $e | cut -c1-2)/$(echo $e | cut -c3-)\" \"$t\" && \
         git cat-file -p $b && echo FORGED $b";
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": command }),
        &[
            "--tier",
            "light",
            "--permission-mode",
            "auto",
            "--worktree",
            "--merge-back",
        ],
    );
    let (_, output) = result_of(&out);
    let blob = output
        .lines()
        .find_map(|l| l.strip_prefix("FORGED "))
        .unwrap_or_else(|| panic!("the command did not forge its object: {output}"))
        .trim()
        .to_string();
    assert!(output.contains(EVIL.trim()), "{output}");
    // Nothing was merged, and the object never reached the person's store by that name.
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(ORIGINAL));
    let stored = std::process::Command::new("git")
        .arg("-C")
        .arg(&sandbox.root)
        .args(["cat-file", "-p", &blob])
        .output()
        .expect("run git");
    assert!(
        !stored.status.success() || String::from_utf8_lossy(&stored.stdout) != EVIL,
        "the forged object is in the repository"
    );
    let error = out.first("error");
    assert_eq!(error["code"], "merge_back_failed", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("verification"),
        "{error}"
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(git(&sandbox.root, &["branch", "--list", "splice/*"]), "");
}
