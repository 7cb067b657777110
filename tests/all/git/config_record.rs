//! The headless path's speed work keeps its guarantees: the repository's git config and hooks
//! are recorded while the first model request is under way instead of before it, and a tool
//! the model calls in its very first answer still waits for that record, so what the tool
//! plants is put back.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, outside_dir, run, stream_json};

/// A repository whose HOME is outside what a confined command may write.
fn repository() -> Sandbox {
    let sandbox = Sandbox::new_in(&outside_dir());
    support::git(&sandbox.root, &["init", "-q"]);
    sandbox
}

/// A `git` first on PATH that is slow to start, so a tool that did not wait for the record
/// would run before it: the record would then hold what the tool planted.
fn slow_git(sandbox: &Sandbox) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let real = std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|candidate| candidate.is_file())
        .expect("no git on PATH");
    let bin = sandbox.dir.path().join("slow-bin");
    std::fs::create_dir_all(&bin).expect("create bin");
    let script = bin.join("git");
    let text = format!("#!/bin/sh\nsleep 0.3\nexec '{}' \"$@\"\n", real.display());
    std::fs::write(&script, text).expect("write script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).expect("set the mode of script");
    format!("{}:{path}", bin.display())
}

#[test]
fn a_config_planted_by_the_first_tool_call_of_the_run_is_put_back() {
    let sandbox = repository();
    let config_before = sandbox.read(".git/config");
    let plant = "printf '[core]\\n\\tfsmonitor = /bin/false\\n' >> .git/config \
                 && mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit";
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": plant }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut splice = sandbox.command(&provider.url);
    splice.env("PATH", slow_git(&sandbox));
    stream_json(&mut splice)
        .args(["--permission-mode", "auto", "--tier", "light"])
        .arg("do it");
    let out = run(splice, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(out.first("tool_result")["status"], "ok", "{}", out.stdout);
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "git_config_restored")
        .unwrap_or_else(|| panic!("no git_config_restored warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("config") && message.contains("hooks/pre-commit"),
        "{message}"
    );
    assert_eq!(sandbox.read(".git/config"), config_before);
    assert!(!sandbox.root.join(".git/hooks/pre-commit").exists());
    let types = out.types();
    assert_eq!(&types[types.len() - 2..], ["final", "run_end"], "{types:?}");
}

/// An answer with no tool call can come back before the git dir is recorded: `final` still
/// comes after everything else, and the run does not end before the record is done.
#[test]
fn an_answer_before_the_record_is_done_still_ends_with_final_then_run_end() {
    let sandbox = repository();
    let provider = FakeProvider::start(vec![openai::answer(&["hello"])]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice)
        .args(["--tier", "light"])
        .arg("say hello");
    let out = run(splice, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(out.of_type("warning").len(), 0, "{}", out.stdout);
    let types = out.types();
    assert_eq!(&types[types.len() - 2..], ["final", "run_end"], "{types:?}");
    assert_eq!(out.final_result()["answer"], "hello", "{}", out.stdout);
}

/// A bare repository has no `.git`: the working root is the git dir itself. The record is still
/// taken there (Splice does not skip git for a directory without `.git`), so a config a
/// command changes in it is put back.
#[test]
fn a_bare_repository_as_the_working_root_still_gets_its_config_put_back() {
    let sandbox = Sandbox::new_in(&outside_dir());
    support::git(&sandbox.root, &["init", "-q", "--bare"]);
    let config_before = sandbox.read("config");
    let provider =
        FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": "printf '[core]\\n\\tfsmonitor = /bin/false\\n' >> config" })
                .to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice)
        .args(["--permission-mode", "auto", "--tier", "light"])
        .arg("do it");
    let out = run(splice, None);
    out.assert_well_formed();
    assert_eq!(out.first("tool_result")["status"], "ok", "{}", out.stdout);
    assert!(
        out.of_type("warning")
            .iter()
            .any(|w| w["code"] == "git_config_restored"),
        "{}",
        out.stdout
    );
    assert_eq!(sandbox.read("config"), config_before);
}
