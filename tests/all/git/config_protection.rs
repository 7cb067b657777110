//! Attacks on Splice's own git calls, on `splice restore` and on the `.git` protection, each
//! scripted as a hostile model would script it and shown harmless against the real binary.
//!
//! Hooks record that they ran in a directory outside both the working root and the sandbox's
//! writable set (the test target's tmp dir, not /tmp), so only an unconfined process can leave
//! a marker there.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::fake_provider::openai::call_json as call;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::process::{Running, Start};
use support::{Outcome, Sandbox, git, outside_dir, run, stream_json};

const BUGGY: &str = "def add(a, b):\n    return a - b\n";

const FIXED: &str = "def add(a, b):\n    return a + b\n";

/// Hook kinds and what each does besides leaving its marker: what git needs to carry on.
const HOOKS: &[(&str, &str)] = &[
    ("ext", "exit 0"),
    ("fsm", "exit 1"),
    ("clean", "cat"),
    ("tc", "cat \"$1\""),
    ("merge", "exit 0"),
    ("hook", "exit 0"),
];

/// A directory outside the root and outside what a sandboxed command may write, holding one
/// script per hook kind; each leaves `ran-<kind>` next to it when run.
struct Outside {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::Builder::new()
            .prefix("attack-git")
            .tempdir_in(support::outside_dir())
            .expect("create a directory outside the root");
        let path = dir.path().canonicalize().expect("canonicalize dir");
        for (kind, tail) in HOOKS {
            let script = path.join(format!("{kind}.sh"));
            let text = format!("#!/bin/sh\ntouch '{}/ran-{kind}'\n{tail}\n", path.display());
            std::fs::write(&script, text).expect("write script");
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(&script, mode).expect("set the mode of script");
        }
        Outside { _dir: dir, path }
    }

    fn script(&self, kind: &str) -> String {
        self.path.join(format!("{kind}.sh")).display().to_string()
    }

    /// The hooks that ran.
    fn ran(&self) -> Vec<String> {
        let mut ran: Vec<String> = std::fs::read_dir(&self.path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("ran-"))
            .collect();
        ran.sort();
        ran
    }
}

fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", BUGGY);
    support::commit_all(&sandbox.root);
    sandbox
}

/// A run_command that plants, in the repository's (common) git dir, every kind of
/// configuration that makes git run a program.
fn plant(outside: &Outside) -> String {
    format!(
        concat!(
            "g=$(git rev-parse --path-format=absolute --git-common-dir) && ",
            "git config diff.external {ext} && git config core.fsmonitor {fsm} && ",
            "git config filter.evil.clean {clean} && git config filter.evil.smudge {clean} && ",
            "git config diff.tc.textconv {tc} && git config merge.evil.driver {merge} && ",
            "printf '* filter=evil diff=tc merge=evil\\n' > \"$g/info/attributes\" && ",
            "for h in post-checkout pre-commit post-commit post-merge pre-merge-commit ",
            "reference-transaction post-index-change prepare-commit-msg commit-msg; ",
            "do cp {hook} \"$g/hooks/$h\"; done"
        ),
        ext = outside.script("ext"),
        fsm = outside.script("fsm"),
        clean = outside.script("clean"),
        tc = outside.script("tc"),
        merge = outside.script("merge"),
        hook = outside.script("hook"),
    )
}

/// A standard-tier run in `auto` mode whose code writer first runs `command` (sandboxed).
fn standard_run(sandbox: &Sandbox, command: &str, extra: &[&str]) -> (Outcome, FakeProvider) {
    let provider = FakeProvider::start(vec![
        call("c1", "run_command", json!({ "command": command })),
        call(
            "cw",
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        ),
        call(
            "av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["fixed"]}),
        ),
    ]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
    ]);
    splice.args(extra).arg("Fix add");
    let out = run(splice, None);
    out.assert_well_formed();
    (out, provider)
}

fn command_output(out: &Outcome) -> String {
    out.of_type("tool_result")
        .first()
        .and_then(|r| r["output"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn planted_git_config_does_not_run_in_the_reviewing_diff() {
    let outside = Outside::new();
    let sandbox = project();
    let config_before = sandbox.read(".git/config");
    let (out, provider) = standard_run(&sandbox, &plant(&outside), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(
        out.of_type("tool_result")[0]["status"],
        "ok",
        "{}",
        command_output(&out)
    );
    assert_eq!(outside.ran(), Vec::<String>::new(), "hooks ran unconfined");
    // The verifier still saw the change, through the neutralised filters and drivers.
    let verifier = provider.requests()[2].body.to_string();
    assert!(verifier.contains("return a + b"), "{verifier}");
    assert!(verifier.contains("return a - b"), "{verifier}");
    // And the user's repository does not keep what the run planted, so their next git
    // command fires nothing either.
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "git_config_restored")
        .unwrap_or_else(|| panic!("no git_config_restored warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("config") && message.contains("hooks/pre-commit"),
        "{message}"
    );
    assert_eq!(sandbox.read(".git/config"), config_before);
    assert!(!sandbox.root.join(".git/info/attributes").exists());
    assert!(!sandbox.root.join(".git/hooks/pre-commit").exists());
    git(&sandbox.root, &["status"]);
    git(&sandbox.root, &["diff", "HEAD"]);
    assert_eq!(outside.ran(), Vec::<String>::new());
    let types = out.types();
    assert_eq!(&types[types.len() - 2..], ["final", "run_end"]);
}

#[test]
fn worktree_run_neither_runs_nor_keeps_planted_git_config() {
    let outside = Outside::new();
    let sandbox = project();
    let git_dir = sandbox.root.join(".git");
    let hooks_before = listing(&git_dir.join("hooks"));
    // The common dir's config and hooks are out of the worktree's commands' reach; the
    // worktree's own repository's are not (its config, hooks, `config.worktree`), and what they
    // plant there is put back before Splice commits or a person runs git in the kept worktree.
    git(
        &sandbox.root,
        &["config", "extensions.worktreeConfig", "true"],
    );
    let config_before = std::fs::read(git_dir.join("config")).expect("read config");
    let command = format!(
        "{}; p=$(git rev-parse --path-format=absolute --git-dir) && \
         printf '[core]\\n\\tfsmonitor = {}\\n' > \"$p/config.worktree\"",
        plant(&outside),
        outside.script("fsm")
    );
    let (out, _) = standard_run(&sandbox, &command, &["--worktree", "--merge-back"]);
    assert_eq!(
        out.of_type("tool_result")[0]["status"],
        "ok",
        "{}",
        command_output(&out)
    );
    assert_eq!(outside.ran(), Vec::<String>::new(), "hooks ran unconfined");
    assert_eq!(
        std::fs::read(git_dir.join("config")).ok(),
        Some(config_before),
        "the user's .git/config was left changed"
    );
    assert_eq!(listing(&git_dir.join("hooks")), hooks_before);
    assert!(!git_dir.join("info/attributes").exists());
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "git_config_restored")
        .unwrap_or_else(|| panic!("no git_config_restored warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(message.contains("config.worktree"), "{message}");
    // Fail closed: a run that tampered with the repository is not merged.
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
    let run_id = out.lines[0]["runId"].as_str().unwrap_or_default();
    assert!(
        git(&sandbox.root, &["branch", "--list", "splice/*"]).contains(run_id),
        "the branch is kept for the user to inspect"
    );
    // Running git by hand in the source afterwards fires nothing either.
    git(&sandbox.root, &["status"]);
    git(&sandbox.root, &["diff", &format!("splice/{run_id}")]);
    assert_eq!(outside.ran(), Vec::<String>::new());
    // Nor in the kept worktree, whose own git dir is as Splice made it.
    let own = sandbox.data.join("worktrees").join(format!("{run_id}.git"));
    let own_config = std::fs::read_to_string(own.join("config")).unwrap_or_default();
    assert!(
        !own_config.contains("fsmonitor") && !own_config.contains("evil"),
        "{own_config}"
    );
    assert!(!own.join("hooks/pre-commit").exists());
    assert!(!own.join("config.worktree").exists());
    let kept = sandbox.data.join("worktrees").join(run_id);
    std::fs::write(kept.join("calc.py"), "changed\n").expect("write calc.py");
    git(&kept, &["status"]);
    git(&kept, &["diff"]);
    assert_eq!(outside.ran(), Vec::<String>::new());
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    found.sort();
    found
}

/// A light run in `accept-edits` mode making `calls` (all file tools), then answering.
fn file_run(sandbox: &Sandbox, calls: Vec<Reply>) -> Outcome {
    let mut replies = calls;
    replies.push(openai::answer(&["done"]));
    let provider = FakeProvider::start(replies);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice).args(["--tier", "light", "--permission-mode", "accept-edits", "go"]);
    let out = run(splice, None);
    out.assert_well_formed();
    out
}

fn restore(sandbox: &Sandbox, home: &Path, run_id: &str, force: bool) -> Outcome {
    let mut splice = sandbox.command("http://127.0.0.1:9");
    splice.env("HOME", home).args(["restore", run_id]);
    if force {
        splice.arg("--force");
    }
    let out = run(splice, None);
    out.assert_well_formed();
    out
}

fn run_id(out: &Outcome) -> String {
    out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Replace directory `d` of the root by a symlink to `target`.
fn swap_for_link(sandbox: &Sandbox, name: &str, target: &Path) {
    std::fs::remove_dir_all(sandbox.root.join(name)).expect("remove name");
    std::os::unix::fs::symlink(target, sandbox.root.join(name)).expect("link name to target");
}

#[test]
fn restore_does_not_follow_a_swapped_in_link_out_of_the_root() {
    let home = Outside::new();
    let sandbox = Sandbox::new();
    sandbox.write("d/kept.txt", "old\n");
    let out = file_run(
        &sandbox,
        vec![
            call(
                "w1",
                "write_file",
                json!({"path": "d/notes.txt", "content": "notes\n"}),
            ),
            call(
                "w2",
                "write_file",
                json!({"path": "d/kept.txt", "content": "new\n"}),
            ),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // A command swaps `d` for a link to $HOME, where files of the same names live.
    swap_for_link(&sandbox, "d", &home.path);
    std::fs::write(home.path.join("notes.txt"), "notes\n").expect("write notes.txt");
    std::fs::write(home.path.join("kept.txt"), "new\n").expect("write kept.txt");
    let id = run_id(&out);

    for force in [false, true] {
        let undo = restore(&sandbox, &home.path, &id, force);
        assert_eq!(undo.code, 1, "{}", undo.stdout);
        assert_eq!(undo.first("warning")["code"], "restore_skipped");
        let message = undo.first("warning")["message"].as_str().unwrap_or("");
        assert!(message.contains("outside the working root"), "{message}");
        let skipped: Vec<Value> = undo
            .of_type("restore")
            .iter()
            .flat_map(|r| {
                r["checkpoint"]["skipped"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(skipped.len(), 2, "{}", undo.stdout);
        assert_eq!(
            std::fs::read_to_string(home.path.join("notes.txt"))
                .ok()
                .as_deref(),
            Some("notes\n"),
            "restore deleted a file outside the root (force: {force})"
        );
        assert_eq!(
            std::fs::read_to_string(home.path.join("kept.txt"))
                .ok()
                .as_deref(),
            Some("new\n"),
            "restore overwrote a file outside the root (force: {force})"
        );
    }
}

/// A repository whose committed symlinks lead into `.git`: a directory link, a link to the
/// hooks directory and a link to the config file itself.
fn linked_repo() -> Sandbox {
    let sandbox = project();
    std::fs::create_dir_all(sandbox.root.join("docs")).expect("create docs");
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(target, sandbox.root.join(name)).expect("link name to target")
    };
    link("../.git", "docs/internals");
    link(".git/hooks", "h");
    link(".git/config", "cfg");
    link(".git/hooks/pre-commit", "pc");
    git(&sandbox.root, &["add", "-A"]);
    git(&sandbox.root, &["commit", "-q", "-m", "links"]);
    sandbox
}

#[test]
fn file_tools_do_not_write_into_git_through_symlinks() {
    let sandbox = linked_repo();
    let config = sandbox.read(".git/config").unwrap_or_default();
    let hook = "[core]\n\tfsmonitor = /tmp/evil.sh\n";
    let out = file_run(
        &sandbox,
        vec![
            call(
                "e1",
                "edit_file",
                json!({"path": "docs/internals/config", "old_string": "[core]", "new_string": hook}),
            ),
            call(
                "w1",
                "write_file",
                json!({"path": "h/post-checkout", "content": "#!/bin/sh\n"}),
            ),
            call("w2", "write_file", json!({"path": "cfg", "content": hook})),
            call(
                "w3",
                "write_file",
                json!({"path": "pc", "content": "#!/bin/sh\n"}),
            ),
            call(
                "w4",
                "write_file",
                json!({"path": "docs/internals/hooks/new", "content": "x"}),
            ),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 5);
    for result in &results {
        assert_eq!(result["status"], "blocked", "{result}");
    }
    let kinds: Vec<&Value> = out
        .of_type("permission")
        .iter()
        .map(|p| &p["block"]["kind"])
        .collect();
    assert_eq!(kinds, vec![&json!("protected_path"); 5]);
    assert_eq!(sandbox.read(".git/config"), Some(config));
    assert!(!sandbox.root.join(".git/hooks/post-checkout").exists());
    assert!(!sandbox.root.join(".git/hooks/pre-commit").exists());
    assert!(!sandbox.root.join(".git/hooks/new").exists());
}

#[test]
fn submissions_do_not_write_into_git_through_symlinks() {
    let sandbox = linked_repo();
    let config = sandbox.read(".git/config").unwrap_or_default();
    let provider = FakeProvider::start(vec![call(
        "cw",
        "submit_code",
        json!({"files": [{"path": "docs/internals/config", "content": "[core]\n\tfsmonitor = /tmp/evil.sh\n"}], "summary": "x"}),
    )]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        "true",
        "Fix add",
    ]);
    let out = run(splice, None);
    out.assert_well_formed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(sandbox.read(".git/config"), Some(config));
    assert!(out.stdout.contains("inside .git"), "{}", out.stdout);
}

#[test]
fn restore_does_not_write_into_git_through_a_swapped_in_link() {
    let sandbox = project();
    let config = sandbox.read(".git/config").unwrap_or_default();
    let out = file_run(
        &sandbox,
        vec![
            call(
                "w1",
                "write_file",
                json!({"path": "d/config", "content": "mine\n"}),
            ),
            call(
                "w2",
                "write_file",
                json!({"path": "e/HEAD", "content": "mine\n"}),
            ),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // A command swaps `d` for a link into .git: restoring would delete .git/config.
    swap_for_link(&sandbox, "d", Path::new(".git"));
    swap_for_link(&sandbox, "e", Path::new(".git"));
    let undo = restore(&sandbox, sandbox.dir.path(), &run_id(&out), true);
    assert_eq!(undo.code, 1, "{}", undo.stdout);
    assert_eq!(undo.first("warning")["code"], "restore_skipped");
    assert_eq!(sandbox.read(".git/config"), Some(config));
    assert!(sandbox.root.join(".git/HEAD").exists());
}

#[test]
fn an_interrupted_run_still_puts_back_the_git_config() {
    let outside = Outside::new();
    let sandbox = project();
    let config_before = sandbox.read(".git/config");
    let command = format!(
        "git config core.fsmonitor {} && sleep 30",
        outside.script("fsm")
    );
    let provider = FakeProvider::start(vec![call(
        "c1",
        "run_command",
        json!({ "command": command }),
    )]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice).args(["--tier", "light", "--permission-mode", "auto", "go"]);
    let config = sandbox.root.join(".git/config");
    let planted = || std::fs::read_to_string(&config).is_ok_and(|text| text.contains("fsmonitor"));
    let out = support::run_and_signal(splice, "INT", |_| planted());
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stdout);
    assert_eq!(sandbox.read(".git/config"), config_before);
    let types = out.types();
    let restored = types.iter().position(|t| t == "warning");
    let last_final = types.iter().position(|t| t == "final");
    assert!(restored.is_some() && restored < last_final, "{types:?}");
    assert_eq!(out.first("warning")["code"], "git_config_restored");
    git(&sandbox.root, &["status"]);
    assert_eq!(outside.ran(), Vec::<String>::new());
}

#[test]
fn restore_does_not_hang_on_a_fifo_swapped_in() {
    let sandbox = Sandbox::new();
    let out = file_run(
        &sandbox,
        vec![call(
            "w1",
            "write_file",
            json!({"path": "f.txt", "content": "mine\n"}),
        )],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let fifo = sandbox.root.join("f.txt");
    std::fs::remove_file(&fifo).expect("remove fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let undo = restore(&sandbox, sandbox.dir.path(), &run_id(&out), false);
    assert_eq!(undo.code, 1, "{}", undo.stdout);
    assert_eq!(undo.first("warning")["code"], "restore_skipped");
    assert_eq!(
        undo.first("restore")["checkpoint"]["skipped"],
        json!(["f.txt"])
    );
}

#[test]
fn worktree_refuses_a_repository_whose_own_config_defines_filters() {
    let outside = Outside::new();
    let sandbox = project();
    sandbox.write(".gitattributes", "*.py filter=crypt\n");
    git(&sandbox.root, &["add", "-A"]);
    git(&sandbox.root, &["commit", "-q", "-m", "attributes"]);
    git(
        &sandbox.root,
        &["config", "filter.crypt.smudge", &outside.script("clean")],
    );
    git(
        &sandbox.root,
        &["config", "filter.crypt.clean", &outside.script("clean")],
    );
    let provider = FakeProvider::start(vec![openai::answer(&["done"])]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice).args(["--tier", "light", "--worktree", "look"]);
    let out = run(splice, None);
    out.assert_well_formed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    let message = out.first("error")["message"].as_str().unwrap_or_default();
    assert!(message.contains("filter driver(s) crypt"), "{message}");
    assert_eq!(
        outside.ran(),
        Vec::<String>::new(),
        "a filter ran unconfined"
    );
    assert_eq!(
        provider.remaining(),
        1,
        "the run went on without its worktree"
    );
}

#[test]
fn the_reviewing_diff_reads_new_files_beneath_the_root_only() {
    let home = Outside::new();
    std::fs::write(home.path.join("secret.txt"), "hunter2-private-key\n")
        .expect("write secret.txt");
    let sandbox = project();
    let provider = FakeProvider::start(vec![
        call(
            "c1",
            "run_command",
            json!({"command": "ln -s \"$HOME/secret.txt\" leak.txt && mkfifo pipe && ln -s pipe pipe.txt"}),
        ),
        call(
            "cw",
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        ),
        call(
            "av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["fixed"]}),
        ),
    ]);
    let mut splice = sandbox.command(&provider.url);
    splice.env("HOME", &home.path);
    stream_json(&mut splice).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
        "Fix add",
    ]);
    let out = run(splice, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.of_type("tool_result")[0]["status"],
        "ok",
        "{}",
        out.stdout
    );
    let verifier = provider.requests()[2].body.to_string();
    assert!(verifier.contains("return a + b"), "{verifier}");
    assert!(verifier.contains("new file leak.txt"), "{verifier}");
    assert!(
        !verifier.contains("hunter2"),
        "a file outside the root reached the model"
    );
}

/// File tools refused writes inside anything shaped like a git dir (`HEAD`, `objects/`,
/// `refs/`), judged on what the directory held before the write. So a model wrote the config
/// first, into a plain directory, then the pieces that make it a git dir; the last write was
/// refused only after it had created its directory. The user's next `git -C vendor/x status`
/// ran the planted fsmonitor hook. Each order of the pieces is tried.
#[test]
fn file_tools_cannot_assemble_a_git_dir_around_a_planted_config() {
    for (n, order) in [
        ["HEAD", "objects/info/keep", "refs/heads/keep"],
        ["objects/info/keep", "refs/heads/keep", "HEAD"],
        ["refs/heads/keep", "HEAD", "objects/info/keep"],
    ]
    .iter()
    .enumerate()
    {
        let home = Sandbox::new_in(&outside_dir());
        support::git(&home.root, &["init", "-q"]);
        let marker = home.dir.path().join("hook-ran");
        let config = format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\
             \tfsmonitor = \"touch '{}'; false\"\n",
            marker.display()
        );
        let mut replies = vec![openai::tool_call(
            "call_0",
            "write_file",
            &[&json!({"path": "vendor/x/config", "content": config}).to_string()],
        )];
        for (i, piece) in order.iter().enumerate() {
            let content = if *piece == "HEAD" {
                "ref: refs/heads/main\n"
            } else {
                ""
            };
            replies.push(openai::tool_call(
                &format!("call_{}", i + 1),
                "write_file",
                &[&json!({"path": format!("vendor/x/{piece}"), "content": content}).to_string()],
            ));
        }
        replies.push(openai::answer(&["done"]));
        let provider = FakeProvider::start(replies);
        let mut splice = home.command(&provider.url);
        stream_json(&mut splice)
            .args(["--permission-mode", "accept-edits"])
            .arg("do it");
        let out = support::run(splice, None);
        assert_eq!(out.code, 0, "#{n}: {}", out.stdout);
        let refused = out
            .of_type("tool_result")
            .iter()
            .filter(|r| r["output"].as_str().is_some_and(|o| o.contains(".git")))
            .count();
        assert!(refused >= 1, "#{n}: no write was refused: {}", out.stdout);
        // The user, later, in the directory the model filled.
        // (Its exit status does not matter: only whether it ran the hook.)
        let _ = Command::new("git")
            .args(["-C", "vendor/x", "status"])
            .current_dir(&home.root)
            .output()
            .expect("git");
        assert!(
            !marker.exists(),
            "#{n}: git ran the planted hook; vendor/x holds {:?}",
            std::fs::read_dir(home.root.join("vendor/x"))
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
                .unwrap_or_default()
        );
    }
}

/// A confined command may hard-link a file the run wrote to `.git/config` (the link leaves
/// the config's content alone, so the end-of-run check of the git dir finds nothing to put
/// back). `splice restore --force` then wrote the file's earlier content, a config the
/// repository had planted, through the link into `.git/config`: the next `git status` ran
/// its fsmonitor hook.
#[test]
fn restore_does_not_write_through_a_hard_link_into_the_git_dir() {
    let home = Sandbox::new_in(&outside_dir());
    support::git(&home.root, &["init", "-q"]);
    let marker = home.dir.path().join("hook-ran");
    home.write(
        "notes.txt",
        &format!(
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch '{}'; false\"\n",
            marker.display()
        ),
    );
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "write_file",
            &[&json!({"path": "notes.txt", "content": "benign\n"}).to_string()],
        ),
        openai::tool_call(
            "call_2",
            "run_command",
            &[&json!({"command": "rm notes.txt && ln .git/config notes.txt"}).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut splice = home.command(&provider.url);
    stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("do it");
    let out = support::run(splice, None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let results: Vec<&str> = out
        .of_type("tool_result")
        .iter()
        .filter_map(|r| r["status"].as_str())
        .collect();
    assert_eq!(results, ["ok", "ok"], "{}", out.stdout);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let mut undo = home.command("http://127.0.0.1:9");
    undo.args(["restore", &run_id, "--force"]);
    let undone = support::run(undo, None);
    let config = std::fs::read_to_string(home.root.join(".git/config")).unwrap_or_default();
    assert!(
        !config.contains("fsmonitor"),
        "restore wrote into .git/config: {config}\n{}",
        undone.stdout
    );
    let _ = Command::new("git")
        .arg("status")
        .current_dir(&home.root)
        .output()
        .expect("git");
    assert!(!marker.exists(), "git ran the planted hook");
    assert_eq!(
        undone.first("warning")["code"],
        "restore_skipped",
        "{}",
        undone.stdout
    );
}

/// Wait for `child` at most 30 s (a liveness bound: the run takes well under a second when
/// nothing hangs); one that does not exit is killed and fails the test.
fn finish_within(mut child: Running, what: &str) -> support::Outcome {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if child.try_wait().expect("poll child").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: splice did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    support::parse(child.wait_with_output().expect("wait"))
}

/// At the end of a run Splice reads back `.git/hooks` and `info/` to put them back as they
/// were; a FIFO a command left there was read like a file, and the read never returned.
#[test]
fn a_fifo_planted_in_the_git_dir_does_not_hang_the_end_of_the_run() {
    let home = Sandbox::new_in(&outside_dir());
    support::git(&home.root, &["init", "-q"]);
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[
                &json!({"command": "mkdir -p .git/hooks && mkfifo .git/hooks/pre-commit"})
                    .to_string(),
            ],
        ),
        openai::answer(&["done"]),
    ]);
    let mut splice = home.command(&provider.url);
    stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("do it")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = splice.start().expect("start splice");
    let out = finish_within(child, "a FIFO in .git/hooks");
    assert_eq!(
        out.first("warning")["code"],
        "git_config_restored",
        "{}",
        out.stdout
    );
    assert!(!home.root.join(".git/hooks/pre-commit").exists());
}
