//! Helpers the fake-agent suites share (tests/client.rs, tests/observe.rs).

use std::time::{Duration, Instant};

use omprpc::client::deadline_after;
use omprpc::Client;
use serde_json::{json, Value};

pub const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");

pub fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

/// Starts the fake agent with generous timeouts plus `extra` on top.
pub fn start_with(extra: Value) -> Client {
    let mut opts = json!({"command": [FAKE], "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("start failed: {e}"))
}
