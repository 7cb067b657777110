//! Splice's own git calls: the protection of `.git`, the recorded git config, the reviewing diff
//! and `--worktree` runs.

mod config_protection;
mod config_record;
mod git_dirs;
mod merge_back_and_cleanup;
mod object_store;
mod review_diff;
mod worktree;

use crate::support;

use serde_json::json;
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply};

/// A design plan of two tasks run side by side in `sandbox`'s checkout, task A first running
/// `command` (confined: `auto` mode); the output of that command.
fn task_side_by_side_runs(sandbox: &support::Sandbox, command: &str) -> String {
    let needle = |id: &str| format!("This is task {id} of");
    let task = |id: &str| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": []});
    let mut replies = vec![
        submit(
            "plan",
            "submit_plan",
            json!({"tasks": [task("A"), task("B")]}),
        ),
        submit(
            "critique",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
        Reply::when(
            &needle("A"),
            submit("Arc", "run_command", json!({ "command": command })),
        ),
    ];
    for id in ["A", "B"] {
        let path = format!("{}.txt", id.to_lowercase());
        replies.push(Reply::when(
            &needle(id),
            submit(
                &format!("{id}cw"),
                "submit_code",
                json!({"files": [{"path": path, "content": "x\n"}], "summary": id}),
            ),
        ));
        replies.push(Reply::when(
            &needle(id),
            submit(
                &format!("{id}av"),
                "submit_verdict",
                json!({"accepted": true, "reasons": ["ok"]}),
            ),
        ));
    }
    let provider = FakeProvider::start(replies);
    let mut splice = sandbox.command(&provider.url);
    support::stream_json(&mut splice).args([
        "--design-plan",
        "--jobs",
        "2",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        "true",
        "Do the plan",
    ]);
    let out = support::run(splice, None);
    out.assert_well_formed();
    out.of_type("tool_result")
        .into_iter()
        .find(|r| r["id"] == "Arc")
        .and_then(|r| r["output"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no result of the task's command: {}", out.stdout))
}
