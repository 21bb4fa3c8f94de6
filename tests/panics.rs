//! A panic in a library thread (a bug in omprpc) closes the client with PANIC: the callers it
//! blocked get PANIC at once, later calls learn why it closed, close and drop stop the agent.
//! The panic is injected with the debug-build test hook `fault_panic` (client::options).

#[path = "support/fake.rs"]
mod fake;

use std::time::{Duration, Instant};

use fake::{secs, FAKE};
use omprpc::{Client, Status};
use serde_json::{json, Value};

/// The agent's process is gone (it and its group: the fake spawns nothing else here).
fn gone(pid: i64) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

fn pid(c: &Client) -> i64 {
    serde_json::from_str::<Value>(&c.info()).unwrap()["pid"].as_i64().unwrap()
}

/// A blocked prompt_and_wait gets PANIC within a second of the panic; close stops the agent.
fn blocked_turn_gets_panic(fault: &str, message: &str) {
    let c = fake::start_with(json!({"command": [FAKE], "fault_panic": fault}));
    let agent = pid(&c);
    let began = Instant::now();
    let e = c.prompt_and_wait(message, None, secs(30)).unwrap_err();
    assert_eq!(e.status, Status::Panic, "{fault}: {e}");
    assert!(e.message.contains(&format!("its {fault} thread panicked")), "{e}");
    assert!(began.elapsed() < Duration::from_secs(1), "{fault}: PANIC after {:?}", began.elapsed());
    // Later calls learn why the client closed.
    let later = c.request("get_state", None, secs(5)).unwrap_err();
    assert_eq!(later.status, Status::Closed);
    assert!(later.message.contains("PANIC"), "{later}");
    c.close().unwrap();
    assert!(gone(agent), "{fault}: the agent outlived close");
    drop(c);
}

#[test]
fn a_panic_in_the_reader_fails_the_turn_with_panic() {
    // The reader panics at the turn's agent_start.
    blocked_turn_gets_panic("reader", "hello");
}

#[test]
fn a_panic_in_the_writer_fails_the_turn_with_panic() {
    // The writer panics writing the library's own answer to a call for an unregistered tool.
    blocked_turn_gets_panic("writer", "needs host tool");
}

/// A start that waits for the bridge's hello fails with PANIC when a bridge thread panics,
/// and leaves no agent behind.
fn bridge_start_gets_panic(fault: &str) {
    let tag = format!("--omprpc-panic-test-{fault}-{}", std::process::id());
    let tool = json!({"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}});
    let opts = json!({"command": [FAKE, "--flavor", "pi", &tag], "flavor": "pi", "host_tools": [tool], "fault_panic": fault,
                      "startup_timeout_ms": 10000, "stop_grace_ms": 500});
    let began = Instant::now();
    let e = Client::start(&opts.to_string()).err().unwrap_or_else(|| panic!("{fault}: start succeeded"));
    assert_eq!(e.status, Status::Panic, "{fault}: {e}");
    assert!(began.elapsed() < Duration::from_secs(5), "{fault}: {:?}", began.elapsed());
    // No process carries the tag any more.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|d| std::fs::read(d.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&tag))
        .collect();
    assert!(left.is_empty(), "{fault}: left running: {left:?}");
}

#[test]
fn a_panic_in_the_bridge_acceptor_fails_start_with_panic() {
    bridge_start_gets_panic("bridge_accept");
}

#[test]
fn a_panic_in_a_bridge_connection_fails_start_with_panic() {
    bridge_start_gets_panic("bridge_conn");
}

#[test]
fn the_hook_names_a_thread() {
    let e = Client::start(&json!({"command": [FAKE], "fault_panic": "elsewhere"}).to_string()).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("fault_panic"), "{e}");
}
