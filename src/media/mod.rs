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
//! `FAILED`, so `Failed` is kept for inputs that are positively damaged:
//! - **Unsupported:** the path is not a regular readable file; no container reader recognises
//!   it (text, images, unknown containers, or a header too damaged to recognise); no audio
//!   track has a codec compiled in (Opus, ALAC, AC-3, ...); symphonia reports a feature it
//!   lacks; a chained Ogg stream; a sample rate that changes mid-stream; and trouble on the
//!   output side (the WAV cannot be written: that says nothing about the input).
//! - **Failed:** a container and codec were accepted, and then the packets turn out damaged:
//!   the demuxer reports malformed data, or more than [`DAMAGE_TOLERANCE`] of the packets fail
//!   to decode (or [`DAMAGE_RUN`] in a row, or every one), or the header declares nonsense such
//!   as a zero sample rate.
//! - **Neither:** a file that simply ends early (a recording cut off) is decoded up to where
//!   it ends, as ffmpeg does; an isolated damaged packet is skipped, as players do.

mod extract;
mod probe;
pub mod resample;
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
