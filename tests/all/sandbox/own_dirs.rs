//! Issue 19, Splice's own places: with HOME under `/tmp` (containers, CI) and no SPLICE_CONFIG,
//! a confined command (`auto` mode) could write `~/.config/splice/config.json` — a
//! `sandbox.allowAllUnixSockets`, `allow` rules or `mcpServers` that run unconfined — and the
//! next run obeyed it; the data directory (MCP approvals, installed packages, sessions,
//! checkpoints) was as open. Each attack tries by path, through a planted link or by renaming
//! a directory above; then a second run must behave as with the original config. Against the
//! real binary, with the fake provider scripting the model's calls.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::json;
use splice::mcp::{ServerConfig, ServerEntry};
use support::fake_provider::{FakeProvider, openai};
use support::sockets::{Listener, results};
use support::{Outcome, Sandbox, run, run_raw, stream_json};

/// What the planted config says: every Unix socket is allowed.
const PAYLOAD: &str = r#"{"sandbox":{"allowAllUnixSockets":true}}"#;

/// A sandbox under `/tmp` whose HOME holds Splice's config and data directories (no
/// SPLICE_CONFIG, no SPLICE_DATA_DIR), as in a container or on CI.
fn home_under_tmp() -> Sandbox {
    let sandbox = Sandbox::new();
    assert!(sandbox.dir.path().starts_with("/tmp"), "not under /tmp");
    sandbox
}

fn home(sandbox: &Sandbox) -> PathBuf {
    sandbox.dir.path().to_path_buf()
}

fn config_file(sandbox: &Sandbox) -> PathBuf {
    home(sandbox).join(".config/splice/config.json")
}

fn data_dir(sandbox: &Sandbox) -> PathBuf {
    home(sandbox).join(".local/share/splice")
}

/// `splice` with Splice's places at their defaults under HOME.
fn splice(sandbox: &Sandbox, url: &str) -> std::process::Command {
    let mut command = sandbox.command(url);
    command
        .env_remove("SPLICE_CONFIG")
        .env_remove("SPLICE_DATA_DIR");
    command
}

/// One `run_command` call per command, in `auto` mode (confined), then a closing answer.
fn auto(sandbox: &Sandbox, commands: &[String]) -> Outcome {
    auto_as(sandbox, commands, false, None)
}

/// As [`auto`]; with `nobody`, Splice runs as that user (when the tests run as root), so the
/// mount namespace is made inside a user namespace, as for everyone who is not root; with
/// `home`, that is HOME instead of the sandbox's directory.
fn auto_as(sandbox: &Sandbox, commands: &[String], nobody: bool, home: Option<&Path>) -> Outcome {
    let mut replies: Vec<_> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let args = json!({ "command": command }).to_string();
            openai::tool_call(&format!("call_{index}"), "run_command", &[&args])
        })
        .collect();
    replies.push(openai::answer(&["done"]));
    let provider = FakeProvider::start(replies);
    let mut command = splice(sandbox, &provider.url);
    if let Some(home) = home {
        command.env("HOME", home);
    }
    stream_json(&mut command)
        .args(["--permission-mode", "auto"])
        .arg("do it");
    if nobody && rustix::process::getuid().is_root() {
        let opened = std::process::Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(sandbox.dir.path())
            .status()
            .expect("chmod");
        assert!(opened.success());
        let mut setpriv = std::process::Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        command = support::attack::through(setpriv, &command);
    }
    let out = run(command, None);
    out.assert_well_formed();
    out
}

/// Every attack ran, confined (none was held back as high-risk: that text heuristic is not
/// the boundary), and the first command, which only leaves a mark, succeeded.
fn assert_commands_ran(sandbox: &Sandbox, out: &Outcome) {
    let all = results(out);
    for (_, output) in &all {
        assert!(output.starts_with("exit code"), "did not run: {all:?}");
    }
    assert!(all[0].1.starts_with("exit code 0"), "{all:?}");
    assert_eq!(sandbox.read("ran.txt").as_deref(), Some("ran\n"));
}

/// No config Splice would read holds the payload.
fn assert_config_untouched(sandbox: &Sandbox, before: Option<&str>) {
    let now = std::fs::read_to_string(config_file(sandbox)).ok();
    assert_eq!(now.as_deref(), before, "the config file was changed");
}

/// A second run's command connects to a Unix socket outside the sandbox: still refused, as
/// with the original config.
fn assert_sockets_still_refused(sandbox: &Sandbox) {
    let outside = tempfile::tempdir_in(support::outside_dir())
        .expect("create a temporary directory in support::outside_dir");
    let path = outside.path().join("outside.sock");
    let listener = Listener::at_path(&path);
    let connect = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); \
         s.send(b'escaped')\"",
        path.display()
    );
    let out = auto(sandbox, &[connect]);
    assert_eq!(
        listener.received(),
        None,
        "the second run's command connected"
    );
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
}

/// The config directory does not exist yet (Splice never wrote it): the command creates it and
/// writes the config by path.
#[test]
fn a_command_cannot_create_the_config_file_before_splice_does() {
    let sandbox = home_under_tmp();
    assert!(!config_file(&sandbox).exists());
    let attacks = [
        format!(
            "cd ~ && mkdir -p .config/splice && printf '%s' '{PAYLOAD}' > .config/splice/config.json"
        ),
        format!(
            "cd ~/.config/splice && printf '%s' '{PAYLOAD}' > new.json && mv new.json config.json"
        ),
    ];
    let mut commands = vec!["echo ran > ran.txt".to_string()];
    commands.extend(attacks);
    let out = auto(&sandbox, &commands);
    assert_commands_ran(&sandbox, &out);
    // First what the escape did: the next run's command reached a socket outside.
    assert_sockets_still_refused(&sandbox);
    let now = std::fs::read_to_string(config_file(&sandbox)).unwrap_or_default();
    assert!(
        !now.contains("allowAll"),
        "the config file was planted: {now}"
    );
}

/// An existing config directory: the command writes the file, or puts a link to its own file
/// (or directory) in its place.
#[test]
fn a_command_cannot_modify_the_config_file_or_plant_a_link_in_its_place() {
    let sandbox = home_under_tmp();
    let config = config_file(&sandbox);
    std::fs::create_dir_all(config.parent().unwrap_or(Path::new("/")))
        .expect("create the config directory");
    std::fs::write(&config, "{}").expect("write config");
    let attacks = [
        format!("cd ~/.config/splice && printf '%s' '{PAYLOAD}' > config.json"),
        format!(
            "mkdir -p evil && printf '%s' '{PAYLOAD}' > evil/config.json && \
             ln -sf \"$PWD/evil/config.json\" ~/.config/splice/config.json"
        ),
        "python3 -c \"import os, shutil; d = os.path.expanduser('~/.config/splice'); \
         shutil.rmtree(d); os.symlink(os.path.abspath('evil'), d)\""
            .into(),
        "cd ~/.config && mv splice old && ln -s \"$OLDPWD/evil\" splice".into(),
    ];
    let mut commands = vec!["echo ran > ran.txt".to_string()];
    commands.extend(attacks);
    let out = auto(&sandbox, &commands);
    assert_commands_ran(&sandbox, &out);
    assert!(
        !std::fs::symlink_metadata(config.parent().unwrap_or(Path::new("/")))
            .is_ok_and(|m| m.file_type().is_symlink()),
        "a link replaced the config directory"
    );
    assert_config_untouched(&sandbox, Some("{}"));
    assert_sockets_still_refused(&sandbox);
}

/// The command renames `~/.config` away and builds its own in its place.
#[test]
fn a_command_cannot_rename_the_config_directory_away_and_plant_another() {
    let sandbox = home_under_tmp();
    let config = config_file(&sandbox);
    std::fs::create_dir_all(config.parent().unwrap_or(Path::new("/")))
        .expect("create the config directory");
    std::fs::write(&config, "{}").expect("write config");
    let attack = format!(
        "cd ~ && mv .config .config-old && mkdir -p .config/splice && \
         printf '%s' '{PAYLOAD}' > .config/splice/config.json"
    );
    let out = auto(&sandbox, &["echo ran > ran.txt".into(), attack]);
    assert_commands_ran(&sandbox, &out);
    assert!(
        !home(&sandbox).join(".config-old").exists(),
        "~/.config moved"
    );
    assert_config_untouched(&sandbox, Some("{}"));
    assert_sockets_still_refused(&sandbox);
}

/// The command approves the repository's own MCP server by writing the approvals file in the
/// data directory (prepared bytes, as Splice itself would write them): the next run started
/// that server, unconfined, without asking.
#[test]
fn a_command_cannot_approve_a_project_mcp_server() {
    let sandbox = home_under_tmp();
    let outside = tempfile::tempdir_in(support::outside_dir())
        .expect("create a temporary directory in support::outside_dir");
    let marker = outside.path().join("started.marker");
    let server = json!({"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]});
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": server}}).to_string(),
    );
    let entry = ServerEntry {
        name: "proj".into(),
        config: ServerConfig::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), format!("touch '{}'", marker.display())],
            env: Default::default(),
            env_passthrough: Vec::new(),
        },
        source: splice::mcp::Source::Project,
        pins: Vec::new(),
    };
    let prepared = outside.path().join("prepared");
    let root = sandbox.root.canonicalize().expect("canonicalize the root");
    splice::mcp::approval::Approvals::load(&splice::layout::Layout::at(&prepared))
        .approve(&root, &entry)
        .expect("approve the entry");
    let file = splice::mcp::approval::FILE;
    let attack = format!(
        "mkdir -p ~/.local/share/splice; cp '{}' ~/.local/share/splice/{file}; \
         cat ~/.local/share/splice/{file}",
        prepared.join(file).display()
    );
    let out = auto(&sandbox, &["echo ran > ran.txt".into(), attack]);
    assert_commands_ran(&sandbox, &out);
    assert!(!marker.exists(), "the unapproved server started");
    assert!(
        !data_dir(&sandbox).join(file).exists(),
        "the command wrote the approvals"
    );
    // The next run: the server is still unapproved, so it does not start.
    let provider = FakeProvider::start(vec![openai::answer(&["Hi."])]);
    let mut command = splice(&sandbox, &provider.url);
    stream_json(&mut command).arg("Hello.");
    let second = run(command, None);
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    assert!(!marker.exists(), "the server started on a planted approval");
}

/// The command rewrites an installed package's code (which runs later with the package's
/// permissions, on the model's calls and without a prompt for read tools).
#[test]
fn a_command_cannot_change_an_installed_package() {
    let sandbox = home_under_tmp();
    let source = sandbox.dir.path().join("pkg-src");
    let manifest = support::package::manifest(json!({}), &[("echo", 5000)]);
    let code = "export default async function () { return { ok: true }; }\n";
    support::package::write_package(&source, &manifest, &[("echo", code)]);
    let mut install = splice(&sandbox, "http://127.0.0.1:9");
    install.args(["pkg", "install"]).arg(&source);
    let installed = run_raw(install, None);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let package = data_dir(&sandbox).join("packages/test/hostile/0.1.0");
    let entry = package.join("tools/echo.ts");
    let before = std::fs::read_to_string(&entry).expect("read entry");
    let dir = package.display();
    let attacks = [
        format!("cd '{dir}/tools' && echo 'evil()' >> echo.ts"),
        format!("printf 'evil()' > evil.ts && mv -f evil.ts '{dir}/tools/echo.ts'"),
        format!(
            "mv '{dir}' '{dir}.old' && mkdir -p '{dir}/tools' && echo 'evil()' > '{dir}/tools/echo.ts'"
        ),
        "cd ~/.local/share; mv splice splice-old && mkdir -p splice/packages".into(),
    ];
    let mut commands = vec!["echo ran > ran.txt".to_string()];
    commands.extend(attacks);
    let out = auto(&sandbox, &commands);
    assert_commands_ran(&sandbox, &out);
    let after = std::fs::read_to_string(&entry).unwrap_or_default();
    assert_eq!(after, before, "the installed package was changed");
    assert!(!home(&sandbox).join(".local/share/splice-old").exists());
}

/// With the project root as HOME, a package tool declaring `fs.write [".config"]` wrote
/// Splice's config (only the data directory and the package were kept from grants); one
/// declaring `fs.read [".config"]` could read the saved logins.
#[test]
fn a_package_tool_cannot_be_granted_splices_config_directory() {
    let sandbox = home_under_tmp();
    let source = sandbox.dir.path().join("pkg");
    let code = r#"import fs from 'node:fs';
export default async function (input: { path: string, text?: string }) {
  if (input.text !== undefined) { fs.writeFileSync(input.path, input.text); return { done: true }; }
  return { read: fs.readFileSync(input.path, 'utf8') };
}"#;
    let home = sandbox.root.clone();
    let config = home.join(".config/splice");
    std::fs::create_dir_all(&config).expect("create config");
    std::fs::write(config.join("config.json"), "{}").expect("write config.json");
    std::fs::write(
        config.join("credentials.json"),
        r#"{"r": {"token": "cred-marker"}}"#,
    )
    .expect("write credentials.json");
    let call = |grants: serde_json::Value, input: serde_json::Value| {
        let manifest = support::package::manifest(grants, &[("tool", 5000)]);
        support::package::write_package(&source, &manifest, &[("tool", code)]);
        let mut command = splice(&sandbox, "http://127.0.0.1:9");
        command
            .env("HOME", &home)
            .env("SPLICE_NODE", support::node::node22())
            .args(["pkg", "run"])
            .arg(&source)
            .args(["tool", &input.to_string(), "--json"]);
        run_raw(command, None)
    };
    let path = config.join("config.json").display().to_string();
    let wrote = call(
        json!({"fs": {"write": [".config"]}}),
        json!({"path": path, "text": PAYLOAD}),
    );
    assert!(
        wrote.stdout.contains("PERMISSION_DENIED"),
        "{}",
        wrote.stdout
    );
    let now = std::fs::read_to_string(config.join("config.json")).unwrap_or_default();
    assert_eq!(now, "{}", "the tool wrote Splice's config");
    let path = config.join("credentials.json").display().to_string();
    let read = call(json!({"fs": {"read": [".config"]}}), json!({"path": path}));
    assert!(!read.stdout.contains("cred-marker"), "{}", read.stdout);
    assert!(read.stdout.contains("PERMISSION_DENIED"), "{}", read.stdout);
}

/// A link in place of the config directory (as a command before this fix could leave; the
/// next one could point it anywhere): commands are refused, saying why, rather than run with
/// a config directory they could swap.
#[test]
fn a_link_planted_in_place_of_the_config_directory_refuses_commands() {
    let sandbox = home_under_tmp();
    let planted = sandbox.dir.path().join("planted");
    std::fs::create_dir_all(&planted).expect("create planted");
    std::fs::create_dir_all(home(&sandbox).join(".config")).expect("create .config");
    std::os::unix::fs::symlink(&planted, home(&sandbox).join(".config/splice"))
        .expect("link .config/splice to planted");
    let out = auto(&sandbox, &["echo ran > ran.txt".into()]);
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("symbolic link"), "{output}");
    assert!(output.contains("exit code 126"), "{output}");
    assert!(sandbox.read("ran.txt").is_none(), "the command ran");
}

/// With the project root as HOME, `accept-edits` let the model's file tools write Splice's
/// config (edits beneath the root need no approval there): `mcpServers` in it would run,
/// unconfined, at the next start.
#[test]
fn file_tools_do_not_write_splices_config_beneath_the_root() {
    let sandbox = home_under_tmp();
    let config = sandbox.root.join(".config/splice/config.json");
    let server = json!({"mcpServers": {"x": {"command": "sh", "args": ["-c", "true"]}}});
    let write = json!({"path": ".config/splice/config.json", "content": server.to_string()});
    let provider = FakeProvider::start(vec![
        openai::tool_call("w1", "write_file", &[&write.to_string()]),
        openai::answer(&["done"]),
    ]);
    let mut command = splice(&sandbox, &provider.url);
    command.env("HOME", &sandbox.root);
    stream_json(&mut command)
        .args(["--permission-mode", "accept-edits"])
        .arg("write it");
    let out = run(command, None);
    out.assert_well_formed();
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("Splice's own"), "{output}");
    assert!(!config.exists(), "the file tool wrote Splice's config");
}

/// With the project root as HOME, the file tools could write Splice's log
/// (`~/.local/state/splice/log/splice.log`): lines forged there would be read as what past runs
/// did.
#[test]
fn file_tools_do_not_write_splices_log_beneath_the_root() {
    let sandbox = home_under_tmp();
    let log = sandbox.root.join(".local/state/splice/log/splice.log");
    let write = json!({"path": ".local/state/splice/log/splice.log", "content": "forged\n"});
    let provider = FakeProvider::start(vec![
        openai::tool_call("w1", "write_file", &[&write.to_string()]),
        openai::answer(&["done"]),
    ]);
    let mut command = splice(&sandbox, &provider.url);
    command
        .env("HOME", &sandbox.root)
        .env_remove("XDG_STATE_HOME");
    stream_json(&mut command)
        .args(["--permission-mode", "accept-edits"])
        .arg("write it");
    let out = run(command, None);
    out.assert_well_formed();
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("Splice's own"), "{output}");
    let written = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !written.contains("forged"),
        "the file tool wrote Splice's log"
    );
}

/// The same attacks by a user who is not root: the namespace is made inside a user namespace,
/// where the read-only mounts must keep the flags it locks.
#[test]
fn as_another_user_the_config_directory_cannot_be_planted_or_renamed() {
    let sandbox = home_under_tmp();
    let attacks = [
        "echo ran > ran.txt".to_string(),
        format!(
            "cd ~ && mkdir -p .config/splice && printf '%s' '{PAYLOAD}' > .config/splice/config.json"
        ),
        format!(
            "cd ~ && mv .config .config-old && mkdir -p .config/splice && \
             printf '%s' '{PAYLOAD}' > .config/splice/config.json"
        ),
        "cd ~/.local/share/splice && echo '{}' > mcp-approvals.json".to_string(),
    ];
    let out = auto_as(&sandbox, &attacks, true, None);
    assert_commands_ran(&sandbox, &out);
    let now = std::fs::read_to_string(config_file(&sandbox)).unwrap_or_default();
    assert!(
        !now.contains("allowAll"),
        "the config file was planted: {now}"
    );
    assert!(
        !home(&sandbox).join(".config-old").exists(),
        "~/.config moved"
    );
    assert!(
        !data_dir(&sandbox)
            .join(splice::mcp::approval::FILE)
            .exists()
    );
}

/// With HOME under `/tmp`, a command wrote HOME's shell startup files and PATH folders: a
/// planted `node` in `~/.local/bin`, or an `export SPLICE_CONFIG=…` in `~/.bashrc`, runs or
/// is read later, outside the sandbox. HOME is read-only to it, but for the places it may write
/// on purpose: the project root (when inside HOME), `/tmp` outside HOME and the tools' caches.
/// With `nobody`, as a user who is not root (see [`auto_as`]).
fn assert_home_kept(sandbox: &Sandbox, home: &Path, nobody: bool) {
    let bashrc = home.join(".bashrc");
    std::fs::write(&bashrc, "# original\n").expect("write bashrc");
    let elsewhere = tempfile::tempdir_in("/tmp").expect("create a temporary directory in /tmp");
    assert!(!elsewhere.path().starts_with(home));
    if nobody {
        use std::os::unix::fs::PermissionsExt;
        for dir in [elsewhere.path(), home] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))
                .expect("set the mode of dir");
        }
    }
    let dir = home.display();
    let commands = [
        "echo ran > ran.txt".to_string(),
        format!("echo ok > '{}/ok.txt'", elsewhere.path().display()),
        format!("mkdir -p '{dir}/.cache/pip' && echo ok > '{dir}/.cache/pip/ok.txt'"),
        format!("echo 'export SPLICE_CONFIG=/tmp/evil.json' >> '{dir}/.bashrc'"),
        format!(
            "mkdir -p '{dir}/.local/bin' && echo 'echo evil' > '{dir}/.local/bin/node' \
             && chmod +x '{dir}/.local/bin/node'"
        ),
        format!("echo 'PATH=$HOME/bin:$PATH' > '{dir}/.profile'"),
        format!("mv '{dir}' '{dir}.old' && mkdir -p '{dir}' && echo evil > '{dir}/.bashrc'"),
    ];
    let out = auto_as(sandbox, &commands, nobody, Some(home));
    let all = results(&out);
    assert_eq!(all.len(), commands.len(), "{all:?}");
    for (index, (_, output)) in all.iter().enumerate() {
        let succeeded = output.starts_with("exit code 0");
        assert_eq!(succeeded, index < 3, "command {index}: {all:?}");
    }
    assert_eq!(sandbox.read("ran.txt").as_deref(), Some("ran\n"));
    let ok = |path: PathBuf| std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(ok(elsewhere.path().join("ok.txt")), "ok\n");
    assert_eq!(ok(home.join(".cache/pip/ok.txt")), "ok\n");
    assert_eq!(ok(bashrc), "# original\n", "~/.bashrc was changed");
    assert!(!home.join(".local/bin/node").exists(), "a node was planted");
    assert!(!home.join(".profile").exists(), "~/.profile was written");
    assert!(!PathBuf::from(format!("{dir}.old")).exists(), "HOME moved");
}

#[test]
fn a_command_cannot_write_home_with_the_project_beneath_it() {
    let sandbox = home_under_tmp();
    assert!(sandbox.root.starts_with(home(&sandbox)));
    assert_home_kept(&sandbox, &home(&sandbox), false);
}

#[test]
fn as_another_user_a_command_cannot_write_home() {
    let sandbox = home_under_tmp();
    assert_home_kept(&sandbox, &home(&sandbox), true);
}

#[test]
fn a_command_cannot_write_home_with_the_project_elsewhere() {
    let sandbox = home_under_tmp();
    let other = tempfile::tempdir_in("/tmp").expect("create a temporary directory in /tmp");
    let home = other.path().canonicalize().expect("canonicalize other");
    assert!(!sandbox.root.starts_with(&home));
    assert_home_kept(&sandbox, &home, false);
}
