//! `Notification` hooks in the real TUI (tmux): a permission prompt is a notification; a hook
//! that blocked shows in the transcript.

use serde_json::json;

use super::{hook, merged, script, user_hooks};
use crate::support::fake_provider::{FakeProvider, openai};
use crate::support::tmux::{Tmux, quote, splice_shell};
use crate::support::{Sandbox, outside_dir};

#[test]
fn a_permission_prompt_notifies_and_a_blocking_hook_shows_in_the_transcript() {
    let sandbox = Sandbox::new_in(&outside_dir());
    let log = sandbox.dir.path().join("notified.log");
    let notify = script(
        &sandbox,
        "notify.sh",
        &format!("#!/bin/sh\ncat >> {}\n", log.display()),
    );
    let block = script(
        &sandbox,
        "block.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'no deploys from here' >&2\nexit 2\n",
    );
    user_hooks(
        &sandbox,
        merged(&[
            hook(
                "Notification",
                "permission_prompt",
                &notify.display().to_string(),
            ),
            hook("PreToolUse", "^run_command$", &block.display().to_string()),
        ]),
    );
    // The write is asked about (a notification); the command is blocked by its hook.
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "a.txt", "content": "x"}),
        ),
        openai::call_json("call_2", "run_command", json!({"command": "deploy"})),
        openai::answer(&["Done."]),
    ]);
    let args = format!(
        "--tier light --permission-mode ask {}",
        quote("write and deploy")
    );
    let shell = splice_shell(&sandbox, &provider.url, sandbox.dir.path(), &args);
    let tmux = Tmux::new("hooks-notify");
    tmux.start("splice", (110, 32), &shell);
    tmux.wait_for("splice", "Permission needed");
    let notified = tmux.wait_until("splice", "the Notification hook ran", |_| {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("permission_prompt"))
    });
    assert!(notified.contains("Permission needed"), "{notified}");
    let input: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default(),
    )
    .expect("the notification's input");
    assert_eq!(input["hook_event_name"], "Notification");
    assert!(
        input["message"]
            .as_str()
            .unwrap_or_default()
            .contains("write_file"),
        "{input}"
    );
    tmux.wait_for("splice", "y allow once");
    tmux.keys("splice", &["n"]);
    let shown = tmux.wait_for("splice", "no deploys from here");
    assert!(shown.contains("PreToolUse hook"), "{shown}");
    tmux.wait_for("splice", "✓ done");
}
