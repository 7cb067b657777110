//! The run lifecycle shared by every front end: `run_start` first, the tier's work, `final`,
//! `run_end` last, always, including input errors, provider failures and interrupts.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::agent::{Agent, AgentError, TextRoute, TurnSpec};
use crate::bus::Bus;
use crate::checkpoint::CheckpointStore;
use crate::permissions::Policy;
use crate::protocol::Event;
use crate::protocol::input::Prompt;
use crate::protocol::result::{PipelineResult, ResultStatus};
use crate::provider::pricing::PriceTable;
use crate::provider::{Message, Provider, ProviderConfig};
use crate::tools::ToolName;
use crate::tools::runner::ToolRunner;
use crate::usage::{Budget, UsageMeter};

pub const EXIT_SUCCESS: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_PROVIDER: i32 = 3;
pub const EXIT_INTERRUPTED: i32 = 130;

const AGENT_PROMPT: &str = include_str!("../assets/prompts/agent.md");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Auto,
    Light,
    Standard,
    Full,
}

impl Tier {
    pub const NAMES: [&'static str; 4] = ["auto", "light", "standard", "full"];

    pub fn parse(name: &str) -> Option<Tier> {
        match name {
            "auto" => Some(Tier::Auto),
            "light" => Some(Tier::Light),
            "standard" => Some(Tier::Standard),
            "full" => Some(Tier::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Auto => "auto",
            Tier::Light => "light",
            Tier::Standard => "standard",
            Tier::Full => "full",
        }
    }
}

/// Everything a run needs, resolved from flags, config and environment before it starts.
#[derive(Clone)]
pub struct RunSettings {
    pub session_id: String,
    /// The working root, canonical.
    pub cwd: PathBuf,
    pub provider: ProviderConfig,
    pub policy: Policy,
    pub tier: Tier,
    pub max_turns: u32,
    pub data_dir: PathBuf,
    pub pricing: PriceTable,
    pub budget: Budget,
}

/// A failure that ends a run: the `error` event's code and message, and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    pub code: &'static str,
    pub message: String,
    pub exit_code: i32,
}

impl RunFailure {
    pub fn new(code: &'static str, message: impl Into<String>, exit_code: i32) -> RunFailure {
        RunFailure {
            code,
            message: message.into(),
            exit_code,
        }
    }

    pub fn protocol(message: impl Into<String>) -> RunFailure {
        RunFailure::new("protocol_error", message, EXIT_USAGE)
    }

    pub fn usage(message: impl Into<String>) -> RunFailure {
        RunFailure::new("usage_error", message, EXIT_USAGE)
    }
}

/// What the run's work shares with the lifecycle wrapper, so an interrupt can still report.
struct Shared {
    meter: UsageMeter,
    tier: Mutex<String>,
    iterations: Mutex<u32>,
}

pub fn run_start(settings: &RunSettings) -> Event {
    Event::RunStart {
        session_id: settings.session_id.clone(),
        cwd: settings.cwd.display().to_string(),
        provider: settings.provider.kind.name().to_string(),
        model: settings.provider.model.clone(),
        api_model: settings.provider.api_model.clone(),
    }
}

/// Run one request from start to end and return the exit code. `prompt` resolves the input
/// (it may read stdin); `interrupt` completes on SIGINT/SIGTERM/SIGHUP or a user's Ctrl-C.
pub async fn execute<P, I>(settings: &RunSettings, bus: &Bus, prompt: P, interrupt: I) -> i32
where
    P: Future<Output = Result<Prompt, RunFailure>>,
    I: Future<Output = ()>,
{
    bus.emit(run_start(settings));
    let shared = Arc::new(Shared {
        meter: UsageMeter::new(
            settings.provider.kind.name(),
            &settings.provider.model,
            &settings.provider.api_model,
            settings.pricing.clone(),
            settings.budget,
        ),
        tier: Mutex::new(Tier::Light.as_str().to_string()),
        iterations: Mutex::new(0),
    });
    let work = async {
        let prompt = match prompt.await {
            Ok(prompt) => prompt,
            Err(failure) => return report(bus, &failure),
        };
        run_tier(settings, bus, &shared, prompt).await
    };
    let code = tokio::select! {
        biased;
        () = interrupt => {
            bus.emit(Event::error("interrupted", "the run was interrupted"));
            emit_final(bus, &shared, ResultStatus::Aborted, Some("interrupted".into()));
            EXIT_INTERRUPTED
        }
        code = work => code,
    };
    bus.emit(Event::run_end(code));
    code
}

fn report(bus: &Bus, failure: &RunFailure) -> i32 {
    bus.emit(Event::error(failure.code, failure.message.clone()));
    failure.exit_code
}

fn emit_final(bus: &Bus, shared: &Shared, status: ResultStatus, abort_reason: Option<String>) {
    let result = PipelineResult {
        run_id: bus.run_id().to_string(),
        status,
        tier: shared.tier.lock().map(|t| t.clone()).unwrap_or_default(),
        iterations: shared.iterations.lock().map(|i| *i).unwrap_or(0),
        stages: Vec::new(),
        usage: shared.meter.totals(),
        abort_reason,
    };
    bus.emit(Event::Final {
        text: serde_json::to_string(&result).unwrap_or_default(),
    });
}

async fn run_tier(settings: &RunSettings, bus: &Bus, shared: &Shared, prompt: Prompt) -> i32 {
    let provider = match Provider::new(settings.provider.clone()) {
        Ok(provider) => provider,
        Err(e) => {
            return report(
                bus,
                &RunFailure::new("internal_error", e.to_string(), EXIT_FAILED),
            );
        }
    };
    if let Err(e) = provider.check_credentials() {
        return report(
            bus,
            &RunFailure::new(e.code(), e.to_string(), EXIT_PROVIDER),
        );
    }
    let tier = match settings.tier {
        Tier::Auto => {
            bus.emit(Event::reasoning(
                "Tier auto: light (one agent conversation with the real tools)\n",
            ));
            Tier::Light
        }
        other => other,
    };
    if let Ok(mut shown) = shared.tier.lock() {
        *shown = tier.as_str().to_string();
    }
    let runner = ToolRunner {
        root: settings.cwd.clone(),
        policy: settings.policy.clone(),
        checkpoints: Arc::new(CheckpointStore::new(
            &settings.data_dir,
            bus.run_id(),
            &settings.cwd,
        )),
        bus: bus.clone(),
    };
    let agent = Agent {
        provider: &provider,
        runner: &runner,
        meter: &shared.meter,
        bus,
    };
    match tier {
        Tier::Light | Tier::Auto => run_light(settings, bus, shared, &agent, prompt).await,
        Tier::Standard | Tier::Full => report(
            bus,
            &RunFailure::usage(format!("tier `{}` is not available yet", tier.as_str())),
        ),
    }
}

/// The light tier: one conversation with the real tools; its prose is the answer.
async fn run_light(
    settings: &RunSettings,
    bus: &Bus,
    shared: &Shared,
    agent: &Agent<'_>,
    prompt: Prompt,
) -> i32 {
    if let Ok(mut iterations) = shared.iterations.lock() {
        *iterations = 1;
    }
    let system = format!("{AGENT_PROMPT}\nWorking root: {}\n", settings.cwd.display());
    let mut messages = vec![Message::User {
        text: prompt.text,
        images: prompt.images,
    }];
    let spec = TurnSpec {
        system: &system,
        tools: &ToolName::ALL,
        submit: None,
        stage: "agent",
        iteration: 1,
        max_turns: settings.max_turns,
        text_route: TextRoute::Answer,
    };
    match agent.converse(&mut messages, &spec).await {
        Ok(_) => {
            emit_final(bus, shared, ResultStatus::Completed, None);
            EXIT_SUCCESS
        }
        Err(error) => finish_with_agent_error(bus, shared, error),
    }
}

fn finish_with_agent_error(bus: &Bus, shared: &Shared, error: AgentError) -> i32 {
    let (code, exit, status, reason) = match &error {
        AgentError::Provider(e) => (e.code(), EXIT_PROVIDER, ResultStatus::Failed, None),
        AgentError::TurnLimit(_) => ("turn_limit", EXIT_FAILED, ResultStatus::Failed, None),
        AgentError::Budget(reason) => (
            "budget_exceeded",
            EXIT_FAILED,
            ResultStatus::Aborted,
            Some(reason.clone()),
        ),
    };
    bus.emit(Event::error(code, error.to_string()));
    emit_final(bus, shared, status, reason);
    exit
}
