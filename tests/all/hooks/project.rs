//! A project's hooks (`.splice/settings.json`) come with the repository: not run until
//! approved, and said so; `--trust-project-hooks` runs them for one run.

use super::{exec, hook, hook_events, warnings};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, openai};

fn project_hook(sandbox: &Sandbox) -> String {
    let marker = sandbox.dir.path().join("ran.txt");
    let command = format!(
        "cat > /dev/null; echo ran >> {}; echo 'from the project'",
        marker.display()
    );
    let settings = serde_json::json!({ "hooks": hook("UserPromptSubmit", "", &command) });
    sandbox.write(".splice/settings.json", &settings.to_string());
    command
}

#[test]
fn an_unapproved_project_hook_is_not_run_and_is_reported() {
    let sandbox = Sandbox::new();
    let command = project_hook(&sandbox);
    let marker = sandbox.dir.path().join("ran.txt");
    let provider = FakeProvider::start(vec![openai::answer(&["one"]), openai::answer(&["two"])]);

    let out = exec(&sandbox, &provider, &["hello"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!marker.exists(), "an unapproved project hook ran");
    let warned = warnings(&out, "hooks_unapproved");
    assert_eq!(warned.len(), 1, "{}", out.stdout);
    assert!(warned[0].contains(&command), "{}", warned[0]);
    assert!(warned[0].contains("--trust-project-hooks"), "{}", warned[0]);
    assert!(!super::sent_text(&provider.requests()[0]).contains("from the project"));

    let out = exec(&sandbox, &provider, &["--trust-project-hooks", "hello"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "ran\n"
    );
    assert!(warnings(&out, "hooks_unapproved").is_empty());
    assert_eq!(hook_events(&out, "UserPromptSubmit").len(), 1);
    assert!(super::sent_text(&provider.requests()[1]).contains("from the project"));
}

/// A project file whose hooks are not in the expected shape stops the run before anything
/// runs: exit 2, and the message names the file and the key.
#[test]
fn an_invalid_project_settings_file_is_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".splice/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "[", "hooks": []}]}}"#,
    );
    let provider = FakeProvider::start(vec![]);
    let out = exec(&sandbox, &provider, &["hello"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let message = out.first("error")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(".splice/settings.json")
            && message.contains("hooks.PreToolUse[0].matcher"),
        "{message}"
    );
    assert!(provider.requests().is_empty());
}
