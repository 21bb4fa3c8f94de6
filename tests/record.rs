//! Session recording (`record_path`) and replay (`omprpc-fake-agent --replay`): a session is
//! recorded against the fake agent, then replayed to a fresh client, which must see the same
//! results; the committed real-pi recording replays without pi.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use omprpc::client::deadline_after;
use omprpc::{Client, Status};
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");
/// A real pi 0.73.1 session (tests/real_pi.rs `recorded_session_replays` writes it with
/// OMPRPC_UPDATE_RECORDINGS=1): a text turn "say hello", then get_state.
const PI_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recordings/pi-text-turn.jsonl");

fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

fn parse(s: &[u8]) -> Value {
    serde_json::from_slice(s).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(s)))
}

/// A private directory for one test's files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("omprpc-record-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(command: Vec<String>, extra: Value) -> Client {
    let mut opts = json!({"command": command, "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("start failed: {e}"))
}

fn replay_command(path: &Path) -> Vec<String> {
    vec![FAKE.to_string(), "--replay".into(), path.display().to_string()]
}

fn wait_event(c: &Client, ty: &str) -> Value {
    let deadline = secs(10);
    loop {
        let evs = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for {ty}: {e}"));
        let v = parse(&evs[0]);
        if v["type"] == ty {
            return v;
        }
    }
}

fn turn(c: &Client, message: &str) -> Value {
    parse(c.prompt_and_wait(message, None, secs(10)).unwrap_or_else(|e| panic!("{message}: {e}\nstderr: {}", c.stderr())).as_bytes())
}

fn types(turn: &Value) -> Vec<String> {
    turn["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap_or("").to_string()).collect()
}

fn host_tools() -> Value {
    json!([{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}])
}

/// One session: get_state, a text turn, a host tool call, a UI round trip. Returns what the
/// client saw.
fn session(c: &Client) -> Value {
    let state = parse(c.request("get_state", None, secs(10)).unwrap().as_bytes());
    let hello = turn(c, "say hello");
    let tool = std::thread::scope(|s| {
        let waiter = s.spawn(|| turn(c, "needs host tool"));
        let call = wait_event(c, "host_tool_call");
        c.host_tool_result(call["id"].as_str().unwrap(), json!({"content": [{"type": "text", "text": "host:hello"}]}), false).unwrap();
        waiter.join().unwrap()
    });
    c.prompt("prompt", "needs ui", None, secs(10)).unwrap();
    let req = parse(&c.next_ui_request(secs(10)).unwrap());
    c.ui_send_value(req["id"].as_str().unwrap(), "approved").unwrap();
    c.wait_for_idle(secs(10)).unwrap();
    let seen = wait_event(c, "ui_response_seen");
    json!({"state": state, "hello": hello, "tool": tool, "ui_request": req, "ui_seen": seen})
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| parse(l.as_bytes())).collect()
}

#[test]
fn a_recorded_session_replays_with_the_same_results() {
    let dir = Dir::new("session");
    let rec = dir.file("session.jsonl");
    let extra = json!({"host_tools": host_tools(), "record_path": rec.display().to_string()});
    // --v2: the ready frame offers protocol v2, so the negotiation is part of the session.
    let c = start(vec![FAKE.into(), "--v2".into()], extra.clone());
    let live = session(&c);
    c.close().unwrap();

    #[cfg(unix)] // Windows: an owner-only DACL, checked by src/env's unit tests there
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&rec).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let lines = read_lines(&rec);
    assert_eq!(lines[0]["omprpc_recording"], 1);
    assert_eq!(lines[0]["flavor"], "omp");
    assert_eq!(lines[0]["argv"], json!([FAKE, "--v2"]));
    let frames = &lines[1..];
    let first: Vec<(&str, &str)> = frames.iter().take(4).map(|l| (l["dir"].as_str().unwrap(), l["frame"]["type"].as_str().unwrap())).collect();
    assert_eq!(first, [("in", "ready"), ("out", "negotiate_protocol"), ("in", "response"), ("out", "set_host_tools")]);
    let mut last = 0.0;
    for l in frames {
        let t = l["t_ms"].as_f64().unwrap();
        assert!(t >= last, "timestamps go forward: {l}");
        last = t;
    }
    let sent = |ty: &str| frames.iter().any(|l| l["dir"] == "out" && l["frame"]["type"] == ty);
    assert!(sent("host_tool_result") && sent("extension_ui_response") && sent("get_state") && sent("prompt"));

    // The replay stands in for the agent: same calls, same answers.
    let r = start(replay_command(&rec), json!({"host_tools": host_tools()}));
    let replayed = session(&r);
    assert_eq!(parse(r.info().as_bytes())["protocolVersion"], 2, "the negotiation was replayed");
    r.close().unwrap();
    assert_eq!(replayed, live);
    assert_eq!(types(&live["hello"]), ["agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end"]);
    assert_eq!(live["hello"]["assistantText"], "pong");
    assert_eq!(live["tool"]["events"].as_array().unwrap().iter().find(|e| e["type"] == "tool_execution_end").unwrap()["result"]["content"][0]["text"], "host:hello");
}

#[test]
fn replay_readdresses_responses_to_the_live_request_ids() {
    let dir = Dir::new("ids");
    let rec = dir.file("ids.jsonl");
    let c = start(vec![FAKE.into()], json!({"record_path": rec.display().to_string()}));
    let state = c.request("get_state", None, secs(10)).unwrap();
    let t = turn(&c, "prompt result");
    c.close().unwrap();
    // Another client numbered its requests differently: rewrite every recorded request id
    // (requests, their responses, the prompt_result naming one).
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.contains("\"req_1\""));
    let other = dir.file("other-ids.jsonl");
    std::fs::write(&other, text.replace("\"req_", "\"elsewhere_")).unwrap();
    let r = start(replay_command(&other), json!({}));
    assert_eq!(r.request("get_state", None, secs(10)).unwrap(), state);
    let again = turn(&r, "prompt result");
    assert_eq!(again["agentInvoked"], t["agentInvoked"]);
    assert_eq!(again["agentInvoked"], false);
    r.close().unwrap();
}

#[test]
fn a_different_client_frame_fails_the_replay_with_both_frames() {
    let dir = Dir::new("mismatch");
    let rec = dir.file("m.jsonl");
    let c = start(vec![FAKE.into()], json!({"record_path": rec.display().to_string()}));
    turn(&c, "say hello");
    c.close().unwrap();
    let r = start(replay_command(&rec), json!({}));
    let e = r.prompt_and_wait("say goodbye", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::ProcessExited, "{e}");
    assert!(e.message.contains("replay mismatch"), "{e}");
    assert!(e.message.contains("say goodbye") && e.message.contains("say hello"), "{e}");
    assert!(e.message.starts_with("RPC process exited with code 1. Stderr: omprpc-fake-agent: replay mismatch: the client sent"), "{e}");
    assert!(e.message.contains("m.jsonl:3: "), "the recording's line is named: {e}");

    // A frame after the end of the recording is a mismatch too.
    let r = start(replay_command(&rec), json!({}));
    turn(&r, "say hello");
    let e = r.request("get_state", None, secs(10)).unwrap_err();
    assert!(e.message.contains("after the end of the recording"), "{e}");
}

#[test]
fn invalid_frames_are_recorded_quoted_and_replayed() {
    let dir = Dir::new("invalid");
    let rec = dir.file("g.jsonl");
    let opts = json!({"invalid_frames": "skip", "record_path": rec.display().to_string()});
    let c = start(vec![FAKE.into()], opts);
    assert_eq!(turn(&c, "garbage")["assistantText"], "pong");
    c.close().unwrap();
    let bad: Vec<Value> = read_lines(&rec).into_iter().filter(|l| l["invalid"] == true).collect();
    assert_eq!(bad, [json!({"t_ms": bad[0]["t_ms"], "dir": "in", "invalid": true, "frame": "this is not json"})]);
    let r = start(replay_command(&rec), json!({"invalid_frames": "skip"}));
    assert_eq!(turn(&r, "garbage")["assistantText"], "pong");
    let errors = parse(r.protocol_errors().as_bytes());
    assert!(errors[0]["message"].as_str().unwrap().contains("this is not json"), "{errors}");
    r.close().unwrap();
}

#[test]
fn record_path_errors_are_clear() {
    let dir = Dir::new("errors");
    let missing = dir.file("no/such/dir/r.jsonl");
    let opts = json!({"command": [FAKE], "record_path": missing.display().to_string()});
    let e = Client::start(&opts.to_string()).err().expect("start must fail");
    assert_eq!(e.status, Status::Io);
    assert!(e.message.contains("record_path") && e.message.contains("no/such/dir"), "{e}");
    for bad in [json!(""), json!(5)] {
        let e = Client::start(&json!({"command": [FAKE], "record_path": bad}).to_string()).err().expect("start must fail");
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.message.contains("record_path"), "{e}");
    }
    // A replay of something that is not a recording says so.
    let not = dir.file("not.jsonl");
    std::fs::write(&not, "{\"hello\":1}\n").unwrap();
    let e = Client::start(&json!({"command": replay_command(&not), "startup_timeout_ms": 10000}).to_string()).err().expect("start must fail");
    assert!(e.message.contains("not an omprpc recording"), "{e}");
}

#[test]
fn write_errors_are_reported_not_silent() {
    // /dev/full accepts the open and fails every write with ENOSPC.
    if !Path::new("/dev/full").exists() {
        eprintln!("write_errors_are_reported_not_silent: skipped (no /dev/full)");
        return;
    }
    let c = start(vec![FAKE.into()], json!({"record_path": "/dev/full"}));
    // 200 frames of 640 bytes: more than the recorder's buffer, so a write fails mid-session.
    assert_eq!(turn(&c, "burst 200")["assistantText"], "pong");
    let err = wait_event(&c, "protocol_error");
    assert!(err["message"].as_str().unwrap().contains("recording to /dev/full failed"), "{err}");
    // Reported once; the session goes on.
    assert_eq!(turn(&c, "say hello")["assistantText"], "pong");
    c.close().unwrap();
    let errors = parse(c.protocol_errors().as_bytes());
    assert_eq!(errors.as_array().unwrap().len(), 1, "{errors}");
}

#[test]
fn the_committed_real_pi_recording_replays_without_pi() {
    let text = std::fs::read_to_string(PI_FIXTURE).unwrap();
    // Scrubbed of the machine it was made on.
    let repo = env!("CARGO_MANIFEST_DIR");
    for leak in ["/tmp/", "/home/", "/root/", repo, "omprpc-real-"] {
        assert!(!text.contains(leak), "the fixture mentions {leak}");
    }
    let header = parse(text.lines().next().unwrap().as_bytes());
    assert_eq!(header["flavor"], "pi");
    // pi has no ready frame: the client probes with get_state, as it did with the real pi.
    let c = start(replay_command(Path::new(PI_FIXTURE)), json!({"flavor": "pi"}));
    let t = turn(&c, "say hello");
    assert_eq!(t["assistantText"], "Hello from the fake model");
    assert_eq!(t["assistantMessage"]["provider"], "fake");
    let types = types(&t);
    assert_eq!(types.first().map(String::as_str), Some("agent_start"));
    assert_eq!(types.last().map(String::as_str), Some("agent_end"));
    assert!(types.iter().filter(|t| *t == "message_update").count() >= 5, "{types:?}");
    let state = parse(c.request("get_state", None, secs(10)).unwrap().as_bytes());
    assert_eq!(state["model"]["id"], "fake-model");
    assert_eq!(state["isStreaming"], false);
    c.close().unwrap();
}

#[test]
fn replay_speed_keeps_the_recorded_pacing() {
    let dir = Dir::new("speed");
    let rec = dir.file("slow.jsonl");
    // "slow": a 300 ms pause inside the turn.
    let c = start(vec![FAKE.into()], json!({"record_path": rec.display().to_string()}));
    turn(&c, "slow");
    c.close().unwrap();
    let mut paced = replay_command(&rec);
    paced.extend(["--replay-speed".to_string(), "1".to_string()]);
    let r = start(paced, json!({}));
    let t0 = Instant::now();
    assert_eq!(turn(&r, "slow")["assistantText"], "pong");
    assert!(t0.elapsed() >= Duration::from_millis(250), "paced replay took {:?}", t0.elapsed());
    r.close().unwrap();
    for bad in ["0", "-1", "fast"] {
        let mut argv = replay_command(&rec);
        argv.extend(["--replay-speed".to_string(), bad.to_string()]);
        let e = Client::start(&json!({"command": argv, "startup_timeout_ms": 10000}).to_string()).err().expect("start must fail");
        assert!(e.message.contains("--replay-speed must be a positive number"), "{e}");
    }
}
