//! Observability through the public API against the fake agent: the log channel (levels,
//! redaction, overflow, close), `OMPRPC_LOG` on stderr (a child process), and the counters.

#[path = "support/fake.rs"]
mod fake;

use std::process::Command;
use std::time::{Duration, Instant};

use fake::{secs, start_with, FAKE};
use omprpc::client::{deadline_after, parse_params};
use omprpc::{Client, Status};
use serde_json::{json, Value};

const SECRET_PROMPT: &str = "TOP-SECRET system prompt: the vault code is 7731";
const SECRET_APPEND: &str = "appended secret instructions 99x";
const API_KEY: &str = "sk-ant-api03-very-secret-key-material";
const PROMPT_TEXT: &str = "my private prompt words";

fn counters(c: &Client) -> Value {
    serde_json::from_str(&c.counters()).unwrap()
}

fn drain_events(c: &Client) -> usize {
    let mut n = 0;
    while let Ok(evs) = c.next_events(1000, Some(Instant::now())) {
        n += evs.len();
    }
    n
}

/// Every record until CLOSED (call after close).
fn all_logs(c: &Client) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        match c.next_logs(100, secs(10)) {
            Ok(recs) => out.extend(recs.iter().map(|r| serde_json::from_str::<Value>(r).unwrap())),
            Err(e) => {
                assert_eq!(e.status, Status::Closed, "{e}");
                return out;
            }
        }
    }
}

fn find<'a>(logs: &'a [Value], message: &str) -> &'a Value {
    logs.iter().find(|r| r["message"] == message).unwrap_or_else(|| panic!("no record {message:?} in {logs:#?}"))
}

#[test]
fn counters_follow_frames_requests_and_events() {
    let c = start_with(json!({}));
    let first = counters(&c);
    // The ready frame is the first event: its time is known as soon as start returns.
    assert!(first["time_to_first_event_ms"].as_f64().unwrap() >= 0.0, "{first}");
    assert!(first["last_prompt_first_event_ms"].is_null());
    assert_eq!(first["frames_in"], 1, "ready only: {first}");
    c.request("get_state", None, secs(10)).unwrap();
    let turn: Value = serde_json::from_str(&c.prompt_and_wait("say hello", None, secs(10)).unwrap()).unwrap();
    let events_in_turn = turn["events"].as_array().unwrap().len() as u64;
    let delivered = drain_events(&c) as u64;
    let k = counters(&c);
    // Start's get_state probe is not sent (omp has a ready frame): get_state, prompt.
    assert_eq!(k["requests_sent"], 2, "{k}");
    assert_eq!(k["frames_out"], 2, "{k}");
    assert_eq!(k["responses"], 2, "{k}");
    assert_eq!(k["requests_pending"], 0);
    // ready + 2 responses + the turn's events, each a frame.
    assert_eq!(k["frames_in"].as_u64().unwrap(), 3 + events_in_turn, "{k}");
    assert!(k["bytes_in"].as_u64().unwrap() > k["frames_in"].as_u64().unwrap() * 10);
    assert!(k["bytes_out"].as_u64().unwrap() > 40);
    assert_eq!(k["events_queued"].as_u64().unwrap(), delivered, "{k}");
    assert_eq!(k["events_delivered"].as_u64().unwrap(), delivered);
    assert_eq!(k["events_dropped"], 0);
    assert_eq!(k["events_held"], 0);
    assert_eq!(k["protocol_errors"], 0);
    assert!(k["last_prompt_first_event_ms"].as_f64().unwrap() >= 0.0, "{k}");
    assert!(k["time_to_first_event_ms"].as_f64().unwrap() <= k["uptime_ms"].as_f64().unwrap());
    assert_eq!(k["closed"], false);
    c.close().unwrap();
    // Readable after close.
    assert_eq!(counters(&c)["closed"], true);
}

#[test]
fn dropped_events_and_protocol_errors_are_counted_and_logged() {
    let c = start_with(json!({"event_queue_capacity": 4, "log_level": "warn", "invalid_frames": "skip"}));
    c.prompt_and_wait("burst 100", None, secs(10)).unwrap();
    c.prompt_and_wait("garbage", None, secs(10)).unwrap();
    let held = counters(&c)["events_held"].as_u64().unwrap();
    assert_eq!(held, 4);
    let delivered = drain_events(&c) as u64;
    let k = counters(&c);
    let dropped = k["events_dropped"].as_u64().unwrap();
    assert!(dropped > 90, "{k}");
    assert_eq!(k["events_queued"].as_u64().unwrap(), dropped + k["events_delivered"].as_u64().unwrap(), "{k}");
    // The event_overflow marker is delivered but is not one of the counted events.
    assert_eq!(k["events_delivered"].as_u64().unwrap() + 1, delivered);
    assert_eq!(k["protocol_errors"], 1, "{k}");
    c.close().unwrap();
    let logs = all_logs(&c);
    let overflow: Vec<_> = logs.iter().filter(|r| r["target"] == "omprpc::events").collect();
    assert!(!overflow.is_empty(), "{logs:#?}");
    assert_eq!(overflow[0]["level"], "warn");
    assert_eq!(overflow[0]["event_queue_capacity"], 4);
    let proto = logs.iter().find(|r| r["target"] == "omprpc::protocol").expect("a protocol error record");
    assert!(proto["message"].as_str().unwrap().contains("Skipped an invalid frame"), "{proto}");
    // warn: nothing below it was collected.
    assert!(logs.iter().all(|r| r["level"] == "warn" || r["level"] == "error"), "{logs:#?}");
}

#[test]
fn debug_logs_tell_the_story_without_secrets() {
    let c = start_with(json!({
        "command": null, "executable": FAKE, "system_prompt": SECRET_PROMPT, "append_system_prompt": SECRET_APPEND,
        "env": {"ANTHROPIC_API_KEY": API_KEY, "PLAIN": "x"}, "inherit_env": false, "log_level": "trace",
    }));
    c.request("get_state", None, secs(10)).unwrap();
    let p = parse_params(Some(r#"{"command":"echo my private prompt words"}"#)).unwrap();
    c.request("bash", p.as_ref(), secs(10)).unwrap();
    c.prompt_and_wait(PROMPT_TEXT, None, secs(10)).unwrap();
    assert_eq!(c.request("no_such_command", None, secs(10)).unwrap_err().status, Status::CommandFailed);
    c.close().unwrap();
    let logs = all_logs(&c);
    let text = serde_json::to_string(&logs).unwrap();
    for secret in [SECRET_PROMPT, "vault code", SECRET_APPEND, API_KEY, "very-secret", PROMPT_TEXT] {
        assert!(!text.contains(secret), "{secret:?} leaked into the logs: {text}");
    }
    let spawn = find(&logs, "agent spawned");
    assert_eq!(spawn["level"], "info");
    assert_eq!(spawn["target"], "omprpc::spawn");
    let argv = spawn["argv"].as_array().unwrap();
    assert!(argv.iter().any(|a| a == "<redacted>"), "{spawn}");
    assert!(argv.iter().any(|a| a == "--system-prompt"), "{spawn}");
    assert_eq!(spawn["env_names"], json!(["ANTHROPIC_API_KEY", "PLAIN"]));
    assert!(spawn["t_ms"].as_u64().unwrap() > 1_600_000_000_000);
    assert_eq!(find(&logs, "handshake done")["protocolVersion"], 1);
    let sent: Vec<_> = logs.iter().filter(|r| r["message"] == "request sent").collect();
    assert_eq!(sent.iter().map(|r| r["type"].as_str().unwrap()).collect::<Vec<_>>(), ["get_state", "bash", "prompt", "no_such_command"]);
    let answered: Vec<_> = logs.iter().filter(|r| r["message"] == "response received").collect();
    assert_eq!(answered.len(), 4);
    assert!(answered.iter().all(|r| r["latency_ms"].as_f64().unwrap() >= 0.0 && r["id"].as_str().unwrap().starts_with("req_")));
    assert_eq!(answered[3]["ok"], false);
    assert_eq!(answered[3]["status"], "COMMAND_FAILED");
    assert_eq!(find(&logs, "the client is closing")["status"], "CLOSED");
    assert!(find(&logs, "agent stopped")["exit"].as_str().unwrap().contains('0'));
    // trace: each frame's type and size, both ways.
    assert!(logs.iter().any(|r| r["message"] == "frame in" && r["type"] == "ready" && r["level"] == "trace"), "{logs:#?}");
    assert_eq!(logs.iter().filter(|r| r["message"] == "frame out").count(), 4);
    find(&logs, "stdin closed; waiting for the agent to exit");
    find(&logs, "teardown complete");
    // Every record names this one client.
    let ids: std::collections::BTreeSet<_> = logs.iter().map(|r| r["client"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), 1);
}

#[test]
fn logs_are_off_by_default_and_levels_are_checked() {
    let c = start_with(json!({}));
    let e = c.next_logs(10, Some(Instant::now())).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("log_level"), "{e}");
    drop(c);
    let e = Client::start(&json!({"command": [FAKE], "log_level": "loud"}).to_string()).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("log_level") && e.message.contains("loud"), "{e}");
    let e = Client::start(&json!({"command": [FAKE], "log_queue_capacity": 0}).to_string()).err().unwrap();
    assert!(e.message.contains("log_queue_capacity"), "{e}");
    // "off" is accepted and collects nothing.
    let c = start_with(json!({"log_level": "off"}));
    assert_eq!(c.next_logs(10, Some(Instant::now())).unwrap_err().status, Status::InvalidArgument);
}

#[test]
fn a_full_log_queue_reports_what_it_dropped() {
    let c = start_with(json!({"log_level": "debug", "log_queue_capacity": 3}));
    for _ in 0..10 {
        c.request("get_state", None, secs(10)).unwrap();
    }
    let recs: Vec<Value> = c.next_logs(100, secs(5)).unwrap().iter().map(|r| serde_json::from_str(r).unwrap()).collect();
    assert_eq!(recs.len(), 4, "{recs:#?}");
    assert_eq!(recs[0]["target"], "omprpc::log");
    // spawn + handshake + 10 × (sent, received) = 22 records, 3 kept.
    assert_eq!(recs[0]["dropped"], 19, "{recs:#?}");
    assert!(recs[0]["message"].as_str().unwrap().contains("dropped"));
    // Nothing more now: TIMEOUT, quickly.
    let t = Instant::now();
    assert_eq!(c.next_logs(1, deadline_after(Some(Duration::from_millis(50)))).unwrap_err().status, Status::Timeout);
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_blocked_log_poll_ends_with_closed_after_teardown() {
    let c = std::sync::Arc::new(start_with(json!({"log_level": "info"})));
    // Take what start logged.
    c.next_logs(100, secs(5)).unwrap();
    let c2 = c.clone();
    let poller = std::thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            match c2.next_logs(100, None) {
                Ok(r) => got.extend(r),
                Err(e) => return (got, e.status),
            }
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    c.close().unwrap();
    let (got, status) = poller.join().unwrap();
    assert_eq!(status, Status::Closed);
    assert!(got.iter().any(|r| r.contains("agent stopped")), "{got:?}");
}

/// Runs in a child process (see the next test): with `OMPRPC_LOG` set, a start that fails
/// on its options, one whose agent cannot be spawned, and a client that works.
#[test]
fn stderr_log_child() {
    if std::env::var_os("OMPRPC_OBSERVE_CHILD").is_none() {
        return;
    }
    assert!(Client::start(r#"{"command":["x"],"no_such_option":1}"#).is_err());
    let missing = json!({"executable": "/nonexistent/omprpc-agent", "system_prompt": SECRET_PROMPT});
    assert!(Client::start(&missing.to_string()).is_err());
    // No log_level: stderr only; next_logs is still refused.
    let c = start_with(json!({"command": null, "executable": FAKE, "system_prompt": SECRET_PROMPT, "env": {"MY_TOKEN": API_KEY}}));
    c.request("get_state", None, secs(10)).unwrap();
    assert_eq!(c.next_logs(1, Some(Instant::now())).unwrap_err().status, Status::InvalidArgument);
    c.close().unwrap();
}

#[test]
fn omprpc_log_writes_records_to_stderr() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stderr_log_child", "--nocapture", "--test-threads=1"])
        .env("OMPRPC_OBSERVE_CHILD", "1")
        .env("OMPRPC_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    let records: Vec<Value> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("omprpc: "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON record per line ({e}): {l}")))
        .collect();
    let has = |message: &str| records.iter().any(|r| r["message"] == message);
    assert!(has("start failed: bad options"), "{stderr}");
    let spawn_failed = records.iter().find(|r| r["message"] == "spawning the agent failed").unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(spawn_failed["level"], "error");
    assert!(spawn_failed["argv"].as_array().unwrap().iter().any(|a| a == "<redacted>"));
    for m in ["agent spawned", "handshake done", "request sent", "response received", "agent stopped", "teardown complete"] {
        assert!(has(m), "{m:?} missing from {stderr}");
    }
    assert!(!records.iter().any(|r| r["level"] == "trace"), "debug excludes trace");
    assert!(!stderr.contains("vault code") && !stderr.contains(API_KEY), "{stderr}");
}
