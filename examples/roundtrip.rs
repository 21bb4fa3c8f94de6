//! get_state round trips through the client vs a raw write/read-line/parse loop.
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;
fn pct(v: &mut [f64], p: f64) -> f64 { v.sort_by(|a, b| a.partial_cmp(b).unwrap()); v[((v.len() as f64 - 1.0) * p) as usize] }
fn main() {
    let fake = std::env::args().nth(1).expect("fake agent path");
    let n = 2000;
    let mut child = Command::new(&fake).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let mut raw = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        writeln!(w, "{{\"id\":\"r{i}\",\"type\":\"get_state\"}}").unwrap();
        line.clear();
        r.read_line(&mut line).unwrap();
        let _v: serde_json::Value = serde_json::from_str(&line).unwrap();
        raw.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(w);
    child.wait().unwrap();
    let c = omprpc::Client::start(&serde_json::json!({"command": [fake]}).to_string()).unwrap();
    let mut ours = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let s = c.request("get_state", None, None).unwrap();
        assert!(s.len() > 10);
        ours.push(t.elapsed().as_secs_f64() * 1e6);
    }
    println!("raw   p50 {:.1} us  p99 {:.1} us", pct(&mut raw, 0.5), pct(&mut raw, 0.99));
    println!("omprpc p50 {:.1} us  p99 {:.1} us", pct(&mut ours, 0.5), pct(&mut ours, 0.99));
}
