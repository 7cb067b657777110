//! The `transcribe` tool through the real binary: the fake provider scripts the model's call,
//! the fake Scribiz CLI (tests/fake_scribiz, via `SCRIBIZ_BIN`) does the transcription. The
//! transcript reaching the model, `tool_progress` events, the permission policy, the path
//! checks, the cost as `usage` and the budget, CLI errors, SIGINT, and no file left behind.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Outcome, Sandbox, run, stream_json};

fn fake_cli() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_scribiz/scribiz")
}

/// A sandbox with a recording in its working root, a priced model, a temp folder of its own,
/// and the fake CLI's record file outside the root.
struct Setup {
    sandbox: Sandbox,
    record: PathBuf,
    tmp: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let sandbox = Sandbox::new();
        sandbox.write("demo.mp3", "not really audio: the fake CLI never reads it");
        // $1 / $2 per million tokens: each scripted model request costs $0.00014.
        let pricing = json!({"source": "tests", "asOf": "2026-01-01", "models": {
            "openai/priced-model": {"input": 1.0, "output": 2.0, "contextWindow": 128000}}});
        std::fs::write(sandbox.dir.path().join("pricing.json"), pricing.to_string())
            .expect("write pricing.json");
        let record = sandbox.dir.path().join("record.jsonl");
        let tmp = sandbox.dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("create tmp");
        Setup {
            sandbox,
            record,
            tmp,
        }
    }

    /// `splice exec` in stream-json against `provider`, the fake CLI in `scenario`.
    fn command(&self, provider: &FakeProvider, scenario: &str, env: &[(&str, &str)]) -> Command {
        let mut command = self.sandbox.command(&provider.url);
        command
            // The system's python3 first for the fake CLI.
            .env(
                "PATH",
                format!(
                    "/usr/bin:/bin:{}",
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("TMPDIR", &self.tmp)
            .env("SCRIBIZ_BIN", fake_cli())
            .env("SCRIBIZ_FAKE_SCENARIO", scenario)
            .env("SCRIBIZ_FAKE_RECORD", &self.record)
            .env("SCRIBIZ_FAKE_HEARTBEAT_MS", "100")
            .env("SCRIBIZ_FAKE_RESULT", "out-file");
        for (name, value) in env {
            command.env(name, value);
        }
        stream_json(&mut command).args(["--tier", "light", "--model", "priced-model"]);
        command
    }

    fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    /// The argv of each CLI process started, in order.
    fn invocations(&self) -> Vec<Vec<String>> {
        self.records()
            .iter()
            .filter_map(|r| r["argv"].as_array())
            .map(|argv| {
                argv.iter()
                    .map(|a| a.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .collect()
    }

    fn got_cancel(&self) -> bool {
        self.records()
            .iter()
            .any(|r| r["stdin"] == json!({"cmd": "cancel"}))
    }

    fn pid(&self, event: Option<&str>) -> i32 {
        let records = self.records();
        let found = match event {
            None => records.first().and_then(|r| r["pid"].as_i64()),
            Some(event) => records
                .iter()
                .find(|r| r["event"] == event)
                .and_then(|r| r["pid"].as_i64()),
        };
        let pid = found.unwrap_or_else(|| panic!("no {event:?} pid in {records:?}"));
        i32::try_from(pid).expect("pid as i32")
    }
}

/// Every file beneath `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(
                path.strip_prefix(base)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
            );
            if path.is_dir() {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn transcribe_call(path: &str) -> Reply {
    openai::call_json("call_1", "transcribe", json!({"path": path}))
}

fn result_of<'a>(out: &'a Outcome, id: &str) -> &'a Value {
    out.of_type("tool_result")
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no tool_result {id}: {:?}", out.types()))
}

/// The names of the tools a model request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The content of the tool message answering `id` in a recorded request.
fn tool_message(request: &Value, id: &str) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool message for {id}: {request}"))
        .to_string()
}

/// Running or sleeping; a zombie or a missing process is not.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X'))
}

fn assert_gone(pid: i32, what: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "{what} (pid {pid}) is still running");
}

#[test]
fn a_transcript_reaches_the_model_with_progress_cost_and_nothing_left_behind() {
    let setup = Setup::new();
    let root_before = listing(&setup.sandbox.root);
    let provider = FakeProvider::start(vec![
        transcribe_call("demo.mp3"),
        openai::answer(&["The recording asks for a dark mode toggle."]),
    ]);
    let mut command = setup.command(&provider, "transcribe", &[]);
    command.args([
        "--permission-mode",
        "auto",
        "--max-cost-usd",
        "1",
        "Implement what @demo.mp4 asks for",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = provider.requests();
    assert!(offered(&requests[0].body).contains(&"transcribe".to_string()));

    // The transcript is `scribiz format`'s text, and it reached the model's next request.
    let result = result_of(&out, "call_1");
    assert_eq!(result["status"], "ok", "{result}");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(
        output.starts_with("[00:00] Add a dark mode toggle to the settings page."),
        "{output}"
    );
    let sent = tool_message(&requests[1].body, "call_1");
    assert!(
        sent.contains("[00:00] Add a dark mode toggle to the settings page."),
        "{sent}"
    );
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let keep = setup
        .sandbox
        .data
        .join("runs")
        .join(&run_id)
        .join("transcribe");
    assert!(
        sent.contains(&keep.join("call_1.txt").display().to_string()),
        "{sent}"
    );
    let text = std::fs::read_to_string(keep.join("call_1.txt")).unwrap_or_default();
    assert_eq!(text, "[00:00] Add a dark mode toggle to the settings page.");
    let context: Value = serde_json::from_str(
        &std::fs::read_to_string(keep.join("call_1.json")).unwrap_or_default(),
    )
    .expect("parse call_1.json as JSON");
    assert_eq!(context["schema"], 1);

    // The CLI was run as the issue says, the Context going to Splice's own file; the media it
    // read was a private copy beside it (same extension), gone now.
    let runs = setup.invocations();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let context_file = keep.join("call_1.json").display().to_string();
    let copy = Path::new(&runs[0][0]);
    assert_eq!(copy.parent(), Some(keep.as_path()), "{runs:?}");
    assert_eq!(copy.extension().and_then(|e| e.to_str()), Some("mp3"));
    assert!(!copy.exists(), "{runs:?}");
    assert_eq!(listing(&keep), ["call_1.json", "call_1.txt"]);
    assert_eq!(
        runs[0],
        [
            runs[0][0].clone(),
            "--json".into(),
            "--out-file".into(),
            context_file.clone(),
            "--media-prep".into(),
            "stdio,ffmpeg".into(),
        ]
    );
    assert_eq!(
        runs[1],
        ["format", &context_file, "--format", "text", "--json"]
    );

    // Progress between the call and its result, in the conventions the TUI reads.
    let types = out.types();
    let call_at = out
        .lines
        .iter()
        .position(|l| l["type"] == "tool_call" && l["id"] == "call_1")
        .unwrap_or_else(|| panic!("no tool_call: {types:?}"));
    let result_at = out
        .lines
        .iter()
        .position(|l| l["type"] == "tool_result" && l["id"] == "call_1")
        .unwrap_or_else(|| panic!("no tool_result: {types:?}"));
    let progress: Vec<&Value> = out.of_type("tool_progress");
    assert!(
        out.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l["type"] == "tool_progress")
            .all(|(i, l)| i > call_at && i < result_at && l["id"] == "call_1"),
        "{types:?}"
    );
    let has = |stage: &str, detail: &str| {
        progress
            .iter()
            .any(|p| p["stage"] == stage && p["detail"] == detail)
    };
    assert!(has("resolve", "start"), "{progress:?}");
    assert!(
        has("resolve", "done · local:8ee9f0a250ac5a75f42640c01fdbfc97"),
        "{progress:?}"
    );
    assert!(has("plan", "estimate $0.00274–$0.009942"), "{progress:?}");
    assert!(has("transcribe", "chunk 1/1 uploading"), "{progress:?}");
    assert!(
        progress
            .iter()
            .any(|p| p["stage"] == "extract" && p["fraction"] == 1.0),
        "{progress:?}"
    );

    // Scribiz's cost: a usage event of its own, priced, and in the run's totals.
    let usage: Vec<&Value> = out
        .of_type("usage")
        .into_iter()
        .filter(|u| u["provider"] == "scribiz")
        .collect();
    assert_eq!(usage.len(), 1, "{:?}", out.of_type("usage"));
    assert_eq!(usage[0]["model"], "gemini-3.5-transcribe");
    assert_eq!(usage[0]["costUsd"], 0.00109);
    assert_eq!(usage[0]["costStatus"], "priced");
    assert_eq!(usage[0]["promptTokens"], 305);
    assert_eq!(usage[0]["completionTokens"], 40);
    let total = out.final_result()["usage"]["cost_usd"]
        .as_f64()
        .unwrap_or_default();
    // Two model requests at $0.00014 each, and the transcription.
    assert!((total - (0.00028 + 0.00109)).abs() < 1e-9, "{total}");

    // Nothing in the working root or the temp folder.
    assert_eq!(listing(&setup.sandbox.root), root_before);
    assert_eq!(listing(&setup.tmp), Vec::<String>::new());
}

#[test]
fn a_context_announced_in_the_temp_folder_is_kept_in_the_run_data_and_deleted_there() {
    let setup = Setup::new();
    let provider = FakeProvider::start(vec![transcribe_call("demo.mp3"), openai::answer(&["ok"])]);
    let mut command = setup.command(&provider, "transcribe", &[("SCRIBIZ_FAKE_RESULT", "temp")]);
    command.args(["--permission-mode", "auto", "transcribe demo.mp3"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(result_of(&out, "call_1")["status"], "ok");
    let announced = setup
        .records()
        .iter()
        .find(|r| r["event"] == "temp")
        .and_then(|r| r["path"].as_str().map(PathBuf::from))
        .expect("the fake announced no temp file");
    assert!(announced.starts_with(&setup.tmp), "{}", announced.display());
    assert!(
        !announced.exists(),
        "the announced temp file is still there"
    );
    assert_eq!(listing(&setup.tmp), Vec::<String>::new());
}

#[test]
fn permission_follows_the_mode_and_allow_rules() {
    // (flags, expected status, whether a prompt was asked and refused headless)
    let cases: [(&[&str], &str, bool); 5] = [
        (&[], "denied", true),
        (&["--permission-mode", "accept-edits"], "denied", true),
        (&["--permission-mode", "read-only"], "denied", false),
        (&["--allow", "transcribe"], "ok", false),
        (&["--permission-mode", "auto"], "ok", false),
    ];
    for (flags, status, prompted) in cases {
        let setup = Setup::new();
        let provider =
            FakeProvider::start(vec![transcribe_call("demo.mp3"), openai::answer(&["ok"])]);
        let mut command = setup.command(&provider, "transcribe", &[]);
        command.args(flags).arg("transcribe demo.mp3");
        let out = run(command, None);
        out.assert_well_formed();
        let result = result_of(&out, "call_1");
        assert_eq!(result["status"], status, "{flags:?}: {result}");
        assert_eq!(
            !out.of_type("permission_request").is_empty(),
            prompted,
            "{flags:?}: {:?}",
            out.types()
        );
        if prompted {
            let decision = out.first("permission_decision");
            assert_eq!(decision["permissionGranted"], false);
            assert_eq!(out.first("permission_request")["sideEffect"], "network");
        }
        assert_eq!(out.first("tool_call")["sideEffect"], "network", "{flags:?}");
        // The CLI runs only when the call is allowed.
        assert_eq!(
            setup.invocations().is_empty(),
            status == "denied",
            "{flags:?}"
        );
    }
}

#[test]
fn not_offered_without_a_cli() {
    for bin in [None, Some("/nonexistent/scribiz")] {
        let setup = Setup::new();
        let provider =
            FakeProvider::start(vec![transcribe_call("demo.mp3"), openai::answer(&["ok"])]);
        let mut command = setup.command(&provider, "transcribe", &[]);
        match bin {
            // PATH holds no `scribiz`.
            None => command.env_remove("SCRIBIZ_BIN"),
            Some(bin) => command.env("SCRIBIZ_BIN", bin),
        };
        command.args(["--permission-mode", "auto", "transcribe demo.mp3"]);
        let out = run(command, None);
        out.assert_well_formed();
        let requests = provider.requests();
        let tools = offered(&requests[0].body);
        assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
        assert!(!tools.contains(&"transcribe".to_string()), "{tools:?}");
        let result = result_of(&out, "call_1");
        assert_eq!(result["status"], "error");
        assert!(
            result["output"]
                .as_str()
                .is_some_and(|o| o.contains("unknown tool")),
            "{result}"
        );
        assert!(setup.invocations().is_empty());
    }
}

#[test]
fn a_path_outside_the_root_or_into_git_is_blocked() {
    for (path, kind) in [
        ("../outside.mp3", "outside_root"),
        ("/etc/hostname", "outside_root"),
        (".git/demo.mp3", "protected_path"),
    ] {
        let setup = Setup::new();
        std::fs::write(setup.sandbox.dir.path().join("outside.mp3"), "x")
            .expect("write outside.mp3");
        setup.sandbox.write(".git/demo.mp3", "x");
        let provider = FakeProvider::start(vec![transcribe_call(path), openai::answer(&["ok"])]);
        let mut command = setup.command(&provider, "transcribe", &[]);
        command.args(["--permission-mode", "auto", "transcribe it"]);
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(result_of(&out, "call_1")["status"], "blocked", "{path}");
        let block = out
            .of_type("permission")
            .into_iter()
            .find(|p| p["action"] == "block")
            .unwrap_or_else(|| panic!("no block for {path}: {:?}", out.types()));
        assert_eq!(block["block"]["kind"], kind, "{path}");
        assert!(setup.invocations().is_empty(), "{path}");
    }
}

#[test]
fn the_plan_estimate_over_the_budget_cancels_before_work_starts() {
    let setup = Setup::new();
    let root_before = listing(&setup.sandbox.root);
    let provider = FakeProvider::start(vec![
        transcribe_call("demo.mp3"),
        openai::answer(&["The transcription would cost too much."]),
    ]);
    // The fake waits after its plan ($0.009942 at most) until it is cancelled.
    let mut command = setup.command(
        &provider,
        "transcribe",
        &[("SCRIBIZ_FAKE_AFTER_PLAN", "wait")],
    );
    command.args([
        "--permission-mode",
        "auto",
        "--max-cost-usd",
        "0.005",
        "transcribe demo.mp3",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = result_of(&out, "call_1");
    assert_eq!(result["status"], "error");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.contains("before work started"), "{output}");
    assert!(output.contains("up to $0.009942"), "{output}");
    assert!(output.contains("--max-cost-usd 0.005"), "{output}");
    assert!(setup.got_cancel(), "{:?}", setup.records());
    // It never got to transcribe, so it never cost anything, and no format ran.
    assert!(
        out.of_type("usage")
            .iter()
            .all(|u| u["provider"] != "scribiz")
    );
    assert_eq!(setup.invocations().len(), 1);
    assert_gone(setup.pid(Some("grandchild")), "the fake's grandchild");
    assert_eq!(listing(&setup.sandbox.root), root_before);
    assert_eq!(listing(&setup.tmp), Vec::<String>::new());
    // The model heard why.
    let sent = tool_message(&provider.requests()[1].body, "call_1");
    assert!(sent.contains("up to $0.009942"), "{sent}");
}

#[test]
fn a_spend_past_the_budget_cancels_the_transcription_and_ends_the_run_before_another_request() {
    let setup = Setup::new();
    let provider = FakeProvider::start(vec![
        transcribe_call("demo.mp3"),
        openai::answer(&["never asked"]),
    ]);
    // The plan says at most $0.0001, within what is left of $0.0012 after the first request
    // ($0.00014); the usage line then reports $0.00109, which passes it.
    let mut command = setup.command(
        &provider,
        "transcribe",
        &[("SCRIBIZ_FAKE_USD_HIGH", "0.0001")],
    );
    command.args([
        "--permission-mode",
        "auto",
        "--max-cost-usd",
        "0.0012",
        "transcribe demo.mp3",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_ne!(out.code, 0, "{}", out.stderr);
    let result = result_of(&out, "call_1");
    assert_eq!(result["status"], "error");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.contains("cost budget exceeded"), "{output}");
    assert!(
        out.of_type("usage")
            .iter()
            .any(|u| u["provider"] == "scribiz" && u["costUsd"] == 0.00109)
    );
    assert_eq!(
        provider.requests().len(),
        1,
        "a request went out past the budget"
    );
}

#[test]
fn a_cli_error_surfaces_its_code_and_hint() {
    let setup = Setup::new();
    let provider = FakeProvider::start(vec![
        transcribe_call("demo.mp3"),
        openai::answer(&["Scribiz needs a login."]),
    ]);
    let mut command = setup.command(&provider, "error", &[("SCRIBIZ_FAKE_EXIT", "3")]);
    command.args(["--permission-mode", "auto", "transcribe demo.mp3"]);
    let out = run(command, None);
    out.assert_well_formed();
    let result = result_of(&out, "call_1");
    assert_eq!(result["status"], "error");
    let output = result["output"].as_str().unwrap_or_default();
    for part in ["AUTH", "failure 3", "hint for 3", "exit code 3"] {
        assert!(output.contains(part), "{part} missing in {output}");
    }
}

#[test]
fn sigint_mid_transcription_reaps_the_cli_and_exits_130() {
    let setup = Setup::new();
    let root_before = listing(&setup.sandbox.root);
    let provider = FakeProvider::start(vec![
        transcribe_call("demo.mp3"),
        openai::answer(&["never asked"]),
    ]);
    let command = {
        let mut command = setup.command(
            &provider,
            "transcribe",
            &[("SCRIBIZ_FAKE_AFTER_PLAN", "wait")],
        );
        command.args(["--permission-mode", "auto", "transcribe demo.mp3"]);
        command
    };
    let record = setup.record.clone();
    let out = support::run_and_signal(command, "INT", |lines| {
        lines
            .iter()
            .any(|l| l["type"] == "tool_progress" && l["stage"] == "plan")
            && std::fs::read_to_string(&record).is_ok_and(|r| r.contains("waiting-after-plan"))
    });
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stderr);
    let result = result_of(&out, "call_1");
    assert_eq!(result["status"], "error");
    // Cancelled, not killed: the CLI got `{"cmd":"cancel"}` and ended as a cancelled run.
    assert!(setup.got_cancel(), "{:?}", setup.records());
    assert!(
        setup
            .records()
            .iter()
            .any(|r| r["event"] == "exit" && r["code"] == 130),
        "{:?}",
        setup.records()
    );
    assert_gone(setup.pid(None), "the Scribiz CLI");
    assert_gone(setup.pid(Some("grandchild")), "the CLI's grandchild");
    assert_eq!(listing(&setup.sandbox.root), root_before);
    assert_eq!(listing(&setup.tmp), Vec::<String>::new());
}

/// `transcribe` hands its file to the Scribiz CLI, which runs unconfined and uploads it: a
/// symlink (to a file or a directory) out of the root, or into `.git`, through another spelling,
/// is refused before the CLI is started.
#[test]
fn transcribe_refuses_links_and_spellings_out_of_the_root_or_into_git() {
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_scribiz/scribiz");
    for path in [
        "link.mp3",
        "outdir/outside.mp3",
        "gitlink/demo.mp3",
        "sub/../.git/demo.mp3",
        "./.git//demo.mp3",
        "sub/../../outside.mp3",
    ] {
        let sandbox = Sandbox::new();
        let outside = sandbox.dir.path().join("outside.mp3");
        std::fs::write(&outside, "x").expect("write outside");
        sandbox.write(".git/demo.mp3", "x");
        sandbox.write("sub/keep.txt", "x");
        let root = &sandbox.root;
        std::os::unix::fs::symlink(&outside, root.join("link.mp3"))
            .expect("link link.mp3 to outside");
        std::os::unix::fs::symlink(sandbox.dir.path(), root.join("outdir"))
            .expect("link outdir to sandbox.dir");
        std::os::unix::fs::symlink(root.join(".git"), root.join("gitlink"))
            .expect("link gitlink to .git");
        let record = sandbox.dir.path().join("record.jsonl");
        let provider = FakeProvider::start(vec![
            openai::call_json("call_1", "transcribe", json!({ "path": path })),
            openai::answer(&["ok"]),
        ]);
        let mut command = sandbox.command(&provider.url);
        command
            .env(
                "PATH",
                format!(
                    "/usr/bin:/bin:{}",
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("SCRIBIZ_BIN", &cli)
            .env("SCRIBIZ_FAKE_SCENARIO", "transcribe")
            .env("SCRIBIZ_FAKE_RECORD", &record);
        stream_json(&mut command).args(["--permission-mode", "auto", "transcribe it"]);
        let out = run(command, None);
        out.assert_well_formed();
        let result = out.first("tool_result");
        assert_ne!(result["status"], "ok", "{path}: {result}");
        assert!(
            !record.exists(),
            "{path}: the CLI was started: {}",
            std::fs::read_to_string(&record).unwrap_or_default()
        );
    }
}
