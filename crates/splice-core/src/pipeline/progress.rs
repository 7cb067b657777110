//! Stage lifecycle bookkeeping: the `\x00STAGE` markers in `reasoning.delta` and the stage
//! records of the final result. Every stage that starts ends with exactly one done or failed,
//! an interrupt included (the run lifecycle closes the open stage).

use std::sync::Mutex;
use std::time::Instant;

use crate::bus::Bus;
use crate::protocol::Event;
use crate::protocol::marker::{StageMarker, StageStatus};
use crate::protocol::result::StageRecord;
use crate::protocol::stage::Stage;

struct Open {
    stage: Stage,
    marker: StageMarker,
    started: Instant,
}

/// The stages of the pipeline run in progress.
#[derive(Default)]
pub struct StageLog {
    records: Mutex<Vec<StageRecord>>,
    open: Mutex<Option<Open>>,
    iterations: Mutex<u32>,
    /// The stages the current iteration schedules, and how many of them have started.
    plan: Mutex<(u32, Vec<Stage>, u32)>,
    /// The logs of design-plan tasks running at once, so an interrupt closes their stages too.
    tasks: Mutex<Vec<std::sync::Arc<StageLog>>>,
    /// A task's log: the task's bus (its events carry the task's id), and the id for its
    /// markers.
    task: Option<(Bus, String)>,
}

/// Where a stage sits in its iteration.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub iteration: u32,
    pub index: u32,
    pub total: u32,
}

impl StageLog {
    pub fn set_iterations(&self, n: u32) {
        if let Ok(mut iterations) = self.iterations.lock() {
            *iterations = n;
        }
    }

    pub fn iterations(&self) -> u32 {
        self.iterations.lock().map(|i| *i).unwrap_or(0)
    }

    pub fn records(&self) -> Vec<StageRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Hand over the records and iterations and start afresh (design-plan tasks).
    pub fn take(&self) -> (Vec<StageRecord>, u32) {
        let records = self
            .records
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default();
        let iterations = self
            .iterations
            .lock()
            .map(|mut i| std::mem::take(&mut *i))
            .unwrap_or(0);
        (records, iterations)
    }

    /// The stages iteration `iteration` will run, in order.
    pub fn plan(&self, iteration: u32, stages: Vec<Stage>) {
        if let Ok(mut plan) = self.plan.lock() {
            *plan = (iteration, stages, 0);
        }
    }

    /// A log of its own for a task that runs beside others; an interrupt of this log reaches
    /// it until [`StageLog::release`].
    pub fn task(&self, bus: &Bus) -> std::sync::Arc<StageLog> {
        let log = std::sync::Arc::new(StageLog {
            task: bus.task_id().map(|id| (bus.clone(), id.to_string())),
            ..StageLog::default()
        });
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.push(log.clone());
        }
        log
    }

    /// The task of `log` is over: an interrupt no longer reaches its log.
    pub fn release(&self, log: &std::sync::Arc<StageLog>) {
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.retain(|t| !std::sync::Arc::ptr_eq(t, log));
        }
    }

    /// An interrupt: the open stage fails, the ones not reached are skipped, so the markers
    /// and the final result show the whole iteration (of every task running, too).
    pub fn interrupt(&self, bus: &Bus) {
        let tasks = self
            .tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in tasks {
            task.interrupt(bus);
        }
        // A task's markers go on its own bus, with its id.
        let bus = self.task.as_ref().map_or(bus, |(own, _)| own);
        self.finish(bus, false, Some("interrupted".into()));
        let (iteration, stages, started) = match self.plan.lock() {
            Ok(mut plan) => std::mem::take(&mut *plan),
            Err(_) => return,
        };
        let total = u32::try_from(stages.len()).unwrap_or(u32::MAX);
        for (position, stage) in stages.iter().enumerate().skip(started as usize) {
            let index = u32::try_from(position + 1).unwrap_or(u32::MAX);
            self.skip(
                bus,
                *stage,
                Slot {
                    iteration,
                    index,
                    total,
                },
            );
        }
    }

    pub fn start(&self, bus: &Bus, stage: Stage, slot: Slot) {
        let marker = self.reach(stage, StageStatus::Start, slot);
        bus.emit(Event::reasoning(marker.encode()));
        if let Ok(mut open) = self.open.lock() {
            *open = Some(Open {
                stage,
                marker,
                started: Instant::now(),
            });
        }
    }

    /// The marker of a stage the iteration has now reached (started or skipped).
    fn reach(&self, stage: Stage, status: StageStatus, slot: Slot) -> StageMarker {
        if let Ok(mut plan) = self.plan.lock() {
            plan.2 = plan.2.max(slot.index);
        }
        StageMarker {
            stage: stage.name().to_string(),
            status,
            iteration: slot.iteration,
            index: slot.index,
            total: slot.total,
            ms: None,
            detail: None,
            task_id: self.task.as_ref().map(|(_, id)| id.clone()),
        }
    }

    /// End the open stage as done (`ok`) or failed. Does nothing when no stage is open.
    pub fn finish(&self, bus: &Bus, ok: bool, detail: Option<String>) {
        let Some(open) = self.open.lock().ok().and_then(|mut o| o.take()) else {
            return;
        };
        let status = if ok {
            StageStatus::Done
        } else {
            StageStatus::Failed
        };
        let ms = u64::try_from(open.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let marker = StageMarker {
            status,
            ms: Some(ms),
            detail: detail.map(|d| one_line(&d)),
            ..open.marker
        };
        bus.emit(Event::reasoning(marker.encode()));
        self.record(open.stage, &marker, ms);
    }

    pub fn skip(&self, bus: &Bus, stage: Stage, slot: Slot) {
        let marker = self.reach(stage, StageStatus::Skipped, slot);
        bus.emit(Event::reasoning(marker.encode()));
        self.record(stage, &marker, 0);
    }

    fn record(&self, stage: Stage, marker: &StageMarker, ms: u64) {
        if let Ok(mut records) = self.records.lock() {
            records.push(StageRecord {
                name: stage,
                status: marker.status,
                iteration: marker.iteration,
                ms,
                detail: marker.detail.clone(),
            });
        }
    }
}

/// Marker details stay on one line and short, so a pipeline panel can show them.
pub fn one_line(text: &str) -> String {
    const MAX: usize = 300;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.len() <= MAX {
        return flat;
    }
    let mut end = MAX;
    while !flat.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &flat[..end])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::bus::Recorder;
    use crate::protocol::marker::{ReasoningPiece, split_markers};

    #[test]
    fn finish_closes_the_open_stage_once() {
        let recorder = Arc::new(Recorder::default());
        let bus = Bus::new("run_x", vec![recorder.clone()]);
        let log = StageLog::default();
        let slot = Slot {
            iteration: 1,
            index: 2,
            total: 3,
        };
        log.start(&bus, Stage::TestRunner, slot);
        log.finish(&bus, false, Some("exit code 1\nmore".into()));
        log.finish(&bus, true, None);
        let markers: Vec<StageMarker> = recorder
            .events()
            .iter()
            .filter_map(|e| match e {
                Event::Reasoning { delta } => Some(split_markers(delta)),
                _ => None,
            })
            .flatten()
            .filter_map(|p| match p {
                ReasoningPiece::Marker(m) => Some(m),
                ReasoningPiece::Text(_) => None,
            })
            .collect();
        assert_eq!(markers.len(), 2);
        assert_eq!(markers[1].status, StageStatus::Failed);
        assert_eq!(markers[1].detail.as_deref(), Some("exit code 1 more"));
        assert_eq!(log.records()[0].status, StageStatus::Failed);
    }
}
