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
