//! A tiny Python project whose `add` subtracts, committed in a git repository (with or
//! without a git identity), and the scripted pipeline run that fixes it and is accepted.

use serde_json::{Value, json};

use super::fake_provider::{Reply, openai};
use super::{Sandbox, git};

pub const BUGGY: &str = "def add(a, b):\n    return a - b\n";

pub const FIXED: &str = "def add(a, b):\n    return a + b\n";

/// A repository with one commit; `identity` sets a local git identity, else git has none at
/// all (HOME holds no config, and `user.useConfigOnly` stops git guessing one from the host
/// name, as it fails to on a fresh container).
pub fn project(identity: bool) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", BUGGY);
    git(&sandbox.root, &["init", "-q", "-b", "main"]);
    if identity {
        git(&sandbox.root, &["config", "user.email", "test@example.com"]);
        git(&sandbox.root, &["config", "user.name", "Test"]);
    } else {
        git(&sandbox.root, &["config", "user.useConfigOnly", "true"]);
    }
    git(&sandbox.root, &["add", "-A"]);
    git(
        &sandbox.root,
        &[
            "-c",
            "user.name=Setup",
            "-c",
            "user.email=setup@example.com",
            "commit",
            "-q",
            "-m",
            "initial",
        ],
    );
    sandbox
}

pub fn submit(id: &str, name: &str, args: Value) -> Reply {
    openai::tool_call(id, name, &[&args.to_string()])
}

/// The replies of a standard run that writes FIXED and is accepted.
pub fn fixing_run() -> Vec<Reply> {
    vec![
        submit(
            "cw",
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        ),
        submit(
            "av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["fixed"]}),
        ),
    ]
}
