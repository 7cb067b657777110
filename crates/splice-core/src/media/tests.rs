//! probe and extract_wav on real files: WAV generated here, and small committed fixtures made by
//! real encoders (see testdata/make_fixtures.sh). Output WAVs are read back and checked sample
//! by sample against the analytic signal.

use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::resample::HALF_WIDTH;
use super::{MediaError, extract_wav, probe};

const FIXTURE_AMP: f64 = 0.5;
const FIXTURE_FREQ: f64 = 440.0;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/media/testdata")
        .join(name)
}

/// Writes a 16-bit PCM WAV with one closure per channel giving the value at time t (seconds).
fn write_wav(path: &Path, rate: u32, frames: usize, channels: &[&dyn Fn(f64) -> f64]) {
    let n = channels.len() as u16;
    let data_len = (frames * channels.len() * 2) as u32;
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&n.to_le_bytes());
    bytes.extend_from_slice(&rate.to_le_bytes());
    bytes.extend_from_slice(&(rate * u32::from(n) * 2).to_le_bytes());
    bytes.extend_from_slice(&(n * 2).to_le_bytes());
    bytes.extend_from_slice(&16u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..frames {
        let t = i as f64 / f64::from(rate);
        for ch in channels {
            let v = (ch(t) * 32767.0).round() as i16;
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).expect("write path");
}

/// Reads back a WAV written by extract_wav, checking every header field exactly.
fn read_output(path: &Path) -> Vec<f64> {
    let bytes = std::fs::read(path).expect("read path");
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    assert_eq!(&bytes[0..4], b"RIFF");
    assert_eq!(u32_at(4) as usize, bytes.len() - 8, "RIFF size");
    assert_eq!(&bytes[8..16], b"WAVEfmt ");
    assert_eq!(u32_at(16), 16, "fmt size");
    assert_eq!(u16_at(20), 1, "PCM");
    assert_eq!(u16_at(22), 1, "mono");
    assert_eq!(u32_at(24), 16_000, "rate");
    assert_eq!(u32_at(28), 32_000, "byte rate");
    assert_eq!(u16_at(32), 2, "block align");
    assert_eq!(u16_at(34), 16, "bits");
    assert_eq!(&bytes[36..40], b"data");
    assert_eq!(u32_at(40) as usize, bytes.len() - 44, "data length");
    bytes[44..]
        .chunks_exact(2)
        .map(|b| f64::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect()
}

fn extract(input: &Path, out: &Path) -> Result<f64, MediaError> {
    extract_wav(input, out, &mut |_| {}, &AtomicBool::new(false))
}

/// The largest difference from `expected(t)` past the resampler's settle-in at both edges.
fn worst_error(samples: &[f64], expected: impl Fn(f64) -> f64) -> f64 {
    let edge = 2 * HALF_WIDTH;
    samples[edge..samples.len() - edge]
        .iter()
        .enumerate()
        .map(|(i, v)| (v - expected((i + edge) as f64 / 16_000.0)).abs())
        .fold(0.0, f64::max)
}

/// Amplitude and phase-free match of a tone: correlation with sin and cos over the interior.
fn tone_amplitude(samples: &[f64], freq: f64) -> f64 {
    let inner = &samples[4000..samples.len() - 4000];
    let (mut s, mut c) = (0.0, 0.0);
    for (i, v) in inner.iter().enumerate() {
        let w = 2.0 * PI * freq * i as f64 / 16_000.0;
        s += v * w.sin();
        c += v * w.cos();
    }
    2.0 * (s * s + c * c).sqrt() / inner.len() as f64
}

/// Frequency from rising zero crossings over the interior (linear interpolation between samples).
fn zero_crossing_frequency(samples: &[f64]) -> f64 {
    let inner = &samples[2000..samples.len() - 2000];
    let crossings: Vec<f64> = inner
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, w)| i as f64 + w[0] / (w[0] - w[1]))
        .collect();
    let (first, last) = (crossings[0], crossings[crossings.len() - 1]);
    (crossings.len() - 1) as f64 * 16_000.0 / (last - first)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list dir")
        .map(|e| {
            e.expect("read a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn stereo_44k1_wav_is_mixed_to_mono_16k_sample_by_sample() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let left = |t: f64| 0.4 * (2.0 * PI * 440.0 * t).sin();
    let right = |t: f64| 0.3 * (2.0 * PI * 1000.0 * t).sin();
    write_wav(&input, 44_100, 44_100 * 2, &[&left, &right]);
    let out = dir.path().join("out.wav");
    let seconds = extract(&input, &out).expect("extract input");
    assert_eq!(seconds, 2.0);
    let samples = read_output(&out);
    assert_eq!(samples.len(), 32_000);
    let worst = worst_error(&samples, |t| (left(t) + right(t)) / 2.0);
    assert!(worst < 1e-4, "worst sample error {worst}");
    // Neither channel alone: the mix really has both at half level.
    assert!((tone_amplitude(&samples, 440.0) - 0.2).abs() < 1e-3);
    assert!((tone_amplitude(&samples, 1000.0) - 0.15).abs() < 1e-3);
}

#[test]
fn a_48k_two_channel_wav_with_an_alias_bait_keeps_only_the_band() {
    // Left carries 1 kHz; right carries 1 kHz plus 12 kHz, which naive decimation would fold
    // to 4 kHz.
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let left = |t: f64| 0.5 * (2.0 * PI * 1000.0 * t).sin();
    let right =
        |t: f64| 0.5 * (2.0 * PI * 1000.0 * t).sin() + 0.4 * (2.0 * PI * 12_000.0 * t).sin();
    write_wav(&input, 48_000, 48_000, &[&left, &right]);
    let out = dir.path().join("out.wav");
    extract(&input, &out).expect("extract input");
    let samples = read_output(&out);
    assert_eq!(samples.len(), 16_000);
    let worst = worst_error(&samples, |t| 0.5 * (2.0 * PI * 1000.0 * t).sin());
    assert!(worst < 1e-4, "worst sample error {worst}");
    assert!(
        tone_amplitude(&samples, 4000.0) < 1e-4,
        "12 kHz aliased to 4 kHz"
    );
}

#[test]
fn a_16k_mono_wav_passes_through_bit_exact() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let signal = |t: f64| 0.7 * (2.0 * PI * 300.0 * t).sin() * (2.0 * PI * 3.0 * t).cos();
    write_wav(&input, 16_000, 12_345, &[&signal]);
    let out = dir.path().join("out.wav");
    extract(&input, &out).expect("extract input");
    let input_bytes = std::fs::read(&input).expect("read input");
    let output_bytes = std::fs::read(&out).expect("read out");
    assert_eq!(output_bytes.len(), input_bytes.len());
    let first_difference = output_bytes
        .iter()
        .zip(&input_bytes)
        .position(|(a, b)| a != b);
    assert_eq!(
        first_difference, None,
        "a 16 kHz mono 16-bit WAV is copied unchanged"
    );
}

#[test]
fn two_aac_tracks_are_mixed_with_equal_weight() {
    // Track 1: 440 Hz stereo at 0.5; track 2: 1 kHz mono at 0.5 (see make_fixtures.sh).
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = fixture("two_tracks.m4a");
    let p = probe(&input).expect("probe input");
    assert!(p.has_audio && !p.has_video);
    // Within one AAC frame (probe) and two (decoded: the priming frame is kept).
    let frame = 1024.0 / 44_100.0;
    assert!((p.duration_seconds - 1.0).abs() <= frame + 1e-9, "{p:?}");
    let out = dir.path().join("out.wav");
    let seconds = extract(&input, &out).expect("extract input");
    assert!((seconds - 1.0).abs() <= 2.0 * frame + 1e-9, "{seconds}");
    let samples = read_output(&out);
    let a440 = tone_amplitude(&samples, 440.0);
    let a1k = tone_amplitude(&samples, 1000.0);
    assert!((a440 - 0.25).abs() < 0.02, "440 Hz at {a440}");
    assert!((a1k - 0.25).abs() < 0.02, "1 kHz at {a1k}");
}

#[test]
fn lossless_flac_matches_the_sine_sample_by_sample() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = fixture("sine440.flac");
    let p = probe(&input).expect("probe input");
    assert_eq!(p.duration_seconds, 1.0);
    assert_eq!(
        p.result_json().to_string(),
        r#"{"durationSeconds":1.0,"hasAudio":true,"hasVideo":false}"#
    );
    let out = dir.path().join("out.wav");
    assert_eq!(extract(&input, &out).expect("extract input"), 1.0);
    let samples = read_output(&out);
    assert_eq!(samples.len(), 16_000);
    let worst = worst_error(&samples, |t| {
        FIXTURE_AMP * (2.0 * PI * FIXTURE_FREQ * t).sin()
    });
    assert!(worst < 1e-4, "worst sample error {worst}");
}

/// Lossy fixtures: duration within one codec frame (`slack` frames for the decoded length:
/// AAC's priming frame stays in, as MP4 edit lists are not applied), the tone at its frequency
/// and amplitude.
fn check_lossy(name: &str, frame_seconds: f64, slack: f64) {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = fixture(name);
    let p = probe(&input).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(p.has_audio && !p.has_video, "{name}: {p:?}");
    assert!(
        (p.duration_seconds - 1.0).abs() <= frame_seconds + 1e-9,
        "{name}: probe says {} s",
        p.duration_seconds
    );
    let out = dir.path().join("out.wav");
    let seconds = extract(&input, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        (seconds - 1.0).abs() <= slack * frame_seconds + 1e-9,
        "{name}: {seconds} s decoded"
    );
    let samples = read_output(&out);
    assert_eq!(samples.len() as f64, (seconds * 16_000.0).round());
    let freq = zero_crossing_frequency(&samples);
    assert!((freq - FIXTURE_FREQ).abs() < 1.0, "{name}: {freq} Hz");
    let amp = tone_amplitude(&samples, FIXTURE_FREQ);
    assert!((amp - FIXTURE_AMP).abs() < 0.03, "{name}: amplitude {amp}");
    // Lossy, but the sine is nearly all there is.
    let energy = samples[4000..samples.len() - 4000]
        .iter()
        .map(|v| v * v)
        .sum::<f64>()
        / (samples.len() - 8000) as f64;
    let residual = energy - amp * amp / 2.0;
    assert!(residual < 1e-3, "{name}: residual power {residual}");
}

#[test]
fn mp3_decodes_to_the_known_sine() {
    check_lossy("sine440.mp3", 1152.0 / 32_000.0, 1.0);
}

#[test]
fn ogg_vorbis_decodes_to_the_known_sine() {
    check_lossy("sine440.ogg", 2048.0 / 44_100.0, 1.0);
}

#[test]
fn aac_in_m4a_decodes_to_the_known_sine() {
    check_lossy("sine440.m4a", 1024.0 / 44_100.0, 2.0);
}

#[test]
fn probe_reports_the_video_track_of_an_mp4_and_extract_takes_its_audio() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = fixture("video16.mp4");
    let p = probe(&input).expect("probe input");
    assert!(p.has_audio && p.has_video, "{p:?}");
    assert_eq!((p.width, p.height), (Some(16), Some(16)));
    let json = p.result_json();
    assert_eq!(json["hasVideo"], true);
    assert_eq!(
        (json["width"].as_u64(), json["height"].as_u64()),
        (Some(16), Some(16))
    );
    assert!(
        json.get("fps").is_none(),
        "fps is unknown, so absent: {json}"
    );
    assert!((p.duration_seconds - 1.0).abs() < 0.05, "{p:?}");
    let out = dir.path().join("out.wav");
    extract(&input, &out).expect("extract input");
    let samples = read_output(&out);
    assert!((tone_amplitude(&samples, FIXTURE_FREQ) - FIXTURE_AMP).abs() < 0.05);
}

#[test]
fn text_and_directories_are_unsupported_and_leave_nothing() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let text = dir.path().join("notes.mp3");
    std::fs::write(&text, "just some notes, not audio\n".repeat(200)).expect("write text");
    let sub = dir.path().join("sub.wav");
    std::fs::create_dir(&sub).expect("create sub");
    for input in [&text, &sub, &dir.path().join("missing.wav")] {
        assert!(
            matches!(probe(input), Err(MediaError::Unsupported(_))),
            "{input:?}"
        );
        let out = dir.path().join("out.wav");
        assert!(
            matches!(extract(input, &out), Err(MediaError::Unsupported(_))),
            "{input:?}"
        );
    }
    assert_eq!(entries(dir.path()), ["notes.mp3", "sub.wav"]);
}

#[test]
fn a_cut_off_wav_is_decoded_up_to_where_it_ends() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let signal = |t: f64| 0.5 * (2.0 * PI * 440.0 * t).sin();
    write_wav(&input, 44_100, 44_100, &[&signal]);
    // Keep the header (which still says 1 s) and the first 0.5 s, plus half a sample.
    let bytes = std::fs::read(&input).expect("read input");
    std::fs::write(&input, &bytes[..44 + 44_100 + 1]).expect("write input");
    let p = probe(&input).expect("probe input");
    assert_eq!(
        p.duration_seconds, 1.0,
        "probe reports what the header states"
    );
    let out = dir.path().join("out.wav");
    let seconds = extract(&input, &out).expect("extract input");
    assert!((seconds - 0.5).abs() < 0.01, "{seconds}");
    let samples = read_output(&out);
    let worst = worst_error(&samples, signal);
    assert!(worst < 1e-4, "worst sample error {worst}");
}

#[test]
fn a_cut_off_mp3_is_decoded_up_to_where_it_ends() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let bytes = std::fs::read(fixture("sine440.mp3")).expect("read");
    let input = dir.path().join("cut.mp3");
    std::fs::write(&input, &bytes[..bytes.len() / 2 + 17]).expect("write input");
    let out = dir.path().join("out.wav");
    let seconds = extract(&input, &out).expect("extract input");
    assert!(seconds > 0.3 && seconds < 0.7, "{seconds}");
    let samples = read_output(&out);
    assert!((zero_crossing_frequency(&samples) - FIXTURE_FREQ).abs() < 2.0);
}

/// A fixture with `range` (fractions of its length) overwritten by a fixed pseudo-random
/// sequence, sparing the bytes `keep` says to keep.
fn damaged_copy(name: &str, range: (f64, f64), keep: impl Fn(&[u8], usize) -> bool) -> Vec<u8> {
    let mut bytes = std::fs::read(fixture(name)).expect("read");
    let original = bytes.clone();
    let (from, to) = (
        (bytes.len() as f64 * range.0) as usize,
        (bytes.len() as f64 * range.1) as usize,
    );
    let mut state = 0x2545_f491_u32;
    for (i, byte) in bytes.iter_mut().enumerate().take(to).skip(from) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        if !keep(&original, i) {
            *byte = state as u8;
        }
    }
    bytes
}

/// Whether byte `i` is within the first 4 bytes of something that looks like an MP3 frame
/// header (an 11-bit sync word).
fn in_mp3_header(bytes: &[u8], i: usize) -> bool {
    (i.saturating_sub(3)..=i)
        .any(|h| h + 1 < bytes.len() && bytes[h] == 0xFF && bytes[h + 1] & 0xE0 == 0xE0)
}

#[test]
fn an_mp3_with_damaged_frame_data_fails_and_leaves_nothing() {
    // Frame headers intact (the demuxer finds every frame), the audio data of half of them
    // scrambled: the decoder rejects them.
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("damaged.mp3");
    let bytes = damaged_copy("sine440.mp3", (0.25, 0.75), in_mp3_header);
    std::fs::write(&input, bytes).expect("write input");
    let out = dir.path().join("out.wav");
    let result = extract(&input, &out);
    assert!(matches!(result, Err(MediaError::Failed(_))), "{result:?}");
    assert_eq!(entries(dir.path()), ["damaged.mp3"]);
}

#[test]
fn a_flac_with_damaged_frames_fails_as_a_gap_in_the_timeline() {
    // FLAC frames carry checksums: the demuxer drops the damaged ones, and the timestamps of
    // the next good frame show the hole.
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("damaged.flac");
    let bytes = damaged_copy("sine440.flac", (0.4, 0.5), |_, _| false);
    std::fs::write(&input, bytes).expect("write input");
    assert!(probe(&input).is_ok(), "the header is intact");
    let out = dir.path().join("out.wav");
    let result = extract(&input, &out);
    assert!(matches!(result, Err(MediaError::Failed(_))), "{result:?}");
    assert_eq!(entries(dir.path()), ["damaged.flac"]);
}

#[test]
fn wav_headers_that_cannot_be_read_are_unsupported_and_a_zero_rate_is_failed() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let header = |channels: u16, rate: u32, bits: u16| {
        let block = channels * bits.div_ceil(8);
        let mut h = b"RIFF".to_vec();
        h.extend_from_slice(&(36u32 + 3200).to_le_bytes());
        h.extend_from_slice(b"WAVEfmt ");
        h.extend_from_slice(&16u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&channels.to_le_bytes());
        h.extend_from_slice(&rate.to_le_bytes());
        h.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
        h.extend_from_slice(&block.to_le_bytes());
        h.extend_from_slice(&bits.to_le_bytes());
        h.extend_from_slice(b"data");
        h.extend_from_slice(&3200u32.to_le_bytes());
        h.extend_from_slice(&[0x10; 3200]);
        h
    };
    let out = dir.path().join("out.wav");
    for (name, bytes) in [
        ("no-channels.wav", header(0, 16_000, 16)),
        ("7-bit.wav", header(1, 16_000, 7)),
        ("cut-in-header.wav", header(1, 16_000, 16)[..30].to_vec()),
    ] {
        let input = dir.path().join(name);
        std::fs::write(&input, bytes).expect("write input");
        assert!(
            matches!(probe(&input), Err(MediaError::Unsupported(_))),
            "{name}"
        );
        assert!(
            matches!(extract(&input, &out), Err(MediaError::Unsupported(_))),
            "{name}"
        );
    }
    let input = dir.path().join("zero-rate.wav");
    std::fs::write(&input, header(1, 0, 16)).expect("write input");
    assert!(matches!(probe(&input), Err(MediaError::Failed(_))));
    assert!(matches!(extract(&input, &out), Err(MediaError::Failed(_))));
    assert!(!out.exists());
}

#[test]
fn cancel_midway_leaves_no_file() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let signal = |t: f64| 0.5 * (2.0 * PI * 440.0 * t).sin();
    write_wav(&input, 44_100, 44_100 * 5, &[&signal]);
    let out = dir.path().join("out.wav");
    let cancelled = AtomicBool::new(false);
    let mut calls = 0;
    let result = extract_wav(
        &input,
        &out,
        &mut |fraction| {
            calls += 1;
            if fraction > 0.3 {
                cancelled.store(true, Ordering::Relaxed);
            }
        },
        &cancelled,
    );
    assert!(matches!(result, Err(MediaError::Cancelled)), "{result:?}");
    assert!(calls > 0);
    assert_eq!(entries(dir.path()), ["in.wav"]);
}

#[test]
fn progress_rises_to_one() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let signal = |t: f64| 0.5 * (2.0 * PI * 440.0 * t).sin();
    write_wav(&input, 22_050, 22_050 * 3, &[&signal]);
    let mut seen = Vec::new();
    extract_wav(
        &input,
        &dir.path().join("out.wav"),
        &mut |f| seen.push(f),
        &AtomicBool::new(false),
    )
    .expect("extract wav input");
    assert!(seen.len() >= 10, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(seen[0] > 0.0 && seen[0] <= 0.05, "{seen:?}");
    assert_eq!(seen.last().copied(), Some(1.0));
}

#[test]
fn a_symlink_at_out_is_replaced_not_followed() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let signal = |t: f64| 0.5 * (2.0 * PI * 440.0 * t).sin();
    write_wav(&input, 16_000, 1600, &[&signal]);
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").expect("write victim");
    let out = dir.path().join("out.wav");
    std::os::unix::fs::symlink(&victim, &out).expect("link out");
    extract(&input, &out).expect("extract input");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read victim"),
        "keep me"
    );
    let meta = std::fs::symlink_metadata(&out).expect("lstat out");
    assert!(meta.file_type().is_file(), "out is now a regular file");
    assert_eq!(read_output(&out).len(), 1600);
    assert_eq!(entries(dir.path()), ["in.wav", "out.wav", "victim.txt"]);
}

#[test]
fn an_unwritable_out_is_unsupported_and_the_input_is_untouched() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let input = dir.path().join("in.wav");
    let signal = |t: f64| 0.5 * (2.0 * PI * 440.0 * t).sin();
    write_wav(&input, 16_000, 1600, &[&signal]);
    let out = dir.path().join("no-such-dir/out.wav");
    let result = extract(&input, &out);
    assert!(
        matches!(result, Err(MediaError::Unsupported(_))),
        "{result:?}"
    );
    assert_eq!(entries(dir.path()), ["in.wav"]);
}
