//! The typed execution pipeline: tiers schedule stages, stages run in iterations until one
//! passes or `--max-iterations` is spent, design plans run several pipelines in order.

pub(crate) mod detect;
pub mod diff;
pub(crate) mod jobs;
pub(crate) mod plan;
pub(crate) mod progress;
pub(crate) mod runner;
pub(crate) mod schema;
pub(crate) mod stages;
pub mod tiers;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::agent::Agent;
use crate::bus::Bus;
use crate::permissions::policy::exact_pattern;
use crate::permissions::{Effect, Origin, Rule};
use crate::protocol::Builtin;
use crate::settings::RunSettings;
use crate::tools::runner::ToolRunner;

/// Everything a stage needs from the run.
pub struct Ctx<'a> {
    pub settings: &'a RunSettings,
    pub bus: &'a Bus,
    pub agent: &'a Agent<'a>,
    pub log: &'a progress::StageLog,
    /// Shared by the tasks of a plan that run at once: the ids stay unique in the run.
    calls: Arc<AtomicU32>,
    /// The typed output the stage running now submitted, for its `StageEnd` hooks.
    output: std::sync::Mutex<Option<serde_json::Value>>,
    /// The run's lock on git work: shared by the plan's tasks and the run's cleanup.
    pub(crate) repo: crate::blocking::RunLock,
}

impl<'a> Ctx<'a> {
    pub fn new(
        settings: &'a RunSettings,
        bus: &'a Bus,
        agent: &'a Agent<'a>,
        log: &'a progress::StageLog,
        repo: crate::blocking::RunLock,
    ) -> Ctx<'a> {
        Ctx {
            settings,
            bus,
            agent,
            log,
            calls: Arc::new(AtomicU32::new(1)),
            output: Default::default(),
            repo,
        }
    }

    /// The context of a design-plan task beside others: its own settings (its worktree), tools
    /// stage log and bus (its events carry its id), the run's call ids.
    pub fn task<'b>(
        &self,
        settings: &'b RunSettings,
        bus: &'b Bus,
        agent: &'b Agent<'b>,
        log: &'b progress::StageLog,
    ) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            settings,
            bus,
            agent,
            log,
            calls: Arc::clone(&self.calls),
            output: Default::default(),
            repo: self.repo.clone(),
        }
    }

    /// Record the running stage's typed output (its submission as sent).
    pub fn set_output(&self, output: Option<serde_json::Value>) {
        if let Ok(mut slot) = self.output.lock() {
            *slot = output;
        }
    }

    /// The running stage's typed output, if it submitted one.
    pub fn output(&self) -> Option<serde_json::Value> {
        self.output.lock().ok().and_then(|o| o.clone())
    }

    pub fn root(&self) -> &PathBuf {
        &self.settings.cwd
    }

    /// A fresh id for a tool execution Splice starts itself (analyzers, the test command).
    pub fn call_id(&self, stage: &str) -> String {
        format!(
            "splice_{stage}_{}",
            self.calls.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The run's tool runner, with `commands` allowed: the analyzers and the test command that
    /// Splice chose itself (detected, or given with `--test-command`) are part of the stage, so
    /// they do not prompt. `--deny` rules and read-only mode still refuse them.
    pub fn runner_allowing(&self, commands: &[String]) -> ToolRunner {
        let base = self.agent.runner;
        let mut rules = Vec::new();
        for command in commands {
            rules.push(Rule {
                effect: Effect::Allow,
                tool: Builtin::RunCommand.as_str().into(),
                // Exactly this command: a `\\` or `*` in it is text, not a glob.
                pattern: Some(exact_pattern(command)),
                origin: Origin::Splice,
            });
        }
        ToolRunner {
            // The session's rules stay shared: "allow always" here outlives the stage.
            policy: base.policy.with_extra_rules(base.policy.mode, rules),
            ..base.clone()
        }
    }
}
