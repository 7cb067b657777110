//! Guard hooks written for Claude Code: they read `tool_name` and `tool_input` by Claude Code's
//! names and shapes (`Bash` {command}, `Read` {file_path} …) and answer with exit 2 or with
//! `permissionDecision: "deny"`. Each one did nothing before Splice named its tools that way:
//! the secret reached the model. Also: a submission's files are writes to `Write|Edit` hooks,
//! `PostToolUse` sees Claude Code's `tool_response`, and a project's `.claude/settings*.json`
//! hooks are project hooks.

use serde_json::{Value, json};

use super::{exec, hook, hook_events, merged, script, user_hooks, warnings};
use crate::support::fake_provider::{FakeProvider, openai};
use crate::support::fixing_run::{BUGGY, FIXED, project, submit};
use crate::support::{Sandbox, run, stream_json};

const SECRET: &str = "SECRET-TOKEN-4f1d9c";

/// A guard in the shape of published Python ones: exit 2, the reason on stderr.
const PY_GUARD: &str = r#"#!/usr/bin/env python3
import json, re, sys
data = json.load(sys.stdin)
name = data.get("tool_name", "")
tool_input = data.get("tool_input") or {}
if len(sys.argv) > 1:
    with open(sys.argv[1], "a") as log:
        log.write(json.dumps(data) + "\n")
if name == "Bash" and re.search(r"\.env\b", tool_input.get("command", "")):
    print("py-guard: commands may not touch .env", file=sys.stderr)
    sys.exit(2)
if name in ("Read", "Edit", "MultiEdit", "Write") and tool_input.get("file_path", "").endswith(".env"):
    print("py-guard: .env is off limits", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"#;

/// The same guard in Node, answering with JSON on stdout.
const NODE_GUARD: &str = r#"let raw = '';
process.stdin.on('data', (chunk) => { raw += chunk; });
process.stdin.on('end', () => {
  const { tool_name, tool_input } = JSON.parse(raw);
  let why = null;
  if (tool_name === 'Bash' && /\.env\b/.test((tool_input && tool_input.command) || '')) {
    why = 'node-guard: commands may not touch .env';
  }
  const file = (tool_input && tool_input.file_path) || '';
  if (['Read', 'Edit', 'Write'].includes(tool_name) && file.endsWith('.env')) {
    why = 'node-guard: .env is off limits';
  }
  if (why) {
    console.log(JSON.stringify({ hookSpecificOutput: {
      hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: why } }));
  } else {
    console.log('{}');
  }
});
"#;

/// Whether any request the model was sent holds `text`.
fn model_saw(provider: &FakeProvider, text: &str) -> bool {
    provider
        .requests()
        .iter()
        .any(|r| r.body.to_string().contains(text))
}

/// The model asks for `.env` with `cat` and with `read_file`, in `auto` mode (nothing but the
/// guard stands in the way); both are refused with the guard's reason, and the secret never
/// reaches the model.
fn guard_keeps_the_secret(command: &str, reason: &str) {
    let sandbox = Sandbox::new();
    sandbox.write(".env", &format!("API_KEY={SECRET}\n"));
    user_hooks(
        &sandbox,
        hook("PreToolUse", "Read|Edit|Write|Bash", command),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "run_command", json!({"command": "cat .env"})),
        openai::call_json("call_2", "read_file", json!({"path": ".env"})),
        openai::call_json("call_3", "run_command", json!({"command": "echo fine"})),
        openai::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "auto", "show me the env"],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        !model_saw(&provider, SECRET),
        "the secret reached the model"
    );
    assert!(!out.stdout.contains(SECRET), "{}", out.stdout);
    let results = out.of_type("tool_result");
    for result in &results[..2] {
        assert_eq!(result["status"], "denied", "{result}");
        let output = result["output"].as_str().unwrap_or_default();
        assert!(output.contains(reason), "{output}");
    }
    assert_eq!(results[2]["status"], "ok", "{}", results[2]);
    assert!(model_saw(&provider, reason), "the model was not told why");
}

#[test]
fn a_python_guard_on_bash_and_read_keeps_env_from_the_model_by_exit_2() {
    let sandbox = Sandbox::new();
    let guard = script(&sandbox, "guard.py", PY_GUARD);
    guard_keeps_the_secret(&guard.display().to_string(), "py-guard:");
}

#[test]
fn a_node_guard_on_bash_and_read_keeps_env_from_the_model_by_permission_decision() {
    let sandbox = Sandbox::new();
    let guard = script(&sandbox, "guard.js", NODE_GUARD);
    let node = crate::support::node::node22();
    guard_keeps_the_secret(
        &format!("{} {}", node.display(), guard.display()),
        "node-guard:",
    );
}

/// The lines of a hook's log, as JSON.
fn logged(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a hook's input"))
        .collect()
}

/// A pipeline's `submit_code` is a write of each of its files: a `Write|Edit` guard sees each
/// one (as `Write` {file_path, content}) and its deny of one keeps the whole submission from
/// being applied.
#[test]
fn a_write_guard_sees_each_file_of_a_submission_and_its_deny_holds() {
    let sandbox = project(true);
    sandbox.write(".env", &format!("API_KEY={SECRET}\n"));
    let guard = script(&sandbox, "guard.py", PY_GUARD);
    let log = sandbox.dir.path().join("writes.log");
    user_hooks(
        &sandbox,
        hook(
            "PreToolUse",
            "Write|Edit",
            &format!("{} {}", guard.display(), log.display()),
        ),
    );
    let provider = FakeProvider::start(vec![submit(
        "cw",
        "submit_code",
        json!({"files": [
            {"path": "calc.py", "content": FIXED},
            {"path": ".env", "content": "API_KEY=attacker\n"}
        ], "summary": "fix"}),
    )]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
        "--max-iterations",
        "1",
        "Fix add in calc.py",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(
        sandbox.read(".env"),
        Some(format!("API_KEY={SECRET}\n")),
        "{}",
        out.stdout
    );
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
    let seen = logged(&log);
    let files: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| {
            (
                s["tool_name"].as_str().unwrap_or_default(),
                s["tool_input"]["file_path"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let root = sandbox.root.display().to_string();
    assert_eq!(
        files,
        [
            ("Write", format!("{root}/calc.py").as_str()),
            ("Write", format!("{root}/.env").as_str())
        ],
        "{seen:?}"
    );
    assert_eq!(seen[0]["tool_input"]["content"], FIXED);
    assert_eq!(seen[0]["splice_tool_name"], "submit_code");
    let blocked = hook_events(&out, "PreToolUse");
    assert!(
        blocked.iter().any(|h| h["decision"] == "block"),
        "{blocked:?}"
    );
}

/// `PostToolUse` hooks read Claude Code's `tool_input` and `tool_response` shapes, and
/// Splice's own name and input beside them.
#[test]
fn post_tool_use_sees_claude_codes_input_and_response_shapes() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\nbeta\n");
    let logger = script(
        &sandbox,
        "log.py",
        "#!/usr/bin/env python3\nimport sys\nwith open(sys.argv[1], 'a') as log:\n    \
         log.write(sys.stdin.read().strip() + '\\n')\n",
    );
    let log = sandbox.dir.path().join("post.log");
    user_hooks(
        &sandbox,
        hook(
            "PostToolUse",
            "",
            &format!("{} {}", logger.display(), log.display()),
        ),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "run_command",
            json!({"command": "echo said-hi", "timeout_ms": 20000}),
        ),
        openai::call_json("call_2", "read_file", json!({"path": "a.txt", "offset": 2})),
        openai::call_json(
            "call_3",
            "write_file",
            json!({"path": "b.txt", "content": "one\n"}),
        ),
        openai::call_json(
            "call_4",
            "edit_file",
            json!({"path": "b.txt", "old_string": "one", "new_string": "two"}),
        ),
        openai::call_json("call_5", "list_files", json!({"glob": "*.txt"})),
        openai::call_json("call_6", "search_files", json!({"pattern": "alp"})),
        openai::answer(&["Done."]),
    ]);
    let out = exec(&sandbox, &provider, &["--permission-mode", "auto", "work"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let root = sandbox.root.display().to_string();
    let seen = logged(&log);
    let names: Vec<&str> = seen
        .iter()
        .filter_map(|s| s["tool_name"].as_str())
        .collect();
    assert_eq!(names, ["Bash", "Read", "Write", "Edit", "Glob", "Grep"]);
    let splice: Vec<&str> = seen
        .iter()
        .filter_map(|s| s["splice_tool_name"].as_str())
        .collect();
    assert_eq!(
        splice,
        [
            "run_command",
            "read_file",
            "write_file",
            "edit_file",
            "list_files",
            "search_files"
        ]
    );
    let (bash, read, write, edit, glob, grep) =
        (&seen[0], &seen[1], &seen[2], &seen[3], &seen[4], &seen[5]);
    assert_eq!(
        bash["tool_input"],
        json!({"command": "echo said-hi", "timeout": 20000})
    );
    assert_eq!(bash["splice_tool_input"]["timeout_ms"], 20000);
    assert!(
        bash["tool_response"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("said-hi"),
        "{bash}"
    );
    assert_eq!(bash["tool_response"]["interrupted"], false);
    assert_eq!(
        read["tool_input"],
        json!({"file_path": format!("{root}/a.txt"), "offset": 2})
    );
    assert_eq!(read["splice_tool_input"]["path"], "a.txt");
    assert_eq!(read["tool_response"]["type"], "text");
    assert_eq!(
        read["tool_response"]["file"]["filePath"],
        format!("{root}/a.txt")
    );
    assert!(
        read["tool_response"]["file"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("beta"),
        "{read}"
    );
    assert_eq!(read["tool_response"]["file"]["startLine"], 2);
    assert_eq!(
        write["tool_input"],
        json!({"file_path": format!("{root}/b.txt"), "content": "one\n"})
    );
    assert_eq!(write["tool_response"]["filePath"], format!("{root}/b.txt"));
    assert_eq!(write["tool_response"]["success"], true);
    assert_eq!(
        edit["tool_input"],
        json!({"file_path": format!("{root}/b.txt"), "old_string": "one", "new_string": "two"})
    );
    assert_eq!(edit["tool_response"]["filePath"], format!("{root}/b.txt"));
    assert_eq!(edit["tool_response"]["oldString"], "one");
    assert_eq!(glob["tool_input"], json!({"pattern": "*.txt"}));
    let filenames = glob["tool_response"]["filenames"].to_string();
    assert!(
        filenames.contains("a.txt") && filenames.contains("b.txt"),
        "{glob}"
    );
    assert_eq!(grep["tool_input"], json!({"pattern": "alp"}));
    assert!(
        grep["tool_response"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("alpha"),
        "{grep}"
    );
}

/// A hook's `updatedInput` in Claude Code's shape is mapped back to Splice's tool: a `Write`
/// whose `file_path` the hook changed writes there.
#[test]
fn an_updated_input_in_claude_codes_shape_is_mapped_back() {
    let sandbox = Sandbox::new();
    let redirect = script(
        &sandbox,
        "redirect.py",
        "#!/usr/bin/env python3\nimport json, sys\ndata = json.load(sys.stdin)\n\
         new = dict(data['tool_input'])\nnew['file_path'] = new['file_path'].replace('draft', 'final')\n\
         new['content'] = new['content'].upper()\n\
         print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'updatedInput': new}}))\n",
    );
    user_hooks(
        &sandbox,
        hook("PreToolUse", "Write", &redirect.display().to_string()),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "draft.txt", "content": "hello\n"}),
        ),
        openai::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "accept-edits", "write"],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.first("tool_result")["status"], "ok", "{}", out.stdout);
    assert_eq!(sandbox.read("final.txt").as_deref(), Some("HELLO\n"));
    assert_eq!(sandbox.read("draft.txt"), None);
}

/// A hook that records `CLAUDE_PROJECT_DIR` (and its stdin), then blocks `.env` commands.
fn project_guard(sandbox: &Sandbox, file: &str, marker: &std::path::Path) -> String {
    sandbox.write(
        ".claude/hooks/guard.py",
        &format!(
            "import json, os, sys\ndata = json.load(sys.stdin)\n\
             with open({marker:?}, 'a') as log:\n    log.write(os.environ.get('CLAUDE_PROJECT_DIR', '') + '\\n')\n\
             if data.get('tool_name') == 'Bash' and '.env' in data['tool_input'].get('command', ''):\n    \
             print('project guard: no .env', file=sys.stderr)\n    sys.exit(2)\n",
            marker = marker.display().to_string()
        ),
    );
    let command = "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py".to_string();
    // `Setup` is one of Claude Code's events that Splice does not have.
    let settings = json!({
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": merged(&[
            hook("PreToolUse", "Bash", &command),
            hook("Setup", "", "true"),
        ]),
    });
    sandbox.write(file, &settings.to_string());
    command
}

/// A project's `.claude/settings.json` and `.claude/settings.local.json` hooks are project
/// hooks: not run until approved (headless: a `hooks_unapproved` warning naming them), run
/// with `--trust-project-hooks`, with `CLAUDE_PROJECT_DIR` set; while they may run, the model
/// cannot rewrite the file that configures them, with a file tool or a confined command. Their events Splice does not have are named
/// in a `hook_failed` warning rather than stopping the run.
#[test]
fn claude_settings_hooks_are_project_hooks() {
    for file in [".claude/settings.json", ".claude/settings.local.json"] {
        let sandbox = Sandbox::new();
        sandbox.write(".env", &format!("API_KEY={SECRET}\n"));
        let marker = sandbox.dir.path().join("guard-ran.txt");
        let command = project_guard(&sandbox, file, &marker);
        let calls = || {
            vec![
                openai::call_json("call_1", "run_command", json!({"command": "cat .env"})),
                openai::answer(&["Done."]),
            ]
        };
        let provider = FakeProvider::start(calls());
        let out = exec(&sandbox, &provider, &["--permission-mode", "auto", "env"]);
        assert_eq!(out.code, 0, "{}", out.stdout);
        assert!(!marker.exists(), "{file}: an unapproved project hook ran");
        let warned = warnings(&out, "hooks_unapproved");
        assert_eq!(warned.len(), 1, "{file}: {}", out.stdout);
        assert!(
            warned[0].contains(&command) && warned[0].contains(file),
            "{}",
            warned[0]
        );

        let before = sandbox.read(file);
        let planted = json!({"hooks": merged(&[])}).to_string();
        let provider = FakeProvider::start(vec![
            openai::call_json("call_1", "run_command", json!({"command": "cat .env"})),
            openai::call_json(
                "call_2",
                "write_file",
                json!({"path": file, "content": planted}),
            ),
            openai::call_json(
                "call_3",
                "run_command",
                json!({"command": format!("printf '{{}}' > {file}")}),
            ),
            openai::answer(&["Done."]),
        ]);
        let out = exec(
            &sandbox,
            &provider,
            &["--trust-project-hooks", "--permission-mode", "auto", "env"],
        );
        assert_eq!(out.code, 0, "{}", out.stdout);
        assert!(
            warnings(&out, "hooks_unapproved").is_empty(),
            "{}",
            out.stdout
        );
        let never = warnings(&out, "hook_failed").join("\n");
        assert!(never.contains("Setup") && never.contains(file), "{never}");
        assert!(
            !model_saw(&provider, SECRET),
            "{file}: the secret reached the model"
        );
        let results = out.of_type("tool_result");
        assert_eq!(results[0]["status"], "denied", "{}", results[0]);
        assert!(
            results[0]["output"]
                .as_str()
                .unwrap_or_default()
                .contains("project guard: no .env")
        );
        // Once for each command: `cat .env`, then the `printf` below.
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap_or_default(),
            format!("{0}\n{0}\n", sandbox.root.display()),
            "{file}"
        );
        assert_ne!(results[1]["status"], "ok", "{file}: {}", results[1]);
        assert_eq!(sandbox.read(file), before, "{file} was rewritten");
    }
}
