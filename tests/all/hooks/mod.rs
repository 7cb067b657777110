//! Hooks: real hook scripts (shell and Python 3) configured in the user's config file or a
//! project's `.splice/settings.json`, run by the real binary against the fake provider.

mod attacks;
mod claude_guards;
mod config;
mod lifecycle;
mod notification;
mod pinning;
mod pipeline;
mod process;
mod project;
mod prompt;
mod stop;
mod tools;
mod tui_approval;

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::fake_provider::{FakeProvider, Recorded};
use crate::support::{Outcome, Sandbox, run, stream_json};

/// Write an executable hook script outside the project; its path.
pub(crate) fn script(sandbox: &Sandbox, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = sandbox.dir.path().join("hook-scripts");
    std::fs::create_dir_all(&dir).expect("hook scripts folder");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the hook script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// One command hook of `event` with `matcher`, as Claude Code writes it.
pub(crate) fn hook(event: &str, matcher: &str, command: &str) -> Value {
    json!({ event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}] })
}

/// The user's config file holds these hooks (and `more` of its keys).
pub(crate) fn user_hooks(sandbox: &Sandbox, hooks: Value) {
    let config = json!({ "hooks": hooks });
    std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
        .expect("write config.json");
}

/// Merge hook objects of different events into one `hooks` value.
pub(crate) fn merged(parts: &[Value]) -> Value {
    let mut all = serde_json::Map::new();
    for part in parts {
        if let Value::Object(map) = part {
            for (event, groups) in map {
                let list = all.entry(event.clone()).or_insert_with(|| json!([]));
                if let (Value::Array(list), Value::Array(groups)) = (list, groups) {
                    list.extend(groups.iter().cloned());
                }
            }
        }
    }
    Value::Object(all)
}

/// `splice exec` in stream-json, light tier, with `args`; the stream must be well formed.
pub(crate) fn exec(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--tier", "light"])
        .args(args);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

/// The `hook` events of `event`.
pub(crate) fn hook_events<'a>(out: &'a Outcome, event: &str) -> Vec<&'a Value> {
    out.of_type("hook")
        .into_iter()
        .filter(|h| h["event"] == event)
        .collect()
}

/// The warnings with `code`, their messages.
pub(crate) fn warnings(out: &Outcome, code: &str) -> Vec<String> {
    out.of_type("warning")
        .into_iter()
        .filter(|w| w["code"] == code)
        .map(|w| w["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Every text the model was sent in `request`, joined.
pub(crate) fn sent_text(request: &Recorded) -> String {
    crate::slash_commands::sent_text(request)
}
