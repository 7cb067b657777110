//! A child's log stream read to its end, capped: what is past the cap is read and counted, so
//! the child never blocks on a full pipe. Package tools and the Scribiz CLI log this way.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Most log lines kept, and most bytes of logs read; the rest is drained and counted.
const MAX_LOG_LINES: usize = 1000;
const MAX_LOG_BYTES: usize = 256 * 1024;

/// Lines of the logs, capped; what is past the cap is read and counted, so the tool never
/// blocks on a full pipe.
pub async fn read_logs(mut reader: impl AsyncRead + Unpin) -> Vec<String> {
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_LOG_BYTES.saturating_sub(kept.len());
                let take = room.min(n);
                kept.extend_from_slice(&chunk[..take]);
                dropped += n - take;
            }
        }
    }
    let text = String::from_utf8_lossy(&kept);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.len() > MAX_LOG_LINES {
        let extra = lines.len() - MAX_LOG_LINES;
        lines.truncate(MAX_LOG_LINES);
        lines.push(format!("… {extra} more lines of logs dropped"));
    }
    if dropped > 0 {
        lines.push(format!("… {dropped} more bytes of logs dropped"));
    }
    lines
}
