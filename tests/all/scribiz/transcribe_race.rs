//! `transcribe` checks the file the model names, asks, then hands it to the Scribiz CLI, which
//! runs unconfined and uploads what it reads. A process left running in the root (a background
//! `run_command` loop) can swap the checked file, or a directory above it, for a symlink in
//! between. The CLI must only ever read a private copy of the file Splice opened and checked,
//! whatever is done to the working root after the check.
//!
//! The fake CLI's `SCRIBIZ_FAKE_BEFORE_READ` hook makes the swap just before the CLI opens its
//! input, with no timing involved; the stress test races a swapper against many calls.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Outcome, Sandbox, run, stream_json};

/// The media the model asks for.
const MEDIA: &[u8] = b"RIFF-media-the-person-approved";

/// What must never reach the CLI: a key outside the root, and the repository's git config.
const SECRET: &[u8] = b"-----BEGIN OPENSSH PRIVATE KEY----- secret-7f3a";

const GIT_CONFIG: &[u8] = b"[remote \"origin\"]\n\turl = https://user:token-91be@example.com/r\n";

struct Setup {
    sandbox: Sandbox,
    record: PathBuf,
    /// The secret key, outside the root (beside the sandbox's HOME).
    secret: PathBuf,
    /// A directory outside the root holding `media.wav` with the secret's bytes.
    secret_dir: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let sandbox = Sandbox::new();
        let base = sandbox.dir.path().to_path_buf();
        let secret = base.join("id_rsa");
        std::fs::write(&secret, SECRET).expect("write secret");
        let secret_dir = base.join("ssh");
        std::fs::create_dir_all(&secret_dir).expect("create secret_dir");
        std::fs::write(secret_dir.join("media.wav"), SECRET).expect("write media.wav");
        std::fs::create_dir_all(sandbox.root.join(".git")).expect("create .git");
        std::fs::write(sandbox.root.join(".git/config"), GIT_CONFIG).expect("write .git/config");
        std::fs::write(sandbox.root.join("media.wav"), MEDIA).expect("write media.wav");
        std::fs::create_dir_all(sandbox.root.join("clips")).expect("create clips");
        std::fs::write(sandbox.root.join("clips/media.wav"), MEDIA).expect("write clips/media.wav");
        Setup {
            record: base.join("record.jsonl"),
            sandbox,
            secret,
            secret_dir,
        }
    }

    fn command(&self, provider: &FakeProvider, env: &[(&str, &str)]) -> Command {
        let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_scribiz/scribiz");
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
            .env("SCRIBIZ_BIN", cli)
            .env("SCRIBIZ_FAKE_SCENARIO", "transcribe")
            .env("SCRIBIZ_FAKE_RECORD", &self.record)
            .env("SCRIBIZ_FAKE_HEARTBEAT_MS", "100");
        for (name, value) in env {
            command.env(name, value);
        }
        stream_json(&mut command).args(["--permission-mode", "auto", "--max-turns", "100"]);
        command
    }

    /// What the CLI read of each input file it opened: (path named to it, bytes).
    fn reads(&self) -> Vec<(String, Vec<u8>)> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .filter(|r| r["event"] == "read-input")
            .map(|r| {
                let path = r["path"].as_str().unwrap_or_default().to_string();
                let hex = r["hex"]
                    .as_str()
                    .unwrap_or_else(|| panic!("the CLI could not read its input: {r}"));
                (path, unhex(hex))
            })
            .collect()
    }

    /// The run's private transcribe directory.
    fn keep_dir(&self, out: &Outcome) -> PathBuf {
        let run_id = out.lines[0]["runId"].as_str().unwrap_or_default();
        self.sandbox
            .data
            .join("runs")
            .join(run_id)
            .join("transcribe")
    }
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("parse a hex byte"))
        .collect()
}

fn call(id: &str, path: &str) -> Reply {
    openai::call_json(id, "transcribe", json!({ "path": path }))
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every read was of a private copy in the run's data, of the approved bytes, and the copy is
/// gone now.
fn assert_private_copies(setup: &Setup, out: &Outcome, reads: &[(String, Vec<u8>)]) {
    let keep = setup.keep_dir(out);
    let leaked: Vec<&String> = reads
        .iter()
        .filter(|(_, bytes)| bytes == SECRET || bytes == GIT_CONFIG)
        .map(|(path, _)| path)
        .collect();
    assert!(
        leaked.is_empty(),
        "the CLI read a protected file {} of {} times, through {leaked:?}",
        leaked.len(),
        reads.len()
    );
    for (path, bytes) in reads {
        assert_eq!(bytes, MEDIA, "{path}: {:?}", String::from_utf8_lossy(bytes));
        let path = Path::new(path);
        assert_eq!(path.parent(), Some(keep.as_path()), "{}", path.display());
        assert_eq!(
            path.extension().and_then(|e| e.to_str()),
            Some("wav"),
            "{}",
            path.display()
        );
        assert!(
            !path.exists(),
            "the copy {} was left behind",
            path.display()
        );
    }
}

/// The file (or a directory above it) is swapped for a link out of the root or into `.git`
/// after Splice checked it and before the CLI opens it: the CLI still reads the checked bytes.
#[test]
fn a_swap_between_the_check_and_the_cli_never_reaches_the_cli() {
    for (path, hook) in [
        ("media.wav", "rm -f media.wav && ln -s '{secret}' media.wav"),
        (
            "media.wav",
            "rm -f media.wav && ln -s .git/config media.wav",
        ),
        (
            "clips/media.wav",
            "mv clips clips.old && ln -s '{secret_dir}' clips",
        ),
    ] {
        let setup = Setup::new();
        let hook = hook
            .replace("{secret}", &setup.secret.display().to_string())
            .replace("{secret_dir}", &setup.secret_dir.display().to_string());
        let provider = FakeProvider::start(vec![call("call_1", path), openai::answer(&["ok"])]);
        let mut command = setup.command(&provider, &[("SCRIBIZ_FAKE_BEFORE_READ", &hook)]);
        command.arg("transcribe it");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 0, "{hook}: {}", out.stderr);
        let result = out.first("tool_result");
        assert_eq!(result["status"], "ok", "{hook}: {result}");
        // The person is still told which file it was.
        let output = result["output"].as_str().unwrap_or_default();
        assert!(
            output.contains(&format!("transcript of {path}")),
            "{output}"
        );
        // The swap happened: the hook's link is in the root now.
        let swapped = setup.sandbox.root.join(path);
        let linked = std::fs::read(&swapped).unwrap_or_default();
        assert!(linked == SECRET || linked == GIT_CONFIG, "{hook}");
        let reads = setup.reads();
        assert_eq!(reads.len(), 1, "{hook}: {reads:?}");
        assert_private_copies(&setup, &out, &reads);
        assert_eq!(
            names(&setup.keep_dir(&out)),
            ["call_1.json", "call_1.txt"],
            "{hook}"
        );
    }
}

/// The private copy goes on every path: a CLI that fails, and a run interrupted mid-call.
#[test]
fn the_private_copy_is_removed_when_the_cli_fails_or_the_run_is_interrupted() {
    // The CLI fails after it read its input.
    let setup = Setup::new();
    let provider = FakeProvider::start(vec![call("call_1", "media.wav"), openai::answer(&["ok"])]);
    let mut command = setup.command(
        &provider,
        &[
            ("SCRIBIZ_FAKE_SCENARIO", "error"),
            ("SCRIBIZ_FAKE_EXIT", "4"),
        ],
    );
    command.arg("transcribe it");
    let out = run(command, None);
    out.assert_well_formed();
    let result = out.first("tool_result");
    assert_eq!(result["status"], "error", "{result}");
    let reads = setup.reads();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_private_copies(&setup, &out, &reads);
    assert_eq!(names(&setup.keep_dir(&out)), Vec::<String>::new());

    // SIGINT while the CLI works (it waits after its plan for a cancel).
    let setup = Setup::new();
    let provider = FakeProvider::start(vec![call("call_1", "media.wav"), openai::answer(&["x"])]);
    let mut command = setup.command(&provider, &[("SCRIBIZ_FAKE_AFTER_PLAN", "wait")]);
    command.arg("transcribe it");
    let record = setup.record.clone();
    let out = support::run_and_signal(command, "INT", |_| {
        std::fs::read_to_string(&record).is_ok_and(|r| r.contains("waiting-after-plan"))
    });
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stderr);
    let reads = setup.reads();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_private_copies(&setup, &out, &reads);
    assert_eq!(names(&setup.keep_dir(&out)), Vec::<String>::new());
}

/// Most swaps the swapper makes before it gives up on its own (the test stops it sooner).
const MAX_SWAPS: usize = 2_000_000;

/// A swapper loops in the root, as a background command would: `media.wav` is the media most
/// of the time, and for short moments a link to a key outside the root or to `.git/config`.
/// Many calls race it; the CLI never reads anything but the media's bytes, from a private copy.
#[test]
fn a_swapper_racing_many_calls_never_gets_a_protected_file_to_the_cli() {
    const CALLS: usize = 24;
    let setup = Setup::new();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let root = setup.sandbox.root.clone();
        let secret = setup.secret.clone();
        std::thread::spawn(move || swap(&root, &secret, &stop))
    };
    let mut replies: Vec<Reply> = (1..=CALLS)
        .map(|i| call(&format!("call_{i}"), "media.wav"))
        .collect();
    replies.push(openai::answer(&["done"]));
    let provider = FakeProvider::start(replies);
    let mut command = setup.command(&provider, &[]);
    command.arg("transcribe it, again and again");
    let out = run(command, None);
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper
        .join()
        .unwrap_or_else(|_| panic!("the swapper panicked"));
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.of_type("tool_result").len(), CALLS);
    let reads = setup.reads();
    // The race was run: calls got through to the CLI while the swapper was swapping.
    assert!(
        !reads.is_empty(),
        "no call reached the CLI in {swaps} swaps"
    );
    assert!(swaps > CALLS, "the swapper made only {swaps} swaps");
    assert_private_copies(&setup, &out, &reads);
    let left: Vec<String> = names(&setup.keep_dir(&out))
        .into_iter()
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".txt"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

/// Swap `root/media.wav` between the media and links to `secret` and `.git/config`, each by an
/// atomic rename, until `stop` (or `MAX_SWAPS`); the number of swaps made.
fn swap(root: &Path, secret: &Path, stop: &AtomicBool) -> usize {
    let media = root.join("media.wav");
    let staged = root.join(".swap-staged");
    let targets = [secret.to_path_buf(), PathBuf::from(".git/config")];
    let pause = |micros| std::thread::sleep(std::time::Duration::from_micros(micros));
    for swaps in 0..MAX_SWAPS {
        if stop.load(Ordering::Relaxed) {
            return swaps;
        }
        let _ = std::fs::remove_file(&staged);
        if swaps % 2 == 0 {
            let _ = std::fs::write(&staged, MEDIA);
        } else {
            let _ = std::os::unix::fs::symlink(&targets[(swaps / 2) % 2], &staged);
        }
        let _ = std::fs::rename(&staged, &media);
        // The media most of the time, so that many calls pass the check.
        pause(if swaps % 2 == 0 { 2_000 } else { 300 });
    }
    MAX_SWAPS
}
