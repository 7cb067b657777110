//! Benchmark: packing a generated 1,000-file package (100 directories of 10 files, 1–4 KiB of
//! text each) into a deterministic `.tar.gz`, through the library's `pack`. Reports the median
//! and p90 of 30 runs after a warm-up, and checks every run gives the same bytes.
//!
//! Run: `cargo bench --bench pack` (optionally `-- 50` for the number of runs).

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use splice::packages::archive;

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let mut bytes = 0usize;
    for d in 0..100 {
        let sub = root.join(format!("tools/group{d:03}"));
        std::fs::create_dir_all(&sub).expect("create sub");
        for f in 0..10 {
            let line = format!("export const value{d}_{f} = \"{}\";\n", "x".repeat(40 + f));
            let content = line.repeat(16 + (d * 10 + f) % 48);
            bytes += content.len();
            std::fs::write(sub.join(format!("file{f}.ts")), content).expect("write file<f>.ts");
        }
    }
    let first = archive::pack(root).expect("pack root");
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let packed = archive::pack(root).expect("pack root");
        times.push(started.elapsed());
        assert_eq!(packed.sha256, first.sha256, "packing is not deterministic");
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
    eprintln!(
        "pack 1,000 files ({} KiB in, {} KiB out), {runs} runs: median {:.1} ms, p90 {:.1} ms",
        bytes / 1024,
        first.bytes.len() / 1024,
        ms(times[times.len() / 2]),
        ms(p90)
    );
}
