//! A command the model runs on its own authority (`auto` mode, confined) tries to read the
//! registry token Splice saved at `splice login`: `cat ~/.config/splice/credentials.json`,
//! scripted through the fake provider against the real binary. The file beside it stays
//! readable, so the refusal is about that one file, not the directory.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{run, stream_json};

const TOKEN: &str = "splice_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn a_confined_command_cannot_read_the_saved_registry_token() {
    let sandbox = support::attack::sandbox_outside_tmp();
    let config_dir = support::attack::saved_login(&sandbox, TOKEN);
    std::fs::write(config_dir.join("notes.txt"), "neighbour-is-readable\n")
        .unwrap_or_else(|e| panic!("{e}"));

    let command = "cat ~/.config/splice/notes.txt; cat ~/.config/splice/credentials.json; \
                   cp ~/.config/splice/credentials.json stolen.json; ls ~/.config/splice";
    let out = support::attack::auto_command(&sandbox, &config_dir, &json!({ "command": command }));
    let result = out.first("tool_result");
    let output = result["output"].as_str().unwrap_or_default();
    // The command ran, confined: the neighbour and the listing are there.
    assert!(output.contains("neighbour-is-readable"), "{result}");
    assert!(output.contains("credentials.json"), "{result}");
    // The token is not, under any spelling, nor in a copy the command made.
    assert!(!output.contains("cred-marker-user"), "{result}");
    assert!(!output.contains(&TOKEN[7..40]), "{result}");
    assert!(output.contains("Permission denied"), "{result}");
    assert!(!sandbox.root.join("stolen.json").exists());
}

/// Saved logins inside a place confined commands may write (here the config directory is in
/// `/tmp`) are hidden in a mount namespace (see `attack_procs`); where none can be made they
/// cannot be hidden: the command is not run, and the reason names the way out.
#[test]
fn saved_logins_in_a_writable_place_without_a_mount_namespace_keep_commands_from_running() {
    let sandbox = support::Sandbox::new();
    let credentials = sandbox.dir.path().join("credentials.json");
    let saved = json!({"http://127.0.0.1:7878": {"token": TOKEN, "user": "cred-marker-user"}});
    std::fs::write(&credentials, saved.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let args = json!({ "command": "cat ../credentials.json; echo ran > ran.txt" }).to_string();
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "run_command", &[&args]),
        openai::answer(&["done"]),
    ]);
    let mut splice = sandbox.command(&provider.url);
    splice.env("SPLICE_TEST_NO_MOUNTNS", "1");
    stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("read it");
    let out = run(splice, None);
    out.assert_well_formed();
    let result = out.first("tool_result");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(!output.contains("cred-marker-user"), "{result}");
    assert!(output.contains("SPLICE_CONFIG"), "{result}");
    assert!(output.contains("no mount namespace"), "{result}");
    assert!(!sandbox.root.join("ran.txt").exists(), "{result}");
}
