//! Attacks on what an approved project hook runs, however its command spells it: through a
//! `cd`, `$PWD`, `$CLAUDE_PROJECT_DIR`, a glob, a script that sources its siblings. The model
//! (`accept-edits`, no command rights) rewrites the script the hook really runs with
//! `write_file`; the rewrite must be refused, or the hook must not run. A marker outside the
//! root shows whether the model's code ran. Each failed before its fix: the approval covered
//! only the files the command's plain words named.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;

use super::{exec, hook, warnings};
use crate::support::fake_provider::{FakeProvider, openai};
use crate::support::{Outcome, Sandbox};

/// An executable file beneath the root.
fn executable(sandbox: &Sandbox, path: &str, text: &str) {
    sandbox.write(path, text);
    std::fs::set_permissions(
        sandbox.root.join(path),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
}

/// A hook script that records each run in `checked` (outside the root), sourcing `lib.sh`
/// beside it when `sources`.
fn honest(checked: &Path, sources: bool) -> String {
    let lib = if sources {
        ". \"$(dirname \"$0\")/lib.sh\"\n"
    } else {
        ""
    };
    format!(
        "#!/bin/sh\n{lib}cat > /dev/null\necho ok >> {}\n",
        checked.display()
    )
}

/// The project's PostToolUse hook on writes runs `command`; the model writes `notes.txt`,
/// rewrites `target` to touch `pwned`, and writes `notes.txt` again (the hook fires after each
/// write that succeeds), in `accept-edits` with the project's hooks trusted as the run found
/// them.
fn attack(sandbox: &Sandbox, command: &str, target: &str, pwned: &Path) -> Outcome {
    sandbox.write(
        ".splice/settings.json",
        &json!({ "hooks": hook("PostToolUse", "Write|Edit", command) }).to_string(),
    );
    let evil = format!("#!/bin/sh\ntouch {}\n", pwned.display());
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "notes.txt", "content": "one\n"}),
        ),
        openai::call_json(
            "call_2",
            "write_file",
            json!({"path": target, "content": evil}),
        ),
        openai::call_json(
            "call_3",
            "write_file",
            json!({"path": "notes.txt", "content": "two\n"}),
        ),
        openai::answer(&["Done."]),
    ]);
    let out = exec(
        sandbox,
        &provider,
        &[
            "--trust-project-hooks",
            "--permission-mode",
            "accept-edits",
            "write notes",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    out
}

/// The rewrite was refused, the model's code never ran, and the hook ran what was approved
/// after each write.
fn held(
    sandbox: &Sandbox,
    out: &Outcome,
    target: &str,
    before: &str,
    checked: &Path,
    pwned: &Path,
) {
    assert!(
        !pwned.exists(),
        "the model's script ran as a hook: {}",
        out.stdout
    );
    assert_eq!(sandbox.read(target).as_deref(), Some(before));
    let results = out.of_type("tool_result");
    assert_eq!(results[1]["status"], "error", "{}", results[1]);
    assert!(
        results[1]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("run by one of the project's approved hooks"),
        "{}",
        results[1]
    );
    assert_eq!(
        std::fs::read_to_string(checked).unwrap_or_default(),
        "ok\nok\n",
        "{}",
        out.stdout
    );
}

fn spelled(command: &str, script: &str, target: &str) {
    let sandbox = Sandbox::new();
    let checked = sandbox.dir.path().join("checked.txt");
    let pwned = sandbox.dir.path().join("pwned");
    let sources = target != script;
    executable(&sandbox, script, &honest(&checked, sources));
    if sources {
        sandbox.write(target, "true\n");
    }
    let before = sandbox.read(target).unwrap_or_default();
    let out = attack(&sandbox, command, target, &pwned);
    held(&sandbox, &out, target, &before, &checked, &pwned);
}

#[test]
fn a_hook_script_reached_through_cd_cannot_be_rewritten() {
    spelled(
        "cd .splice/hooks && sh ./check.sh",
        ".splice/hooks/check.sh",
        ".splice/hooks/check.sh",
    );
}

#[test]
fn a_hook_script_named_through_pwd_cannot_be_rewritten() {
    spelled(
        "sh $PWD/.splice/hooks/check.sh",
        ".splice/hooks/check.sh",
        ".splice/hooks/check.sh",
    );
}

/// The script is named exactly; what it sources beside it is what the model rewrites.
#[test]
fn what_a_hook_script_sources_beside_it_cannot_be_rewritten() {
    spelled(
        "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/x.sh",
        ".claude/hooks/x.sh",
        ".claude/hooks/lib.sh",
    );
}

#[test]
fn a_hook_script_named_by_a_glob_cannot_be_rewritten() {
    spelled(
        "sh .splice/hooks/chec*.sh",
        ".splice/hooks/check.sh",
        ".splice/hooks/check.sh",
    );
}

/// A hook that runs scripts known only when it runs (each file a glob finds, through a
/// variable) cannot be pinned: it never runs, and says why; the model's planted script does
/// not run either.
#[test]
fn a_hook_that_runs_a_file_known_only_when_it_runs_does_not_run() {
    let sandbox = Sandbox::new();
    let checked = sandbox.dir.path().join("checked.txt");
    let pwned = sandbox.dir.path().join("pwned");
    executable(&sandbox, ".splice/hooks/check.sh", &honest(&checked, false));
    let out = attack(
        &sandbox,
        "for f in .splice/hooks/*.sh; do sh \"$f\" < /dev/null; done",
        ".splice/hooks/zz.sh",
        &pwned,
    );
    assert!(
        !pwned.exists(),
        "the model's script ran as a hook: {}",
        out.stdout
    );
    assert!(!checked.exists(), "a hook that cannot be pinned ran");
    let warned = warnings(&out, "hooks_unapproved").join("\n");
    assert!(
        warned.contains("cannot be pinned") && warned.contains("$f"),
        "{warned}"
    );
}
