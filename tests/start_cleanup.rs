//! A start that fails half-way leaves nothing behind: no agent, no private directory (the
//! system prompt files of `system_prompt_via_file`). One test in its own binary: it counts
//! the temporary directory's entries, which no other test here creates meanwhile.

use omprpc::{Client, Status};
use serde_json::json;

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");

fn private_dirs() -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("omprpc-agent-"))
        .collect()
}

#[test]
fn a_failed_start_removes_its_private_directory() {
    let before = private_dirs();
    let base = json!({"command": [FAKE], "system_prompt": "secret prompt", "system_prompt_via_file": true, "stop_grace_ms": 300});
    let mut cases = Vec::new();
    // After the prompt files are written: the recording cannot be opened.
    let mut o = base.clone();
    o["record_path"] = json!("/nonexistent-dir/omprpc/record.jsonl");
    cases.push((o, Status::Io));
    // The agent cannot be spawned.
    let mut o = base.clone();
    o["command"] = json!(["/nonexistent-dir/omprpc-agent"]);
    cases.push((o, Status::Io));
    // The agent starts, the handshake fails (it exits at once).
    let mut o = base.clone();
    o["command"] = json!([FAKE, "--scenario", "exit-before-ready"]);
    cases.push((o, Status::ProcessExited));
    for (opts, status) in cases {
        let e = Client::start(&opts.to_string()).err().unwrap_or_else(|| panic!("start succeeded: {opts}"));
        assert_eq!(e.status, status, "{opts}: {e}");
        let after = private_dirs();
        let new: Vec<&String> = after.iter().filter(|d| !before.contains(d)).collect();
        assert!(new.is_empty(), "left behind by a failed start ({e}): {new:?}");
    }
    // A start that succeeds keeps its directory until close.
    let c = Client::start(&base.to_string()).unwrap();
    assert_eq!(private_dirs().len(), before.len() + 1);
    c.close().unwrap();
    assert_eq!(private_dirs().len(), before.len());
}
