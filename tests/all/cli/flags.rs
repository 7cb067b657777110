//! Flags at the process edge: closed-list values parsed into their enums, bad values and aliases as
//! usage errors, and `--help` that says how they behave.

use crate::support;

use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, run, run_raw, stream_json};

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
fn help_describes_resume_as_it_behaves() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.arg("--help");
    let out = run_raw(command, None);
    assert_eq!(out.code, 0);
    let help: String = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = help
        .find("--resume")
        .unwrap_or_else(|| panic!("no --resume in --help:\n{}", out.stdout));
    let resume = &help[start..];
    let resume = &resume[..resume.find("--continue").unwrap_or(resume.len())];
    // Without an id, `--resume` offers a picker of this directory's sessions.
    assert!(resume.contains("picker"), "{resume}");
    assert!(resume.contains("this directory"), "{resume}");
    assert!(!resume.contains("newest"), "{resume}");
}

/// A model alias belongs to its provider: sending another provider's model name to an
/// endpoint is a usage error before any request, with the reason.
#[test]
fn a_model_alias_of_another_provider_is_a_usage_error() {
    let cases: [(&str, &[&str]); 2] = [
        (r#"{"model":"sonnet"}"#, &["--provider", "openai"]),
        ("{}", &["--provider", "anthropic", "--model", "mini"]),
    ];
    for (config, flags) in cases {
        let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), config).expect("write config.json");
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).args(flags).arg("hello");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stdout);
        let error = out.first("error");
        assert_eq!(error["code"], "usage_error");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains("belongs to"), "{message}");
        assert!(provider.requests().is_empty(), "a request was sent");
    }
}

#[test]
fn bad_values_are_usage_errors_naming_the_value() {
    for (flags, needle) in [
        (
            vec!["--permission-mode", "yolo"],
            "unknown permission mode `yolo`",
        ),
        (vec!["--provider", "acme"], "unknown provider `acme`"),
        (vec!["--tier", "huge"], "unknown tier `huge`"),
        (vec!["--allow", "run_command(ls"], "invalid permission rule"),
        (vec!["--cwd", "/no/such/dir"], "is not a directory"),
    ] {
        let sandbox = Sandbox::new();
        let mut command = sandbox.command("http://127.0.0.1:9");
        stream_json(&mut command).args(&flags).arg("x");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{flags:?}");
        let message = out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(needle), "{flags:?}: {message}");
    }
}
