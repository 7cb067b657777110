//! MCP in the real TUI (tmux): a project's `.mcp.json` server is asked about before anything of
//! it runs; approved, it starts and `/mcp` lists its tools; not approved, it never starts and is
//! asked about again next session; and quitting leaves no server process behind.

use crate::support;

use std::path::Path;

use support::Sandbox;
use support::fake_provider::FakeProvider;
use support::tmux::{Tmux, splice_shell};

fn project_servers(sandbox: &Sandbox, servers: serde_json::Value) {
    sandbox.write(
        ".mcp.json",
        &serde_json::json!({ "mcpServers": servers }).to_string(),
    );
}

/// Whether a process with this pid is alive (a zombie counts as gone: nobody runs it).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

fn quit(tmux: &Tmux) -> String {
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=")
}

#[test]
fn an_approved_project_server_starts_lists_its_tools_and_is_gone_after_quit() {
    let (node, args) = support::mcp::everything_command();
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("server.pid");
    // `exec`: the pid written is the server's own.
    let command = format!(
        "echo $$ > '{}'; exec '{node}' '{}'",
        pid_file.display(),
        args.join("' '")
    );
    project_servers(
        &sandbox,
        serde_json::json!({"everything": {"command": "sh", "args": ["-c", command]}}),
    );
    let provider = FakeProvider::start(vec![]);
    let home = sandbox.dir.path();
    let tmux = Tmux::new("mcp-approve");
    tmux.start(
        "splice",
        (120, 40),
        &splice_shell(&sandbox, &provider.url, home, ""),
    );

    let modal = tmux.wait_for("splice", "Start a project MCP server?");
    assert!(modal.contains("everything"), "{modal}");
    assert!(
        modal.contains("runs     sh -c"),
        "the exact command:\n{modal}"
    );
    assert!(modal.contains("unsandboxed"), "{modal}");
    assert!(
        !pid_file.exists(),
        "the server started before it was approved"
    );

    tmux.wait_for("splice", "y/a approve and start");
    tmux.keys("splice", &["y"]);
    tmux.wait_for("splice", "MCP server `everything` approved; starting it");
    tmux.type_text("splice", "/mcp");
    tmux.keys("splice", &["Enter"]);
    let listed = tmux.wait_for("splice", "mcp__everything__get-sum");
    assert!(listed.contains("MCP servers"), "{listed}");
    assert!(listed.contains("everything  project  ready"), "{listed}");
    let pid = std::fs::read_to_string(&pid_file).expect("read pid_file");
    let pid = pid.trim();
    assert!(alive(pid), "the server runs while the session does");
    let approvals = std::fs::read_to_string(sandbox.data.join("mcp-approvals.json"))
        .expect("the approval was not stored");
    assert!(approvals.contains("everything"), "{approvals}");

    tmux.keys("splice", &["Escape"]);
    let after = quit(&tmux);
    assert!(after.contains("SPLICE_EXIT=0"), "{after}");
    assert!(!alive(pid), "server {pid} outlived the TUI");
}

#[test]
fn a_project_server_not_approved_never_starts_and_is_asked_about_next_session() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started");
    project_servers(
        &sandbox,
        serde_json::json!({"marker": {
            "command": "sh",
            "args": ["-c", format!("touch '{}'", marker.display())],
            "env": {"MARKER_TOKEN": "value-never-shown"}
        }}),
    );
    let provider = FakeProvider::start(vec![]);
    let home = sandbox.dir.path();
    for session in 0..2 {
        let tmux = Tmux::new(&format!("mcp-decline-{session}"));
        tmux.start(
            "splice",
            (120, 40),
            &splice_shell(&sandbox, &provider.url, home, ""),
        );
        let modal = tmux.wait_for("splice", "Start a project MCP server?");
        assert!(modal.contains("marker"), "{modal}");
        assert!(modal.contains("MARKER_TOKEN"), "{modal}");
        assert!(!modal.contains("value-never-shown"), "{modal}");
        tmux.wait_for("splice", "y/a approve and start");
        tmux.keys("splice", &["n"]);
        tmux.wait_for("splice", "MCP server `marker` not started");
        tmux.type_text("splice", "/mcp");
        tmux.keys("splice", &["Enter"]);
        // Waited for as a whole: a capture may catch a frame half written.
        tmux.wait_until("splice", "the unapproved server in /mcp", |s| {
            s.contains("marker  project  unapproved") && s.contains("needs your approval")
        });
        tmux.keys("splice", &["Escape"]);
        let after = quit(&tmux);
        assert!(after.contains("SPLICE_EXIT=0"), "{after}");
        assert!(!marker.exists(), "the unapproved server ran");
        assert!(
            !Path::new(&sandbox.data.join("mcp-approvals.json")).exists(),
            "nothing was approved"
        );
    }
}

#[test]
fn a_user_server_that_fails_is_named_in_the_transcript_and_in_mcp() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        serde_json::json!({"mcpServers": {
            "broken": {"command": "sh", "args": ["-c", "echo no MCP here >&2; exit 3"]}
        }})
        .to_string(),
    )
    .expect("write config.json");
    let provider = FakeProvider::start(vec![]);
    let home = sandbox.dir.path();
    let tmux = Tmux::new("mcp-failed");
    tmux.start(
        "splice",
        (120, 40),
        &splice_shell(&sandbox, &provider.url, home, ""),
    );
    // A user server is never asked about: it starts at once, and its failure is said.
    let screen = tmux.wait_for("splice", "MCP server `broken` failed");
    assert!(!screen.contains("Start a project MCP server?"), "{screen}");
    tmux.type_text("splice", "/mcp");
    tmux.keys("splice", &["Enter"]);
    tmux.wait_until("splice", "the failed server with its error", |s| {
        s.contains("broken  user  failed") && s.contains("error   ")
    });
    tmux.keys("splice", &["Escape"]);
    let after = quit(&tmux);
    assert!(after.contains("SPLICE_EXIT=0"), "{after}");
}

#[test]
fn a_bad_mcp_timeout_is_a_usage_error_before_the_terminal_is_taken() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![]);
    let shell = splice_shell(&sandbox, &provider.url, sandbox.dir.path(), "").replacen(
        "env -i",
        "env -i SPLICE_MCP_STARTUP_TIMEOUT_MS=soon",
        1,
    );
    let tmux = Tmux::new("mcp-timeout");
    tmux.start("splice", (120, 30), &shell);
    let screen = tmux.wait_for("splice", "SPLICE_EXIT=");
    assert!(screen.contains("SPLICE_EXIT=2"), "{screen}");
    assert!(
        screen.contains("SPLICE_MCP_STARTUP_TIMEOUT_MS must be a whole number"),
        "{screen}"
    );
}

#[test]
fn an_mcp_tool_call_is_prompted_for_and_its_progress_shows_in_its_cell() {
    use support::fake_provider::openai;
    let sandbox = Sandbox::new();
    let (command, args) = support::mcp::everything_command();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        serde_json::json!({"mcpServers": {"everything": {"command": command, "args": args}}})
            .to_string(),
    )
    .expect("write config.json");
    let wire = "mcp__everything__trigger-long-running-operation";
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", wire, &[r#"{"duration":6,"steps":3}"#]),
        openai::answer(&["The operation finished."]),
    ]);
    let home = sandbox.dir.path();
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        home,
        &support::tmux::quote("Run the long operation"),
    );
    let tmux = Tmux::new("mcp-call");
    tmux.start("splice", (120, 40), &shell);

    // In `ask` mode every MCP tool prompts, named by its wire name, with the server's claims.
    let prompt = tmux.wait_for("splice", "Permission needed");
    assert!(prompt.contains(wire), "{prompt}");
    assert!(
        prompt.contains(&format!("{wire}  read")),
        "readOnlyHint makes it a read:\n{prompt}"
    );
    let prompt = tmux.wait_for("splice", "y allow once");
    // A tool call of a server, not a shell command; the call's cell waits, not runs.
    assert!(
        prompt.contains("trigger-long-running-operation  of MCP server everything"),
        "{prompt}"
    );
    assert!(!prompt.contains(&format!("$ {wire}")), "{prompt}");
    assert!(prompt.contains("waiting for your approval"), "{prompt}");
    tmux.keys("splice", &["y"]);
    // The server's progress notifications (a fraction, no stage) show in the call's cell.
    let running = tmux.wait_until("splice", "a progress report in the cell", |s| {
        s.contains("running… 33%") || s.contains("running… 67%")
    });
    assert!(running.contains(wire), "{running}");
    let done = tmux.wait_for("splice", "✓ done");
    assert!(done.contains("Long running operation completed"), "{done}");
    assert!(done.contains("The operation finished."), "{done}");
    let after = quit(&tmux);
    assert!(after.contains("SPLICE_EXIT=0"), "{after}");
}

#[test]
fn an_approval_that_cannot_be_saved_is_a_warning_and_the_server_still_starts_this_session() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started");
    project_servers(
        &sandbox,
        serde_json::json!({"marker": {
            "command": "sh",
            "args": ["-c", format!("touch '{}'", marker.display())]
        }}),
    );
    // A directory where the approvals file goes: the write's rename fails (even for root).
    let blocker = sandbox.data.join("mcp-approvals.json");
    std::fs::create_dir_all(blocker.join("in-the-way")).expect("create in-the-way");
    let provider = FakeProvider::start(vec![]);
    let tmux = Tmux::new("mcp-unsaved");
    tmux.start(
        "splice",
        (120, 40),
        &splice_shell(&sandbox, &provider.url, sandbox.dir.path(), ""),
    );
    tmux.wait_for("splice", "y/a approve and start");
    tmux.keys("splice", &["y"]);
    tmux.wait_for("splice", "approval of MCP server `marker` not saved");
    // Approved for this session all the same: it ran (and, speaking no MCP, failed).
    tmux.wait_for("splice", "MCP server `marker` failed");
    assert!(marker.exists(), "the approved server did not start");
    assert!(blocker.is_dir(), "the approvals path was replaced");
    let after = quit(&tmux);
    assert!(after.contains("SPLICE_EXIT=0"), "{after}");
}

/// The parent pid of a live process, from `/proc/<pid>/stat` (the field after the state).
fn parent_of(pid: &str) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    let (_, rest) = stat.rsplit_once(')').unwrap_or_else(|| panic!("{stat}"));
    rest.split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{stat}"))
}

#[test]
fn sigterm_to_the_tui_ends_its_servers_before_it_exits() {
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("server.pid");
    let (node, args) = support::mcp::everything_command();
    let command = format!(
        "echo $$ > '{}'; exec '{node}' '{}'",
        pid_file.display(),
        args.join("' '")
    );
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        serde_json::json!({"mcpServers": {"everything": {"command": "sh", "args": ["-c", command]}}})
            .to_string(),
    )
    .expect("write config.json");
    let provider = FakeProvider::start(vec![]);
    let tmux = Tmux::new("mcp-sigterm");
    tmux.start(
        "splice",
        (120, 40),
        &splice_shell(&sandbox, &provider.url, sandbox.dir.path(), ""),
    );
    tmux.wait_for("splice", "Type a request");
    tmux.type_text("splice", "/mcp");
    tmux.keys("splice", &["Enter"]);
    tmux.wait_for("splice", "mcp__everything__get-sum");
    let pid = std::fs::read_to_string(&pid_file).expect("read pid_file");
    let pid = pid.trim().to_string();
    // The server runs under its supervisor, Splice's own child: the signal goes to Splice only.
    let supervisor = parent_of(&pid);
    let splice = parent_of(&supervisor.to_string());
    let splice = rustix::process::Pid::from_raw(splice).unwrap_or_else(|| panic!("pid {splice}"));
    rustix::process::kill_process(splice, rustix::process::Signal::TERM).expect("signal splice");
    tmux.wait_for("splice", "SPLICE_EXIT=");
    assert!(!alive(&pid), "server {pid} outlived the TUI");
}
