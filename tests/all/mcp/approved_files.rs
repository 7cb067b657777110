//! Attacks on an approved project server's files: the server runs as the person, outside the
//! sandbox, and its approval names its config (`node tools/server.mjs`), so the model (its
//! file tools, its confined commands) rewriting `tools/server.mjs` would run its code as the
//! person at the server's next start. The approval covers the files the config names, by
//! content; while approved they are kept from the model; one changed between sessions stops
//! the server until it is approved again. Each failed before its fix.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Outcome, Sandbox, run, stream_json};

/// `tools/server.mjs`: appends `honest` to `marker` (outside the root), then is
/// server-everything (a real MCP server speaking stdio).
fn honest_script(marker: &Path) -> String {
    script("honest", marker)
}

fn script(word: &str, marker: &Path) -> String {
    let everything = support::mcp::packages_dir().join("server-everything/dist/index.js");
    format!(
        "import fs from 'node:fs';\nfs.appendFileSync({}, '{word}\\n');\nawait import({});\n",
        json!(marker.display().to_string()),
        json!(format!("file://{}", everything.display())),
    )
}

/// The project's `.mcp.json`: server `proj` is `node tools/server.mjs stdio`, the script as
/// `honest_script`.
fn project(sandbox: &Sandbox, marker: &Path) {
    sandbox.write("tools/server.mjs", &honest_script(marker));
    let node = support::node::node22().display().to_string();
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {"command": node, "args": ["tools/server.mjs", "stdio"]}}})
            .to_string(),
    );
}

/// The person approves the project's servers as Splice reads them now (what the terminal UI
/// records when the person answers its question).
fn approve(sandbox: &Sandbox) {
    let entries = splice::mcp::load_project(&sandbox.root).expect("read .mcp.json");
    for entry in &entries {
        splice::mcp::approval::approve(
            &splice::layout::Layout::at(&sandbox.data),
            &sandbox.root,
            entry,
        )
        .expect("approve the server");
    }
}

fn exec(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--provider", "openai", "--tier", "light"])
        .args(args);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

fn warnings(out: &Outcome, code: &str) -> Vec<String> {
    out.of_type("warning")
        .iter()
        .filter(|w| w["code"] == code)
        .filter_map(|w| w["message"].as_str().map(str::to_string))
        .collect()
}

/// Whether the server's tools were offered in the provider's `n`th request.
fn offered(provider: &FakeProvider, n: usize) -> bool {
    provider.requests()[n].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| {
            let name = t["function"]["name"]
                .as_str()
                .or(t["name"].as_str())
                .unwrap_or_default();
            name.starts_with("mcp__proj__")
        })
}

/// The file tools refused `result` because an approved server runs the file.
fn refused(result: &Value) {
    assert_eq!(result["status"], "error", "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("approved hooks or MCP servers"),
        "{result}"
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The model rewrites an approved server's script with `write_file` and `edit_file`: both are
/// refused, and the next session starts the script that was approved.
#[test]
fn the_file_tools_do_not_write_the_script_an_approved_project_server_runs() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    let pwned = sandbox.dir.path().join("pwned");
    project(&sandbox, &marker);
    approve(&sandbox);
    let honest = honest_script(&marker);
    let evil = script("pwned", &pwned);
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "tools/server.mjs", "content": evil}),
        ),
        openai::call_json(
            "call_2",
            "edit_file",
            json!({"path": "./tools/../tools/server.mjs", "old_string": "honest", "new_string": "pwned"}),
        ),
        openai::answer(&["Done."]),
        openai::answer(&["Hello."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "accept-edits", "rewrite the server"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(offered(&provider, 0), "the approved server did not start");
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 2, "{}", out.stdout);
    for result in &results {
        refused(result);
    }
    assert_eq!(sandbox.read("tools/server.mjs"), Some(honest));

    // The next session starts what was approved, unasked.
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(warnings(&out, "mcp_server_unapproved").is_empty());
    assert!(
        offered(&provider, 3),
        "the approved server did not start again"
    );
    assert_eq!(read(&marker), "honest\nhonest\n");
    assert!(!pwned.exists(), "the model's script ran as the server");
}

/// The same through a confined command (`auto` mode): the script is read-only to it, however
/// it writes (redirection, a copy over it, a rename away and a new file).
#[test]
fn a_confined_command_cannot_rewrite_the_script_an_approved_project_server_runs() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    let pwned = sandbox.dir.path().join("pwned");
    project(&sandbox, &marker);
    approve(&sandbox);
    let honest = honest_script(&marker);
    sandbox.write("evil.mjs", &script("pwned", &pwned));
    let attack = "printf 'x' > tools/server.mjs; cp evil.mjs tools/server.mjs; \
                  mv tools/server.mjs tools/old.mjs; cp evil.mjs tools/server.mjs; \
                  echo attempted";
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "run_command", json!({"command": attack})),
        openai::answer(&["Done."]),
        openai::answer(&["Hello."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "auto", "rewrite the server"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(offered(&provider, 0), "the approved server did not start");
    let result = out.first("tool_result");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("attempted"),
        "the command did not run: {result}"
    );
    assert_eq!(sandbox.read("tools/server.mjs"), Some(honest));

    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        offered(&provider, 2),
        "the approved server did not start again"
    );
    assert_eq!(read(&marker), "honest\nhonest\n");
    assert!(!pwned.exists(), "the model's script ran as the server");
}

/// A script changed between sessions (by hand here, as a `git pull` of a hostile commit would):
/// the approved server does not start, a warning names the file, and it needs a new approval,
/// after which it starts the new script.
#[test]
fn a_project_server_whose_script_changed_since_its_approval_does_not_start() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    let pwned = sandbox.dir.path().join("pwned");
    project(&sandbox, &marker);
    approve(&sandbox);
    let answers: Vec<Reply> = (0..3).map(|_| openai::answer(&["Hi."])).collect();
    let provider = FakeProvider::start(answers);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(offered(&provider, 0), "the approved server did not start");
    assert_eq!(read(&marker), "honest\n");

    sandbox.write("tools/server.mjs", &script("pwned", &pwned));
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !pwned.exists(),
        "the changed script ran as the approved server"
    );
    assert!(!offered(&provider, 1));
    let warned = warnings(&out, "mcp_server_unapproved");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("`proj`")
            && warned[0].contains("tools/server.mjs")
            && warned[0].contains("changed"),
        "{warned:?}"
    );

    // Approved again as it is now: it starts.
    approve(&sandbox);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(warnings(&out, "mcp_server_unapproved").is_empty());
    assert!(offered(&provider, 2));
    assert_eq!(read(&pwned), "pwned\n");
}

/// A file the config names (here in an env value) that was absent when approved is pinned as
/// absent: one planted later stops the server.
#[test]
fn a_file_planted_where_the_config_names_an_absent_one_stops_the_server() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    let pwned = sandbox.dir.path().join("pwned");
    sandbox.write("tools/server.mjs", &honest_script(&marker));
    let node = support::node::node22().display().to_string();
    let config: Value = json!({"mcpServers": {"proj": {
        "command": node,
        "args": ["tools/server.mjs", "stdio"],
        "env": {"HOOK_FILE": "tools/preload.mjs"},
    }}});
    sandbox.write(".mcp.json", &config.to_string());
    approve(&sandbox);
    sandbox.write("tools/preload.mjs", &script("pwned", &pwned));
    let provider = FakeProvider::start(vec![openai::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!offered(&provider, 0));
    assert!(!marker.exists(), "the server started beside a planted file");
    let warned = warnings(&out, "mcp_server_unapproved").join("\n");
    assert!(warned.contains("tools/preload.mjs"), "{warned}");
}

/// A `--worktree` run starts the servers of the checkout's `.mcp.json` in the worktree, where a
/// relative script names the worktree's copy: that copy is the one that must hold what was
/// approved, and the one kept from the model.
#[test]
fn in_a_worktree_run_the_worktrees_copy_of_the_script_is_checked_and_kept() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    let pwned = sandbox.dir.path().join("pwned");
    project(&sandbox, &marker);
    support::commit_all(&sandbox.root);
    approve(&sandbox);
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "tools/server.mjs", "content": script("pwned", &pwned)}),
        ),
        openai::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &[
            "--worktree",
            "--permission-mode",
            "accept-edits",
            "rewrite the server",
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(offered(&provider, 0), "the approved server did not start");
    refused(out.first("tool_result"));
    assert_eq!(read(&marker), "honest\n");
    assert!(!pwned.exists());
}

/// A server whose command reaches its script through a `cd` in `sh -c` (`cd tools && exec
/// node ./server.mjs`): the approval covers the script it really runs, so the model's
/// `write_file` is refused, and the next session starts what was approved.
#[test]
fn a_server_script_reached_through_cd_cannot_be_rewritten() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    let pwned = sandbox.dir.path().join("pwned");
    let honest = honest_script(&marker);
    sandbox.write("tools/server.mjs", &honest);
    let node = support::node::node22().display().to_string();
    let line = format!("cd tools && exec {node} ./server.mjs stdio");
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {"command": "sh", "args": ["-c", line]}}}).to_string(),
    );
    approve(&sandbox);
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "tools/server.mjs", "content": script("pwned", &pwned)}),
        ),
        openai::answer(&["Done."]),
        openai::answer(&["Hello."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "accept-edits", "rewrite the server"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(offered(&provider, 0), "the approved server did not start");
    refused(out.first("tool_result"));
    assert_eq!(sandbox.read("tools/server.mjs"), Some(honest));

    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        offered(&provider, 2),
        "the approved server did not start again"
    );
    assert_eq!(read(&marker), "honest\nhonest\n");
    assert!(!pwned.exists(), "the model's script ran as the server");
}

/// A server whose `sh -c` script runs a file known only when it runs cannot be pinned: it does
/// not start, approved or not, and says why.
#[test]
fn a_server_that_runs_a_file_known_only_when_it_runs_does_not_start() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.txt");
    sandbox.write("tools/server.mjs", &honest_script(&marker));
    let node = support::node::node22().display().to_string();
    let line = format!("exec {node} \"$(ls tools/*.mjs | head -n 1)\" stdio");
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {"command": "sh", "args": ["-c", line]}}}).to_string(),
    );
    approve(&sandbox);
    let provider = FakeProvider::start(vec![openai::answer(&["Hello."])]);
    let out = exec(&sandbox, &provider, &["Hello."]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !offered(&provider, 0),
        "a server that cannot be pinned started"
    );
    assert!(!marker.exists(), "a server that cannot be pinned ran");
    let warned = warnings(&out, "mcp_server_failed").join("\n");
    assert!(
        warned.contains("`proj`") && warned.contains("cannot be pinned"),
        "{}",
        out.stdout
    );
}
