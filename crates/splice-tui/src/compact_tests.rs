//! `/compact` and the context meter in the app: the request is the session's (its tests are in
//! `splice_core::session`); the app asks for it, holds requests typed meanwhile and shows its report.

use insta::assert_snapshot;

use super::app::{App, Request, RunState};
use super::cells::{Cell, Level};
use super::snapshot_tests::{app, draw};
use splice_core::protocol::Event;
use splice_core::protocol::events::UsageEvent;
use splice_core::provider::pricing::PriceTable;
use splice_core::provider::{Message, ProviderConfig, ProviderKind};
use splice_core::session::{CompactOutcome, Op, SessionEvent};

/// An app on gpt-4o (a 128,000-token window) whose requests go to `url`.
fn app_at(url: &str) -> App {
    let mut app = app();
    let mut provider =
        ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4o")).expect("from env");
    provider.base_url = url.to_string();
    provider.api_key = None;
    provider.max_retries = 0;
    app.settings_mut().provider = provider;
    app.settings_mut().pricing = PriceTable::builtin();
    app
}

/// The conversation stands in for one the session holds: the app only reads it.
fn long_conversation() -> Vec<Message> {
    vec![
        Message::User {
            text: "fix the parser".into(),
            images: vec![],
        },
        Message::Assistant {
            text: "Fixed the parser.".into(),
            tool_calls: vec![],
        },
    ]
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
    app.settings_mut().conversation.replace(long_conversation());
    app.transcript_mut()
        .push(Cell::User("fix the parser".into()));
    app.transcript_mut()
        .push(Cell::Assistant("Fixed the parser.".into()));
    app.on_event("run_1", usage(92_000));
}

fn last_notice(app: &App) -> (Level, String) {
    match app.transcript().last() {
        Some(Cell::Notice(level, text)) => (*level, text.clone()),
        other => panic!("no notice: {other:?}"),
    }
}

/// What the session reports for a compaction of 3 exchanges, about 90,000 tokens to 45,000.
fn compacted() -> CompactOutcome {
    let report = splice_core::session::Compacted {
        exchanges: 3,
        tokens_before: 90_119,
        tokens_after: 45_109,
        fallback: None,
    };
    CompactOutcome {
        text: format!("context compacted: {}", report.outcome()),
        compacted: Some(report),
        failed: false,
    }
}

fn asked_to_compact(app: &mut App) -> bool {
    app.take_ops().iter().any(|op| matches!(op, Op::Compact))
}

#[test]
fn compact_asks_the_session_holds_requests_and_shows_its_report_and_lowers_the_meter() {
    let mut app = app_at("http://127.0.0.1:9");
    session(&mut app);
    // 92,000 of 128,000 tokens: past 80%, in the warning colour.
    assert_snapshot!("compact_before", draw(&mut app, 100, 12));

    app.submit("/compact".into());
    assert!(app.compacting());
    assert!(asked_to_compact(&mut app));
    app.on_session(SessionEvent::CompactStarted {
        model: "gpt-4o".into(),
    });
    // A request typed meanwhile waits for the compacted conversation.
    app.submit("now run the tests".into());
    assert!(app.take_requests().is_empty());
    assert_snapshot!("compact_under_way", draw(&mut app, 100, 12));

    // The session counts the summary request (its usage comes on the bus), then reports.
    let mut summary_usage = usage(47_000);
    if let Event::Usage(usage) = &mut summary_usage {
        usage.stage = splice_core::session::COMPACT_STAGE.into();
        usage.total_tokens = 47_300;
        usage.completion_tokens = 300;
        usage.cost_usd = Some(0.1205);
    }
    app.on_event("run_c", summary_usage);
    app.on_session(SessionEvent::CompactEnded(compacted()));
    assert!(!app.compacting());
    // The queued request starts now.
    assert_eq!(
        app.take_requests(),
        vec![Request::StartRun("now run the tests".into())]
    );
    app.on_event(
        "run_2",
        Event::RunEnd {
            status: splice_core::protocol::events::RunStatus::Success,
            exit_code: 0,
        },
    );
    assert_snapshot!("compact_after", draw(&mut app, 100, 12));

    // Counted in /cost like any request; the summary's own prompt is not the meter's fill.
    assert_eq!(app.usage().requests, 2);
    assert_eq!(app.usage().tokens, 92_200 + 47_300);
    let meter = app
        .context_tokens()
        .unwrap_or_else(|| panic!("meter unknown"));
    assert!(meter < 92_000 && meter > 40_000, "{meter}");
}

#[test]
fn a_failed_compaction_is_an_error_notice_and_the_meter_stays() {
    let mut app = app_at("http://127.0.0.1:9");
    session(&mut app);
    app.submit("/compact".into());
    app.on_session(SessionEvent::CompactEnded(CompactOutcome {
        compacted: None,
        failed: true,
        text: "compaction failed: refused; the conversation is unchanged".into(),
    }));
    assert_eq!(
        last_notice(&app),
        (
            Level::Error,
            "compaction failed: refused; the conversation is unchanged".into()
        )
    );
    assert!(!app.compacting());
    assert_eq!(app.context_tokens(), Some(92_000));
    assert_eq!(app.usage().requests, 1);
}

#[test]
fn compact_is_refused_during_a_run_and_while_compacting() {
    let mut app = app_at("http://127.0.0.1:9");
    app.settings_mut().conversation.replace(long_conversation());
    app.set_run(RunState::Running {
        since: std::time::Instant::now(),
    });
    app.submit("/compact".into());
    assert!(!app.compacting());
    assert!(!asked_to_compact(&mut app));
    let (level, text) = last_notice(&app);
    assert_eq!(level, Level::Warning);
    assert!(text.starts_with("wait for the run to end"), "{text}");

    app.set_run(RunState::Idle);
    app.submit("/compact".into());
    assert!(asked_to_compact(&mut app));
    app.submit("/compact".into());
    assert!(!asked_to_compact(&mut app));
    assert_eq!(
        last_notice(&app),
        (Level::Info, "already compacting (Esc cancels)".into())
    );
}

#[test]
fn a_runs_compaction_warning_reads_as_such_and_the_meter_waits_for_the_next_request() {
    let mut app = app_at("http://127.0.0.1:9");
    app.on_event("run_1", usage(110_000));
    let report = splice_core::session::Compacted {
        exchanges: 7,
        tokens_before: 110_000,
        tokens_after: 40_000,
        fallback: None,
    };
    app.on_event("run_1", report.warning());
    assert_eq!(
        last_notice(&app),
        (
            Level::Warning,
            "context compacted: summarised 7 earlier exchanges; about 110000 tokens before, \
             40000 after"
                .into()
        )
    );
    assert_eq!(app.context_tokens(), None);
    app.on_event("run_1", usage(41_000));
    assert_eq!(app.context_tokens(), Some(41_000));
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
    // The session's part: it resolves the name and reports the model it applied.
    for op in app.take_ops() {
        if let splice_core::session::Op::SetModel(name) = op {
            let applied =
                splice_core::session::resolve_model_from_env(&app.settings().provider, &name)
                    .expect("resolve model from env");
            app.on_session(splice_core::session::SessionEvent::ModelSet(applied));
        }
    }
    assert!(draw(&mut app, 100, 8).contains("ctx 6% · "));
    // A too narrow line keeps the meter ahead of the tokens.
    let narrow = draw(&mut app, 40, 8);
    assert!(narrow.contains("ctx 6%"), "{narrow}");
}

#[test]
fn esc_cancels_a_compaction_and_puts_waiting_requests_back_unsent() {
    let mut app = app_at("http://127.0.0.1:9");
    session(&mut app);
    app.submit("/compact".into());
    app.submit("now run the tests".into());
    app.take_ops();
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Esc,
    ));
    // Compacting until the session says the compaction ended.
    assert!(app.compacting());
    assert!(app.take_ops().iter().any(|op| matches!(op, Op::Interrupt)));
    assert_eq!(app.composer().text(), "now run the tests");
    assert!(app.take_requests().is_empty());
    // The session says it is cancelled.
    app.on_session(SessionEvent::CompactEnded(CompactOutcome {
        compacted: None,
        failed: false,
        text: "compaction cancelled; the conversation is unchanged".into(),
    }));
    assert_eq!(
        last_notice(&app),
        (
            Level::Info,
            "compaction cancelled; the conversation is unchanged".into()
        )
    );
    assert!(!app.compacting());
    assert!(app.take_requests().is_empty());
}

/// The app follows the session's answer to `/compact`: one it refuses (its turn still ending
/// when the run's end was already shown) leaves nothing waiting behind a compaction.
#[test]
fn a_compaction_the_session_refuses_holds_no_request() {
    let mut app = app_at("http://127.0.0.1:9");
    session(&mut app);
    app.submit("/compact".into());
    assert!(app.compacting());
    app.submit("now run the tests".into());
    assert!(app.take_requests().is_empty(), "it waits for the answer");
    app.on_session(SessionEvent::Refused {
        reason: "wait for the run to end (or press Esc) before /compact: the run is still \
                 adding to the conversation"
            .into(),
    });
    assert!(!app.compacting());
    assert_eq!(
        app.take_requests(),
        vec![Request::StartRun("now run the tests".into())]
    );
}
