//! Benchmark: `media::extract_wav` on a generated 60 s, 44.1 kHz, stereo 16-bit WAV (two
//! different tones per channel) to 16 kHz mono: decode, mix, band-limited resample, write.
//! Reports the median and p90 of 10 runs after a warm-up, and checks each output's length.
//!
//! Run: `cargo bench --bench media_extract` (optionally `-- 20` for the number of runs).

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.wav");
    let (rate, seconds) = (44_100u32, 60usize);
    let frames = rate as usize * seconds;
    let data_len = (frames * 4) as u32;
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    for v in [1u16, 2] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(&rate.to_le_bytes());
    bytes.extend_from_slice(&(rate * 4).to_le_bytes());
    for v in [4u16, 16] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..frames {
        let t = i as f64 / f64::from(rate);
        for freq in [440.0, 1000.0] {
            let v = (0.4 * (2.0 * std::f64::consts::PI * freq * t).sin() * 32767.0) as i16;
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(&input, &bytes).expect("write input");
    let out = dir.path().join("out.wav");
    let never = AtomicBool::new(false);
    let run = || {
        let started = Instant::now();
        let secs =
            splice::media::extract_wav(&input, &out, &mut |_| {}, &never).expect("extract the WAV");
        let took = started.elapsed();
        assert_eq!(secs, seconds as f64);
        let len = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        assert_eq!(len, 44 + 2 * 16_000 * seconds as u64);
        took
    };
    run();
    let mut times: Vec<Duration> = (0..runs).map(|_| run()).collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
    eprintln!(
        "extract_wav 60 s 44.1 kHz stereo WAV ({} MiB) -> 16 kHz mono, {runs} runs: median {:.1} ms, p90 {:.1} ms",
        bytes.len() / (1024 * 1024),
        ms(times[times.len() / 2]),
        ms(p90)
    );
}
