//! The pipeline fires hooks too: its own test command and its submissions are tool calls, and
//! a `StageEnd` hook can fail a stage that passed, its reason the next iteration's evidence.

use serde_json::json;

use super::{hook, hook_events, merged, script, sent_text, user_hooks};
use crate::support::fake_provider::FakeProvider;
use crate::support::fixing_run::{FIXED, project, submit};
use crate::support::{run, stream_json};

#[test]
fn a_stage_end_hook_fails_a_stage_and_tool_hooks_see_the_pipelines_calls() {
    let sandbox = project(true);
    let dir = sandbox.dir.path().display().to_string();
    // Fails the first test run it sees; passes the next.
    let gate = script(
        &sandbox,
        "gate.sh",
        &format!(
            "#!/bin/sh\ncat >> {dir}/stage_end.log\necho >> {dir}/stage_end.log\n\
             if [ ! -e {dir}/gated ]; then touch {dir}/gated; \
             echo 'coverage fell below 80%' >&2; exit 2; fi\nexit 0\n"
        ),
    );
    let log = script(
        &sandbox,
        "log.sh",
        &format!("#!/bin/sh\ncat >> {dir}/calls.log\necho >> {dir}/calls.log\n"),
    );
    user_hooks(
        &sandbox,
        merged(&[
            hook("StageEnd", "test_runner", &gate.display().to_string()),
            hook("PreToolUse", "Bash|submit_code", &log.display().to_string()),
        ]),
    );
    let code = || {
        submit(
            "cw",
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        )
    };
    let provider = FakeProvider::start(vec![
        code(),
        code(),
        submit(
            "av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["fixed"]}),
        ),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
        "--max-iterations",
        "2",
        "Fix add in calc.py",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.final_result()["iterations"], 2);
    // The second code writer was told why the first iteration failed.
    assert!(
        sent_text(&provider.requests()[1]).contains("coverage fell below 80%"),
        "the evidence did not reach the next iteration"
    );
    let blocked = hook_events(&out, "StageEnd");
    assert_eq!(blocked.len(), 1, "{blocked:?}");
    assert_eq!(blocked[0]["decision"], "block");
    let stage_end = std::fs::read_to_string(sandbox.dir.path().join("stage_end.log"))
        .expect("the StageEnd hook ran");
    let first: serde_json::Value =
        serde_json::from_str(stage_end.lines().next().unwrap_or_default()).expect("its input");
    assert_eq!(first["stage"], "test_runner");
    assert_eq!(first["status"], "passed");
    assert!(
        first["output"]["testReport"]
            .as_str()
            .unwrap_or_default()
            .contains("$ true")
    );
    // The test command and both submissions went through PreToolUse.
    let calls = std::fs::read_to_string(sandbox.dir.path().join("calls.log"))
        .expect("the PreToolUse hook ran");
    let inputs: Vec<serde_json::Value> = calls
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a call's input"))
        .collect();
    let tools: Vec<&str> = inputs
        .iter()
        .filter_map(|i| i["tool_name"].as_str())
        .collect();
    assert_eq!(tools, ["submit_code", "Bash", "submit_code", "Bash"]);
    assert_eq!(inputs[1]["splice_tool_name"], "run_command");
    assert_eq!(inputs[1]["tool_input"]["command"], "true");
    assert_eq!(inputs[0]["tool_input"]["files"][0]["path"], "calc.py");
}
