//! The config file and settings: bad values are usage errors (also when a flag overrides them), a
//! named config must exist, an empty one is no settings, and the precedence of flag, config and
//! environment.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, exec_json, run, stream_json};

/// A headless run with `env` overrides and extra flags that must stop before any request.
fn usage_error(env: &[(&str, &str)], flags: &[&str], expected: &str) {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    for (name, value) in env {
        command.env(name, value);
    }
    stream_json(&mut command).args(flags).arg("hi");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2, "{env:?} {flags:?}: {}", out.stdout);
    let error = out.first("error");
    assert_eq!(error["code"], "usage_error", "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains(expected), "{expected:?} in {message:?}");
    assert!(provider.requests().is_empty());
}

#[test]
fn bad_settings_are_usage_errors_not_silent_defaults() {
    usage_error(
        &[("SPLICE_MAX_RETRIES", "lots")],
        &[],
        "SPLICE_MAX_RETRIES=lots",
    );
    usage_error(
        &[("SPLICE_MAX_RETRIES", "-1")],
        &[],
        "SPLICE_MAX_RETRIES=-1",
    );
    usage_error(
        &[("SPLICE_REQUEST_TIMEOUT_MS", "-5")],
        &[],
        "SPLICE_REQUEST_TIMEOUT_MS=-5",
    );
    usage_error(
        &[("SPLICE_STREAM_IDLE_TIMEOUT_MS", "0")],
        &[],
        "SPLICE_STREAM_IDLE_TIMEOUT_MS=0",
    );
    usage_error(
        &[("SPLICE_RETRY_BASE_MS", "1.5")],
        &[],
        "SPLICE_RETRY_BASE_MS",
    );
    usage_error(&[], &["--model", ""], "model name is empty");
    usage_error(&[], &["--jobs", "0"], "--jobs must be at least 1");
    usage_error(&[], &["--model", "  "], "model name is empty");
    usage_error(
        &[("OPENAI_BASE_URL", "localhost:11434")],
        &["--provider", "openai"],
        "OPENAI_BASE_URL=localhost:11434 is not an http(s) URL",
    );
    usage_error(
        &[("ANTHROPIC_BASE_URL", "not a url")],
        &["--provider", "anthropic"],
        "ANTHROPIC_BASE_URL",
    );
}

#[test]
fn a_config_file_named_by_splice_config_must_exist() {
    // A typo in SPLICE_CONFIG must not run with the deny rules that file holds dropped.
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let missing = dir.path().join("confg.json");
    let missing = missing.display().to_string();
    usage_error(&[("SPLICE_CONFIG", missing.as_str())], &[], "confg.json");
}

#[test]
fn an_empty_config_file_is_no_settings() {
    for content in ["", "  \n\t\n"] {
        let provider = FakeProvider::start(vec![openai::answer(&["hello"])]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), content).expect("write config.json");
        let out = exec_json(&sandbox, &provider, &["--tier", "light", "hi"]);
        assert_eq!(out.code, 0, "{content:?}: {}", out.stdout);
        assert_eq!(out.text(), "hello");
    }
}

/// A config file is checked whole, even the values a flag overrides this time; `"model": ""`
/// is an error, not the default.
#[test]
fn config_values_are_checked_even_when_a_flag_overrides_them() {
    let cases: [(&str, &[&str], &str); 5] = [
        (r#"{"model":""}"#, &["--model", "gpt-4.1"], "model"),
        (r#"{"model":""}"#, &[], "model"),
        (
            r#"{"permissionMode":"sometimes"}"#,
            &["--permission-mode", "auto"],
            "sometimes",
        ),
        (r#"{"tier":"huge"}"#, &["--tier", "light"], "huge"),
        (
            r#"{"provider":"openia"}"#,
            &["--provider", "openai"],
            "openia",
        ),
    ];
    for (config, flags, named) in cases {
        let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), config).expect("write config.json");
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).args(flags).arg("hello");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{config} {flags:?}: {}", out.stdout);
        let message = out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(named), "{config}: {message}");
        assert!(provider.requests().is_empty());
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
        std::fs::write(sandbox.dir.path().join("config.json"), config).expect("write config.json");
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
fn a_config_jobs_of_zero_is_a_usage_error_even_with_the_flag() {
    for flags in [&[][..], &["--jobs", "2"][..]] {
        let provider = FakeProvider::start(vec![]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), r#"{"jobs":0}"#)
            .expect("write config.json");
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).args(flags).arg("hello");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stdout);
        let message = out.first("error")["message"].as_str().unwrap_or_default();
        assert!(message.contains("`jobs` must be at least 1"), "{message}");
        assert!(provider.requests().is_empty());
    }
}

#[test]
fn broken_config_file_is_a_usage_error() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"permisionMode":"auto"}"#,
    )
    .expect("write config.json");
    let mut command = sandbox.command("http://127.0.0.1:9");
    stream_json(&mut command).arg("x");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    assert!(
        out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .contains("permisionMode")
    );
}

#[test]
fn provider_precedence_is_flag_then_config_then_environment() {
    let provider = FakeProvider::start(vec![
        support::fake_provider::anthropic::answer(&["a"]),
        openai::answer(&["b"]),
        openai::answer(&["c"]),
    ]);
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"provider":"anthropic","model":"haiku"}"#,
    )
    .expect("write config.json");
    let start = |flags: &[&str]| {
        let mut command = sandbox.command(&provider.url);
        command
            .env("SPLICE_PROVIDER", "openai")
            .env("SPLICE_MODEL", "gpt-4o");
        stream_json(&mut command).args(flags).arg("hi");
        let out = run(command, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let start = out.first("run_start").clone();
        (start["provider"].clone(), start["model"].clone())
    };
    // The config file beats the environment.
    assert_eq!(start(&[]), (json!("anthropic"), json!("haiku")));
    // A flag beats both.
    assert_eq!(
        start(&["--provider", "openai", "--model", "mini"]),
        (json!("openai"), json!("mini"))
    );
    // Without settings in the config file, the environment decides.
    std::fs::write(sandbox.dir.path().join("config.json"), "{}").expect("write config.json");
    assert_eq!(start(&[]), (json!("openai"), json!("gpt-4o")));
}

/// The sandbox settings are checked like the rest: a read grant that is no absolute path, a
/// domain written as a URL (which would allow nothing, silently) and an unknown network key are
/// usage errors naming what is wrong, and nothing is sent.
#[test]
fn bad_sandbox_settings_are_usage_errors() {
    let cases = [
        (
            r#"{"sandbox":{"allowRead":["relative/dir"]}}"#,
            "relative/dir",
        ),
        (
            r#"{"sandbox":{"network":{"allowedDomains":["https://github.com"]}}}"#,
            "https://github.com",
        ),
        (
            r#"{"sandbox":{"network":{"allowedDomains":["github.com:443"]}}}"#,
            "github.com:443",
        ),
        (
            r#"{"sandbox":{"network":{"allowedHosts":["x.org"]}}}"#,
            "allowedHosts",
        ),
    ];
    for (config, named) in cases {
        let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), config).expect("write config.json");
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).arg("hello");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{config}: {}", out.stdout);
        let message = out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(named), "{config}: {message}");
        assert!(provider.requests().is_empty());
    }
}
