//! Issue 28, network, in the terminal UI: a confined command (`auto` mode) reaches a host
//! nobody allowed only once the person says so. Against the real binary in tmux, with the
//! test's HTTP server on this machine's loopback: "always" (saved) writes the host into the
//! config file's `sandbox.network.allowedDomains`, beside the file's other keys, and the next
//! session reaches the host without asking.

use crate::sandbox::network::{REACHED, Server};
use crate::support;

use serde_json::{Value, json};
use support::Sandbox;
use support::fake_provider::{FakeProvider, openai};
use support::tmux::{Tmux, quote, splice_shell};

const NET: &str = "net";

/// A session in `auto` mode whose model runs `curl` to the server by the name `localhost`.
fn session(name: &str, sandbox: &Sandbox, server: &Server) -> (Tmux, FakeProvider) {
    let command = format!("curl -sS http://localhost:{}/fetch", server.port);
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": command }).to_string()],
        ),
        openai::answer(&["Fetched."]),
    ]);
    let args = format!("--tier light --permission-mode auto {}", quote("Fetch it"));
    let shell = splice_shell(sandbox, &provider.url, sandbox.dir.path(), &args);
    let tmux = Tmux::new(&format!("net-{name}"));
    tmux.start(NET, (110, 30), &shell);
    (tmux, provider)
}

fn config(sandbox: &Sandbox) -> Value {
    let path = sandbox.dir.path().join("config.json");
    let text = std::fs::read_to_string(&path).expect("read config.json");
    serde_json::from_str(&text).expect("config.json is JSON")
}

/// The config file once it lists a host (the session saves it on the blocking pool).
fn saved_config(sandbox: &Sandbox) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let config = config(sandbox);
        if config["sandbox"]["network"]["allowedDomains"].is_array()
            || std::time::Instant::now() > deadline
        {
            return config;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn always_saved_writes_the_host_to_the_config_and_the_next_session_does_not_ask() {
    let sandbox = Sandbox::new_in(&support::outside_dir());
    let path = sandbox.dir.path().join("config.json");
    // The loopback's name points here: local addresses must be allowed for it to pass.
    let before = json!({
        "model": "gpt-4.1",
        "sandbox": {"network": {"allowLocalAddresses": true}},
        "deny": ["read_file(secret.txt)"]
    });
    std::fs::write(&path, before.to_string()).expect("write config.json");
    let server = Server::start();

    let (tmux, _provider) = session("first", &sandbox, &server);
    let prompt = tmux.wait_for(NET, "s always (saved in config)");
    assert!(prompt.contains("wants to reach localhost"), "{prompt}");
    assert!(
        prompt.contains(&path.display().to_string()),
        "the prompt names the file it writes:\n{prompt}"
    );
    assert_eq!(server.heads(), Vec::<String>::new(), "reached before asked");
    // `s` asks again, naming the host; a second `s` saves it.
    tmux.keys(NET, &["s"]);
    let confirm = tmux.wait_for(NET, "s/Enter confirm");
    assert!(
        confirm.contains("always: localhost added to sandbox.network.allowedDomains"),
        "{confirm}"
    );
    tmux.keys(NET, &["s"]);
    let done = tmux.wait_for(NET, "✓ done");
    assert!(done.contains(REACHED), "{done}");
    assert!(!done.contains("not saved"), "{done}");
    assert_eq!(server.heads().len(), 1, "{:?}", server.heads());
    // The session writes the file beside the run (and before it exits): wait for it.
    let saved = saved_config(&sandbox);
    assert_eq!(
        saved,
        json!({
            "model": "gpt-4.1",
            "sandbox": {"network": {"allowLocalAddresses": true, "allowedDomains": ["localhost"]}},
            "deny": ["read_file(secret.txt)"]
        })
    );
    // The other keys keep their order.
    let keys: Vec<&String> = saved.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["model", "sandbox", "deny"]);
    drop(tmux);

    // A new session: the host is in the config now, so the command reaches it unasked.
    let (tmux, _provider) = session("second", &sandbox, &server);
    let done = tmux.wait_for(NET, "✓ done");
    assert!(done.contains(REACHED), "{done}");
    assert!(!done.contains("Permission needed"), "{done}");
    assert_eq!(server.heads().len(), 2, "{:?}", server.heads());
    // Not written twice.
    assert_eq!(
        config(&sandbox)["sandbox"]["network"]["allowedDomains"],
        json!(["localhost"])
    );
}

/// A save that fails (here the config file was broken while the prompt waited) is said on
/// screen, the file is left as it is, and the session's grant holds.
#[test]
fn a_save_that_fails_is_a_warning_and_the_session_grant_holds() {
    let sandbox = Sandbox::new_in(&support::outside_dir());
    let path = sandbox.dir.path().join("config.json");
    let config = json!({"sandbox": {"network": {"allowLocalAddresses": true}}});
    std::fs::write(&path, config.to_string()).expect("write config.json");
    let server = Server::start();
    let (tmux, _provider) = session("broken", &sandbox, &server);
    tmux.wait_for(NET, "s always (saved in config)");
    let broken = "{\"sandbox\": ";
    std::fs::write(&path, broken).expect("break config.json");
    tmux.keys(NET, &["s"]);
    tmux.wait_for(NET, "s/Enter confirm");
    tmux.keys(NET, &["Enter"]);
    let done = tmux.wait_for(NET, "✓ done");
    assert!(done.contains(REACHED), "{done}");
    let warned = tmux.wait_for(NET, "not saved to the config file");
    assert!(
        warned.contains("localhost in sandbox.network.allowedDomains not saved"),
        "{warned}"
    );
    assert_eq!(server.heads().len(), 1);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), broken);
}
