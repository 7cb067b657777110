//! `probe`: the container's own description, without decoding.

use std::path::Path;

use super::source;
use super::{MediaError, Probe};

pub fn probe(path: &Path) -> Result<Probe, MediaError> {
    let mut reader = source::open(path)?;
    let tracks = reader.tracks().to_vec();
    let audio: Vec<_> = tracks.iter().filter(|t| source::is_audio(t)).collect();
    let video = tracks.iter().find(|t| source::is_video(t));
    let mut decodable = 0;
    for track in &audio {
        if source::decoder_for(track)?.is_some() {
            decodable += 1;
        }
    }
    // An audio track we cannot decode is ffmpeg's job: answering `hasAudio` and then failing
    // `extractWav` would only delay the fallback.
    if decodable < audio.len() {
        return Err(MediaError::Unsupported(
            "this file has an audio codec that is not decoded natively".into(),
        ));
    }
    if audio.is_empty() && video.is_none() {
        return Err(MediaError::Unsupported(
            "this file has no audio or video track".into(),
        ));
    }
    let stated = tracks
        .iter()
        .filter(|t| source::is_audio(t) || source::is_video(t))
        .filter_map(source::track_seconds)
        .fold(None, |acc: Option<f64>, s| {
            Some(acc.map_or(s, |a| a.max(s)))
        });
    let duration_seconds = match stated {
        Some(seconds) => seconds,
        None => scanned_seconds(&mut *reader, &tracks)?,
    };
    let video_params = video
        .and_then(|t| t.codec_params.as_ref())
        .and_then(|p| p.video());
    Ok(Probe {
        duration_seconds,
        has_audio: !audio.is_empty(),
        has_video: video.is_some(),
        width: video_params.and_then(|v| v.width).map(u32::from),
        height: video_params.and_then(|v| v.height).map(u32::from),
        fps: None,
    })
}

/// The duration when the header does not state it (a stream without an index): the packets'
/// durations added up, per track, without decoding them.
pub fn scanned_seconds(
    reader: &mut dyn symphonia::core::formats::FormatReader,
    tracks: &[symphonia::core::formats::Track],
) -> Result<f64, MediaError> {
    let mut totals = vec![0u64; tracks.len()];
    while let Some(packet) = source::next_packet(reader)? {
        if let Some(i) = tracks.iter().position(|t| t.id == packet.track_id) {
            totals[i] = totals[i].saturating_add(packet.dur.get());
        }
    }
    let mut longest = 0.0f64;
    for (track, total) in tracks.iter().zip(totals) {
        let seconds = if let Some(tb) = track.time_base {
            f64::from(tb.numer.get()) * total as f64 / f64::from(tb.denom.get())
        } else if let Some(rate) = source::sample_rate(track) {
            total as f64 / f64::from(rate)
        } else {
            0.0
        };
        longest = longest.max(seconds);
    }
    Ok(longest)
}
