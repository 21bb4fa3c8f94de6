//! The Windows port (issue 25, docs/windows.md) is partial: what is not ported yet fails with an
//! error that says so — never a crash, a hang or a client that pretends to run. Built only for
//! Windows, run under Wine by `make windows-test`.
#![cfg(windows)]

use omprpc::{Client, Status};

#[test]
fn starting_an_agent_on_windows_says_the_port_is_not_done() {
    let err = match Client::start(r#"{"command": ["C:\\agents\\pi.exe", "--mode", "rpc"]}"#) {
        Ok(_) => panic!("a client started on Windows, which is not ported yet"),
        Err(e) => e,
    };
    assert_eq!(err.status, Status::Io, "{err}");
    assert!(err.message.contains("on Windows") && err.message.contains("not ported yet"), "{err}");
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
