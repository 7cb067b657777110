//! Iterations: run the tier's stages in order; a failed stage skips the rest of the iteration
//! and its evidence feeds the next code writer, up to `--max-iterations`. Before the last
//! iteration, a failure that repeated gets a step-back analysis first.

use super::Ctx;
use super::progress::Slot;
use super::stages::{StageOutcome, Stuck, analyze, audit, test_run, verify, write};
use super::tiers::Stage;
use crate::agent::{AgentError, TextRoute, TurnSpec};
use crate::hooks;
use crate::protocol::Event;
use crate::provider::Message;
use serde_json::{Value, json};

const STEP_BACK_PROMPT: &str = include_str!("../../../../assets/prompts/step_back.md");

/// What the stages of one iteration share.
pub struct Iteration {
    pub number: u32,
    pub request: String,
    /// The previous iteration's failure (and a step-back analysis), for the code writer.
    pub feedback: Option<String>,
    pub code_summary: Option<String>,
    pub tests_summary: Option<String>,
    pub test_report: Option<String>,
}

impl Iteration {
    pub async fn diff(&self, ctx: &Ctx<'_>) -> String {
        super::diff::change(ctx.root()).await
    }
}

/// How a pipeline run ended.
#[derive(Debug)]
pub enum PipelineEnd {
    Completed,
    /// Every iteration failed; the last failure's detail.
    Failed(String),
    /// The permission policy refused a stage's writes or its test command: no iteration, and
    /// no later task of a plan, could do better. The refusal's detail.
    Refused(String),
    /// A provider or budget failure ended the run.
    Stopped(AgentError),
    /// A stage could not succeed however often it ran: the stage and the reason, and why.
    Stuck {
        detail: String,
        cause: Stuck,
    },
    /// The code writer found nothing to change; its answer.
    Answered(String),
}

struct Failure {
    stage: &'static str,
    detail: String,
    evidence: String,
}

impl Failure {
    /// Two failures are "the same" when the same stage failed with the same detail, numbers
    /// (timings, counts, line numbers) aside.
    fn signature(&self) -> String {
        let detail: String = self
            .detail
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        format!("{}:{detail}", self.stage)
    }
}

pub async fn run(ctx: &Ctx<'_>, stages: &[Stage], request: &str) -> PipelineEnd {
    let max = ctx.settings.pipeline.max_iterations.max(1);
    let total = u32::try_from(stages.len()).unwrap_or(u32::MAX);
    let mut failures: Vec<Failure> = Vec::new();
    for number in 1..=max {
        ctx.log.set_iterations(number);
        ctx.bus.emit(Event::reasoning(format!(
            "Starting pipeline iteration {number}\n"
        )));
        ctx.log.plan(number, stages.to_vec());
        let mut feedback = failures
            .last()
            .map(|f| format!("Stage {} failed: {}\n\n{}", f.stage, f.detail, f.evidence));
        if number == max && repeated(&failures) {
            match step_back(ctx, number, request, feedback.as_deref().unwrap_or("")).await {
                Ok(analysis) => {
                    feedback = Some(format!(
                        "{}\n\nStep-back analysis (restated problem and plan):\n{analysis}",
                        feedback.unwrap_or_default()
                    ));
                }
                Err(error) => return PipelineEnd::Stopped(error),
            }
        }
        let mut it = Iteration {
            number,
            request: request.to_string(),
            feedback,
            code_summary: None,
            tests_summary: None,
            test_report: None,
        };
        let mut failed: Option<Failure> = None;
        let mut stopped: Option<AgentError> = None;
        let mut refused = false;
        // How the pipeline ends now, without another iteration (an answer, a stuck stage).
        let mut ended: Option<PipelineEnd> = None;
        for (position, stage) in stages.iter().enumerate() {
            let slot = Slot {
                iteration: number,
                index: u32::try_from(position + 1).unwrap_or(u32::MAX),
                total,
            };
            if failed.is_some() || stopped.is_some() || ended.is_some() {
                ctx.log.skip(ctx.bus, *stage, slot);
                continue;
            }
            ctx.log.start(ctx.bus, *stage, slot);
            ctx.set_output(None);
            let outcome = run_stage(ctx, *stage, &mut it).await;
            match stage_end(ctx, *stage, &it, outcome).await {
                Ok(StageOutcome::Done { detail }) => ctx.log.finish(ctx.bus, true, detail),
                Ok(StageOutcome::Failed { detail, evidence }) => {
                    ctx.log.finish(ctx.bus, false, Some(detail.clone()));
                    failed = Some(Failure {
                        stage: stage.name(),
                        detail,
                        evidence,
                    });
                }
                Ok(StageOutcome::Refused { detail }) => {
                    ctx.log.finish(ctx.bus, false, Some(detail.clone()));
                    refused = true;
                    failed = Some(Failure {
                        stage: stage.name(),
                        evidence: detail.clone(),
                        detail,
                    });
                }
                Ok(StageOutcome::Stuck { detail, cause }) => {
                    ctx.log.finish(ctx.bus, false, Some(detail.clone()));
                    ended = Some(PipelineEnd::Stuck {
                        detail: format!("{}: {detail}", stage.name()),
                        cause,
                    });
                }
                Ok(StageOutcome::Answered { answer }) => {
                    ctx.log.finish(
                        ctx.bus,
                        true,
                        Some("nothing to change; answered the request".into()),
                    );
                    ended = Some(PipelineEnd::Answered(answer));
                }
                Err(error) => {
                    ctx.log.finish(ctx.bus, false, Some(error.to_string()));
                    stopped = Some(error);
                }
            }
        }
        if let Some(error) = stopped {
            return PipelineEnd::Stopped(error);
        }
        if let Some(end) = ended {
            return end;
        }
        match failed {
            None => return PipelineEnd::Completed,
            Some(failure) => failures.push(failure),
        }
        if refused {
            return PipelineEnd::Refused(
                failures
                    .last()
                    .map(|f| format!("{}: {}", f.stage, f.detail))
                    .unwrap_or_default(),
            );
        }
    }
    PipelineEnd::Failed(
        failures
            .last()
            .map(|f| format!("{}: {}", f.stage, f.detail))
            .unwrap_or_default(),
    )
}

async fn run_stage(
    ctx: &Ctx<'_>,
    stage: Stage,
    it: &mut Iteration,
) -> Result<StageOutcome, AgentError> {
    match stage {
        Stage::CodeWriter => write::code_writer(ctx, it).await,
        Stage::TestGenerator => write::test_generator(ctx, it).await,
        Stage::StaticAnalyzer => analyze::static_analyzer(ctx, it).await,
        Stage::SecurityAuditor => audit::security_auditor(ctx, it).await,
        Stage::TestRunner => Ok(test_run::test_runner(ctx, it).await),
        Stage::AcceptanceVerifier => verify::acceptance_verifier(ctx, it).await,
    }
}

/// The stage's `StageEnd` hooks, told how it ended and given its typed output (the test
/// runner's: its report): a hook that blocks fails a stage that passed, its reason the evidence
/// the next iteration's code writer gets.
async fn stage_end(
    ctx: &Ctx<'_>,
    stage: Stage,
    it: &Iteration,
    outcome: Result<StageOutcome, AgentError>,
) -> Result<StageOutcome, AgentError> {
    let Ok(outcome) = outcome else {
        return outcome;
    };
    if ctx.bus.hooks().is_none() {
        return Ok(outcome);
    }
    let (passed, detail) = match &outcome {
        StageOutcome::Done { detail } => (true, detail.clone()),
        StageOutcome::Answered { .. } => (true, Some("answered the request".to_string())),
        StageOutcome::Failed { detail, .. }
        | StageOutcome::Refused { detail }
        | StageOutcome::Stuck { detail, .. } => (false, Some(detail.clone())),
    };
    let output = match ctx.output() {
        Some(output) => output,
        None if stage == Stage::TestRunner => json!({ "testReport": it.test_report }),
        None => Value::Null,
    };
    let said = hooks::stage_end(
        ctx.bus,
        stage.name(),
        it.number,
        passed,
        detail.as_deref(),
        output,
    )
    .await;
    match (said, outcome) {
        (Some(reason), StageOutcome::Done { .. }) => Ok(StageOutcome::Failed {
            detail: format!("a StageEnd hook failed the stage: {reason}"),
            evidence: format!(
                "A StageEnd hook failed the {} stage:\n{reason}",
                stage.name()
            ),
        }),
        (_, outcome) => Ok(outcome),
    }
}

/// Whether the last two iterations failed the same way.
fn repeated(failures: &[Failure]) -> bool {
    match failures {
        [.., a, b] => a.signature() == b.signature(),
        _ => false,
    }
}

/// The model restates the problem and the plan, without tools; shown as reasoning.
async fn step_back(
    ctx: &Ctx<'_>,
    iteration: u32,
    request: &str,
    failure: &str,
) -> Result<String, AgentError> {
    ctx.bus.emit(Event::reasoning(format!(
        "Step-back analysis before iteration {iteration}: the same failure repeated\n"
    )));
    let mut messages = vec![Message::User {
        text: format!("Request:\n{request}\n\nThe failure that keeps repeating:\n{failure}\n"),
        images: Vec::new(),
    }];
    let spec = TurnSpec {
        system: STEP_BACK_PROMPT,
        tools: &[],
        packages: false,
        submit: None,
        stage: "step_back",
        iteration,
        max_turns: 1,
        text_route: TextRoute::Reasoning,
    };
    let text = match ctx.agent.converse(&mut messages, &spec).await {
        Ok(outcome) => outcome.text,
        // A step-back that tried to call tools still leaves the iteration to run.
        Err(AgentError::TurnLimit(_)) => String::new(),
        Err(other) => return Err(other),
    };
    if !text.ends_with('\n') {
        ctx.bus.emit(Event::reasoning("\n"));
    }
    Ok(text)
}
