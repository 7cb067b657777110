//! One model ⇄ tools conversation: ask the model, run the tools it calls, hand back the results,
//! until it answers without calling a tool, submits its typed output, or runs out of turns.

use thiserror::Error;

use crate::bus::Bus;
use crate::compaction;
use crate::hooks::{self, HookEvent, StopVerdict};
use crate::protocol::Builtin;
use crate::protocol::{Event, WarningCode};
use crate::provider::{Message, ModelRequest, Provider, ProviderError, StreamEvent, ToolSpec};
use crate::tools::ToolHandler;
use crate::tools::registry::{Offer, Place};
use crate::tools::runner::{AGENT_TOOL, ToolRunner};
use crate::usage::UsageMeter;

/// The stage of the light tier's conversation, whose prose is the run's answer: its end is
/// the run's stop (`Stop` hooks).
pub const ANSWER_STAGE: &str = "agent";

/// Output tokens a single response may use.
pub const MAX_OUTPUT_TOKENS: u32 = 8192;

#[derive(Debug, Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the model did not finish within {0} turns (raise --max-turns)")]
    TurnLimit(u32),
    #[error("{0}")]
    Budget(String),
}

/// Where the model's streamed prose goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRoute {
    /// `text` events: the answer of a light run.
    Answer,
    /// `reasoning` events: a pipeline stage's working notes.
    Reasoning,
}

/// What one conversation may do.
pub struct TurnSpec<'a> {
    pub system: &'a str,
    pub tools: &'a [Builtin],
    /// Whether the run's package tools are offered too (with their guidance in the system
    /// prompt): in the light tier and the stages that have the real tools.
    pub packages: bool,
    /// A typed-output tool (`submit_code`, …): its arguments stream as `tool_call_start` and
    /// `tool_call_delta`, it is not executed, and calling it ends the conversation.
    pub submit: Option<&'a ToolSpec>,
    pub stage: &'a str,
    pub iteration: u32,
    pub max_turns: u32,
    pub text_route: TextRoute,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// The model's prose of its last response.
    pub text: String,
    /// The id and raw arguments of the submit call, when the model submitted.
    pub submitted: Option<(String, String)>,
}

pub struct Agent<'a> {
    pub provider: &'a Provider,
    pub runner: &'a ToolRunner,
    pub meter: &'a UsageMeter,
    pub bus: &'a Bus,
    /// The project's instructions section, read once per run for every system prompt.
    pub instructions: Option<String>,
    /// The `agent` tool, in a light conversation (never a subagent's: depth 1).
    pub subagents: Option<&'a dyn ToolHandler>,
}

impl Agent<'_> {
    pub async fn converse(
        &self,
        messages: &mut Vec<Message>,
        spec: &TurnSpec<'_>,
    ) -> Result<TurnOutcome, AgentError> {
        let mut specs = crate::tools::specs(spec.tools);
        let run_tools = &self.runner.tools;
        let offered = run_tools.packages();
        let mut system = std::borrow::Cow::Borrowed(spec.system);
        if spec.packages
            && !offered.tools.is_empty()
            && let Some(guidance) = &offered.guidance
        {
            system = format!("{}\n\n{guidance}", spec.system).into();
        }
        if spec.packages {
            specs.extend(run_tools.specs(Place::Early));
        }
        if let Some(subagents) = self.subagents {
            specs.push(subagents.spec());
        }
        if let Some(submit) = spec.submit {
            specs.push(submit.clone());
        }
        let base_specs = specs;
        let mut context = ContextGauge::default();
        let mut warned = std::collections::HashSet::new();
        // `Stop` hooks that sent the model back in a row.
        let mut stop_blocks = 0;
        for _turn in 0..spec.max_turns {
            // The MCP servers' tools as they list them now: a server's `tools/list_changed`
            // (or its death) shows in the next request. Then the package tools: the order in
            // which the runner resolves a call's name, so the guard below keeps that tool.
            let mut specs = base_specs.clone();
            if spec.packages {
                specs.extend(run_tools.specs(Place::Late));
            }
            let (specs, dropped) = crate::tools::unique::first_of_each_name(specs);
            for (code, message) in dropped {
                if warned.insert(message.clone()) {
                    self.bus.emit(Event::warning(code, message));
                }
            }
            let tools_chars: usize = specs
                .iter()
                .map(|s| s.name.len() + s.description.len() + s.parameters.to_string().len())
                .sum();
            self.compact_if_full(messages, spec, &system, tools_chars, &mut context)
                .await?;
            context.sent(messages);
            // Run-unique ids of this response's tool calls, by place.
            let mut ids: Vec<String> = Vec::new();
            let response = {
                let request = ModelRequest {
                    system: &system,
                    messages,
                    tools: &specs,
                    max_tokens: MAX_OUTPUT_TOKENS,
                };
                let submit_name = spec.submit.map(|s| s.name.as_str());
                let mut streaming_submit: Option<usize> = None;
                let bus = self.bus;
                let route = spec.text_route;
                let mut on_event = |event: StreamEvent| match event {
                    StreamEvent::Text(delta) => bus.emit(match route {
                        TextRoute::Answer => Event::text(without_nul(delta)),
                        TextRoute::Reasoning => Event::reasoning(without_nul(delta)),
                    }),
                    StreamEvent::Reasoning(delta) => bus.emit(Event::reasoning(without_nul(delta))),
                    StreamEvent::ToolCallStart { index, id, name } => {
                        // A retried request streams its calls again from the first.
                        ids.truncate(index);
                        let id = bus.claim_call_id(&id);
                        ids.push(id.clone());
                        if Some(name.as_str()) == submit_name {
                            streaming_submit = Some(index);
                            bus.emit(Event::ToolCallStart { id, name });
                        }
                    }
                    StreamEvent::ToolCallDelta { index, delta } => {
                        if let (Some(id), true) = (ids.get(index), streaming_submit == Some(index))
                        {
                            bus.emit(Event::ToolCallDelta {
                                id: id.clone(),
                                delta,
                            });
                        }
                    }
                    StreamEvent::Retry {
                        attempt,
                        delay,
                        reason,
                    } => bus.emit(Event::warning(
                        WarningCode::ProviderRetry,
                        format!("retry {attempt} in {} ms after {reason}", delay.as_millis()),
                    )),
                };
                self.provider.complete(&request, &mut on_event).await
            };
            let mut response = response?;
            for (i, call) in response.tool_calls.iter_mut().enumerate() {
                call.id = match ids.get(i) {
                    Some(id) => id.clone(),
                    None => self.bus.claim_call_id(&call.id),
                };
            }
            self.meter.record(
                self.bus,
                spec.stage,
                spec.iteration,
                response.usage.as_ref(),
            );
            context.answered(response.usage.as_ref());
            // An answer cut at the output limit is reported, not passed off as complete.
            if let Some(reason @ ("length" | "max_tokens")) = response.stop_reason.as_deref() {
                self.bus.emit(Event::warning(
                    WarningCode::ResponseTruncated,
                    format!(
                        "the model's answer was cut at the output limit (stop reason `{reason}`, \
                         {MAX_OUTPUT_TOKENS} tokens); it may be incomplete"
                    ),
                ));
            }
            messages.push(Message::Assistant {
                text: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            if let Some(reason) = self.meter.over_budget() {
                return Err(AgentError::Budget(reason));
            }
            if response.tool_calls.is_empty() {
                // The run's own answer is about to end it: its `Stop` hooks may send it back.
                if spec.stage == ANSWER_STAGE {
                    // A subagent's answer ends only its own conversation: `SubagentStop`.
                    let event = match self.bus.agent() {
                        Some(_) => HookEvent::SubagentStop,
                        None => HookEvent::Stop,
                    };
                    let verdict = hooks::stop(self.bus, event, stop_blocks, &response.text).await;
                    if let StopVerdict::Continue(reason) = verdict {
                        stop_blocks += 1;
                        messages.push(Message::User {
                            text: format!("A {event} hook asks you to go on:\n{reason}"),
                            images: Vec::new(),
                        });
                        continue;
                    }
                }
                return Ok(TurnOutcome {
                    text: response.text,
                    submitted: None,
                });
            }
            let mut submitted = None;
            let calls = &response.tool_calls;
            let mut at = 0;
            while at < calls.len() {
                let call = &calls[at];
                if spec.submit.is_some_and(|s| s.name == call.name) {
                    submitted = Some((call.id.clone(), call.arguments.clone()));
                    // The submit call needs an answer in the transcript for a later turn.
                    messages.push(Message::ToolResult {
                        call_id: call.id.clone(),
                        content: "submitted".into(),
                        is_error: false,
                        images: Vec::new(),
                    });
                    at += 1;
                    continue;
                }
                // `agent` calls side by side run at once (the subagents bound how many start);
                // their results go back in the order called.
                let end = if self.subagents.is_some() && call.name == AGENT_TOOL {
                    calls[at..]
                        .iter()
                        .position(|c| c.name != AGENT_TOOL)
                        .map_or(calls.len(), |n| at + n)
                } else {
                    at + 1
                };
                let offer = Offer {
                    builtins: spec.tools,
                    run_tools: spec.packages,
                    own: self.subagents,
                };
                let replies = futures_util::future::join_all(
                    calls[at..end]
                        .iter()
                        .map(|call| self.runner.execute_offered(call, &offer)),
                )
                .await;
                for (call, reply) in calls[at..end].iter().zip(replies) {
                    messages.push(Message::ToolResult {
                        call_id: call.id.clone(),
                        content: reply.content,
                        is_error: reply.is_error,
                        images: reply.images,
                    });
                }
                at = end;
            }
            // A tool can spend too (a transcription): the budget holds before the next request.
            if let Some(reason) = self.meter.over_budget() {
                return Err(AgentError::Budget(reason));
            }
            if let Some(submitted) = submitted {
                return Ok(TurnOutcome {
                    text: response.text,
                    submitted: Some(submitted),
                });
            }
        }
        Err(AgentError::TurnLimit(spec.max_turns))
    }

    /// Before a request whose prompt would pass 80% of the model's window: summarise the older
    /// part of the conversation (a request of its own, without tools, with its own `usage`),
    /// or drop it when the summary cannot be had, and say so in a `context_compacted` warning.
    async fn compact_if_full(
        &self,
        messages: &mut Vec<Message>,
        spec: &TurnSpec<'_>,
        system: &str,
        tools_chars: usize,
        context: &mut ContextGauge,
    ) -> Result<(), AgentError> {
        let window = self.meter.context_window();
        let estimate = context.estimate(system, tools_chars, messages);
        if !compaction::needs_compaction(estimate, window) {
            return Ok(());
        }
        let Some(plan) = compaction::Compaction::plan(messages, window, estimate) else {
            return Ok(());
        };
        hooks::pre_compact(self.bus, "auto").await;
        let request = plan.summary_request(messages);
        let summary = match compaction::summarise(self.provider, &request).await {
            Ok(response) => {
                self.meter.record(
                    self.bus,
                    spec.stage,
                    spec.iteration,
                    response.usage.as_ref(),
                );
                Ok(response.text)
            }
            Err(error) => Err(error),
        };
        let report = plan.apply(messages, summary, system, tools_chars);
        self.bus.emit(report.warning());
        // What the provider last reported no longer describes this conversation.
        *context = ContextGauge::default();
        match self.meter.over_budget() {
            Some(reason) => Err(AgentError::Budget(reason)),
            None => Ok(()),
        }
    }
}

/// How full the conversation is: the prompt tokens the provider reported for the last request,
/// and the estimated size of the messages it held, so the next prompt is that report plus what
/// was added since.
#[derive(Debug, Default)]
struct ContextGauge {
    sent_tokens: u64,
    reported: Option<u64>,
}

impl ContextGauge {
    fn sent(&mut self, messages: &[Message]) {
        self.sent_tokens = compaction::estimate_request("", 0, messages);
    }

    fn answered(&mut self, usage: Option<&crate::provider::TokenUsage>) {
        self.reported = usage.map(|u| u.prompt_tokens).filter(|&t| t > 0);
    }

    /// The larger of the estimate from the text and the last report plus what came after it.
    fn estimate(&self, system: &str, tools_chars: usize, messages: &[Message]) -> u64 {
        let from_text = compaction::estimate_request(system, tools_chars, messages);
        let added = compaction::estimate_request("", 0, messages).saturating_sub(self.sent_tokens);
        let from_report = self.reported.map_or(0, |reported| reported + added);
        from_text.max(from_report)
    }
}

/// Model text loses its NUL bytes: in `reasoning.delta` they open stage markers, which only
/// Splice may write.
fn without_nul(text: String) -> String {
    if text.contains('\u{0}') {
        text.replace('\u{0}', "")
    } else {
        text
    }
}
