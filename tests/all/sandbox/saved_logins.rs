//! Saved logins (the registry token) stay out of a confined command's reach by every path to the
//! file.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, run, stream_json};

const TOKEN: &str = "splice_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn a_confined_command_cannot_read_the_saved_registry_token() {
    let sandbox = support::attack::sandbox_outside_tmp();
    let config_dir = support::attack::saved_login(&sandbox, TOKEN);
    std::fs::write(config_dir.join("notes.txt"), "neighbour-is-readable\n")
        .expect("write notes.txt");

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
    std::fs::write(&credentials, saved.to_string()).expect("write credentials");
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

/// HOME and SPLICE_CONFIG under `/tmp`, where confined commands may write, with a saved
/// registry login: a confined command runs (exit 0), and reads the login neither by its path,
/// nor through a hard link it makes, nor through `/proc/self/root`, nor after moving the
/// directory (or a directory above it) or the file itself, in that command or the next.
#[test]
fn commands_run_with_home_under_tmp_and_cannot_read_the_saved_login() {
    let sandbox = Sandbox::new();
    assert!(sandbox.dir.path().starts_with("/tmp"), "not under /tmp");
    let config_dir = support::attack::saved_login(&sandbox, TOKEN);
    let credentials = config_dir.join("credentials.json");
    let attack = "cd ~/.config/splice; cat credentials.json; cat ./credentials.json; \
                  ln credentials.json ~/linked.json; cat ~/linked.json; \
                  cat /proc/self/root$HOME/.config/splice/credentials.json; \
                  cd ~; mv .config/splice/credentials.json stolen.json; cat stolen.json; \
                  mv .config/splice .config/moved; cat .config/moved/credentials.json; \
                  mv .config .cfg; cat .cfg/splice/credentials.json; \
                  grep -r cred-marker . 2>/dev/null | head -c 300; true";
    let later = "cat ~/.config/moved/credentials.json ~/.cfg/splice/credentials.json \
                 ~/stolen.json ~/linked.json; true";
    let commands = ["echo ran > ran.txt", attack, later];
    let mut replies: Vec<Reply> = commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            let args = json!({ "command": command }).to_string();
            openai::tool_call(&format!("call_{i}"), "run_command", &[&args])
        })
        .collect();
    replies.push(openai::answer(&["done"]));
    let provider = FakeProvider::start(replies);
    let mut splice = sandbox.command(&provider.url);
    splice.env("SPLICE_CONFIG", config_dir.join("config.json"));
    stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("read it");
    let out = run(splice, None);
    out.assert_well_formed();
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 3, "{:?}", out.types());
    // The command ran, confined, as usual.
    assert_eq!(results[0]["status"], "ok", "{}", results[0]);
    let first = results[0]["output"].as_str().unwrap_or_default();
    assert!(first.starts_with("exit code 0"), "{}", results[0]);
    assert_eq!(sandbox.read("ran.txt").as_deref(), Some("ran\n"));
    for result in &results {
        let output = result["output"].as_str().unwrap_or_default();
        assert!(!output.contains("cred-marker-user"), "{result}");
        assert!(!output.contains(&TOKEN[7..40]), "{result}");
    }
    // Nothing moved and nothing copied it.
    let kept = std::fs::read_to_string(&credentials).unwrap_or_default();
    assert!(kept.contains(TOKEN), "the saved login was changed: {kept}");
    for copy in ["linked.json", "stolen.json"] {
        let text = std::fs::read_to_string(sandbox.dir.path().join(copy)).unwrap_or_default();
        assert!(!text.contains("cred-marker-user"), "{copy}: {text}");
    }
}

/// The carve-out that hides the saved registry logins from confined commands, tried through
/// other ways to the same file: a hard link or a rename into the working root, `/proc/self/root`,
/// Splice's own `/proc/<pid>/{root,fd,environ,mem}`, `/dev/fd`. None reads the token.
#[test]
fn the_hidden_credentials_stay_hidden_through_other_paths_to_the_same_file() {
    const TOKEN: &str = "splice_feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface";
    let sandbox = support::attack::sandbox_outside_tmp();
    let config_dir = support::attack::saved_login(&sandbox, TOKEN);
    let credentials = config_dir.join("credentials.json");
    let command = "C=~/.config/splice/credentials.json; \
        ln $C hard.json; cat hard.json; \
        mv $C moved.json; cat moved.json; \
        cat /proc/self/root$C; \
        for p in $PPID $(cat /proc/$PPID/stat | cut -d' ' -f4); do \
          cat /proc/$p/root$C; cat /proc/$p/environ; \
          for f in /proc/$p/fd/*; do cat $f; done; \
          cat /proc/$p/cwd/../$C; done; \
        (exec 3<$C; cat /dev/fd/3); \
        cp -r ~/.config/splice copied; cat copied/credentials.json; \
        echo probe-ended";
    let args = json!({ "command": command, "timeout_ms": 20000 });
    let out = support::attack::auto_command(&sandbox, &config_dir, &args);
    let result = out.first("tool_result");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.contains("probe-ended"), "{result}");
    assert!(!output.contains("cred-marker-user"), "{result}");
    assert!(!output.contains(&TOKEN[7..40]), "{result}");
    assert!(credentials.exists(), "the command moved the saved logins");
    for copy in ["hard.json", "moved.json", "copied/credentials.json"] {
        let read = std::fs::read_to_string(sandbox.root.join(copy)).unwrap_or_default();
        assert!(!read.contains("cred-marker-user"), "{copy}: {read}");
    }
}
