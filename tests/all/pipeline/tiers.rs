//! The tiers' edges: images given to a pipeline tier are reported, and a plan in ask mode stops at
//! the first refused write.

use crate::support;

use serde_json::json;
use support::fake_provider::FakeProvider;
use support::{run, stream_json};

use support::fixing_run::{BUGGY, FIXED, fixing_run, project, submit};

/// Images given to a pipeline tier are not silently dropped: a `warning` says so.
#[test]
fn images_given_to_a_pipeline_tier_are_reported() {
    let sandbox = project(true);
    let provider = FakeProvider::start(fixing_run());
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
    ]);
    let input = r#"{"schemaVersion":2,"type":"message","role":"user","content":"Fix add as in the screenshot","images":[{"mediaType":"image/png","data":"iVBORw0KGgo="}]}"#;
    let out = run(command, Some(input));
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "images_dropped")
        .unwrap_or_else(|| panic!("no images_dropped warning: {:?}", out.types()));
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("1 image(s)")),
        "{warning}"
    );
}

/// A design plan in `ask` mode headless stops at the first refused write: the later tasks are
/// skipped instead of each spending a request on the same refusal.
#[test]
fn a_plan_in_ask_mode_stops_at_the_first_refused_write() {
    let task = |id: &str| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": []});
    let code = |id: &str| {
        submit(
            id,
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        )
    };
    let provider = FakeProvider::start(vec![
        submit(
            "p1",
            "submit_plan",
            json!({"tasks": [task("T1"), task("T2"), task("T3")]}),
        ),
        submit(
            "c1",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
        code("t1cw"),
        code("t2cw"),
        code("t3cw"),
    ]);
    let sandbox = project(true);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "1",
        "--test-command",
        "true",
        "Fix add in three steps",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(provider.requests().len(), 3, "a request per refused task");
    let result = out.final_result();
    assert_eq!(result["failed"], json!(["T1"]));
    assert_eq!(result["skipped"], json!(["T2", "T3"]));
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
}
