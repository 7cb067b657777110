//! `Op::Compact`: the session's conversation compacted on demand by the runs' own compaction
//! (`crate::compaction`). The summary request is a task of its own, so the session keeps
//! taking operations; the conversation is replaced only when the summary arrives and the
//! conversation is still the one that was summarised. The request is counted by a usage meter
//! and checked against the budget like a run's.

use thiserror::Error;

use crate::bus::Bus;
use crate::compaction::{self, Compacted, Compaction};
use crate::provider::{Message, ModelResponse, Provider, ProviderError};
use crate::settings::RunSettings;
use crate::usage::UsageMeter;

/// The `stage` of the summary request's `usage` event: counted in the session's cost, never
/// read as the fill of the conversation's context.
pub const STAGE: &str = "compact";

/// A summary request on its way.
pub(super) struct PendingCompaction {
    /// Taken when the summary is applied.
    plan: Option<Compaction>,
    /// The conversation as it was planned from.
    messages: Vec<Message>,
    task: tokio::task::JoinHandle<Result<ModelResponse, ProviderError>>,
    /// Counts the request, on the model it went to.
    meter: UsageMeter,
}

impl Drop for PendingCompaction {
    fn drop(&mut self) {
        // A cancelled or discarded compaction leaves no request behind.
        self.task.abort();
    }
}

/// Why the summary request brought no summary.
#[derive(Debug, Error)]
pub(super) enum SummaryError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the summary request stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// Why `/compact` did not start: an info (nothing to do) or an error.
#[derive(Debug, PartialEq)]
pub(super) enum NotStarted {
    Nothing(String),
    Failed(String),
}

/// Plan the compaction of the session's conversation for a window of `window` tokens and send
/// its summary request. Unlike a run's, it is forced: whatever the fill, the newest exchanges
/// that fit in 40% of the window are kept and the rest is summarised.
pub(super) fn start(settings: &RunSettings, bus: Bus) -> Result<PendingCompaction, NotStarted> {
    let window = super::context_window(settings);
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
    let request = plan.summary_request(&messages);
    let task = tokio::spawn(async move {
        // The person's `PreCompact` hooks run first (cancelling the compaction ends them).
        crate::hooks::pre_compact(&bus, "manual").await;
        compaction::summarise(&provider, &request).await
    });
    Ok(PendingCompaction {
        plan: Some(plan),
        messages,
        task,
        meter: UsageMeter::new(
            settings.provider.kind.name(),
            &settings.provider.model,
            &settings.provider.api_model,
            settings.pricing.clone(),
            settings.budget,
        ),
    })
}

/// The summary request's answer, or never while none is pending.
pub(super) async fn finished(
    pending: &mut Option<PendingCompaction>,
) -> Result<ModelResponse, SummaryError> {
    match pending.as_mut() {
        Some(pending) => Ok((&mut pending.task).await??),
        None => std::future::pending().await,
    }
}

/// What a finished `/compact` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Set when the conversation was replaced.
    pub compacted: Option<Compacted>,
    /// Whether it failed (else it did what it could, or had nothing to do).
    pub failed: bool,
    /// What to tell the person.
    pub text: String,
}

impl Outcome {
    pub(super) fn failed(text: String) -> Outcome {
        Outcome {
            compacted: None,
            failed: true,
            text,
        }
    }

    pub(super) fn nothing(text: String) -> Outcome {
        Outcome {
            compacted: None,
            failed: false,
            text,
        }
    }
}

/// Replace the conversation with the compacted one, unless the summary failed, the budget is
/// spent, or the conversation changed meanwhile (a `/clear`, an `/undo` note): then nothing
/// changes. An answered request's `usage` goes out on `bus` either way.
pub(super) fn finish(
    pending: PendingCompaction,
    result: Result<ModelResponse, SummaryError>,
    settings: &RunSettings,
    bus: &Bus,
) -> Outcome {
    let failed = |why: String| {
        Outcome::failed(format!(
            "compaction failed: {why}; the conversation is unchanged"
        ))
    };
    if let Ok(response) = &result {
        pending.meter.record(bus, STAGE, 1, response.usage.as_ref());
        // As a run stops at a spent budget, the summary that spent it is not used.
        if let Some(reason) = pending.meter.over_budget() {
            return failed(reason);
        }
    }
    let summary = match result {
        Ok(response) if response.text.trim().is_empty() => {
            return failed("the summary was empty".into());
        }
        Ok(response) => response.text,
        Err(why) => return failed(why.to_string()),
    };
    if settings.conversation.messages() != pending.messages {
        return Outcome::nothing(
            "compaction discarded: the conversation changed while the summary was written".into(),
        );
    }
    let mut pending = pending;
    let mut messages = std::mem::take(&mut pending.messages);
    let Some(plan) = pending.plan.take() else {
        return failed("it was already applied".into());
    };
    let report = plan.apply(&mut messages, Ok(summary), "", 0);
    settings.conversation.replace(messages);
    Outcome {
        text: format!("context compacted: {}", report.outcome()),
        compacted: Some(report),
        failed: false,
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
