//! What only Windows has (issue 25, docs/windows.md): the event HANDLE in place of the event
//! descriptor, the Job object in place of signals, and the fake agent itself under Windows.
//! The shared suites (tests/client.rs) run there too. Built only for Windows, run under Wine
//! by `make windows-test`.
#![cfg(windows)]

#[path = "support/fake.rs"]
mod fake;

use std::os::windows::io::RawHandle;
use std::time::{Duration, Instant};

use fake::{secs, start_with, FAKE};
use omprpc::client::deadline_after;
use serde_json::{json, Value};

#[link(name = "kernel32")]
extern "system" {
    fn WaitForSingleObject(handle: RawHandle, milliseconds: u32) -> u32;
    fn OpenProcess(access: u32, inherit: i32, pid: u32) -> RawHandle;
    fn CloseHandle(handle: RawHandle) -> i32;
}

/// Whether `handle` is signalled within `ms` (a host's wait loop).
fn signalled(handle: RawHandle, ms: u32) -> bool {
    // SAFETY: a handle the client keeps open while it lives.
    unsafe { WaitForSingleObject(handle, ms) == 0 }
}

/// Whether process `pid` still runs (its handle is not signalled).
fn runs(pid: u32) -> bool {
    const SYNCHRONIZE: u32 = 0x0010_0000;
    // SAFETY: a new handle or null; closed below.
    let h = unsafe { OpenProcess(SYNCHRONIZE, 0, pid) };
    if h.is_null() {
        return false;
    }
    let running = !signalled(h, 0);
    // SAFETY: the handle opened above.
    unsafe { CloseHandle(h) };
    running
}

#[test]
fn the_event_handle_is_set_exactly_while_events_are_queued() {
    let c = start_with(json!({}));
    let h = c.event_handle();
    assert!(signalled(h, 5000), "the ready event should set the handle");
    while c.next_events(1000, deadline_after(Some(Duration::ZERO))).is_ok() {}
    assert!(!signalled(h, 0));
    c.request("get_state", None, secs(10)).unwrap();
    assert!(!signalled(h, 50), "a response is not an event");
    c.prompt("prompt", "say hello", None, secs(10)).unwrap();
    assert!(signalled(h, 5000));
    c.close().unwrap();
    while c.next_events(1000, deadline_after(Some(Duration::ZERO))).is_ok() {}
    assert!(signalled(h, 0), "a closed client stays set so waiters see CLOSED");
}

/// An agent that does not end at EOF of its input (scenario `ignore-term` sleeps forever after
/// it) is ended by terminating its job once the grace period is over.
#[test]
fn an_agent_that_outlives_its_input_is_terminated_with_its_job() {
    let c = start_with(json!({"command": [FAKE, "--scenario", "ignore-term"], "stop_grace_ms": 200}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    let pid = info["pid"].as_u64().unwrap() as u32;
    assert!(runs(pid));
    let t0 = Instant::now();
    c.close().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "close took {:?}", t0.elapsed());
    assert!(!runs(pid), "the agent still runs");
}

/// The fake agent (every suite's test double) on Windows: commands in on its stdin, answers and
/// a whole turn out on its stdout as JSON lines, exit 0 at the end of its input. Spawned with
/// std, as the library cannot start agents on Windows yet.
#[test]
fn the_fake_agent_answers_json_lines_on_windows() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut agent = Command::new(env!("CARGO_BIN_EXE_omprpc-fake-agent"))
        .args(["--flavor", "pi", "--mode", "rpc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning the fake agent");
    let mut stdin = agent.stdin.take().unwrap();
    stdin.write_all(b"{\"id\":\"1\",\"type\":\"get_state\"}\r\n{\"id\":\"2\",\"type\":\"prompt\",\"message\":\"hello\"}\n").unwrap();
    drop(stdin);
    let out = agent.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let frames: Vec<serde_json::Value> =
        out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("a JSON line")).collect();
    assert_eq!((frames[0]["id"].as_str(), frames[0]["success"].as_bool()), (Some("1"), Some(true)), "{}", frames[0]);
    assert_eq!(frames[1]["id"], "2");
    assert_eq!(frames.last().unwrap()["type"], "agent_end", "the turn ran to its end: {frames:?}");
    assert!(!out.stdout.contains(&b'\r'), "LF framing, no CR LF on Windows");
}

/// An agent ended from outside mid-turn (as a crash or Task Manager would): the turn fails with
/// PROCESS_EXITED, and the exit code reads as Windows writes such codes.
#[test]
fn an_agent_terminated_mid_turn_fails_the_turn_with_its_exit_code() {
    #[link(name = "kernel32")]
    extern "system" {
        fn TerminateProcess(process: RawHandle, code: u32) -> i32;
    }
    const PROCESS_TERMINATE: u32 = 0x0001;
    let c = start_with(json!({}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    let pid = info["pid"].as_u64().unwrap() as u32;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: a new handle or null, closed below.
        let h = unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid) };
        assert!(!h.is_null(), "opening the agent");
        // SAFETY: the handle opened above, with the right to terminate.
        assert!(unsafe { TerminateProcess(h, 0xC000_0005) } != 0);
        // SAFETY: as above.
        unsafe { CloseHandle(h) };
    });
    let e = c.prompt_and_wait("hang", None, secs(10)).unwrap_err();
    killer.join().unwrap();
    assert_eq!(e.status, omprpc::Status::ProcessExited, "{e}");
    assert!(e.message.contains("exited with code 0xC0000005"), "{e}");
}

/// The default environment (the allow-list) on Windows: names match ignoring case, and what
/// node and pi need on Windows is there — read from the real environment Windows (here Wine)
/// gives this process, whatever the case of its names.
#[test]
fn the_default_environment_on_windows_has_what_node_needs() {
    let env = omprpc::env::build(None, &[]);
    let has = |name: &str| env.keys().any(|k| k.eq_ignore_ascii_case(name));
    for name in ["PATH", "SystemRoot", "windir", "ComSpec", "PATHEXT", "USERPROFILE", "APPDATA", "TEMP"] {
        assert!(std::env::var_os(name).is_none() || has(name), "{name} is set here but not passed: {env:?}");
    }
    assert!(has("PATH") && has("SystemRoot"), "Windows always sets these: {env:?}");
    std::env::set_var("OMPRPC_WINDOWS_PORT_SECRET", "x");
    assert!(!omprpc::env::build(None, &[]).contains_key("OMPRPC_WINDOWS_PORT_SECRET"));
    let opted = omprpc::env::build(None, &["omprpc_windows_port_secret".into()]);
    assert_eq!(opted.get("OMPRPC_WINDOWS_PORT_SECRET").map(String::as_str), Some("x"), "an opt-in name ignores case too");
}

/// A provider configuration (a private directory and file of the library's own) is written on
/// Windows, where it was refused before the private files were ported.
#[test]
fn a_provider_configuration_is_written_on_windows() {
    let r = omprpc::provider::write(&serde_json::json!({"providers": {"fake": {"baseUrl": "http://127.0.0.1:1/v1",
        "api": "openai-completions", "apiKeyEnv": "FAKE_KEY", "models": [{"id": "m"}]}}}))
    .expect("writing the provider configuration");
    let (dir, file) = (r["dir"].as_str().unwrap(), r["file"].as_str().unwrap());
    assert!(std::path::Path::new(file).starts_with(dir) && file.ends_with("models.json"), "{r}");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(written["providers"]["fake"]["apiKey"], "FAKE_KEY");
    std::fs::remove_dir_all(dir).unwrap();
}
