//! A subagent that may write works in a git worktree of its own; its changes come back as a
//! diff the parent applies through the permission policy: prompted (and checkpointed, so they
//! can be restored), allowed by the mode, or denied (nothing changes). Without git it is refused.

use super::{Seen, calls, result_of, support, user_agent};

use std::sync::Arc;

use serde_json::{Value, json};
use splice::bus::{Answer, Sink};
use splice::run::Tier;
use splice::session::{Frontend, Input, Op, ReportSink, Session, SessionEvent};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, exec_json, worktrees_left};

pub const WRITER: &str =
    "---\ndescription: Writes files\ntools: [read_file, write_file, edit_file]\n---\nWrite.\n";

/// The parent asks a writer; the writer edits `notes.txt` and adds `new.txt`; the parent then
/// answers with whatever follows `then`.
pub fn writer_replies(then: &str) -> Vec<Reply> {
    vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "write", "prompt": "SUBTASK-WRITE", "agent": "writer"}),
            )]),
        ),
        Reply::when(
            "SUBTASK-WRITE",
            calls(&[
                (
                    "call_w1",
                    "edit_file",
                    json!({"path": "notes.txt", "old_string": "old", "new_string": "new"}),
                ),
                (
                    "call_w3",
                    "edit_file",
                    json!({"path": "draft.txt", "old_string": "draft", "new_string": "edited draft"}),
                ),
                (
                    "call_w2",
                    "write_file",
                    json!({"path": "new.txt", "content": "made by a subagent\n"}),
                ),
            ]),
        ),
        Reply::when(
            "call_w2",
            openai::answer(&["WRITER-ANSWER: edited and added"]),
        ),
        Reply::when(then, openai::answer(&["The writer is done."])),
    ]
}

fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    support::commit_all(&sandbox.root);
    // Not committed: the subagent's tree is the checkout as it is, not its last commit.
    sandbox.write("draft.txt", "draft\n");
    user_agent(&sandbox, "writer", WRITER);
    sandbox
}

#[test]
fn a_writing_subagents_diff_is_applied_checkpointed_and_restorable() {
    let provider = FakeProvider::start(writer_replies("changes were applied"));
    let sandbox = project();
    let args = [
        "--tier",
        "light",
        "--permission-mode",
        "accept-edits",
        "PARENT-REQUEST",
    ];
    let out = exec_json(&sandbox, &provider, &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("new\n"));
    assert_eq!(
        sandbox.read("new.txt").as_deref(),
        Some("made by a subagent\n")
    );
    // A file not committed was there for it too.
    assert_eq!(sandbox.read("draft.txt").as_deref(), Some("edited draft\n"));
    let result = result_of(&out, "call_a");
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(
        result["changedFiles"],
        json!(["draft.txt", "new.txt", "notes.txt"])
    );
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("WRITER-ANSWER"))
    );
    // The subagent's own writes were in its worktree (their checkpoints are not the run's);
    // the diff is one checkpoint of the run, under the parent's call.
    let checkpoints: Vec<&Value> = out
        .of_type("checkpoint")
        .into_iter()
        .filter(|c| c.get("agentId").is_none())
        .collect();
    assert_eq!(checkpoints.len(), 1, "{}", out.stdout);
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
    // The checkout's branch did not move.
    assert_eq!(
        support::git(&sandbox.root, &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );
    let mut command = sandbox.command("http://127.0.0.1:9");
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    command.args(["restore", &run_id, "--output-format", "stream-json"]);
    let restored = support::run(command, None);
    assert_eq!(restored.code, 0, "{}", restored.stdout);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));
    assert!(!sandbox.root.join("new.txt").exists());
    assert_eq!(sandbox.read("draft.txt").as_deref(), Some("draft\n"));
}

#[test]
fn two_writers_of_one_file_never_overwrite_each_other() {
    let edit = |to: &str| json!({"path": "notes.txt", "old_string": "old", "new_string": to});
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[
                (
                    "call_a",
                    "agent",
                    json!({"description": "one", "prompt": "SUBTASK-ONE", "agent": "writer"}),
                ),
                (
                    "call_b",
                    "agent",
                    json!({"description": "two", "prompt": "SUBTASK-TWO", "agent": "writer"}),
                ),
            ]),
        ),
        // Both start from the same checkout before either is done.
        Reply::when_after(
            "SUBTASK-ONE",
            "SUBTASK-TWO",
            openai::call_json("call_1", "edit_file", edit("one")),
        ),
        Reply::when_after(
            "SUBTASK-TWO",
            "SUBTASK-ONE",
            openai::call_json("call_2", "edit_file", edit("two")),
        ),
        Reply::when("call_1", openai::answer(&["ONE-DONE"])),
        Reply::when("call_2", openai::answer(&["TWO-DONE"])),
        Reply::when("ONE-DONE", openai::answer(&["Done."])),
    ]);
    let sandbox = project();
    let args = [
        "--tier",
        "light",
        "--permission-mode",
        "accept-edits",
        "PARENT-REQUEST",
    ];
    let out = exec_json(&sandbox, &provider, &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let (a, b) = (result_of(&out, "call_a"), result_of(&out, "call_b"));
    let applied: Vec<&Value> = [a, b].into_iter().filter(|r| r["status"] == "ok").collect();
    let refused: Vec<&Value> = [a, b]
        .into_iter()
        .filter(|r| r["status"] == "error")
        .collect();
    assert_eq!((applied.len(), refused.len()), (1, 1), "{a}\n{b}");
    assert!(
        refused[0]["output"].as_str().is_some_and(|o| o.contains(
            "notes.txt changed in the checkout while the subagent worked; its changes were not applied"
        )),
        "{}",
        refused[0]
    );
    let notes = sandbox.read("notes.txt").unwrap_or_default();
    let expected = if applied[0]["id"] == "call_a" {
        "one\n"
    } else {
        "two\n"
    };
    assert_eq!(notes, expected);
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
}

#[test]
fn a_denied_diff_changes_nothing() {
    let provider = FakeProvider::start(writer_replies("not applied"));
    let sandbox = project();
    // Asked headless: denied.
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));
    assert!(!sandbox.root.join("new.txt").exists());
    let result = result_of(&out, "call_a");
    assert_eq!(result["status"], "denied", "{result}");
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.contains("WRITER-ANSWER") && o.contains("not applied")),
        "{result}"
    );
    let decision = out
        .of_type("permission_decision")
        .into_iter()
        .find(|d| d["id"] == "call_a")
        .cloned()
        .expect("the diff's decision");
    assert_eq!(decision["permissionGranted"], false);
    assert!(
        out.of_type("checkpoint")
            .iter()
            .all(|c| c["agentId"].is_string())
    );
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
}

#[test]
fn without_git_a_writing_subagent_is_refused_with_a_tool_error() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "write", "prompt": "SUBTASK-WRITE", "agent": "writer"}),
            )]),
        ),
        Reply::when("git worktree", openai::answer(&["No git here."])),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    user_agent(&sandbox, "writer", WRITER);
    let args = [
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "PARENT-REQUEST",
    ];
    let out = exec_json(&sandbox, &provider, &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let result = result_of(&out, "call_a");
    assert_eq!(result["status"], "error");
    assert_eq!(
        result["output"],
        "agent `writer` may write files or run commands, so it runs in a git worktree of its \
         own, and none could be made: the project is not in a git repository"
    );
    assert!(!provider.requests().iter().any(super::of_subagent));
}

/// In a session whose front end answers prompts: a project definition that writes is asked
/// about the first time (approved for good here), then its diff is asked about (allowed);
/// the next time only the diff is asked about (denied: nothing changes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_writer_is_approved_once_and_its_diff_is_asked_about() {
    let mut replies = writer_replies("changes were applied");
    replies.extend(writer_replies("not applied"));
    let provider = FakeProvider::start(replies);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    sandbox.write("draft.txt", "draft\n");
    sandbox.write(".splice/agents/writer.md", WRITER);
    support::commit_all(&sandbox.root);
    let seen = Arc::new(Seen::default());
    let settings = crate::session::conversation::settings(&sandbox, &provider.url, Tier::Light);
    let session = Session::spawn(
        settings,
        Frontend {
            reports: vec![seen.clone() as Arc<dyn ReportSink>],
            asks: true,
            ..Frontend::headless(vec![seen.clone() as Arc<dyn Sink>])
        },
    );
    let asked = |event: &SessionEvent| match event {
        SessionEvent::PermissionAsked(question) => Some(question.clone()),
        _ => None,
    };
    let ended = |event: &SessionEvent| match event {
        SessionEvent::TurnEnded { code } => Some(*code),
        _ => None,
    };
    session.submit(Op::UserTurn(Input::text("PARENT-REQUEST")));
    let approval = seen.wait(0, asked).await;
    assert_eq!(approval.tool, "agent");
    assert!(
        approval.reason.contains("project agent `writer`"),
        "{}",
        approval.reason
    );
    session.submit(Op::AnswerPermission {
        token: approval.token,
        answer: Answer::AllowAlways,
    });
    let diff = seen.wait(1, asked).await;
    assert_eq!(diff.tool, "write_file");
    assert_eq!(diff.id, "call_a");
    assert_eq!(diff.previews.len(), 3, "{:?}", diff.previews);
    assert_eq!(
        sandbox.read("notes.txt").as_deref(),
        Some("old\n"),
        "not before the answer"
    );
    session.submit(Op::AnswerPermission {
        token: diff.token,
        answer: Answer::AllowOnce,
    });
    assert_eq!(seen.wait(0, ended).await, splice::exit::Exit::Success);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("new\n"));
    assert_eq!(
        sandbox.read("new.txt").as_deref(),
        Some("made by a subagent\n")
    );
    assert!(sandbox.data.join("agent-approvals.json").is_file());

    // Put back for the second turn, which writes the same again.
    support::git(&sandbox.root, &["checkout", "--", "notes.txt", "draft.txt"]);
    std::fs::remove_file(sandbox.root.join("new.txt")).expect("remove new.txt");
    session.submit(Op::UserTurn(Input::text("PARENT-REQUEST again")));
    let diff = seen.wait(2, asked).await;
    assert_eq!(
        diff.tool, "write_file",
        "approved before: only the diff is asked about"
    );
    session.submit(Op::AnswerPermission {
        token: diff.token,
        answer: Answer::Deny,
    });
    assert_eq!(seen.wait(1, ended).await, splice::exit::Exit::Success);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));
    assert!(!sandbox.root.join("new.txt").exists());
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
    session.submit(Op::Shutdown);
    session.ended().await;
}
