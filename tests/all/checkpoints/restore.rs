//! `splice restore`: edited files put back, created ones removed, files changed since skipped, and
//! ids that name no run refused.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Outcome, Sandbox, run, run_raw, stream_json};

use support::exec_text;

#[test]
fn restore_refuses_ids_and_checkpoints_that_do_not_name_one() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"a.txt","content":"after\n"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "accept-edits", "edit"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // `..` would name the data directory itself.
    std::fs::create_dir_all(sandbox.data.join("checkpoints")).expect("create checkpoints");
    for args in [
        vec!["restore", ".."],
        vec!["restore", ""],
        vec!["restore", "../checkpoints"],
        vec!["restore", &run_id, "--to", "0"],
        vec!["restore", &run_id, "--to", "99"],
    ] {
        let mut restore = sandbox.command(&provider.url);
        restore.args(&args).args(["--output-format", "stream-json"]);
        let undo = run(restore, None);
        undo.assert_well_formed();
        assert_eq!(undo.code, 2, "{args:?}: {}", undo.stdout);
        assert_eq!(undo.first("error")["code"], "usage_error", "{args:?}");
        assert!(undo.of_type("restore").is_empty(), "{args:?}");
    }
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("after\n"));
    // The run's one checkpoint is still there to restore.
    let mut restore = sandbox.command(&provider.url);
    restore.args([
        "restore",
        &run_id,
        "--to",
        "1",
        "--output-format",
        "stream-json",
    ]);
    let undo = run(restore, None);
    assert_eq!(undo.code, 0, "{}", undo.stdout);
    assert_eq!(sandbox.read("a.txt"), None);
}

/// The run id a text-mode run names on its last stderr line.
fn named_run(out: &Outcome) -> String {
    out.stderr
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("run "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run id at the end:\n{}", out.stderr))
        .to_string()
}

#[test]
fn restoring_a_run_twice_says_there_is_nothing_left_to_restore() {
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "notes.txt", "content": "new\n"}),
        ),
        openai::answer(&["Wrote it."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    let out = exec_text(
        &sandbox,
        &provider,
        &[
            "--tier",
            "light",
            "--permission-mode",
            "accept-edits",
            "Write notes.txt",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run_id = named_run(&out);
    let restore = |format: &str| {
        let mut command = sandbox.command(&provider.url);
        command.args(["restore", &run_id, "--output-format", format]);
        command
    };
    let first = run_raw(restore("text"), None);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));
    let again = run_raw(restore("text"), None);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("nothing to restore"),
        "stdout: {}\nstderr: {}",
        again.stdout,
        again.stderr
    );
    let again = run(restore("stream-json"), None);
    again.assert_well_formed();
    assert!(
        again.text().contains("nothing to restore"),
        "{}",
        again.stdout
    );
    assert!(again.of_type("restore").is_empty());
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));
}

#[test]
fn restore_puts_back_edited_files_and_removes_created_ones() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "before\n");
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"a.txt","content":"after\n"}"#],
        ),
        openai::tool_call(
            "c2",
            "write_file",
            &[r#"{"path":"new/b.txt","content":"b"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "accept-edits", "edit"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sequences: Vec<_> = out
        .of_type("checkpoint")
        .iter()
        .map(|c| c["checkpoint"]["sequence"].clone())
        .collect();
    assert_eq!(sequences, [json!(1), json!(2)]);
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("after\n"));
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // Undo only the second write.
    let mut restore = sandbox.command(&provider.url);
    restore.args(["restore", &run_id, "--to", "2"]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 0, "{}", undo.stderr);
    assert_eq!(undo.types(), ["run_start", "restore", "run_end"]);
    let report = &undo.lines[1];
    assert_eq!(report["runId"], run_id.as_str());
    assert_eq!(
        report["checkpoint"],
        json!({"sequence": 2, "filesRestored": [], "filesDeleted": ["new/b.txt"], "skipped": []})
    );
    assert!(!sandbox.root.join("new/b.txt").exists());
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("after\n"));

    // Then everything.
    let mut restore = sandbox.command(&provider.url);
    restore.args(["restore", &run_id]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 0);
    assert_eq!(undo.types(), ["run_start", "restore", "run_end"]);
    assert_eq!(
        undo.lines[1]["checkpoint"]["filesRestored"],
        json!(["a.txt"])
    );
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("before\n"));
}

#[test]
fn restore_skips_files_changed_since_and_exits_1() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"a.txt","content":"splice"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "auto", "edit"]);
    let out = run(command, None);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    sandbox.write("a.txt", "human edit");
    let mut restore = sandbox.command(&provider.url);
    restore.args(["restore", &run_id, "--output-format", "stream-json"]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 1);
    assert_eq!(undo.lines[1]["checkpoint"]["skipped"], json!(["a.txt"]));
    assert_eq!(undo.first("warning")["code"], "restore_skipped");
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("human edit"));

    // The skipped checkpoint stays for a forced retry, which puts the file back anyway.
    let mut forced = sandbox.command(&provider.url);
    forced.args([
        "restore",
        &run_id,
        "--force",
        "--output-format",
        "stream-json",
    ]);
    let undo = run(forced, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 0);
    assert_eq!(
        undo.lines[1]["checkpoint"]["filesDeleted"],
        json!(["a.txt"])
    );
    assert!(
        sandbox.read("a.txt").is_none(),
        "a.txt did not exist before the run"
    );
}

#[test]
fn restore_of_an_unknown_run_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let mut restore = sandbox.command("http://127.0.0.1:9");
    restore.args(["restore", "run_20260101_nosuch"]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 2);
    assert_eq!(undo.first("error")["code"], "restore_failed");
}
