//! `Stop` hooks: a block sends the model back with the reason (`stop_hook_active` set on the
//! next stop); the third block in a row is not obeyed, and a warning says so.

use super::{exec, hook, script, sent_text, user_hooks, warnings};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, openai};

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
