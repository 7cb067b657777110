//! The ACP `plan` of a pipeline run: its stages as entries (a design plan's tasks, when its
//! tasks run side by side), each entry's status following the stage markers. Every change
//! sends the whole plan, as the protocol asks.

use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};

use splice_core::pipeline::tiers;
use splice_core::protocol::marker::{StageMarker, StageStatus};

/// One entry: what it names and how far it is.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    name: String,
    status: PlanEntryStatus,
    /// `failed` or `skipped`, said beside a finished entry.
    note: Option<&'static str>,
}

/// The plan so far of one session's current run.
#[derive(Debug, Default)]
pub(crate) struct PlanTracker {
    stages: Vec<Entry>,
    iteration: u32,
    tasks: Vec<Entry>,
}

impl PlanTracker {
    /// Apply a marker (of design-plan task `task`, if any); the plan to send.
    pub(crate) fn apply(&mut self, task: Option<&str>, marker: &StageMarker) -> Option<Plan> {
        match task.or(marker.task_id.as_deref()) {
            Some(task) => Some(self.apply_task(task, marker)),
            None => Some(self.apply_stage(marker)),
        }
    }

    fn apply_stage(&mut self, marker: &StageMarker) -> Plan {
        let known = self.stages.iter().any(|e| e.name == marker.stage);
        // A new iteration (or a new run) plans its stages afresh.
        if !known || marker.iteration != self.iteration {
            self.iteration = marker.iteration;
            let names: Vec<String> =
                match tiers::stages_for_marker(&marker.stage, marker.index, marker.total) {
                    Some(list) => list.iter().map(|s| s.name().to_string()).collect(),
                    None if known => self.stages.iter().map(|e| e.name.clone()).collect(),
                    None => {
                        let mut names: Vec<String> =
                            self.stages.iter().map(|e| e.name.clone()).collect();
                        names.push(marker.stage.clone());
                        names
                    }
                };
            self.stages = names
                .into_iter()
                .map(|name| Entry {
                    name,
                    status: PlanEntryStatus::Pending,
                    note: None,
                })
                .collect();
        }
        if let Some(entry) = self.stages.iter_mut().find(|e| e.name == marker.stage) {
            set(entry, marker.status);
        }
        let iteration = self.iteration;
        plan(&self.stages, |e| {
            if iteration > 1 {
                format!("{} (iteration {iteration})", e.name)
            } else {
                e.name.clone()
            }
        })
    }

    fn apply_task(&mut self, task: &str, marker: &StageMarker) -> Plan {
        let at = match self.tasks.iter().position(|e| e.name == task) {
            Some(at) => at,
            None => {
                self.tasks.push(Entry {
                    name: task.to_string(),
                    status: PlanEntryStatus::Pending,
                    note: None,
                });
                self.tasks.len() - 1
            }
        };
        let last = marker.index >= marker.total;
        let entry = &mut self.tasks[at];
        match marker.status {
            StageStatus::Failed => set(entry, StageStatus::Failed),
            StageStatus::Start => set(entry, StageStatus::Start),
            // A task is done when its last stage is.
            status if last => set(entry, status),
            _ => {}
        }
        plan(&self.tasks, |e| format!("task {}", e.name))
    }
}

fn set(entry: &mut Entry, status: StageStatus) {
    let (next, note) = match status {
        StageStatus::Start => (PlanEntryStatus::InProgress, None),
        StageStatus::Done => (PlanEntryStatus::Completed, None),
        StageStatus::Failed => (PlanEntryStatus::Completed, Some("failed")),
        StageStatus::Skipped => (PlanEntryStatus::Completed, Some("skipped")),
    };
    entry.status = next;
    entry.note = note;
}

fn plan(entries: &[Entry], name: impl Fn(&Entry) -> String) -> Plan {
    Plan::new(
        entries
            .iter()
            .map(|e| {
                let content = match e.note {
                    Some(note) => format!("{} ({note})", name(e)),
                    None => name(e),
                };
                PlanEntry::new(content, PlanEntryPriority::Medium, e.status.clone())
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(stage: &str, status: StageStatus, iteration: u32, index: u32) -> StageMarker {
        StageMarker {
            stage: stage.into(),
            status,
            iteration,
            index,
            total: 3,
            ms: None,
            detail: None,
            task_id: None,
        }
    }

    fn statuses(plan: &Plan) -> Vec<(String, PlanEntryStatus)> {
        plan.entries
            .iter()
            .map(|e| (e.content.clone(), e.status.clone()))
            .collect()
    }

    #[test]
    fn the_standard_stages_move_from_pending_to_completed() {
        let mut tracker = PlanTracker::default();
        let plan = tracker
            .apply(None, &marker("code_writer", StageStatus::Start, 1, 1))
            .expect("a plan");
        assert_eq!(
            statuses(&plan),
            [
                ("code_writer".into(), PlanEntryStatus::InProgress),
                ("test_runner".into(), PlanEntryStatus::Pending),
                ("acceptance_verifier".into(), PlanEntryStatus::Pending),
            ]
        );
        tracker.apply(None, &marker("code_writer", StageStatus::Done, 1, 1));
        let plan = tracker
            .apply(None, &marker("test_runner", StageStatus::Failed, 1, 2))
            .expect("a plan");
        assert_eq!(plan.entries[1].content, "test_runner (failed)");
        assert_eq!(plan.entries[1].status, PlanEntryStatus::Completed);
        // The next iteration starts over.
        let plan = tracker
            .apply(None, &marker("code_writer", StageStatus::Start, 2, 1))
            .expect("a plan");
        assert_eq!(plan.entries[0].content, "code_writer (iteration 2)");
        assert_eq!(plan.entries[2].status, PlanEntryStatus::Pending);
    }

    #[test]
    fn a_design_plans_tasks_are_the_entries_when_they_run_side_by_side() {
        let mut tracker = PlanTracker::default();
        tracker.apply(Some("t1"), &marker("code_writer", StageStatus::Start, 1, 1));
        let plan = tracker
            .apply(Some("t2"), &marker("code_writer", StageStatus::Start, 1, 1))
            .expect("a plan");
        assert_eq!(
            statuses(&plan),
            [
                ("task t1".into(), PlanEntryStatus::InProgress),
                ("task t2".into(), PlanEntryStatus::InProgress),
            ]
        );
        // A task is done with its last stage, not its first.
        let plan = tracker
            .apply(Some("t1"), &marker("code_writer", StageStatus::Done, 1, 1))
            .expect("a plan");
        assert_eq!(plan.entries[0].status, PlanEntryStatus::InProgress);
        let plan = tracker
            .apply(
                Some("t1"),
                &marker("acceptance_verifier", StageStatus::Done, 1, 3),
            )
            .expect("a plan");
        assert_eq!(plan.entries[0].status, PlanEntryStatus::Completed);
        let plan = tracker
            .apply(
                Some("t2"),
                &marker("test_runner", StageStatus::Failed, 1, 2),
            )
            .expect("a plan");
        assert_eq!(plan.entries[1].content, "task t2 (failed)");
    }
}
