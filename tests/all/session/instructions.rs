//! Project instructions are read only as regular files beneath the root: no links out of it, no
//! FIFO that hangs the run.

use crate::support;

use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, run, stream_json};

/// The system prompt of the first request.
fn system_prompt(provider: &FakeProvider) -> String {
    let requests = provider.requests();
    requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn project_instructions_are_not_read_through_links_out_of_the_root() {
    let secret_dir = tempfile::tempdir().expect("create a temporary directory");
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-OUTSIDE").expect("write secret");
    for target in [
        secret.display().to_string(),
        "/proc/self/environ".to_string(),
    ] {
        let provider = FakeProvider::start(vec![openai::answer(&["ok"])]);
        let sandbox = Sandbox::new();
        std::os::unix::fs::symlink(&target, sandbox.root.join("SPLICE.md"))
            .expect("link SPLICE.md to target");
        sandbox.write("AGENTS.md", "Run `make check`.");
        let mut command = sandbox.command(&provider.url);
        command.env("MARKER_ENV_VALUE", "ENVIRONMENT-LEAKED");
        stream_json(&mut command).args(["--tier", "light", "hi"]);
        let out = run(command, None);
        out.assert_well_formed();
        let system = system_prompt(&provider);
        assert!(!system.contains("TOP-SECRET-OUTSIDE"), "{target}: {system}");
        assert!(!system.contains("ENVIRONMENT-LEAKED"), "{target}: {system}");
        assert!(!system.contains("sk-test"), "{target}: {system}");
        // The link is skipped, not the instructions: the next file still counts.
        assert!(system.contains("make check"), "{target}: {system}");
        let warnings = out.of_type("warning");
        assert!(
            warnings.iter().any(|w| w["code"] == "instructions_skipped"),
            "{target}: {warnings:?}"
        );
    }
}

#[test]
fn a_fifo_as_project_instructions_does_not_hang_the_run() {
    let provider = FakeProvider::start(vec![openai::answer(&["ok"])]);
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.join("SPLICE.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "hi"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!system_prompt(&provider).contains("Project instructions"));
}
