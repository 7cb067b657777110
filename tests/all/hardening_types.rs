//! Issue 8, item 3: typed values at the process edge. The closed-list flags are parsed by clap
//! into their enums; a bad value is still a usage error (exit 2) named as before, with a
//! well-formed stream that starts as the good flags say; the result document's typed fields
//! serialise to the same strings.

use crate::support;

use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, run, stream_json};

#[test]
fn bad_closed_list_flag_keeps_the_good_flags_in_run_start() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    stream_json(&mut command).args([
        "--provider",
        "anthropic",
        "--model=haiku",
        "--tier",
        "huge",
        "x",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    assert_eq!(out.types(), ["run_start", "error", "run_end"]);
    let start = out.first("run_start");
    assert_eq!(start["provider"], "anthropic");
    assert_eq!(start["model"], "haiku");
    let error = out.first("error");
    assert_eq!(error["code"], "usage_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("unknown tier `huge`"), "{message}");
    assert!(message.contains("auto, light, standard, full"), "{message}");
}

#[test]
fn help_lists_the_values_of_each_closed_list_flag() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.args(["exec", "--help"]);
    let out = support::run_raw(command, None);
    assert_eq!(out.code, 0);
    for values in [
        "[possible values: openai, anthropic, gemini]",
        "[possible values: ask, accept-edits, auto, read-only]",
        "[possible values: auto, light, standard, full]",
    ] {
        assert!(
            out.stdout.contains(values),
            "{values} not in {}",
            out.stdout
        );
    }
}

#[test]
fn bad_config_values_are_still_refused_when_a_flag_overrides_them() {
    for (config, needle) in [
        (r#"{"tier":"huge"}"#, "unknown tier `huge`"),
        (
            r#"{"permissionMode":"yolo"}"#,
            "unknown permissionMode `yolo`",
        ),
        (r#"{"provider":"acme"}"#, "unknown provider `acme`"),
    ] {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), config)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut command = sandbox.command("http://127.0.0.1:9");
        stream_json(&mut command).args([
            "--tier",
            "light",
            "--permission-mode",
            "ask",
            "--provider",
            "openai",
            "x",
        ]);
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{config}");
        let message = out.first("error")["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{config}: {message}");
    }
}

#[test]
fn typed_result_fields_serialise_as_the_protocol_spells_them() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    let provider = FakeProvider::start(vec![openai::answer(&["hello"])]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "hi"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.final_result();
    assert_eq!(result["tier"], "light");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["stages"], serde_json::json!([]));
}
