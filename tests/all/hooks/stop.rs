//! `Stop` hooks: a block sends the model back with the reason (`stop_hook_active` set on the
//! next stop); the third block in a row is not obeyed, and a warning says so.

use super::{exec, hook, script, sent_text, user_hooks, warnings};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, Reply, openai};

/// Blocks while fewer than `blocks` stops were seen, logging each input.
fn counting_stop(sandbox: &Sandbox, blocks: u32) -> std::path::PathBuf {
    let dir = sandbox.dir.path().display().to_string();
    script(
        sandbox,
        "stop.sh",
        &format!(
            "#!/bin/sh\n\
             cat >> {dir}/stops.log\necho >> {dir}/stops.log\n\
             n=$(cat {dir}/count 2>/dev/null || echo 0)\nn=$((n + 1))\necho $n > {dir}/count\n\
             if [ $n -le {blocks} ]; then echo \"not done yet ($n)\" >&2; exit 2; fi\nexit 0\n"
        ),
    )
}

fn stops(sandbox: &Sandbox) -> Vec<serde_json::Value> {
    std::fs::read_to_string(sandbox.dir.path().join("stops.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a stop's input"))
        .collect()
}

#[test]
fn a_stop_hook_that_blocks_twice_then_lets_the_run_end() {
    let sandbox = Sandbox::new();
    let stop = counting_stop(&sandbox, 2);
    user_hooks(&sandbox, hook("Stop", "", &stop.display().to_string()));
    let provider = FakeProvider::start(vec![
        openai::answer(&["first"]),
        openai::answer(&["second"]),
        openai::answer(&["third"]),
        openai::answer(&["never asked"]),
    ]);
    let out = exec(&sandbox, &provider, &["finish the work"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    assert!(sent_text(&requests[1]).contains("not done yet (1)"));
    assert!(sent_text(&requests[2]).contains("not done yet (2)"));
    let seen = stops(&sandbox);
    let active: Vec<bool> = seen
        .iter()
        .map(|s| s["stop_hook_active"].as_bool().unwrap_or(true))
        .collect();
    assert_eq!(active, [false, true, true]);
    assert_eq!(seen[0]["hook_event_name"], "Stop");
    assert_eq!(seen[0]["last_assistant_message"], "first");
    assert!(warnings(&out, "stop_hook_limit").is_empty());
    assert_eq!(out.final_result()["answer"], "third");
}

#[test]
fn a_stop_hook_that_always_blocks_ends_after_three_with_a_warning() {
    let sandbox = Sandbox::new();
    let stop = counting_stop(&sandbox, 1000);
    user_hooks(&sandbox, hook("Stop", "", &stop.display().to_string()));
    let provider = FakeProvider::start(vec![
        openai::answer(&["one"]),
        openai::answer(&["two"]),
        openai::answer(&["three"]),
        openai::answer(&["four"]),
    ]);
    let out = exec(&sandbox, &provider, &["finish the work"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(stops(&sandbox).len(), 3);
    let warned = warnings(&out, "stop_hook_limit");
    assert_eq!(warned.len(), 1, "{}", out.stdout);
    assert!(warned[0].contains("not done yet (3)"), "{}", warned[0]);
}

/// A subagent's answer fires `SubagentStop` (not the run's `Stop`), and a block sends the
/// subagent, not the parent, back with the reason; the parent's own answer fires `Stop`.
#[test]
fn a_subagents_end_fires_subagent_stop_and_a_block_sends_the_subagent_back() {
    let sandbox = Sandbox::new();
    let dir = sandbox.dir.path().display().to_string();
    let stop = counting_stop(&sandbox, 1);
    let parent_stop = script(
        &sandbox,
        "parent_stop.sh",
        &format!("#!/bin/sh\ncat >> {dir}/parent_stops.log\necho >> {dir}/parent_stops.log\n"),
    );
    user_hooks(
        &sandbox,
        super::merged(&[
            hook("SubagentStop", "", &stop.display().to_string()),
            hook("Stop", "", &parent_stop.display().to_string()),
        ]),
    );
    let args = serde_json::json!({"description": "look", "prompt": "SUBTASK: look around"});
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            openai::tool_call("call_a", "agent", &[&args.to_string()]),
        ),
        Reply::when("not done yet (1)", openai::answer(&["SUB-SECOND"])),
        Reply::when("SUBTASK", openai::answer(&["SUB-FIRST"])),
        Reply::when("SUB-SECOND", openai::answer(&["PARENT-DONE"])),
    ]);
    let out = exec(&sandbox, &provider, &["PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0, "{:?}", provider.requests());
    let seen = stops(&sandbox);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0]["hook_event_name"], "SubagentStop");
    assert_eq!(seen[0]["last_assistant_message"], "SUB-FIRST");
    assert_eq!(seen[1]["stop_hook_active"], true);
    let parent: Vec<String> = std::fs::read_to_string(sandbox.dir.path().join("parent_stops.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    assert_eq!(parent.len(), 1, "{parent:?}");
    assert!(parent[0].contains("PARENT-DONE"), "{}", parent[0]);
    assert_eq!(out.final_result()["answer"], "PARENT-DONE");
}
