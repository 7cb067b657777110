//! `splice exec "/name …"` and the same text in stream-json input.

use crate::support;

use support::fake_provider::{FakeProvider, openai};
use support::{Outcome, Sandbox, exec_json, run};

use super::{approve, sent_text};

fn user_commands(sandbox: &Sandbox, path: &str, text: &str) {
    let full = sandbox.dir.path().join("commands").join(path);
    std::fs::create_dir_all(full.parent().expect("a parent")).expect("user commands folder");
    std::fs::write(full, text).expect("user command file");
}

fn usage_error(out: &Outcome, expected: &str) {
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.types(), ["run_start", "error", "run_end"]);
    let error = out.first("error");
    assert_eq!(error["code"], "usage_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(expected),
        "expected {expected:?} in {message:?}"
    );
}

#[test]
fn a_command_with_arguments_a_file_and_a_command_reaches_the_model() {
    let provider = FakeProvider::start(vec![openai::answer(&["Reviewed."])]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "NOTE-CONTENT\n");
    sandbox.write(
        ".splice/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: PATH FOCUS\nallowed-tools: Bash(echo:*)\n\
         model: gpt-4.1-mini\n\
         unknown-key: ignored\n---\nReview $1 for $2 (all: $ARGUMENTS).\nNotes: @notes.txt\n\
         Marker: !`echo marker-static`\n",
    );
    // The user's command of the same name is shadowed by the project's, which says so.
    user_commands(&sandbox, "review.md", "USER-REVIEW");
    // A project file that runs a command: approved first, as a person would in the TUI.
    approve(&sandbox, "review");
    let out = exec_json(&sandbox, &provider, &["/review src/a.rs \"the parser\""]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let text = sent_text(&provider.requests()[0]);
    assert!(
        text.contains("Review src/a.rs for the parser (all: src/a.rs \"the parser\")."),
        "{text}"
    );
    assert!(text.contains("NOTE-CONTENT"), "{text}");
    assert!(text.contains("Marker: marker-static"), "{text}");
    let shadowed = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "command_shadowed")
        .unwrap_or_else(|| panic!("no command_shadowed warning: {}", out.stdout));
    assert!(
        shadowed["message"]
            .as_str()
            .unwrap_or_default()
            .contains("review.md"),
        "{shadowed}"
    );
    assert!(
        !text.contains("USER-REVIEW") && !text.contains("!`"),
        "{text}"
    );
    // The command ran as the run's own `run_command` call, allowed by the file's rule.
    // The file's model: for the request and its usage (`run_start` was written before the
    // request was read).
    assert_eq!(provider.requests()[0].body["model"], "gpt-4.1-mini");
    assert_eq!(out.first("usage")["model"], "gpt-4.1-mini");
    let call = out.first("tool_call");
    assert_eq!(call["name"], "run_command");
    assert_eq!(out.first("tool_result")["status"], "ok");
}

#[test]
fn claude_code_commands_namespaces_user_commands_and_stream_json_input() {
    let provider = FakeProvider::start(vec![openai::answer(&["one"]), openai::answer(&["two"])]);
    let sandbox = Sandbox::new();
    sandbox.write(
        ".claude/commands/git/commit.md",
        "---\ndescription: Commit\n---\nCommit with the message: $ARGUMENTS",
    );
    user_commands(&sandbox, "hello.md", "Say hello to $1.");
    let out = exec_json(&sandbox, &provider, &["/git:commit fix the bug"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let text = sent_text(&provider.requests()[0]);
    assert!(
        text.contains("Commit with the message: fix the bug"),
        "{text}"
    );

    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ]);
    let input = r#"{"schemaVersion":2,"type":"prompt","content":"/hello world"}"#;
    let out = run(command, Some(input));
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let text = sent_text(&provider.requests()[1]);
    assert!(text.contains("Say hello to world."), "{text}");
}

#[test]
fn an_unknown_command_is_a_usage_error_and_sends_nothing() {
    let provider = FakeProvider::start(vec![openai::answer(&["It is broken."])]);
    let sandbox = Sandbox::new();
    sandbox.write(".splice/commands/review.md", "Review");
    let out = exec_json(&sandbox, &provider, &["/nope now"]);
    usage_error(&out, "unknown command /nope");
    // A command of the TUI does nothing headless: said so, not sent.
    let out = exec_json(&sandbox, &provider, &["/model gpt-5"]);
    usage_error(&out, "/model is a command of the interactive TUI");
    assert!(
        provider.requests().is_empty(),
        "a command reached the model"
    );
    // A first word with a second `/` is a path: the text goes to the model as written.
    let out = exec_json(&sandbox, &provider, &["/usr/bin/foo is broken"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(sent_text(&provider.requests()[0]).contains("/usr/bin/foo is broken"));
}

#[test]
fn a_file_or_command_file_leading_out_of_the_root_is_refused() {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let outside = sandbox.dir.path().join("secret.txt");
    std::fs::write(&outside, "SECRET").expect("outside file");
    sandbox.write(".splice/commands/peek.md", "Look: @../secret.txt");
    let out = exec_json(&sandbox, &provider, &["/peek"]);
    usage_error(&out, "@../secret.txt");
    // A link out of the project in the commands folder is not read either.
    sandbox.write(".splice/commands/placeholder.md", "x");
    std::os::unix::fs::symlink(&outside, sandbox.root.join(".splice/commands/leak.md"))
        .expect("link");
    let out = exec_json(&sandbox, &provider, &["/leak"]);
    usage_error(&out, "leak.md: cannot be read");
    assert!(
        provider.requests().is_empty(),
        "a refused command reached the model"
    );
    assert!(!out.stdout.contains("SECRET"));
}

#[test]
fn a_command_the_policy_would_ask_about_is_denied_headless() {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    sandbox.write(".splice/commands/mark.md", "State: !`touch made.txt`");
    approve(&sandbox, "mark");
    let out = exec_json(&sandbox, &provider, &["/mark"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let error = out.first("error");
    assert_eq!(error["code"], "tool_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("/mark: the command `touch made.txt`") && message.contains("denied"),
        "{message}"
    );
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert!(!sandbox.root.join("made.txt").exists());
    assert!(provider.requests().is_empty(), "the turn was sent");
}

/// A custom command's `` !`…` `` that plants a git hook in the project: the hook is put back
/// (removed) before the request is sent, and a `git_config_restored` warning says so, as for a
/// run's own commands.
#[test]
fn a_hook_planted_by_a_commands_command_is_put_back() {
    let provider = FakeProvider::start(vec![openai::answer(&["Done."])]);
    let sandbox = Sandbox::new();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&sandbox.root)
        .status()
        .expect("git init");
    assert!(init.success());
    sandbox.write(
        ".splice/commands/plant.md",
        "Planted: !`echo planted > .git/hooks/pre-commit && echo ok`",
    );
    approve(&sandbox, "plant");
    let out = exec_json(
        &sandbox,
        &provider,
        &["--permission-mode", "auto", "/plant"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "git_config_restored")
        .unwrap_or_else(|| panic!("no git_config_restored warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("a command of the custom command") && message.contains("hooks/pre-commit"),
        "{message}"
    );
    assert!(!sandbox.root.join(".git/hooks/pre-commit").exists());
    assert_eq!(provider.requests().len(), 1, "the request was sent once");
}
