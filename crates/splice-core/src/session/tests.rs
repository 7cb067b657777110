//! Sessions driven through operations alone, with no front end.

use std::sync::Mutex;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::bus::Answer;
use crate::protocol::Event;
use crate::provider::pricing::PriceTable;
use crate::provider::{Message, ProviderConfig, ProviderKind, ToolCallRequest};
use crate::settings::Tier;

/// Records the session's own reports, and the runs' events.
#[derive(Default)]
struct Reports {
    session: Mutex<Vec<SessionEvent>>,
    events: Mutex<Vec<Event>>,
}

impl Sink for Reports {
    fn emit(&self, _run_id: &str, event: &Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}

impl ReportSink for Reports {
    fn session(&self, event: &SessionEvent) {
        if let Ok(mut reports) = self.session.lock() {
            reports.push(event.clone());
        }
    }
}

const SUMMARY: &str = "Task: fix the parser. Files: src/parse.rs read. Remaining: run the tests.";

/// One streamed answer of `text`, with a usage report, in OpenAI's SSE chunks.
fn sse_answer(text: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let events = [
        chunk(json!({"content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 47_000, "completion_tokens": 300, "total_tokens": 47_300}}),
    ];
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// A provider on 127.0.0.1 that answers one request with `text` and hands back its JSON body.
async fn fake_openai(text: &'static str) -> (String, tokio::task::JoinHandle<Value>) {
    fake_openai_after(text, None).await
}

/// As [`fake_openai`], answering only once `gate` receives (or is dropped), when given.
async fn fake_openai_after(
    text: &'static str,
    gate: Option<tokio::sync::oneshot::Receiver<()>>,
) -> (String, tokio::task::JoinHandle<Value>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!(
        "http://{}",
        listener.local_addr().expect("local addr listener")
    );
    let served = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept listener");
        let mut received = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        let body = loop {
            let n = stream.read(&mut buf).await.expect("read buf");
            assert!(n > 0, "the request ended early");
            received.extend_from_slice(&buf[..n]);
            let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or_else(|| panic!("no content-length in {head}"));
            if received.len() >= end + 4 + length {
                break received[end + 4..end + 4 + length].to_vec();
            }
        };
        if let Some(gate) = gate {
            let _ = gate.await;
        }
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
            sse_answer(text)
        );
        stream.write_all(reply.as_bytes()).await.expect("write all");
        let _ = stream.shutdown().await;
        serde_json::from_slice(&body).expect("parse body")
    });
    (url, served)
}

/// A request, six read_file calls of 60,000 characters (about 15,000 tokens each) and the
/// answer: with 40% of 128,000 tokens kept, the three oldest calls are summarised.
fn long_conversation() -> Vec<Message> {
    let mut messages = vec![Message::User {
        text: "fix the parser".into(),
        images: vec![],
    }];
    for turn in 0..6 {
        let id = format!("call_{turn}");
        messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCallRequest {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/part{turn}.rs"}}"#),
            }],
        });
        messages.push(Message::ToolResult {
            call_id: id,
            content: format!("// part {turn}\n{}", "x".repeat(60_000)),
            is_error: false,
            images: Vec::new(),
        });
    }
    messages.push(Message::Assistant {
        text: "Fixed the parser.".into(),
        tool_calls: vec![],
    });
    messages
}

impl Reports {
    fn taken(&self) -> Vec<SessionEvent> {
        self.session.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn usage(&self) -> Vec<crate::protocol::events::UsageEvent> {
        let events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        events
            .into_iter()
            .filter_map(|e| match e {
                Event::Usage(usage) => Some(usage),
                _ => None,
            })
            .collect()
    }

    /// The session's conversation as its session log replays it: `start` (what the session
    /// was given), then what it reported of its changes.
    fn remembered(&self, start: Vec<Message>) -> Vec<Message> {
        let conversation = crate::conversation::Conversation::default();
        conversation.replace(start);
        for event in self.taken() {
            match event {
                SessionEvent::Memory(unsaved) => conversation.apply(unsaved),
                SessionEvent::Cleared => conversation.clear(),
                _ => {}
            }
        }
        conversation.messages()
    }

    /// Wait until the session reports what `wanted` picks, for at most 10 s.
    async fn until<T>(&self, wanted: impl Fn(&SessionEvent) -> Option<T>) -> T {
        for _ in 0..1000 {
            if let Some(found) = self.taken().iter().find_map(&wanted) {
                return found;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("not reported: {:?}", self.taken());
    }
}

/// A turn's request text.
async fn text_of(input: Input) -> String {
    match input {
        Input::Prompt(prompt) => prompt.text,
        Input::Reading(reading) => reading.await.map(|p| p.text).unwrap_or_default(),
    }
}

/// A turn that records its text and tier, then ends with 0 or, when `blocks`, waits for its
/// interrupt and ends with the interrupted code.
fn recording_turn(seen: Arc<Mutex<Vec<(String, Tier)>>>, blocks: &'static str) -> RunTurn {
    Arc::new(move |settings, _bus, input, stopped| {
        let seen = seen.clone();
        Box::pin(async move {
            let text = text_of(input).await;
            if let Ok(mut seen) = seen.lock() {
                seen.push((text.clone(), settings.tier));
            }
            if text == blocks {
                let _ = stopped.await;
                return crate::exit::Exit::Interrupted;
            }
            crate::exit::Exit::Success
        })
    })
}

fn session(turn: RunTurn) -> (Session, Arc<Reports>) {
    session_on(super::test_settings::settings(), turn)
}

fn session_on(settings: RunSettings, turn: RunTurn) -> (Session, Arc<Reports>) {
    let reports = Arc::new(Reports::default());
    let frontend = Frontend {
        sinks: vec![reports.clone() as Arc<dyn Sink>],
        reports: vec![reports.clone() as Arc<dyn ReportSink>],
        asks: false,
        turn,
        mcp: McpScope::PerTurn,
    };
    (Session::spawn(settings, frontend), reports)
}

/// Settings on gpt-4o (a 128,000-token window) whose requests go to `url`, with the long
/// conversation.
fn settings_at(url: &str) -> RunSettings {
    let mut settings = super::test_settings::settings();
    let mut provider =
        ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4o")).expect("from env");
    provider.base_url = url.to_string();
    provider.api_key = None;
    provider.max_retries = 0;
    settings.provider = provider;
    settings.pricing = PriceTable::builtin();
    settings.conversation.replace(long_conversation());
    settings
}

fn compact_ended(event: &SessionEvent) -> Option<CompactOutcome> {
    match event {
        SessionEvent::CompactEnded(outcome) => Some(outcome.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_summarises_without_tools_and_counts_the_request_with_the_meter() {
    let (url, served) = fake_openai(SUMMARY).await;
    let settings = settings_at(&url);
    let (session, reports) = session_on(settings, recording_turn(Default::default(), ""));
    session.submit(Op::Compact);
    let outcome = reports.until(compact_ended).await;
    session.submit(Op::Shutdown);
    session.ended().await;
    assert!(!outcome.failed, "{outcome:?}");
    assert!(
        outcome.text.starts_with("context compacted: "),
        "{}",
        outcome.text
    );
    assert!(outcome.compacted.is_some());
    assert_eq!(
        reports.taken()[0],
        SessionEvent::CompactStarted {
            model: "gpt-4o".into()
        }
    );

    // The summary request: no tools, the summariser's system prompt, the old part told.
    let body = served.await.expect("finish served");
    assert!(
        body.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{body}"
    );
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["role"], "system");
    let told = messages[1]["content"].to_string();
    assert!(told.contains("// part 0"), "{told}");
    assert!(
        !told.contains("// part 5"),
        "the kept exchanges are not summarised"
    );

    // The conversation, as reported for the session log: the request with the summary, then
    // the three newest calls and the answer, word for word.
    let compacted = reports.remembered(long_conversation());
    let original = long_conversation();
    assert_eq!(compacted.len(), 1 + 3 * 2 + 1);
    assert_eq!(compacted[1..], original[original.len() - 7..]);
    let Message::User { text, .. } = &compacted[0] else {
        panic!("the request comes first");
    };
    assert!(
        text.starts_with("fix the parser\n\n[Splice compacted"),
        "{text}"
    );
    assert!(text.ends_with(SUMMARY), "{text}");

    // Counted by a usage meter: priced, numbered, in the `compact` stage.
    let usage = reports.usage();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0].stage, COMPACT_STAGE);
    assert_eq!(usage[0].usage_sequence, 1);
    assert_eq!(usage[0].total_tokens, 47_300);
    assert!(usage[0].cost_usd.is_some(), "{:?}", usage[0]);
}

/// `/compact`'s request is held to the budget as a run's are: a summary that spends it is not
/// used, and the session says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_past_the_budget_is_not_used_and_says_so() {
    let (url, served) = fake_openai(SUMMARY).await;
    let mut settings = settings_at(&url);
    settings.budget.max_tokens = Some(10_000);
    let (session, reports) = session_on(settings, recording_turn(Default::default(), ""));
    session.submit(Op::Compact);
    let outcome = reports.until(compact_ended).await;
    let _ = served.await;
    session.submit(Op::Shutdown);
    session.ended().await;
    assert!(outcome.failed, "{outcome:?}");
    assert_eq!(
        outcome.text,
        "compaction failed: token budget exceeded: 47300 tokens used, --max-tokens 10000; \
         the conversation is unchanged"
    );
    assert_eq!(reports.remembered(long_conversation()), long_conversation());
    assert_eq!(
        reports.usage().len(),
        1,
        "the request is counted all the same"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_summary_request_changes_nothing_and_counts_nothing() {
    // A port that was open a moment ago: the connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("http://{}", closed.local_addr().expect("local addr closed"));
    drop(closed);
    let settings = settings_at(&url);
    let (session, reports) = session_on(settings, recording_turn(Default::default(), ""));
    session.submit(Op::Compact);
    let outcome = reports.until(compact_ended).await;
    session.submit(Op::Shutdown);
    session.ended().await;
    assert!(outcome.failed);
    assert!(
        outcome.text.starts_with("compaction failed: ")
            && outcome.text.ends_with("the conversation is unchanged"),
        "{}",
        outcome.text
    );
    assert_eq!(reports.remembered(long_conversation()), long_conversation());
    assert!(reports.usage().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_changed_while_compacting_is_left_as_it_is() {
    let (open, gate) = tokio::sync::oneshot::channel();
    let (url, served) = fake_openai_after(SUMMARY, Some(gate)).await;
    let settings = settings_at(&url);
    let (session, reports) = session_on(settings, recording_turn(Default::default(), ""));
    session.submit(Op::Compact);
    reports
        .until(|e| matches!(e, SessionEvent::CompactStarted { .. }).then_some(()))
        .await;
    // `/clear` while the summary is written.
    session.submit(Op::Clear);
    reports
        .until(|e| (*e == SessionEvent::Cleared).then_some(()))
        .await;
    let _ = open.send(());
    let outcome = reports.until(compact_ended).await;
    session.submit(Op::Shutdown);
    session.ended().await;
    assert!(
        outcome.text.starts_with("compaction discarded"),
        "{}",
        outcome.text
    );
    assert!(reports.remembered(long_conversation()).is_empty());
    // The request was made and answered: its cost still counts.
    assert_eq!(reports.usage().len(), 1);
    let _ = served.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_with_nothing_to_summarise_or_during_a_turn_is_refused_with_the_reason() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let settings = settings_at("http://127.0.0.1:9");
    settings.conversation.clear();
    let (session, reports) = session_on(settings, recording_turn(seen.clone(), "long"));
    session.submit(Op::Compact);
    let outcome = reports.until(compact_ended).await;
    assert_eq!(
        outcome.text,
        "nothing to compact: the conversation is empty"
    );
    assert!(!outcome.failed);
    session.submit(Op::UserTurn(Input::text("long")));
    session.submit(Op::Compact);
    let reason = reports
        .until(|e| match e {
            SessionEvent::Refused { reason } => Some(reason.clone()),
            _ => None,
        })
        .await;
    assert!(reason.starts_with("wait for the run to end"), "{reason}");
    session.submit(Op::Interrupt);
    session.submit(Op::Shutdown);
    session.ended().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_a_compaction_and_a_request_sent_meanwhile_waits_for_it() {
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!("http://{}", silent.local_addr().expect("local addr silent"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let settings = settings_at(&url);
    let (session, reports) = session_on(settings, recording_turn(seen.clone(), ""));
    session.submit(Op::Compact);
    session.submit(Op::UserTurn(Input::text("after")));
    reports
        .until(|e| matches!(e, SessionEvent::CompactStarted { .. }).then_some(()))
        .await;
    assert!(
        seen.lock().map(|s| s.is_empty()).unwrap_or(false),
        "the request waits"
    );
    session.submit(Op::Interrupt);
    let outcome = reports.until(compact_ended).await;
    assert_eq!(
        outcome.text,
        "compaction cancelled; the conversation is unchanged"
    );
    assert_eq!(reports.remembered(long_conversation()), long_conversation());
    session.submit(Op::Shutdown);
    session.ended().await;
    // Stopping means stopping: the request behind it was dropped.
    assert!(seen.lock().map(|s| s.is_empty()).unwrap_or(false));
    assert!(reports.taken().contains(&SessionEvent::TurnDropped));
}

/// `Op::Undo` puts the files back, tells the model, and reports what it did: a file the
/// change created was deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_the_checkpoint_and_tells_the_model() {
    let root = tempfile::tempdir().expect("create a temporary directory");
    let data = tempfile::tempdir().expect("create a temporary directory");
    let root_path = root.path().canonicalize().expect("canonicalize root");
    let change =
        |name: &str, before: Option<&str>, after: &str| crate::confine::change::FileChange {
            path: root_path.join(name),
            shown: name.to_string(),
            before: before.map(|b| b.as_bytes().to_vec()),
            after: Some(after.as_bytes().to_vec()),
        };
    std::fs::write(root_path.join("old.txt"), "before\n").expect("write old.txt");
    let changes = [
        change("old.txt", Some("before\n"), "after\n"),
        change("new.txt", None, "created\n"),
    ];
    crate::checkpoint::CheckpointStore::new(
        &crate::layout::Layout::at(data.path()),
        "run_1",
        &root_path,
    )
    .save("write_file", &changes)
    .expect("save write_file");
    for c in &changes {
        std::fs::write(&c.path, c.after.as_deref().unwrap_or_default()).expect("write");
    }
    let mut settings = super::test_settings::settings();
    settings.cwd = root_path.clone();
    settings.layout = crate::layout::Layout::at(data.path());
    let (session, reports) = session_on(settings, recording_turn(Default::default(), ""));
    session.submit(Op::Undo {
        run_id: "run_1".into(),
        sequence: 1,
    });
    session.submit(Op::Shutdown);
    session.ended().await;
    assert_eq!(
        reports.taken()[0],
        SessionEvent::Undone(Undone {
            run_id: "run_1".into(),
            sequence: 1,
            files: vec!["old.txt".into(), "new.txt".into()],
            deleted: vec!["new.txt".into()],
            skipped: vec![],
            left_alone: None,
        })
    );
    assert!(!root_path.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root_path.join("old.txt")).unwrap_or_default(),
        "before\n"
    );
    // Reported for the session log after the undo, so a reopened session has the note too.
    let told = format!("{:?}", reports.remembered(Vec::new()));
    assert!(told.contains("the user ran /undo"), "{told}");
}

/// A turn that answers `ok` to its request in the session's conversation, and records the
/// model it ran on.
fn talking_turn(models: Arc<Mutex<Vec<String>>>) -> RunTurn {
    Arc::new(move |settings, _bus, input, _stopped| {
        let models = models.clone();
        Box::pin(async move {
            let text = text_of(input).await;
            if let Ok(mut models) = models.lock() {
                models.push(settings.provider.model.clone());
            }
            settings.conversation.push_exchange(&text, "ok");
            crate::exit::Exit::Success
        })
    })
}

fn user(text: &str) -> Message {
    Message::User {
        text: text.into(),
        images: vec![],
    }
}

/// The session owns its conversation: it starts from a copy of the one it was given (a
/// reopened session's), which nobody else can change or read; each change is reported, before
/// the turn's end, as the records a session log keeps, and `Op::Clear` forgets it.
#[tokio::test]
async fn the_session_owns_its_conversation_and_reports_each_change_for_the_log() {
    let settings = super::test_settings::settings();
    settings.conversation.push_exchange("earlier", "before");
    let given = settings.conversation.clone();
    let (session, reports) = session_on(settings, talking_turn(Default::default()));
    session.submit(Op::UserTurn(Input::text("first")));
    session.submit(Op::Clear);
    session.submit(Op::UserTurn(Input::text("second")));
    session.submit(Op::Shutdown);
    session.ended().await;
    let reported = reports.taken();
    let kinds: Vec<&str> = reported
        .iter()
        .map(|e| match e {
            SessionEvent::Memory(_) => "memory",
            SessionEvent::Cleared => "cleared",
            SessionEvent::TurnEnded { .. } => "ended",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["memory", "ended", "cleared", "memory", "ended"],
        "{reported:?}"
    );
    // The first record holds the whole conversation the session started from.
    let SessionEvent::Memory(first) = &reported[0] else {
        panic!("{reported:?}");
    };
    assert_eq!(first.from, 0);
    assert_eq!(first.messages.len(), 4);
    // What the log keeps rebuilds it: the cleared part is gone.
    assert_eq!(
        reports.remembered(given.messages()),
        [
            user("second"),
            Message::Assistant {
                text: "ok".into(),
                tool_calls: vec![]
            }
        ]
    );
    // The conversation handed over was copied, never shared: the session's turns and its
    // `/clear` left it as it was.
    assert_eq!(given.messages().len(), 2);
}

/// `/model` is resolved by the session: a name it cannot use is refused with the reason and
/// the next turns keep the model they had; one it can is applied and reported as applied.
#[tokio::test]
async fn a_model_the_session_cannot_use_is_refused_and_the_turns_keep_the_old_one() {
    let models = Arc::new(Mutex::new(Vec::new()));
    let (session, reports) = session(talking_turn(models.clone()));
    session.submit(Op::SetModel("acme/x".into()));
    session.submit(Op::UserTurn(Input::text("one")));
    session.submit(Op::SetModel("openai/gpt-4o".into()));
    session.submit(Op::UserTurn(Input::text("two")));
    session.submit(Op::Shutdown);
    session.ended().await;
    assert_eq!(
        models.lock().map(|m| m.clone()).unwrap_or_default(),
        ["gpt-4.1", "gpt-4o"]
    );
    let reported = reports.taken();
    assert!(
        reported.contains(&SessionEvent::Refused {
            reason: "unknown provider `acme`".into()
        }),
        "{reported:?}"
    );
    let applied: Vec<(ProviderKind, String)> = reported
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ModelSet(provider) => Some((provider.kind, provider.api_model.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(applied, [(ProviderKind::OpenAi, "gpt-4o".to_string())]);
}

#[test]
fn an_alias_of_another_provider_switches_to_it_only_with_its_key() {
    let current = super::test_settings::settings().provider;
    let refused = resolve_model(&current, "sonnet", |_| false)
        .err()
        .unwrap_or_else(|| panic!("sonnet resolved without its key"))
        .to_string();
    assert!(refused.contains("belongs to anthropic"), "{refused}");
    assert!(refused.contains("ANTHROPIC_API_KEY"), "{refused}");
    assert!(
        refused.ends_with(
            " (ANTHROPIC_API_KEY is not set; /model anthropic/sonnet names the provider)"
        ),
        "{refused}"
    );
    let unknown = resolve_model(&current, "acme/x", |_| true).map(|p| p.model);
    assert_eq!(
        unknown.map_err(|e| e.to_string()),
        Err("unknown provider `acme`".to_string())
    );
    let switched = resolve_model(&current, "sonnet", |kind| kind == ProviderKind::Anthropic)
        .expect("resolve model current");
    assert_eq!(switched.kind, ProviderKind::Anthropic);
    assert_eq!(switched.api_model, "claude-sonnet-4-5");
    // OpenAI's alias without OpenAI's key: refused, the model in use stays.
    assert!(resolve_model(&switched, "mini", |_| false).is_err());
}

#[tokio::test]
async fn operations_apply_in_order_and_shutdown_waits_for_the_turn() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (session, reports) = session(recording_turn(seen.clone(), ""));
    session.submit(Op::UserTurn(Input::text("first")));
    // Queued behind the first turn, on the tier set after it was submitted.
    session.submit(Op::SetTier(Tier::Full));
    session.submit(Op::UserTurn(Input::text("second")));
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, crate::exit::Exit::Success);
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "first");
    assert_eq!(seen[1], ("second".to_string(), Tier::Full));
    let reported = reports.taken();
    assert!(reported.contains(&SessionEvent::TierSet(Tier::Full)));
    assert_eq!(
        reported
            .into_iter()
            .filter(|e| !matches!(e, SessionEvent::TierSet(_)))
            .collect::<Vec<_>>(),
        vec![
            SessionEvent::TurnEnded {
                code: crate::exit::Exit::Success
            },
            SessionEvent::TurnEnded {
                code: crate::exit::Exit::Success
            }
        ]
    );
}

#[tokio::test]
async fn an_interrupt_stops_the_turn_and_drops_the_requests_behind_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (session, reports) = session(recording_turn(seen.clone(), "long"));
    session.submit(Op::UserTurn(Input::text("long")));
    session.submit(Op::UserTurn(Input::text("never")));
    // The turn has started once it recorded its text.
    while seen.lock().map(|s| s.is_empty()).unwrap_or(false) {
        tokio::task::yield_now().await;
    }
    session.submit(Op::Interrupt);
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, crate::exit::Exit::Interrupted);
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        reports.taken(),
        vec![
            SessionEvent::TurnDropped,
            SessionEvent::TurnEnded {
                code: crate::exit::Exit::Interrupted
            }
        ]
    );
}

/// A turn that asks one permission question and ends with 1 when allowed once, 2 when denied,
/// 3 when the question was never answered.
fn asking_turn() -> RunTurn {
    Arc::new(|_settings, bus, _input, _stopped| {
        Box::pin(async move {
            let question = crate::bus::PermissionQuestion {
                token: "q_1".into(),
                id: "call_1".into(),
                tool: "run_command".into(),
                side_effect: crate::protocol::SideEffect::Execute,
                risk: None,
                reason: "Runs a shell command.".into(),
                rule: "run_command(cargo test)".into(),
                always: crate::bus::AlwaysScope::Session,
                previews: vec![],
            };
            match bus.ask(question).await {
                Some(Answer::AllowOnce) => crate::exit::Exit::Failed,
                Some(Answer::Deny) => crate::exit::Exit::Usage,
                _ => crate::exit::Exit::Provider,
            }
        })
    })
}

fn asked(event: &SessionEvent) -> Option<String> {
    match event {
        SessionEvent::PermissionAsked(question) => Some(question.token.clone()),
        _ => None,
    }
}

/// A session whose front end answers permission questions, its turns [`asking_turn`].
fn answering_session() -> (Session, Arc<Reports>) {
    let reports = Arc::new(Reports::default());
    let frontend = Frontend {
        sinks: vec![reports.clone() as Arc<dyn Sink>],
        reports: vec![reports.clone() as Arc<dyn ReportSink>],
        asks: true,
        turn: asking_turn(),
        mcp: McpScope::PerTurn,
    };
    let session = Session::spawn(super::test_settings::settings(), frontend);
    (session, reports)
}

#[tokio::test]
async fn a_permission_question_is_reported_and_answered_by_an_operation() {
    let (session, reports) = answering_session();
    session.submit(Op::UserTurn(Input::text("test it")));
    let token = reports.until(asked).await;
    session.submit(Op::AnswerPermission {
        token,
        answer: Answer::AllowOnce,
    });
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, crate::exit::Exit::Failed);
}

#[tokio::test]
async fn an_interrupt_denies_the_question_waiting() {
    let (session, reports) = answering_session();
    session.submit(Op::UserTurn(Input::text("test it")));
    reports.until(asked).await;
    session.submit(Op::Interrupt);
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, crate::exit::Exit::Usage);
}

/// A question abandoned by an interrupt is withdrawn; the next turn asks again about a tool
/// call of the same id. An approval sent late for the first question is refused, with a
/// warning: it never answers the second, whose own answer decides.
#[tokio::test]
async fn a_late_answer_never_answers_a_later_question_of_the_same_call_id() {
    let (session, reports) = answering_session();
    session.submit(Op::UserTurn(Input::text("test it")));
    let first = reports.until(asked).await;
    session.submit(Op::Interrupt);
    let withdrawn = reports
        .until(|event| match event {
            SessionEvent::PermissionWithdrawn { token, id, why } => {
                Some((token.clone(), id.clone(), *why))
            }
            _ => None,
        })
        .await;
    assert_eq!(
        withdrawn,
        (first.clone(), "call_1".to_string(), Withdrawal::Interrupted)
    );
    reports
        .until(|event| matches!(event, SessionEvent::TurnEnded { .. }).then_some(()))
        .await;
    session.submit(Op::UserTurn(Input::text("test it again")));
    let second = reports
        .until(|_| {
            let tokens: Vec<String> = reports.taken().iter().filter_map(asked).collect();
            tokens.get(1).cloned()
        })
        .await;
    assert_ne!(second, first, "a token is never used twice");
    session.submit(Op::AnswerPermission {
        token: first,
        answer: Answer::AllowOnce,
    });
    reports
        .until(|event| matches!(event, SessionEvent::Warning { .. }).then_some(()))
        .await;
    for unknown in ["call_1", "", "q_x_1"] {
        session.submit(Op::AnswerPermission {
            token: unknown.into(),
            answer: Answer::AllowAlways,
        });
    }
    session.submit(Op::AnswerPermission {
        token: second,
        answer: Answer::Deny,
    });
    session.submit(Op::Shutdown);
    // Denied (exit 2), not allowed once (exit 1).
    assert_eq!(session.ended().await, crate::exit::Exit::Usage);
}

#[tokio::test]
async fn without_a_front_end_that_answers_nothing_is_asked() {
    let (session, reports) = session(asking_turn());
    session.submit(Op::UserTurn(Input::text("test it")));
    session.submit(Op::Shutdown);
    assert_eq!(session.ended().await, crate::exit::Exit::Provider);
    assert_eq!(
        reports.taken(),
        vec![SessionEvent::TurnEnded {
            code: crate::exit::Exit::Provider
        }]
    );
}

/// The front ends drive the core through the session alone: no file of the TUI or of headless
/// mode (their tests aside) names the provider, checkpoints, compaction, the registry client or
/// Scribiz, nor builds or changes an MCP hub or the permission policy's rules (the session owns
/// them: `Op::StartMcp`, `Op::Rules`).
#[test]
fn front_ends_reach_the_core_only_through_the_session() {
    const CORE: [&str; 5] = [
        "provider",
        "checkpoint",
        "compaction",
        "registry_client",
        "scribiz",
    ];
    const OWNED: [&str; 7] = [
        "McpHub",
        "mcp::hub",
        "mcp.hub",
        ".record_unapproved(",
        ".launch(",
        ".add_rule(",
        ".remove_session_rule(",
    ];
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    // The TUI is a crate of its own beside the core.
    let front_ends = [
        manifest.join("../splice-tui/src"),
        manifest.join("src/headless"),
    ];
    for front_end in front_ends {
        let mut dirs = vec![front_end];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("list dir") {
                let path = entry.expect("read a directory entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.to_string_lossy().ends_with("_tests.rs")
                {
                    files.push(path);
                }
            }
        }
    }
    assert!(files.len() > 10, "{files:?}");
    let (mut reached, mut held) = (Vec::new(), Vec::new());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read path");
        // A file's own unit tests may build what they check.
        let code = text
            .split_once("\n#[cfg(test)]\nmod tests {")
            .map_or(text.as_str(), |(code, _)| code);
        for (n, line) in code.lines().enumerate() {
            if line.contains("settings.conversation.") {
                held.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
            if OWNED.iter().any(|owned| line.contains(owned)) {
                reached.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
            for module in CORE {
                for prefix in ["crate::", "splice::", "splice_core::"] {
                    let named = format!("{prefix}{module}");
                    let whole = line.match_indices(&named).any(|(at, _)| {
                        !line[at + named.len()..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    });
                    if whole {
                        reached.push(format!("{}:{}: {line}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(reached.is_empty(), "{}", reached.join("\n"));
    // Nor do they hold the session's conversation: they hand a reopened session's over when
    // the session starts, and write the session log from what the session reports.
    assert!(held.is_empty(), "{}", held.join("\n"));
}

fn sleeping_server(name: &str, source: crate::mcp::Source) -> crate::mcp::ServerEntry {
    crate::mcp::ServerEntry {
        name: name.into(),
        config: crate::mcp::ServerConfig::Stdio {
            command: "sleep".into(),
            args: vec!["30".into()],
            env: Default::default(),
            env_passthrough: Vec::new(),
        },
        source,
        pins: Vec::new(),
    }
}

/// A session that lives across turns owns its MCP hub: the front end asks for servers by
/// operation (a project server not approved is listed, never started), reads their state
/// through the session's view, and the session ends them when it ends. A one-turn session
/// leaves its servers to its turn and has no hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_owns_its_mcp_hub_and_ends_its_servers_with_it() {
    use crate::mcp::{ServerState, Source};
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut options =
        crate::mcp::HubOptions::from_vars(dir.path().to_path_buf(), Vec::new()).expect("from vars");
    options.startup_timeout = std::time::Duration::from_secs(30);
    let frontend = Frontend {
        sinks: vec![],
        reports: vec![Arc::new(Reports::default()) as Arc<dyn ReportSink>],
        asks: false,
        turn: recording_turn(Default::default(), ""),
        mcp: McpScope::Session(options),
    };
    let session = Session::spawn(super::test_settings::settings(), frontend);
    let servers = session
        .mcp()
        .unwrap_or_else(|| panic!("a session-wide scope has a hub"));
    session.submit(Op::StartMcp {
        start: vec![sleeping_server("silent", Source::User)],
        unapproved: vec![sleeping_server("fresh", Source::Project)],
    });
    let states = || -> Vec<(String, ServerState)> {
        servers
            .statuses()
            .into_iter()
            .map(|s| (s.name, s.state))
            .collect()
    };
    for _ in 0..1000 {
        if states().len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        states(),
        [
            ("fresh".to_string(), ServerState::Unapproved),
            ("silent".to_string(), ServerState::Starting)
        ]
    );
    session.submit(Op::Shutdown);
    session.ended().await;
    let ended = servers.statuses();
    assert_eq!(ended[1].state, ServerState::Failed, "{:?}", ended[1]);
    assert_eq!(ended[1].last_error.as_deref(), Some("shut down"));

    let headless = Session::spawn(
        super::test_settings::settings(),
        Frontend::headless(Vec::new()),
    );
    assert!(headless.mcp().is_none());
    headless.submit(Op::Shutdown);
    headless.ended().await;
}

/// An undo holds the session's loop while it restores (it is short, and nothing else may
/// change the files meanwhile), but what is submitted during it is taken after it, in order:
/// the request behind it runs, the interrupt stops it, and the shutdown ends the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_and_a_shutdown_sent_during_an_undo_are_not_lost() {
    let data = tempfile::tempdir().expect("create a temporary directory");
    let mut settings = super::test_settings::settings();
    settings.layout = crate::layout::Layout::at(data.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (session, reports) = session_on(settings, recording_turn(seen.clone(), "long"));
    session.submit(Op::Undo {
        run_id: "run_gone".into(),
        sequence: 1,
    });
    session.submit(Op::UserTurn(Input::text("long")));
    session.submit(Op::Interrupt);
    session.submit(Op::Shutdown);
    let code = tokio::time::timeout(std::time::Duration::from_secs(10), session.ended())
        .await
        .unwrap_or_else(|_| panic!("the session did not end: {:?}", reports.taken()));
    assert_eq!(code, crate::exit::Exit::Interrupted);
    let reported = reports.taken();
    assert!(
        matches!(reported.first(), Some(SessionEvent::UndoFailed { .. })),
        "{reported:?}"
    );
    assert_eq!(
        reported.last(),
        Some(&SessionEvent::TurnEnded {
            code: crate::exit::Exit::Interrupted
        })
    );
}
