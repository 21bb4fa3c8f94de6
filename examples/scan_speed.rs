//! Frame-scanner speed (a quick check; `make bench` measures properly).
//!
//!     cargo run --release --example scan_speed FILE...
//!
//! Each FILE holds one or more JSON lines; per file it prints the time per frame of the
//! reader's frame check (`check_frame`: UTF-8, the scan, the `type` lookups) over all of its
//! lines, and of serde_json's `IgnoredAny` for comparison, and the ratio of the two (serde is
//! the same before and after a scanner change, so the ratio is steadier than either time on a
//! shared machine). Each time is the fastest of several short rounds: a round that was
//! descheduled or shared its core only ever reads slower.
use std::time::Instant;

use omprpc::fuzzing::{check_frame, Fields};

fn fastest_ns(rounds: usize, mut round: impl FnMut() -> std::time::Duration) -> f64 {
    (0..rounds).map(|_| round().as_nanos() as f64).fold(f64::MAX, f64::min)
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    assert!(!files.is_empty(), "usage: scan_speed FILE...");
    println!("{:<28} {:>6} {:>10} {:>12} {:>9} {:>12} {:>12}", "file", "lines", "bytes/line", "check ns", "GB/s", "serde ns", "check/serde");
    for path in files {
        let text = std::fs::read(&path).unwrap();
        let lines: Vec<&[u8]> = text.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect();
        let bytes: usize = lines.iter().map(|l| l.len()).sum();
        // About 4 MB of frames per round, at least one pass over the file.
        let reps = (4_000_000 / bytes.max(1)).max(1);
        let frames = (reps * lines.len()) as f64;
        let mut f = Fields::new();
        for l in &lines {
            check_frame(&mut f, l).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        let ours = fastest_ns(15, || {
            let t = Instant::now();
            for _ in 0..reps {
                for l in &lines {
                    check_frame(&mut f, l).unwrap();
                    std::hint::black_box(f.str_bytes(l, "type"));
                }
            }
            t.elapsed()
        }) / frames;
        let serde = fastest_ns(15, || {
            let t = Instant::now();
            for _ in 0..reps {
                for l in &lines {
                    std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).unwrap());
                }
            }
            t.elapsed()
        }) / frames;
        let name = std::path::Path::new(&path).file_name().unwrap().to_string_lossy().into_owned();
        let per_line = bytes as f64 / lines.len() as f64;
        println!("{name:<28} {:>6} {per_line:>10.0} {ours:>12.1} {:>9.2} {serde:>12.1} {:>12.2}", lines.len(), per_line / ours, ours / serde);
    }
}
