//! Frame-scanner speed on one line repeated (a quick check; `make bench` measures properly).
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).expect("a file with one JSON line");
    let line = std::fs::read(path).unwrap();
    let line = line.strip_suffix(b"\n").unwrap_or(&line).to_vec();
    let n = 200_000;
    let mut f = omprpc::protocol::scan::Fields::new();
    let t = Instant::now();
    for _ in 0..n {
        f.scan(&line, 0..line.len()).unwrap();
        std::hint::black_box(f.str(&line, "type"));
    }
    let dt = t.elapsed();
    println!("scan: {:.0} ns/frame, {:.2} GB/s", dt.as_nanos() as f64 / n as f64, (line.len() * n) as f64 / dt.as_secs_f64() / 1e9);
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(&line).unwrap());
    }
    let dt = t.elapsed();
    println!("serde IgnoredAny: {:.0} ns/frame", dt.as_nanos() as f64 / n as f64);
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(line.is_ascii());
    }
    println!("is_ascii: {:.0} ns/frame", t.elapsed().as_nanos() as f64 / n as f64);
}
