//! Opening a file with symphonia, and sorting symphonia's errors into `Unsupported` and `Failed`
//! (the boundary is described in the module doc of `media`).

use std::fs::File;
use std::path::Path;

use symphonia::core::codecs::audio::{AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, FormatReader, Track};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::units::Timestamp;

use super::MediaError;

/// Opens `path` and finds a container reader for it. Anything short of a recognised container
/// is `Unsupported`.
pub fn open(path: &Path) -> Result<Box<dyn FormatReader + 'static>, MediaError> {
    // A FIFO or device would block or never end; only regular files are media here.
    let meta = std::fs::metadata(path)
        .map_err(|e| MediaError::Unsupported(format!("cannot read {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(MediaError::Unsupported(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let file = File::open(path)
        .map_err(|e| MediaError::Unsupported(format!("cannot open {}: {e}", path.display())))?;
    let stream = MediaSourceStream::new(Box::new(file), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    symphonia::default::get_probe()
        .probe(
            &hint,
            stream,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|e| MediaError::Unsupported(format!("cannot open this container: {e}")))
}

/// A decoder for an audio track, or `None` when the track is not audio or its codec is not
/// compiled in.
pub fn decoder_for(track: &Track) -> Result<Option<Box<dyn AudioDecoder>>, MediaError> {
    let Some(params) = track.codec_params.as_ref().and_then(|p| p.audio()) else {
        return Ok(None);
    };
    let codecs = symphonia::default::get_codecs();
    if codecs.get_audio_decoder(params.codec).is_none() {
        return Ok(None);
    }
    if params.sample_rate == Some(0) {
        return Err(MediaError::Failed(
            "the audio track declares a sample rate of 0".into(),
        ));
    }
    codecs
        .make_audio_decoder(params, &AudioDecoderOptions::default())
        .map(Some)
        .map_err(|e| MediaError::Unsupported(format!("cannot decode this audio track: {e}")))
}

/// Whether a track is audio (whatever its codec).
pub fn is_audio(track: &Track) -> bool {
    track.codec_params.as_ref().is_some_and(|p| p.is_audio())
}

/// Whether a track is video.
pub fn is_video(track: &Track) -> bool {
    track.codec_params.as_ref().is_some_and(|p| p.is_video())
}

/// An audio track's stated sample rate, when non-zero.
pub fn sample_rate(track: &Track) -> Option<u32> {
    track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .and_then(|a| a.sample_rate)
        .filter(|r| *r > 0)
}

/// A track's duration in seconds as the container states it.
pub fn track_seconds(track: &Track) -> Option<f64> {
    let rate = sample_rate(track);
    if let (Some(frames), Some(rate)) = (track.num_frames, rate) {
        return Some(frames as f64 / f64::from(rate));
    }
    let (time_base, duration) = (track.time_base?, track.duration?);
    let ts = Timestamp::new(i64::try_from(duration.get()).ok()?);
    time_base.calc_time(ts).map(|t| t.as_secs_f64())
}

/// Reading the next packet: `Ok(None)` at the end, including a file cut off mid-packet.
pub fn next_packet(
    reader: &mut dyn FormatReader,
) -> Result<Option<symphonia::core::packet::Packet>, MediaError> {
    match reader.next_packet() {
        Ok(packet) => Ok(packet),
        Err(Error::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(demux_error(e)),
    }
}

/// A demuxer error once the container was accepted.
fn demux_error(e: Error) -> MediaError {
    match e {
        Error::Unsupported(what) => MediaError::Unsupported(format!("unsupported: {what}")),
        Error::ResetRequired => {
            MediaError::Unsupported("the stream changes its tracks midway (chained Ogg)".into())
        }
        Error::IoError(e) => MediaError::Failed(format!("cannot read the media: {e}")),
        other => MediaError::Failed(format!("the media is damaged: {other}")),
    }
}

/// How a decoder error is handled: damage is skipped and counted; the rest ends the work.
pub enum DecodeOutcome {
    Damaged,
    Fatal(MediaError),
}

pub fn classify_decode_error(e: Error) -> DecodeOutcome {
    match e {
        Error::DecodeError(_) | Error::IoError(_) => DecodeOutcome::Damaged,
        Error::Unsupported(what) => {
            DecodeOutcome::Fatal(MediaError::Unsupported(format!("unsupported: {what}")))
        }
        Error::ResetRequired => DecodeOutcome::Fatal(MediaError::Unsupported(
            "the decoder needs a reset midway".into(),
        )),
        other => DecodeOutcome::Fatal(MediaError::Failed(format!("the audio is damaged: {other}"))),
    }
}
