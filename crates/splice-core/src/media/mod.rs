//! Host media preparation: `probe` and `extractWav` for the Scribiz CLI's `--media-prep stdio`
//! requests, done natively with symphonia for the common audio formats: WAV (PCM), MP3, FLAC,
//! Ogg Vorbis, and AAC in MP4/M4A. Pure library: no process, no protocol.
//!
//! `extract_wav` decodes every audio track, averages each track's channels to mono, resamples
//! each track to 16 kHz ([`resample`]), averages the tracks, and streams 16-bit PCM mono WAV
//! to `out` ([`wav_out`]). Memory is bounded whatever the length: each track is read by its
//! own demuxer, and the track that lags is always advanced, so only a few packets' worth of
//! samples are ever queued. Tracks are assumed to start together (container start offsets and
//! edit lists are not applied); encoder delay and padding are trimmed (symphonia's gapless).
//!
//! ## `Unsupported` or `Failed`
//! The CLI falls back to ffmpeg on `UNSUPPORTED` and fails the run with `INPUT_CORRUPT` on
//! `FAILED`, so `Failed` is kept for inputs that are positively damaged; in doubt, `Unsupported`.
//! - **Unsupported:** the path is not a regular readable file; no container reader opens it
//!   (text, images, unknown containers, a header too damaged to read, an Ogg file whose last
//!   page fails its checksum); an audio track's codec is not compiled in (Opus, ALAC, AC-3,
//!   ...: then the whole file is left to ffmpeg, also for `probe`); symphonia reports a feature
//!   it lacks, which is also how some garbage inside AAC shows; a chained Ogg stream; a sample
//!   rate that changes midway; a file with no audio track (`extractWav`); and trouble on the
//!   output side (the WAV cannot be written: that says nothing about the input).
//! - **Failed:** a container and codec were accepted, and then the content turns out damaged:
//!   the demuxer reports malformed data; packets fail to decode or holes show in the timeline
//!   (a packet starting more than 10 ms after the previous one ended, as when FLAC drops frames
//!   that fail their checksum; for a track whose header states its length, also a late first
//!   packet) for more than [`DAMAGE_TOLERANCE`] of the packets, [`DAMAGE_RUN`] in a row, or
//!   all of them; or the header declares a zero sample rate.
//! - **Neither:** a file that simply ends early (a recording cut off) is decoded up to where
//!   it ends, as ffmpeg does (`probe` still reports the length its header states); an isolated
//!   damaged packet is skipped, as players do. MP3 has neither checksums by default nor an
//!   index: damage that destroys frames' sync words is skipped by the demuxer without a trace,
//!   and the audio comes out shorter, as with ffmpeg.

mod extract;
mod probe;
pub(crate) mod resample;
mod source;
mod wav_out;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::AtomicBool;

/// What `probe` answers (`durationSeconds`, `hasAudio`, `hasVideo`, and `width`, `height`,
/// `fps` when known).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub duration_seconds: f64,
    pub has_audio: bool,
    pub has_video: bool,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub fps: Option<f64>,
}

impl Probe {
    /// The `result` object of a `probe` response; `width`, `height` and `fps` only when known.
    pub fn result_json(&self) -> serde_json::Value {
        let mut result = serde_json::json!({
            "durationSeconds": self.duration_seconds,
            "hasAudio": self.has_audio,
            "hasVideo": self.has_video,
        });
        for (key, value) in [
            ("width", self.width.map(serde_json::Value::from)),
            ("height", self.height.map(serde_json::Value::from)),
            ("fps", self.fps.map(serde_json::Value::from)),
        ] {
            if let Some(value) = value {
                result[key] = value;
            }
        }
        result
    }
}

/// Why a request could not be answered; maps onto the protocol's error codes.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// `UNSUPPORTED`: not something this host decodes; the CLI may use ffmpeg.
    #[error("{0}")]
    Unsupported(String),
    /// `FAILED`: a supported format whose content is damaged; the CLI stops with `INPUT_CORRUPT`.
    #[error("{0}")]
    Failed(String),
    /// The request was cancelled (`request-cancel`); nothing was left behind.
    #[error("cancelled")]
    Cancelled,
}

impl MediaError {
    /// The protocol's `error.code` for a response (`None` for a cancel, which is not answered).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            MediaError::Unsupported(_) => Some("UNSUPPORTED"),
            MediaError::Failed(_) => Some("FAILED"),
            MediaError::Cancelled => None,
        }
    }
}

/// The share of damaged packets tolerated (skipped) before a file counts as corrupt.
pub const DAMAGE_TOLERANCE: f64 = 0.01;
/// Damaged packets in a row that make a file corrupt whatever its length.
pub const DAMAGE_RUN: u32 = 32;

/// Reads the container's description of `path`: its duration, and which kinds of tracks it has.
pub fn probe(path: &Path) -> Result<Probe, MediaError> {
    probe::probe(path)
}

/// Writes all the audio of `path` as 16 kHz mono 16-bit PCM WAV to `out`, returning its
/// duration in seconds. `progress` gets the fraction done (0..1) about every percent when the
/// duration is known; `cancelled` is checked between packets.
pub fn extract_wav(
    path: &Path,
    out: &Path,
    progress: &mut dyn FnMut(f64),
    cancelled: &AtomicBool,
) -> Result<f64, MediaError> {
    extract::extract_wav(path, out, progress, cancelled)
}
