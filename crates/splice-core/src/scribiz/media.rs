//! The host side of `--media-prep stdio`: the CLI's `request` lines answered by a [`HostMedia`]
//! on blocking threads, concurrently and by `id`. `request-progress` lines come from the work's
//! progress; a `request-cancel` sets the work's flag and its answer is never sent. Operations
//! Splice does not do (`encodeChunk`, `makeVisualProxy`, anything new) are `UNSUPPORTED` at once,
//! so the CLI falls back to ffmpeg.
//!
//! The CLI names the paths to read and write; it runs as the same user as Splice and could write
//! them itself, so they are not confined here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::protocol::Request;

/// Why the host did not do a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaFailure {
    /// Not the host's job: the CLI falls back to ffmpeg (`UNSUPPORTED`).
    Unsupported(String),
    /// The host tried and the media is bad: the run fails (`FAILED`, never a fallback).
    Failed(String),
}

/// What prepares media for the CLI. Called on blocking threads, several at once.
pub trait HostMedia: Send + Sync {
    /// `durationSeconds`, `hasAudio`, `hasVideo`, and `width`, `height`, `fps` when known.
    fn probe(&self, path: &Path) -> Result<Value, MediaFailure>;
    /// The whole audio as 16 kHz mono 16-bit PCM WAV at `out`; `durationSeconds`. Calls
    /// `progress` with a fraction now and then, and stops soon after `cancelled` is set.
    fn extract_wav(
        &self,
        path: &Path,
        out: &Path,
        progress: &mut dyn FnMut(f64),
        cancelled: &AtomicBool,
    ) -> Result<Value, MediaFailure>;
}

/// Splice's own decoders (`crate::media`): `probe` and `extractWav` for common audio, natively,
/// so audio transcribes where there is no ffmpeg; `UNSUPPORTED` for the rest.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeMedia;

impl From<crate::media::MediaError> for MediaFailure {
    fn from(error: crate::media::MediaError) -> MediaFailure {
        match error {
            crate::media::MediaError::Unsupported(why) => MediaFailure::Unsupported(why),
            crate::media::MediaError::Failed(why) => MediaFailure::Failed(why),
            // A cancelled request is never answered; this only names what happened.
            crate::media::MediaError::Cancelled => MediaFailure::Failed("cancelled".into()),
        }
    }
}

impl HostMedia for NativeMedia {
    fn probe(&self, path: &Path) -> Result<Value, MediaFailure> {
        Ok(crate::media::probe(path)?.result_json())
    }

    fn extract_wav(
        &self,
        path: &Path,
        out: &Path,
        progress: &mut dyn FnMut(f64),
        cancelled: &AtomicBool,
    ) -> Result<Value, MediaFailure> {
        let seconds = crate::media::extract_wav(path, out, progress, cancelled)?;
        Ok(json!({"durationSeconds": seconds}))
    }
}

/// Answers `UNSUPPORTED` to everything: the CLI does all media work with ffmpeg.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHostMedia;

impl HostMedia for NoHostMedia {
    fn probe(&self, _path: &Path) -> Result<Value, MediaFailure> {
        Err(MediaFailure::Unsupported("Splice prepares no media".into()))
    }

    fn extract_wav(
        &self,
        _path: &Path,
        _out: &Path,
        _progress: &mut dyn FnMut(f64),
        _cancelled: &AtomicBool,
    ) -> Result<Value, MediaFailure> {
        Err(MediaFailure::Unsupported("Splice prepares no media".into()))
    }
}

/// The smallest step between two `request-progress` lines of one request.
const PROGRESS_STEP: f64 = 0.01;

/// The requests in flight, by id, and where their answers go (the job's one stdin writer, which
/// writes each line whole).
pub struct Requests {
    media: Arc<dyn HostMedia>,
    writer: mpsc::UnboundedSender<String>,
    in_flight: HashMap<u64, Arc<AtomicBool>>,
}

impl Requests {
    pub fn new(media: Arc<dyn HostMedia>, writer: mpsc::UnboundedSender<String>) -> Requests {
        Requests {
            media,
            writer,
            in_flight: HashMap::new(),
        }
    }

    /// Start answering `request`. Unknown operations and bad arguments are answered at once.
    pub fn start(&mut self, request: Request) {
        let id = request.id;
        let work = match (request.op.as_str(), paths(&request.args)) {
            ("probe", Some((path, _))) => Work::Probe(path),
            ("extractWav", Some((path, Some(out)))) => Work::Extract(path, out),
            ("probe" | "extractWav", _) => {
                self.answer_now(
                    id,
                    Err(MediaFailure::Unsupported(format!(
                        "`{}` needs string arguments `path`{}",
                        request.op,
                        if request.op == "extractWav" {
                            " and `out`"
                        } else {
                            ""
                        }
                    ))),
                );
                return;
            }
            (op, _) => {
                let op: String = op.chars().filter(char::is_ascii_alphanumeric).collect();
                self.answer_now(
                    id,
                    Err(MediaFailure::Unsupported(format!(
                        "Splice does not do `{op}`"
                    ))),
                );
                return;
            }
        };
        let cancelled = Arc::new(AtomicBool::new(false));
        // A repeated id replaces the first: its answer is suppressed like a cancelled one.
        if let Some(earlier) = self.in_flight.insert(id, cancelled.clone()) {
            earlier.store(true, Ordering::SeqCst);
        }
        let media = self.media.clone();
        let writer = self.writer.clone();
        tokio::task::spawn_blocking(move || {
            let outcome = match work {
                Work::Probe(path) => media.probe(&path),
                Work::Extract(path, out) => {
                    let mut last = f64::NEG_INFINITY;
                    let mut progress = |fraction: f64| {
                        let fraction = fraction.clamp(0.0, 1.0);
                        if fraction - last >= PROGRESS_STEP && !cancelled.load(Ordering::SeqCst) {
                            last = fraction;
                            let line = json!({"type": "request-progress", "id": id,
                                "fraction": fraction});
                            let _ = writer.send(line.to_string());
                        }
                    };
                    media.extract_wav(&path, &out, &mut progress, &cancelled)
                }
            };
            // Checked after the work returns: a cancelled request is never answered.
            if !cancelled.load(Ordering::SeqCst) {
                let _ = writer.send(response(id, outcome).to_string());
            }
        });
    }

    /// The CLI gave up on `id`: stop the work, send no answer.
    pub fn cancel(&mut self, id: u64) {
        if let Some(flag) = self.in_flight.remove(&id) {
            flag.store(true, Ordering::SeqCst);
        }
    }

    /// The job is over: every request still running stops, unanswered.
    pub fn cancel_all(&mut self) {
        for (_, flag) in self.in_flight.drain() {
            flag.store(true, Ordering::SeqCst);
        }
    }

    fn answer_now(&self, id: u64, outcome: Result<Value, MediaFailure>) {
        let _ = self.writer.send(response(id, outcome).to_string());
    }
}

enum Work {
    Probe(PathBuf),
    Extract(PathBuf, PathBuf),
}

/// `args.path` and `args.out` (when a string).
fn paths(args: &Value) -> Option<(PathBuf, Option<PathBuf>)> {
    let path = args.get("path")?.as_str()?;
    let out = args.get("out").and_then(Value::as_str).map(PathBuf::from);
    Some((PathBuf::from(path), out))
}

/// A `response` line.
pub fn response(id: u64, outcome: Result<Value, MediaFailure>) -> Value {
    match outcome {
        Ok(result) => json!({"type": "response", "id": id, "ok": true, "result": result}),
        Err(MediaFailure::Unsupported(message)) => json!({"type": "response", "id": id,
            "ok": false, "error": {"code": "UNSUPPORTED", "message": message}}),
        Err(MediaFailure::Failed(message)) => json!({"type": "response", "id": id,
            "ok": false, "error": {"code": "FAILED", "message": message}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The native decoders answer as the protocol says: a real MP3 is probed and extracted, a
    /// text file is UNSUPPORTED (the CLI then uses ffmpeg).
    #[test]
    fn native_media_answers_probe_and_extract_in_the_protocols_shapes() {
        let mp3 = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/media/testdata/sine440.mp3");
        let probed = NativeMedia.probe(&mp3).unwrap_or_else(|e| panic!("{e:?}"));
        let seconds = probed["durationSeconds"].as_f64().unwrap_or_default();
        assert!((seconds - 1.0).abs() < 0.1, "{probed}");
        assert_eq!(probed["hasAudio"], true);
        assert_eq!(probed["hasVideo"], false);
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let out = dir.path().join("out.wav");
        let mut fractions = Vec::new();
        let extracted = NativeMedia
            .extract_wav(
                &mp3,
                &out,
                &mut |f| fractions.push(f),
                &AtomicBool::new(false),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(
            extracted["durationSeconds"]
                .as_f64()
                .is_some_and(|d| d > 0.9)
        );
        let wav = std::fs::read(&out).expect("read out");
        assert_eq!(&wav[..4], b"RIFF");
        assert!(!fractions.is_empty());
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not media").expect("write text");
        assert!(matches!(
            NativeMedia.probe(&text),
            Err(MediaFailure::Unsupported(_))
        ));
    }

    #[test]
    fn responses_have_the_documented_shape() {
        assert_eq!(
            response(1, Ok(json!({"durationSeconds": 2.5}))),
            json!({"type":"response","id":1,"ok":true,"result":{"durationSeconds":2.5}})
        );
        assert_eq!(
            response(2, Err(MediaFailure::Failed("bad".into())))["error"]["code"],
            "FAILED"
        );
        assert_eq!(
            response(3, Err(MediaFailure::Unsupported("no".into())))["error"]["code"],
            "UNSUPPORTED"
        );
    }
}
