//! The user's `hooks` section is checked when the config file is read: a wrong shape, an
//! unknown event or a bad regular expression is a usage error (exit 2), never a hook silently
//! left out.

use serde_json::json;

use super::{exec, user_hooks};
use crate::support::Sandbox;
use crate::support::fake_provider::FakeProvider;

fn refused(hooks: serde_json::Value, expected: &str) {
    let sandbox = Sandbox::new();
    user_hooks(&sandbox, hooks);
    let provider = FakeProvider::start(vec![]);
    let out = exec(&sandbox, &provider, &["hello"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let error = out.first("error");
    assert_eq!(error["code"], "usage_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("invalid config file"), "{message}");
    assert!(
        message.contains(expected),
        "expected {expected:?} in {message:?}"
    );
    assert!(provider.requests().is_empty());
}

#[test]
fn invalid_hooks_config_is_a_usage_error() {
    refused(
        json!({"PreToolUse": [{"matcher": "(Bash", "hooks": [{"type": "command", "command": "x"}]}]}),
        "`hooks.PreToolUse[0].matcher` is not a valid regular expression",
    );
    refused(
        json!({"BeforeTool": [{"hooks": [{"type": "command", "command": "x"}]}]}),
        "`hooks.BeforeTool` is not a hook event",
    );
    refused(
        json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "60"}]}]}),
        "`hooks.Stop[0].hooks[0].timeout` must be a number of seconds",
    );
    refused(json!({"Stop": "x"}), "`hooks.Stop` must be an array");
}
