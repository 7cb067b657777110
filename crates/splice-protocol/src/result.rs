//! The JSON documents carried in `final.text`: the pipeline result and the design-plan result.

use serde::{Deserialize, Serialize};

use super::events::CostStatus;
use super::marker::StageStatus;
use super::stage::Stage;
use super::tier::Tier;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Completed,
    Failed,
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    pub name: Stage,
    /// `done`, `failed` or `skipped`: a record is written when a stage ends.
    pub status: StageStatus,
    pub iteration: u32,
    pub ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    pub requests: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Sum of the priced requests; absent when any request was unpriced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cost_usd: Option<f64>,
    /// `priced`, `unpriced` (no request had a price) or `partial`.
    pub cost_status: CostStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineResult {
    pub run_id: String,
    pub status: ResultStatus,
    pub tier: Tier,
    pub iterations: u32,
    pub stages: Vec<StageRecord>,
    pub usage: UsageTotals,
    pub abort_reason: Option<String>,
    /// The answer, told apart from narration: a light run's last model turn (the one without
    /// tool calls), a pipeline's summary. Absent when the run ended before it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub answer: Option<String>,
}

/// A design-plan task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Completed,
    Failed,
    Skipped,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanTask {
    pub id: String,
    pub title: String,
    pub depends_on: Vec<String>,
    pub status: TaskStatus,
    /// The task's own pipeline run id, once it started.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub run_id: Option<String>,
    /// The task's pipeline result, once it ran.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub result: Option<PipelineResult>,
    /// A failed task's files put back from its checkpoints before the next task (additive).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rolled_back: Vec<String>,
    /// Files of that rollback left alone: changed after Splice wrote them, or now leading
    /// outside the root or into a git dir (additive).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rollback_skipped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignPlanResult {
    /// Always `design_plan`.
    pub kind: String,
    pub run_id: String,
    /// `completed` when every task completed, `aborted` on a budget stop or interrupt.
    pub status: ResultStatus,
    pub completed: Vec<String>,
    pub failed: Vec<String>,
    pub skipped: Vec<String>,
    pub tasks: Vec<PlanTask>,
    pub usage: UsageTotals,
    pub abort_reason: Option<String>,
}

impl DesignPlanResult {
    /// Put every task the run left unfinished (an interrupt, a stop) in exactly one list: the
    /// one that had started is `failed`, those that never did are `skipped`.
    pub fn settle_unfinished(&mut self) {
        for task in &mut self.tasks {
            if task.status != TaskStatus::Pending {
                continue;
            }
            if task.run_id.is_some() {
                task.status = TaskStatus::Failed;
                self.failed.push(task.id.clone());
            } else {
                task.status = TaskStatus::Skipped;
                self.skipped.push(task.id.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn light_result_has_documented_keys() {
        let result = PipelineResult {
            run_id: "run_x".into(),
            status: ResultStatus::Completed,
            tier: Tier::Light,
            iterations: 1,
            stages: vec![],
            usage: UsageTotals {
                cost_status: CostStatus::Unpriced,
                ..UsageTotals::default()
            },
            abort_reason: None,
            answer: None,
        };
        let value = serde_json::to_value(&result).unwrap_or_default();
        for key in [
            "run_id",
            "status",
            "tier",
            "iterations",
            "stages",
            "usage",
            "abort_reason",
        ] {
            assert!(value.get(key).is_some(), "missing {key}");
        }
        assert_eq!(value["status"], "completed");
        assert_eq!(value["stages"], serde_json::json!([]));
    }

    /// The typed fields are written exactly as the protocol spells them.
    #[test]
    fn typed_fields_serialise_to_the_protocol_strings() {
        let record = StageRecord {
            name: Stage::AcceptanceVerifier,
            status: StageStatus::Skipped,
            iteration: 2,
            ms: 0,
            detail: None,
        };
        assert_eq!(
            serde_json::to_string(&record).unwrap_or_default(),
            r#"{"name":"acceptance_verifier","status":"skipped","iteration":2,"ms":0}"#
        );
        let totals = UsageTotals {
            cost_status: CostStatus::Partial,
            ..UsageTotals::default()
        };
        assert_eq!(
            serde_json::to_value(&totals).unwrap_or_default()["cost_status"],
            "partial"
        );
        for (tier, name) in [
            (Tier::Light, "light"),
            (Tier::Standard, "standard"),
            (Tier::Full, "full"),
        ] {
            assert_eq!(serde_json::to_value(tier).unwrap_or_default(), name);
        }
        for status in [
            TaskStatus::Pending,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Skipped,
        ] {
            assert_eq!(
                serde_json::to_value(status).unwrap_or_default(),
                status.as_str()
            );
        }
    }
}
