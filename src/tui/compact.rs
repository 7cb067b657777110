//! `/compact`: the session's conversation compacted on demand by the runs' own compaction
//! (`crate::compaction`). The summary request is a task of its own, so the UI never waits on
//! it; the conversation is replaced only when the summary arrives and the conversation is still
//! the one that was summarised.

use crate::compaction::{self, Compacted, Compaction};
use crate::protocol::Event;
use crate::protocol::events::UsageEvent;
use crate::provider::{Message, ModelResponse, Provider};
use crate::settings::RunSettings;

/// The `stage` of the summary request's `usage` event: counted in the session's cost, never
/// read as the fill of the conversation's context.
pub const STAGE: &str = "compact";

/// A summary request on its way.
pub struct PendingCompaction {
    /// Taken when the summary is applied.
    plan: Option<Compaction>,
    /// The conversation as it was planned from.
    messages: Vec<Message>,
    task: tokio::task::JoinHandle<Result<ModelResponse, String>>,
    provider: String,
    model: String,
    api_model: String,
}

impl Drop for PendingCompaction {
    fn drop(&mut self) {
        // A cancelled or discarded compaction leaves no request behind.
        self.task.abort();
    }
}

/// Why `/compact` did not start: an info (nothing to do) or an error.
#[derive(Debug, PartialEq)]
pub enum NotStarted {
    Nothing(String),
    Failed(String),
}

/// Plan the compaction of the session's conversation for a window of `window` tokens and send
/// its summary request. Unlike a run's, it is forced: whatever the fill, the newest exchanges
/// that fit in 40% of the window are kept and the rest is summarised.
pub fn start(settings: &RunSettings, window: u64) -> Result<PendingCompaction, NotStarted> {
    let messages = settings.conversation.messages();
    if messages.is_empty() {
        return Err(NotStarted::Nothing(
            "nothing to compact: the conversation is empty".into(),
        ));
    }
    let tokens_before = compaction::estimate_request("", 0, &messages);
    let Some(plan) = Compaction::plan(&messages, window, tokens_before) else {
        return Err(NotStarted::Nothing(
            "nothing to compact: the conversation is only its newest exchange, which is kept as it is"
                .into(),
        ));
    };
    let provider = Provider::new(settings.provider.clone())
        .and_then(|p| p.check_credentials().map(|()| p))
        .map_err(|e| NotStarted::Failed(format!("cannot compact: {e}")))?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(NotStarted::Failed(
            "/compact needs the TUI's runtime".into(),
        ));
    }
    let request = plan.summary_request(&messages);
    let task = tokio::spawn(async move {
        compaction::summarise(&provider, &request)
            .await
            .map_err(|e| e.to_string())
    });
    Ok(PendingCompaction {
        plan: Some(plan),
        messages,
        task,
        provider: settings.provider.kind.name().to_string(),
        model: settings.provider.model.clone(),
        api_model: settings.provider.api_model.clone(),
    })
}

/// The summary request's answer, or never while none is pending.
pub async fn finished(pending: &mut Option<PendingCompaction>) -> Result<ModelResponse, String> {
    match pending.as_mut() {
        Some(pending) => match (&mut pending.task).await {
            Ok(result) => result,
            Err(e) => Err(format!("the summary request stopped: {e}")),
        },
        None => std::future::pending().await,
    }
}

/// What a finished `/compact` did.
#[derive(Debug)]
pub struct Outcome {
    /// Set when the conversation was replaced.
    pub compacted: Option<Compacted>,
    /// The transcript's line about it: `(is an error, text)`.
    pub notice: (bool, String),
    /// The summary request's `usage` event, when it answered.
    pub usage: Option<Event>,
}

/// Replace the conversation with the compacted one, unless the summary failed or the
/// conversation changed meanwhile (a `/clear`, an `/undo` note): then nothing changes.
pub fn finish(
    pending: PendingCompaction,
    result: Result<ModelResponse, String>,
    settings: &RunSettings,
) -> Outcome {
    let usage = result.as_ref().ok().map(|response| {
        let mut event = UsageEvent {
            provider: pending.provider.clone(),
            model: pending.model.clone(),
            stage: STAGE.to_string(),
            iteration: 1,
            usage_sequence: 1,
            ..UsageEvent::default()
        };
        settings
            .pricing
            .fill(&mut event, &pending.api_model, response.usage.as_ref());
        Event::Usage(event)
    });
    let failed = |why: String| Outcome {
        compacted: None,
        notice: (
            true,
            format!("compaction failed: {why}; the conversation is unchanged"),
        ),
        usage: None,
    };
    let summary = match result {
        Ok(response) if response.text.trim().is_empty() => {
            return Outcome {
                usage,
                ..failed("the summary was empty".into())
            };
        }
        Ok(response) => response.text,
        Err(why) => return failed(why),
    };
    if settings.conversation.messages() != pending.messages {
        return Outcome {
            compacted: None,
            notice: (
                false,
                "compaction discarded: the conversation changed while the summary was written"
                    .into(),
            ),
            usage,
        };
    }
    let mut pending = pending;
    let mut messages = std::mem::take(&mut pending.messages);
    let Some(plan) = pending.plan.take() else {
        return failed("it was already applied".into());
    };
    let report = plan.apply(&mut messages, Ok(summary), "", 0);
    settings.conversation.replace(messages);
    Outcome {
        notice: (false, format!("context compacted: {}", report.outcome())),
        compacted: Some(report),
        usage,
    }
}

/// The fill after a compaction, from the fill reported before it: what the provider counted
/// beyond the messages (system prompt, tools) stays, the messages shrink as estimated.
pub fn fill_after(reported: u64, compacted: &Compacted) -> u64 {
    let removed = compacted
        .tokens_before
        .saturating_sub(compacted.tokens_after);
    reported.saturating_sub(removed).max(compacted.tokens_after)
}
