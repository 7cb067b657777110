//! `extractWav`: decode every audio track, mix to mono, resample to 16 kHz, stream to a WAV.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use symphonia::core::codecs::audio::AudioDecoder;
use symphonia::core::formats::FormatReader;

use super::resample::{OUT_RATE, Resampler};
use super::source::{self, DecodeOutcome};
use super::wav_out::WavWriter;
use super::{DAMAGE_RUN, DAMAGE_TOLERANCE, MediaError, probe};

/// The largest jump forward between packets' timestamps that is not a hole (seconds).
const GAP_TOLERANCE: f64 = 0.010;

pub fn extract_wav(
    path: &Path,
    out: &Path,
    progress: &mut dyn FnMut(f64),
    cancelled: &AtomicBool,
) -> Result<f64, MediaError> {
    let mut tracks = open_tracks(path)?;
    let expected_seconds = expected_seconds(path, &tracks)?;
    let mut writer = WavWriter::create(out)?;
    let expected_samples = expected_seconds.map(|s| s * f64::from(OUT_RATE));
    let mut reported = 0.0f64;
    let mut mixed: Vec<f32> = Vec::with_capacity(8192);
    loop {
        if cancelled.load(Ordering::Relaxed) {
            return Err(MediaError::Cancelled);
        }
        // Advance the track that lags, so every queue stays a few packets long.
        let lagging = tracks
            .iter_mut()
            .filter(|t| !t.ended)
            .min_by_key(|t| t.queue.len());
        match lagging {
            Some(track) => track.step()?,
            None => {
                mix(&mut tracks, &mut mixed, true);
                writer.write(mixed.iter().copied())?;
                break;
            }
        }
        mix(&mut tracks, &mut mixed, false);
        writer.write(mixed.iter().copied())?;
        if let Some(total) = expected_samples.filter(|t| *t > 0.0) {
            let fraction = (writer.samples_written() as f64 / total).min(1.0);
            if fraction - reported >= 0.01 {
                reported = fraction;
                progress(fraction);
            }
        }
    }
    for track in &tracks {
        track.check_damage()?;
    }
    let seconds = writer.samples_written() as f64 / f64::from(OUT_RATE);
    writer.commit()?;
    if reported < 1.0 {
        progress(1.0);
    }
    Ok(seconds)
}

/// One audio track with its own demuxer (so tracks stored far apart in the file are still read
/// in step), decoder, resampler and queue of 16 kHz samples not yet mixed.
struct TrackDecoder {
    reader: Box<dyn FormatReader>,
    decoder: Box<dyn AudioDecoder>,
    track_id: u32,
    resampler: Option<(u32, Resampler)>,
    queue: VecDeque<f32>,
    ended: bool,
    packets: u64,
    damaged: u64,
    damaged_run: u32,
    /// Where the next packet should start, and the length of one timestamp unit in seconds.
    next_pts: Option<i64>,
    unit_seconds: Option<f64>,
    interleaved: Vec<f32>,
    mono: Vec<f32>,
}

fn open_tracks(path: &Path) -> Result<Vec<TrackDecoder>, MediaError> {
    let first = source::open(path)?;
    let audio: Vec<_> = first
        .tracks()
        .iter()
        .filter(|t| source::is_audio(t))
        .cloned()
        .collect();
    if audio.is_empty() {
        return Err(MediaError::Unsupported(
            "this file has no audio track".into(),
        ));
    }
    let mut readers = vec![first];
    let mut tracks = Vec::with_capacity(audio.len());
    for track in &audio {
        let decoder = source::decoder_for(track)?.ok_or_else(|| {
            MediaError::Unsupported(
                "this file has an audio codec that is not decoded natively".into(),
            )
        })?;
        let unit_seconds = match (track.time_base, source::sample_rate(track)) {
            (Some(tb), _) => Some(f64::from(tb.numer.get()) / f64::from(tb.denom.get())),
            (None, Some(rate)) => Some(1.0 / f64::from(rate)),
            (None, None) => None,
        };
        let reader = match readers.pop() {
            Some(reader) => reader,
            None => source::open(path)?,
        };
        tracks.push(TrackDecoder {
            reader,
            decoder,
            track_id: track.id,
            resampler: None,
            queue: VecDeque::new(),
            ended: false,
            packets: 0,
            damaged: 0,
            damaged_run: 0,
            // A track whose header states its length also states where it starts; otherwise the
            // first packet may start anywhere (a stream cut from a broadcast).
            next_pts: track.num_frames.map(|_| track.start_ts.get()),
            unit_seconds,
            interleaved: Vec::new(),
            mono: Vec::new(),
        });
    }
    Ok(tracks)
}

/// The length to measure progress against: the longest audio track as stated, else counted
/// from the packets (an extra read of the file, no decoding), so long files still report.
fn expected_seconds(path: &Path, tracks: &[TrackDecoder]) -> Result<Option<f64>, MediaError> {
    let stated = tracks
        .iter()
        .filter_map(|t| {
            t.reader
                .tracks()
                .iter()
                .find(|x| x.id == t.track_id)
                .and_then(source::track_seconds)
        })
        .fold(None, |acc: Option<f64>, s| {
            Some(acc.map_or(s, |a| a.max(s)))
        });
    if stated.is_some() {
        return Ok(stated);
    }
    let mut reader = source::open(path)?;
    let all = reader.tracks().to_vec();
    let audio: Vec<_> = all.into_iter().filter(source::is_audio).collect();
    probe::scanned_seconds(&mut *reader, &audio).map(Some)
}

impl TrackDecoder {
    /// Reads packets until one of this track decodes (or the stream ends).
    fn step(&mut self) -> Result<(), MediaError> {
        loop {
            let Some(packet) = source::next_packet(&mut *self.reader)? else {
                if let Some((_, resampler)) = &mut self.resampler {
                    resampler.finish(&mut self.queue);
                }
                self.ended = true;
                return Ok(());
            };
            if packet.track_id != self.track_id {
                continue;
            }
            self.packets += 1;
            self.check_gap(packet.pts.get(), packet.dur.get());
            match self.decoder.decode(&packet) {
                Ok(buffer) => {
                    self.damaged_run = 0;
                    let channels = buffer.spec().channels().count();
                    let rate = buffer.spec().rate();
                    if channels == 0 || rate == 0 {
                        return Err(MediaError::Failed(
                            "the audio declares no channels or no sample rate".into(),
                        ));
                    }
                    buffer.copy_to_vec_interleaved(&mut self.interleaved);
                    let frames = buffer.frames();
                    self.mono.clear();
                    let scale = 1.0 / channels as f32;
                    self.mono.extend(
                        self.interleaved[..frames * channels]
                            .chunks_exact(channels)
                            .map(|frame| frame.iter().sum::<f32>() * scale),
                    );
                    let resampler = match &mut self.resampler {
                        Some((r, resampler)) if *r == rate => resampler,
                        Some(_) => {
                            return Err(MediaError::Unsupported(
                                "the sample rate changes midway".into(),
                            ));
                        }
                        None => &mut self.resampler.insert((rate, Resampler::new(rate))).1,
                    };
                    resampler.push(&self.mono, &mut self.queue);
                    return Ok(());
                }
                Err(e) => match source::classify_decode_error(e) {
                    DecodeOutcome::Damaged => {
                        self.damaged += 1;
                        self.damaged_run += 1;
                        if self.damaged_run >= DAMAGE_RUN {
                            return Err(MediaError::Failed(format!(
                                "{DAMAGE_RUN} damaged audio packets in a row"
                            )));
                        }
                    }
                    DecodeOutcome::Fatal(error) => return Err(error),
                },
            }
        }
    }

    /// A packet starting later than the previous one ended means the demuxer skipped damaged
    /// data (FLAC drops frames whose checksum fails): counted as a damaged packet. Jumps up to
    /// [`GAP_TOLERANCE`] are timestamp rounding (Ogg's first Vorbis packets).
    fn check_gap(&mut self, pts: i64, dur: u64) {
        if let (Some(expected), Some(unit)) = (self.next_pts, self.unit_seconds)
            && pts > expected
            && (pts - expected) as f64 * unit > GAP_TOLERANCE
        {
            self.damaged += 1;
        }
        self.next_pts = Some(pts.saturating_add(i64::try_from(dur).unwrap_or(i64::MAX)));
    }

    /// After the end: too much damage (or nothing but damage) makes the file corrupt.
    fn check_damage(&self) -> Result<(), MediaError> {
        let too_many = self.damaged as f64 > DAMAGE_TOLERANCE * self.packets as f64;
        if self.damaged > 0 && (too_many || self.damaged == self.packets) {
            return Err(MediaError::Failed(format!(
                "{} of {} audio packets are damaged",
                self.damaged, self.packets
            )));
        }
        Ok(())
    }
}

/// Moves the samples every track has reached into `mixed` (the mean of the tracks; an ended
/// track counts as silence). With `all`, drains everything queued.
fn mix(tracks: &mut [TrackDecoder], mixed: &mut Vec<f32>, all: bool) {
    mixed.clear();
    let ready = if all {
        tracks.iter().map(|t| t.queue.len()).max().unwrap_or(0)
    } else {
        match tracks
            .iter()
            .filter(|t| !t.ended)
            .map(|t| t.queue.len())
            .min()
        {
            Some(n) => n,
            None => return,
        }
    };
    if ready == 0 {
        return;
    }
    mixed.resize(ready, 0.0);
    let scale = 1.0 / tracks.len() as f32;
    for track in tracks.iter_mut() {
        let take = ready.min(track.queue.len());
        for (slot, sample) in mixed.iter_mut().zip(track.queue.drain(..take)) {
            *slot += sample * scale;
        }
    }
}
