//! The agent's version, probed once per executable with `--version` (the fake agent answers
//! like pi or omp; env `OMPRPC_FAKE_VERSION` makes it an older one): unsupported versions fail
//! start before the agent runs, the argv fits the version, `info` reports it.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use omprpc::{Client, Status};
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("omprpc-agent-version-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn info(c: &Client) -> Value {
    serde_json::from_str(&c.info()).unwrap()
}

fn start(opts: Value) -> Result<Client, omprpc::Error> {
    Client::start(&opts.to_string())
}

/// The fake agent as pi `version`, started through `executable` (so the library builds the
/// argv, and the probe runs `FAKE --version`); its argv is written to `argv_file`.
fn fake_pi(version: &str, argv_file: &std::path::Path, extra: Value) -> Value {
    let mut o = json!({"executable": FAKE, "env": {"OMPRPC_FAKE_FLAVOR": "pi", "OMPRPC_FAKE_VERSION": version,
                       "OMPRPC_FAKE_ARGV_FILE": argv_file.display().to_string()},
                       "startup_timeout_ms": 10000, "stop_grace_ms": 300});
    for (k, v) in extra.as_object().unwrap() {
        o[k] = v.clone();
    }
    o
}

fn argv_of(file: &std::path::Path) -> Vec<String> {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[test]
fn an_unsupported_pi_fails_fast_naming_both_versions() {
    let d = tmp("old");
    let began = Instant::now();
    let err = start(fake_pi("0.32.3", &d.join("argv"), json!({"host_tools": [], "tool_policy": {"mode": "host"}}))).err().expect("pi 0.32.3 must be refused");
    assert_eq!(err.status, Status::Protocol, "{err}");
    for part in ["pi 0.32.3 is not supported", "0.37.2", &omprpc::protocol::version::PI_NEWEST.to_string()] {
        assert!(err.message.contains(part), "{part:?} missing: {err}");
    }
    assert!(began.elapsed() < Duration::from_secs(5), "not fast: {:?}", began.elapsed());
    assert!(!d.join("argv").exists(), "the agent itself was never started");
    // A pinned version is checked the same way, without a probe.
    let err = start(json!({"command": [FAKE, "--mode", "rpc"], "flavor": "pi", "agent_version": "0.30.0"})).err().unwrap();
    assert!(err.message.contains("pi 0.30.0 is not supported"), "{err}");
    assert!(start(json!({"command": [FAKE], "agent_version": "soon"})).err().unwrap().message.contains("agent_version"));
}

#[test]
fn the_argv_fits_the_version_and_info_reports_it() {
    let d = tmp("argv");
    let tool = json!({"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}});
    // pi 0.67: --tools names built-ins only (extension tools are always on), so the bridged
    // tool stays out of it and an empty list is --no-tools.
    // Before 0.40 pi ignores --no-tools: an allow-list naming nothing turns the built-ins off.
    for (version, want) in [
        ("0.67.6", vec!["--no-tools"]),
        ("0.68.1", vec!["--tools", "echo_host"]),
        ("0.50.7", vec!["--no-tools"]),
        ("0.37.2", vec!["--tools", ""]),
    ] {
        let file = d.join(format!("argv-{version}"));
        let c = start(fake_pi(version, &file, json!({"tools": [], "host_tools": [tool]}))).unwrap_or_else(|e| panic!("{version}: {e}"));
        let i = info(&c);
        assert_eq!(i["agentVersion"], version);
        assert_eq!(i["flavor"], "pi", "a bare version on --version is pi");
        assert_eq!(i["bridgeLoaded"], true);
        let argv = argv_of(&file);
        let at = argv.iter().position(|a| a == want[0]).unwrap_or_else(|| panic!("{version}: {want:?} not in {argv:?}"));
        assert_eq!(&argv[at..at + want.len()], &want[..], "{version}: {argv:?}");
        c.close().unwrap();
    }
    // omp says `omp/X.Y.Z`: its flavour follows, without a flavor option.
    let c = start(json!({"executable": FAKE, "stop_grace_ms": 300})).unwrap();
    let i = info(&c);
    assert_eq!((i["flavor"].as_str(), i["agentVersion"].as_str()), (Some("omp"), Some("18.2.3")));
}

#[test]
fn a_pinned_version_or_a_command_without_mode_is_not_probed() {
    // The fake would say 0.1.0 if asked: the pin wins, so start succeeds.
    let c = start(json!({"command": [FAKE, "--mode", "rpc"], "flavor": "pi", "agent_version": "0.73.1",
                         "env": {"OMPRPC_FAKE_VERSION": "0.1.0"}, "stop_grace_ms": 300}))
    .unwrap();
    assert_eq!(info(&c)["agentVersion"], "0.73.1");
    // No --mode in the command: a wrapper or a test double; not asked, version unknown.
    let c = start(json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "env": {"OMPRPC_FAKE_VERSION": "0.1.0"}, "stop_grace_ms": 300}))
        .unwrap();
    assert_eq!(info(&c)["agentVersion"], Value::Null);
}

/// `--version` runs once per executable (path and modification time), not once per start.
#[test]
fn the_probe_runs_once_per_executable() {
    let d = tmp("once");
    let calls = d.join("calls");
    let script = d.join("agent.sh");
    let write_script = || {
        std::fs::write(&script, format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec '{FAKE}' \"$@\"\n", calls.display())).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write_script();
    let opts = json!({"command": [script.display().to_string(), "--mode", "rpc"], "stop_grace_ms": 300});
    let probes = || std::fs::read_to_string(&calls).unwrap_or_default().lines().filter(|l| *l == "--version").count();
    for _ in 0..3 {
        start(opts.clone()).unwrap().close().unwrap();
    }
    assert_eq!(probes(), 1, "{}", std::fs::read_to_string(&calls).unwrap());
    // Replaced in place (a new mtime): asked again.
    let mtime = std::fs::metadata(&script).unwrap().modified().unwrap();
    while std::fs::metadata(&script).unwrap().modified().unwrap() == mtime {
        write_script();
    }
    start(opts.clone()).unwrap().close().unwrap();
    assert_eq!(probes(), 2);
}

/// An agent outside the measured range that the host vouches for — the omp fork `omp_rpc` is
/// written for reports omp 15.8.1 (tests/support/OMP11-NOTES.md) — starts with
/// `agent_version: "unchecked"`: neither probed nor checked.
#[test]
fn an_unchecked_agent_version_starts_an_unmeasured_agent() {
    let old_omp = |extra: Value| {
        let mut o = json!({"executable": FAKE, "env": {"OMPRPC_FAKE_VERSION": "15.8.1"}, "stop_grace_ms": 300});
        for (k, v) in extra.as_object().unwrap() {
            o[k] = v.clone();
        }
        o
    };
    let err = start(old_omp(json!({}))).err().expect("omp 15.8.1 is outside the measured range");
    assert!(err.message.contains("omp 15.8.1 is not supported"), "{err}");
    let c = start(old_omp(json!({"agent_version": "unchecked"}))).unwrap_or_else(|e| panic!("unchecked: {e}"));
    assert_eq!(info(&c)["agentVersion"], Value::Null);
    c.request("get_state", None, omprpc::client::deadline_after(Some(Duration::from_secs(10)))).unwrap();
    c.close().unwrap();
}
