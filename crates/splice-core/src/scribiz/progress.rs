//! A Scribiz line as a `tool_progress` report: the stage it belongs to, how far it is, and a
//! short text Splice words itself (the TUI's live view reads these conventions):
//! - `stage` lines: the stage, detail `"<status>"` or `"<status> · <detail>"`;
//! - `progress` lines: the stage and its fraction, detail `"<done>/<total> <unit>"` when given;
//! - `chunk` lines: stage `transcribe`, detail `"chunk <index+1>/<total> <status>"`;
//! - `plan` lines: stage `plan`, detail `"estimate $<usdLow>–$<usdHigh>"`;
//! - `retry` lines: their stage, detail `"retry <attempt>/<max>"`.

use super::protocol::{ChunkStatus, Line, StageStatus};
use crate::usage::format_usd;

/// One report: `stage`, `fraction`, `detail` of a `tool_progress` event.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub stage: Option<String>,
    pub fraction: Option<f64>,
    pub detail: Option<String>,
}

/// The report a line makes, if it is one that is shown.
pub fn report(line: &Line) -> Option<Report> {
    match line {
        Line::Stage(stage) => {
            let status = stage_status(stage.status);
            let detail = match stage.detail.as_ref().map(|d| d.as_str().trim()) {
                Some(detail) if !detail.is_empty() => format!("{status} · {detail}"),
                _ => status.to_string(),
            };
            Some(Report {
                stage: Some(stage.stage.as_str().to_string()),
                fraction: (stage.status == StageStatus::Done).then_some(1.0),
                detail: Some(detail),
            })
        }
        Line::Progress(progress) => Some(Report {
            stage: progress.stage.as_ref().map(|s| s.as_str().to_string()),
            fraction: progress.fraction,
            detail: match (progress.done, progress.total) {
                (Some(done), Some(total)) => Some(
                    format!(
                        "{}/{} {}",
                        number(done),
                        number(total),
                        progress.unit.as_ref().map_or("", |u| u.as_str())
                    )
                    .trim_end()
                    .to_string(),
                ),
                _ => None,
            },
        }),
        Line::Chunk(chunk) => {
            let index = chunk.index.map_or("?".to_string(), |i| (i + 1).to_string());
            let total = chunk.total.map_or("?".to_string(), |t| t.to_string());
            Some(Report {
                stage: Some("transcribe".into()),
                fraction: None,
                detail: Some(format!(
                    "chunk {index}/{total} {}",
                    chunk_status(chunk.status)
                )),
            })
        }
        Line::Plan(plan) => {
            let estimate = plan.estimate.as_ref();
            let usd = |v: Option<f64>| v.map_or("?".to_string(), format_usd);
            Some(Report {
                stage: Some("plan".into()),
                fraction: None,
                detail: Some(format!(
                    "estimate ${}–${}",
                    usd(estimate.and_then(|e| e.usd_low)),
                    usd(estimate.and_then(|e| e.usd_high))
                )),
            })
        }
        Line::Retry(retry) => {
            let count = |v: Option<u64>| v.map_or("?".to_string(), |n| n.to_string());
            Some(Report {
                stage: retry.stage.as_ref().map(|s| s.as_str().to_string()),
                fraction: None,
                detail: Some(format!(
                    "retry {}/{}",
                    count(retry.attempt),
                    count(retry.max_attempts)
                )),
            })
        }
        _ => None,
    }
}

pub fn stage_status(status: StageStatus) -> &'static str {
    match status {
        StageStatus::Start => "start",
        StageStatus::Done => "done",
        StageStatus::Skipped => "skipped",
        StageStatus::Failed => "failed",
        StageStatus::Other => "unknown",
    }
}

pub fn chunk_status(status: ChunkStatus) -> &'static str {
    match status {
        ChunkStatus::Queued => "queued",
        ChunkStatus::Uploading => "uploading",
        ChunkStatus::Transcribing => "transcribing",
        ChunkStatus::Verifying => "verifying",
        ChunkStatus::Retry => "retry",
        ChunkStatus::Repairing => "repairing",
        ChunkStatus::Done => "done",
        ChunkStatus::Failed => "failed",
        ChunkStatus::Other => "unknown",
    }
}

/// A count as people write it: no `.0` on whole numbers.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str) -> Line {
        super::super::protocol::decode(json.as_bytes()).expect("decode")
    }

    fn of(json: &str) -> Report {
        report(&line(json)).unwrap_or_else(|| panic!("no report for {json}"))
    }

    #[test]
    fn each_shown_line_follows_the_conventions() {
        let done = of(
            r#"{"type":"stage","stage":"chunk","status":"done","detail":"1 chunk, 9 s of speech"}"#,
        );
        assert_eq!(done.stage.as_deref(), Some("chunk"));
        assert_eq!(
            done.detail.as_deref(),
            Some("done · 1 chunk, 9 s of speech")
        );
        let start = of(r#"{"type":"stage","stage":"extract","status":"start"}"#);
        assert_eq!(start.detail.as_deref(), Some("start"));
        assert_eq!(start.fraction, None);
        let progress = of(
            r#"{"type":"progress","stage":"upload","fraction":0.5,"done":3,"total":6,"unit":"MB"}"#,
        );
        assert_eq!(progress.stage.as_deref(), Some("upload"));
        assert_eq!(progress.fraction, Some(0.5));
        assert_eq!(progress.detail.as_deref(), Some("3/6 MB"));
        let chunk = of(r#"{"type":"chunk","index":0,"total":3,"status":"transcribing"}"#);
        assert_eq!(chunk.detail.as_deref(), Some("chunk 1/3 transcribing"));
        let plan = of(
            r#"{"type":"plan","tiers":["audio"],"estimate":{"usdLow":0.00274,"usdHigh":0.009942}}"#,
        );
        assert_eq!(plan.stage.as_deref(), Some("plan"));
        assert_eq!(plan.detail.as_deref(), Some("estimate $0.00274–$0.009942"));
        let retry = of(
            r#"{"type":"retry","stage":"transcribe","attempt":1,"maxAttempts":3,"delayMs":500}"#,
        );
        assert_eq!(retry.detail.as_deref(), Some("retry 1/3"));
        assert_eq!(report(&line(r#"{"type":"heartbeat","t":5}"#)), None);
    }
}
