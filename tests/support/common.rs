//! Helpers the real-agent suites share (tests/real_pi.rs, tests/real_omp.rs).

use std::time::{Duration, Instant};

use omprpc::client::deadline_after;
use omprpc::Client;
use serde_json::Value;

/// Generous: a real agent is slow to start on a loaded 2-core machine.
pub fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

pub fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

/// Starts `agent` with `opts` plus `extra_opts` on top.
pub fn start_with(agent: &str, mut opts: Value, extra_opts: Value) -> Client {
    for (k, v) in extra_opts.as_object().unwrap() {
        opts[k] = v.clone();
    }
    let started = Instant::now();
    let c = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("starting {agent} failed: {e}"));
    // Shown with --nocapture or on failure: the agent's start-up dominates these tests.
    eprintln!("{agent} was ready after {:.1}s", started.elapsed().as_secs_f64());
    c
}

pub fn turn(c: &Client, message: &str) -> Value {
    let started = Instant::now();
    let t = c.prompt_and_wait(message, None, secs(120)).unwrap_or_else(|e| panic!("{message}: {e}\nstderr: {}", c.stderr()));
    eprintln!("turn {:?} took {:.1}s", message.chars().take(40).collect::<String>(), started.elapsed().as_secs_f64());
    serde_json::from_str(&t).unwrap()
}
