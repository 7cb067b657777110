//! A whole session driven through operations alone, with no front end: turns against the fake
//! provider, a compaction, an undo and an interrupt, seen only through the session's events.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use splice::bus::Sink;
use splice::conversation::Conversation;
use splice::permissions::{PermissionMode, Policy};
use splice::protocol::Event;
use splice::provider::Message;
use splice::run::{RunSettings, Tier};
use splice::session::{Frontend, Input, Op, ReportSink, Session, SessionEvent};
use support::Sandbox;
use support::fake_provider::{FakeProvider, Reply, openai};

const SUMMARY: &str = "Task: keep notes. Decisions: notes.txt written. Remaining: nothing.";

/// Everything the session reported, in order: runs' events with their run id, and its own.
#[derive(Default)]
struct Seen(Mutex<Vec<Report>>);

#[derive(Debug, Clone)]
enum Report {
    Event(String, Event),
    Session(SessionEvent),
}

impl Sink for Seen {
    fn emit(&self, run_id: &str, event: &Event) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(Report::Event(run_id.to_string(), event.clone()));
        }
    }
}

impl ReportSink for Seen {
    fn session(&self, event: &SessionEvent) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(Report::Session(event.clone()));
        }
    }
}

impl Seen {
    fn all(&self) -> Vec<Report> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The session's events but the conversation's records (see [`Seen::remembered`]).
    fn session_events(&self) -> Vec<SessionEvent> {
        self.all()
            .into_iter()
            .filter_map(|r| match r {
                Report::Session(SessionEvent::Memory(_)) | Report::Event(..) => None,
                Report::Session(event) => Some(event),
            })
            .collect()
    }

    /// The conversation as a session log rebuilds it from the session's records of it.
    fn remembered(&self) -> Vec<Message> {
        let conversation = Conversation::default();
        for report in self.all() {
            match report {
                Report::Session(SessionEvent::Memory(unsaved)) => conversation.apply(unsaved),
                Report::Session(SessionEvent::Cleared) => conversation.clear(),
                _ => {}
            }
        }
        conversation.messages()
    }

    /// The `n`th session event (from 0) once it came, for at most 20 s.
    async fn nth(&self, n: usize) -> SessionEvent {
        for _ in 0..2000 {
            if let Some(event) = self.session_events().get(n) {
                return event.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("session event {n} never came: {:?}", self.session_events());
    }
}

/// The conversation tests' settings, with writes allowed without a prompt.
fn settings(sandbox: &Sandbox, url: &str) -> RunSettings {
    let mut settings = crate::session::conversation::settings(sandbox, url, Tier::Light);
    settings.policy = Policy::new(PermissionMode::AcceptEdits, vec![]);
    settings.session_id = "session_ops".into();
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_runs_turns_compacts_undoes_and_is_interrupted_through_operations_alone() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "write_file",
            &[r#"{"path":"notes.txt","content":"new\n"}"#],
        ),
        openai::answer(&["Wrote the notes."]),
        openai::answer(&["Second answer."]),
        // The compaction's summary request.
        openai::answer(&[SUMMARY]),
        // A turn that never gets an answer: interrupted.
        Reply::Silent,
        openai::answer(&["After the interrupt."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    let seen = Arc::new(Seen::default());
    let session = Session::spawn(
        settings(&sandbox, &provider.url),
        Frontend {
            reports: vec![seen.clone() as Arc<dyn ReportSink>],
            ..Frontend::headless(vec![seen.clone() as Arc<dyn Sink>])
        },
    );

    // Two turns: the first writes a file (a checkpoint), the second answers.
    session.submit(Op::UserTurn(Input::text("write the notes")));
    session.submit(Op::UserTurn(Input::text("and then?")));
    assert_eq!(
        seen.nth(0).await,
        SessionEvent::TurnEnded {
            code: splice::exit::Exit::Success
        }
    );
    assert_eq!(
        seen.nth(1).await,
        SessionEvent::TurnEnded {
            code: splice::exit::Exit::Success
        }
    );
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("new\n"));
    let checkpoint = seen.all().into_iter().find_map(|r| match r {
        Report::Event(run_id, Event::Checkpoint { checkpoint }) => {
            Some((run_id, checkpoint.sequence))
        }
        _ => None,
    });
    let (run_id, sequence) = checkpoint.expect("no checkpoint");

    // A compaction: the first exchange is summarised, the request counted by the meter.
    session.submit(Op::Compact);
    assert_eq!(
        seen.nth(2).await,
        SessionEvent::CompactStarted {
            model: "gpt-4.1".into()
        }
    );
    let SessionEvent::CompactEnded(outcome) = seen.nth(3).await else {
        panic!("{:?}", seen.session_events());
    };
    assert!(
        outcome.text.starts_with("context compacted: summarised "),
        "{}",
        outcome.text
    );
    let compact_usage: Vec<_> = seen
        .all()
        .into_iter()
        .filter_map(|r| match r {
            Report::Event(_, Event::Usage(usage)) if usage.stage == "compact" => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(compact_usage.len(), 1);
    assert_eq!(compact_usage[0].usage_sequence, 1);

    // The undo puts the file back.
    session.submit(Op::Undo {
        run_id: run_id.clone(),
        sequence,
    });
    let SessionEvent::Undone(undone) = seen.nth(4).await else {
        panic!("{:?}", seen.session_events());
    };
    assert_eq!(undone.files, vec!["notes.txt".to_string()]);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));

    // A turn the provider never answers, interrupted once its request is out.
    session.submit(Op::UserTurn(Input::text("wait forever")));
    for _ in 0..2000 {
        if provider.requests().len() == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    session.submit(Op::Interrupt);
    assert_eq!(
        seen.nth(5).await,
        SessionEvent::TurnEnded {
            code: splice::exit::Exit::Interrupted
        }
    );

    // The next turn goes on from the compacted conversation, told of the undo.
    session.submit(Op::UserTurn(Input::text("still there?")));
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, splice::exit::Exit::Success);
    let last = provider.requests()[5].body["messages"].to_string();
    assert!(last.contains(SUMMARY), "{last}");
    assert!(last.contains("the user ran /undo"), "{last}");
    assert!(!last.contains("write the notes\""), "summarised: {last}");
    // Every run the session started ended with `run_end`.
    let run_ends = seen
        .all()
        .iter()
        .filter(|r| matches!(r, Report::Event(_, Event::RunEnd { .. })))
        .count();
    assert_eq!(run_ends, 4);
    // What the session reported of its conversation rebuilds the one the last request sent,
    // and its answer.
    let remembered = seen.remembered();
    let told = format!("{remembered:?}");
    assert!(
        told.contains(SUMMARY) && told.contains("the user ran /undo"),
        "{told}"
    );
    assert_eq!(
        remembered.last(),
        Some(&Message::Assistant {
            text: "After the interrupt.".into(),
            tool_calls: vec![]
        })
    );
}
