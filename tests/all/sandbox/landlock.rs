//! Without Landlock nothing runs unconfined, and with it a confined command writes only its places
//! and plants no programs that would run later.

use crate::support;

use serde_json::json;
use support::Sandbox;
use support::fake_provider::{FakeProvider, openai};

use support::one_call::{one_call, one_call_with, result_of};

#[test]
fn without_landlock_an_auto_command_is_asked_about_not_run_unconfined() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"touch made.txt"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let out = one_call_with(&sandbox, &provider, &["--permission-mode", "auto"], |c| {
        c.env("SPLICE_TEST_NO_LANDLOCK", "1");
    });
    let request = out.first("permission_request");
    let reason = request["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("sandbox is unavailable"), "{reason}");
    assert_eq!(out.first("permission_decision")["permissionGranted"], false);
    assert_eq!(result_of(&out).0, "denied");
    assert!(!sandbox.root.join("made.txt").exists());
    // A command the user approved runs as the user, sandbox or not.
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"touch made.txt"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let flags = [
        "--permission-mode",
        "auto",
        "--allow",
        "run_command(touch *)",
    ];
    let out = one_call_with(&sandbox, &provider, &flags, |c| {
        c.env("SPLICE_TEST_NO_LANDLOCK", "1");
    });
    assert_eq!(result_of(&out).0, "ok");
    assert!(sandbox.root.join("made.txt").exists());
}

#[test]
fn a_confined_command_still_cannot_write_outside_its_places() {
    // Outside the root, /tmp and the caches: the build's own scratch directory.
    let outside =
        support::outside_dir().join(format!("attack-proc-{}-outside.txt", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let sandbox = Sandbox::new();
    let command = format!("touch made.txt; touch {}", outside.display());
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": command }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "error", "{output}");
    assert!(sandbox.root.join("made.txt").exists(), "{output}");
    assert!(
        !outside.exists(),
        "the confined command wrote {}",
        outside.display()
    );
}

#[test]
fn without_landlock_the_pipelines_own_test_command_is_refused_not_run_unconfined() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    support::git(&sandbox.root, &["init", "-q", "-b", "main"]);
    support::git(&sandbox.root, &["add", "-A"]);
    support::git(
        &sandbox.root,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "init",
        ],
    );
    let fixed = json!({
        "files": [{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}],
        "summary": "add"
    });
    let provider = FakeProvider::start(vec![openai::tool_call(
        "cw1",
        "submit_code",
        &[&fixed.to_string()],
    )]);
    let flags = [
        "--tier",
        "standard",
        "--permission-mode",
        "accept-edits",
        "--test-command",
        "touch ran.txt",
    ];
    let out = one_call_with(&sandbox, &provider, &flags, |c| {
        c.env("SPLICE_TEST_NO_LANDLOCK", "1");
    });
    assert_eq!(out.code, 1);
    assert!(!sandbox.root.join("ran.txt").exists(), "ran unconfined");
    let reason = out.first("permission_request")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(reason.contains("sandbox is unavailable"), "{reason}");
    let detail = out.final_result()["stages"][1]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(detail.contains("was refused"), "{detail}");
}

#[test]
fn a_confined_command_cannot_plant_programs_where_they_would_run_later() {
    // HOME outside /tmp, so only the sandbox's own list decides what is writable there.
    let sandbox = Sandbox::new_in(&support::outside_dir());
    let home = sandbox.dir.path();
    for dir in [
        ".cargo/bin",
        ".cargo/registry",
        ".cache/pre-commit",
        ".cache/pip",
        ".npm/_npx",
    ] {
        std::fs::create_dir_all(home.join(dir)).expect("create dir");
    }
    let command = "for d in .cargo/bin .cargo/registry .cache/pre-commit .cache/pip .npm/_npx; \
                   do echo planted > \"$HOME/$d/x\" 2>/dev/null; done; true";
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": command }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    for (dir, writable) in [
        (".cargo/bin", false),
        (".cache/pre-commit", false),
        (".npm/_npx", false),
        // Download caches stay writable so builds work inside the sandbox.
        (".cargo/registry", true),
        (".cache/pip", true),
    ] {
        assert_eq!(home.join(dir).join("x").exists(), writable, "{dir}");
    }
}
