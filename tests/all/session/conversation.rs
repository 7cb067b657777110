//! Follow-up requests in one session carry the earlier conversation, tool results included.

use crate::support;

use std::sync::Arc;

use serde_json::json;
use splice::bus::{Bus, Recorder, Sink};
use splice::conversation::Conversation;
use splice::permissions::{PermissionMode, Policy};
use splice::protocol::input::Prompt;
use splice::provider::pricing::PriceTable;
use splice::provider::{ProviderConfig, ProviderKind, normalize_base_url};
use splice::run::{self, RunSettings, Tier};
use splice::usage::Budget;
use support::Sandbox;
use support::fake_provider::{FakeProvider, openai};

/// A session's settings against the fake provider at `url` (also used by `session_ops`).
pub(crate) fn settings(sandbox: &Sandbox, url: &str, tier: Tier) -> RunSettings {
    let mut provider = ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4.1"))
        .expect("provider config for the fake provider");
    provider.base_url = normalize_base_url(url);
    provider.api_key = Some("sk-test".into());
    RunSettings {
        session_id: "session_test".into(),
        cwd: sandbox.root.clone(),
        provider,
        policy: Policy::new(PermissionMode::Ask, vec![]),
        tier,
        max_turns: 10,
        layout: splice::layout::Layout::at(&sandbox.data),
        pricing: PriceTable::builtin(),
        budget: Budget::default(),
        pipeline: Default::default(),
        conversation: Conversation::default(),
        packages: Default::default(),
        mcp: Default::default(),
        hooks: Default::default(),
    }
}

async fn ask(settings: &RunSettings, text: &str) -> splice::exit::Exit {
    let recorder: Arc<dyn Sink> = Arc::new(Recorder::default());
    let bus = Bus::new("run_test", vec![recorder]);
    let prompt = async { Ok(Prompt::from_text(text).into()) };
    run::execute(settings, &bus, prompt, std::future::pending()).await
}

#[tokio::test]
async fn second_request_sees_the_first_exchange_with_its_tool_result() {
    let provider = FakeProvider::start(vec![
        openai::tool_call("c1", "read_file", &[r#"{"path":"notes.txt"}"#]),
        openai::answer(&["The notes say hi."]),
        openai::answer(&["You asked about the notes."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "hi\n");
    let settings = settings(&sandbox, &provider.url, Tier::Light);
    assert_eq!(
        ask(&settings, "What do the notes say?").await,
        splice::exit::Exit::Success
    );
    assert_eq!(
        ask(&settings, "What did I ask before?").await,
        splice::exit::Exit::Success
    );
    let third = &provider.requests()[2].body;
    let roles: Vec<&str> = third["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(third["messages"][3]["content"], "hi\n");
    assert_eq!(
        third["messages"][5],
        json!({"role": "user", "content": "What did I ask before?"})
    );

    // A fresh conversation forgets.
    settings.conversation.clear();
    let provider = FakeProvider::start(vec![openai::answer(&["?"])]);
    let fresh = RunSettings {
        provider: ProviderConfig {
            base_url: normalize_base_url(&provider.url),
            ..settings.provider.clone()
        },
        ..settings.clone()
    };
    assert_eq!(
        ask(&fresh, "Anything before?").await,
        splice::exit::Exit::Success
    );
    assert_eq!(
        provider.requests()[0].body["messages"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[tokio::test]
async fn a_failed_request_leaves_the_conversation_as_it_was() {
    let provider = FakeProvider::start(vec![openai::answer(&["first"])]);
    let sandbox = Sandbox::new();
    let mut settings = settings(&sandbox, &provider.url, Tier::Light);
    settings.provider.max_retries = 0;
    assert_eq!(ask(&settings, "one").await, splice::exit::Exit::Success);
    let before = settings.conversation.messages();
    // No scripted reply left: the fake provider answers 500.
    assert_eq!(ask(&settings, "two").await, splice::exit::Exit::Provider);
    assert_eq!(settings.conversation.messages(), before);
}
