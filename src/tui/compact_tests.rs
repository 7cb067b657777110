//! `/compact` and the context meter, against a local server speaking OpenAI's streamed chat
//! completions.

use insta::assert_snapshot;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::app::{App, Request, RunState};
use super::cells::{Cell, Level};
use super::snapshot_tests::{app, draw};
use crate::protocol::Event;
use crate::protocol::events::UsageEvent;
use crate::provider::pricing::PriceTable;
use crate::provider::{Message, ProviderConfig, ProviderKind, ToolCallRequest};

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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let url = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    let served = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
        let mut received = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        let body = loop {
            let n = stream
                .read(&mut buf)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
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
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
            sse_answer(text)
        );
        stream
            .write_all(reply.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = stream.shutdown().await;
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}"))
    });
    (url, served)
}

/// An app on gpt-4o (a 128,000-token window) whose requests go to `url`.
fn app_at(url: &str) -> App {
    let mut app = app();
    let mut provider = ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4o"))
        .unwrap_or_else(|e| panic!("{e}"));
    provider.base_url = url.to_string();
    provider.api_key = None;
    provider.max_retries = 0;
    app.settings.provider = provider;
    app.settings.pricing = PriceTable::builtin();
    app
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

fn usage(prompt_tokens: u64) -> Event {
    Event::Usage(UsageEvent {
        provider: "openai".into(),
        model: "gpt-4o".into(),
        stage: "agent".into(),
        iteration: 1,
        usage_sequence: 1,
        usage_reported: true,
        prompt_tokens,
        completion_tokens: 200,
        total_tokens: prompt_tokens + 200,
        cost_usd: Some(0.23),
        ..UsageEvent::default()
    })
}

/// A session that asked one thing and got an answer after reading six files.
fn session(app: &mut App) {
    app.settings.conversation.replace(long_conversation());
    app.transcript.push(Cell::User("fix the parser".into()));
    app.transcript
        .push(Cell::Assistant("Fixed the parser.".into()));
    app.on_event("run_1", usage(92_000));
}

fn last_notice(app: &App) -> (Level, String) {
    match app.transcript.last() {
        Some(Cell::Notice(level, text)) => (*level, text.clone()),
        other => panic!("no notice: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_summarises_without_tools_replaces_the_conversation_and_lowers_the_meter() {
    let (url, served) = fake_openai(SUMMARY).await;
    let mut app = app_at(&url);
    session(&mut app);
    // 92,000 of 128,000 tokens: past 80%, in the warning colour.
    assert_snapshot!("compact_before", draw(&mut app, 100, 12));

    app.submit("/compact".into());
    assert!(app.compacting.is_some());
    // A request typed meanwhile waits for the compacted conversation.
    app.submit("now run the tests".into());
    assert!(app.take_requests().is_empty());
    assert_snapshot!("compact_under_way", draw(&mut app, 100, 12));

    let result = super::compact::finished(&mut app.compacting).await;
    let usage = app
        .on_compacted(result)
        .unwrap_or_else(|| panic!("no usage event for the summary request"));
    app.on_event("run_c", usage);
    // The queued request starts now.
    assert_eq!(
        app.take_requests(),
        vec![Request::StartRun("now run the tests".into())]
    );
    app.on_event(
        "run_2",
        Event::RunEnd {
            status: crate::protocol::events::RunStatus::Success,
            exit_code: 0,
        },
    );
    assert_snapshot!("compact_after", draw(&mut app, 100, 12));

    // The summary request: no tools, the summariser's system prompt, the old part told.
    let body = served.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        body.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{body}"
    );
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["role"], "system");
    let told = messages[1]["content"].to_string();
    assert!(told.contains("read_file"), "{told}");
    assert!(told.contains("// part 0"), "{told}");
    assert!(
        !told.contains("// part 5"),
        "the kept exchanges are not summarised"
    );

    // The conversation: the request with the summary, then the three newest calls and the
    // answer, word for word.
    let compacted = app.settings.conversation.messages();
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

    // Counted in /cost like any request; the summary's own prompt is not the meter's fill.
    assert_eq!(app.usage.requests, 2);
    assert_eq!(app.usage.tokens, 92_200 + 47_300);
    let meter = app
        .context_tokens
        .unwrap_or_else(|| panic!("meter unknown"));
    assert!(meter < 92_000 && meter > 40_000, "{meter}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_summary_request_is_a_notice_and_changes_nothing() {
    // A port that was open a moment ago: the connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let url = format!(
        "http://{}",
        closed.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    drop(closed);
    let mut app = app_at(&url);
    session(&mut app);
    app.submit("/compact".into());
    let result = super::compact::finished(&mut app.compacting).await;
    assert!(app.on_compacted(result).is_none());
    let (level, text) = last_notice(&app);
    assert_eq!(level, Level::Error);
    assert!(
        text.starts_with("compaction failed: ") && text.ends_with("the conversation is unchanged"),
        "{text}"
    );
    assert_eq!(app.settings.conversation.messages(), long_conversation());
    assert_eq!(app.context_tokens, Some(92_000));
    assert_eq!(app.usage.requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_changed_while_compacting_is_left_as_it_is() {
    let (url, served) = fake_openai(SUMMARY).await;
    let mut app = app_at(&url);
    session(&mut app);
    app.submit("/compact".into());
    app.submit("/clear".into());
    let result = super::compact::finished(&mut app.compacting).await;
    // The request was made and answered: its cost still counts.
    assert!(app.on_compacted(result).is_some());
    let (_, text) = last_notice(&app);
    assert!(text.starts_with("compaction discarded"), "{text}");
    assert!(app.settings.conversation.is_empty());
    let _ = served.await;
}

#[test]
fn compact_is_refused_during_a_run_and_when_there_is_nothing_to_summarise() {
    let mut app = app_at("http://127.0.0.1:9");
    app.settings.conversation.replace(long_conversation());
    app.run = RunState::Running {
        since: std::time::Instant::now(),
    };
    app.submit("/compact".into());
    assert!(app.compacting.is_none());
    let (level, text) = last_notice(&app);
    assert_eq!(level, Level::Warning);
    assert!(text.starts_with("wait for the run to end"), "{text}");

    app.run = RunState::Idle;
    app.settings.conversation.clear();
    app.submit("/compact".into());
    assert_eq!(
        last_notice(&app),
        (
            Level::Info,
            "nothing to compact: the conversation is empty".into()
        )
    );
    app.settings.conversation.push_exchange("hi", "hello");
    app.submit("/compact".into());
    let (level, text) = last_notice(&app);
    assert_eq!(level, Level::Info);
    assert!(text.starts_with("nothing to compact: "), "{text}");
    assert!(app.compacting.is_none());
}

#[test]
fn a_runs_compaction_warning_reads_as_such_and_the_meter_waits_for_the_next_request() {
    let mut app = app_at("http://127.0.0.1:9");
    app.on_event("run_1", usage(110_000));
    let report = crate::compaction::Compacted {
        exchanges: 7,
        tokens_before: 110_000,
        tokens_after: 40_000,
        fallback: None,
    };
    app.on_event(
        "run_1",
        Event::warning(
            crate::protocol::WarningCode::ContextCompacted,
            report.message(),
        ),
    );
    assert_eq!(
        last_notice(&app),
        (
            Level::Warning,
            "context compacted: summarised 7 earlier exchanges; about 110000 tokens before, \
             40000 after"
                .into()
        )
    );
    assert_eq!(app.context_tokens, None);
    app.on_event("run_1", usage(41_000));
    assert_eq!(app.context_tokens, Some(41_000));
}

#[test]
fn the_meter_follows_the_model_of_the_session() {
    let mut app = app_at("http://127.0.0.1:9");
    let screen = draw(&mut app, 100, 8);
    assert!(!screen.contains("ctx"), "unknown before the first request");
    app.on_event("run_1", usage(64_000));
    assert!(draw(&mut app, 100, 8).contains("ctx 50% · "));
    // gpt-4.1 has a window of 1,047,576 tokens.
    app.submit("/model gpt-4.1".into());
    assert!(draw(&mut app, 100, 8).contains("ctx 6% · "));
    // A too narrow line keeps the meter ahead of the tokens.
    let narrow = draw(&mut app, 40, 8);
    assert!(narrow.contains("ctx 6%"), "{narrow}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_cancels_a_compaction_and_puts_waiting_requests_back_unsent() {
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let url = format!(
        "http://{}",
        silent.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    let mut app = app_at(&url);
    session(&mut app);
    app.submit("/compact".into());
    app.submit("now run the tests".into());
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Esc,
    ));
    assert!(app.compacting.is_none());
    assert_eq!(app.composer.text(), "now run the tests");
    assert!(app.take_requests().is_empty());
    assert_eq!(
        last_notice(&app),
        (
            Level::Info,
            "compaction cancelled; the conversation is unchanged".into()
        )
    );
    assert_eq!(app.settings.conversation.messages(), long_conversation());
}
