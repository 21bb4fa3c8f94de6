//! The `launcher` start option (docs/launcher.md): the agent runs behind an argv prefix. Real
//! processes: the fake agent behind a recording wrapper script, an ssh-like script (words
//! joined and run by `sh -c` in an empty environment), `bwrap` (Debian package bubblewrap) and
//! `unshare` (util-linux); the real pi behind bwrap with its bridged host tool
//! (tests/support/pi.rs), and the real omp behind unshare under `OMPRPC_REAL_OMP=1`.
//!
//! Run: `cargo test --test launcher`. The sandboxes need unprivileged user namespaces or root;
//! where the kernel refuses them the tests fail with bwrap's or unshare's own message.

#[path = "support/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "support/fake.rs"]
#[allow(dead_code)]
mod fake;
#[path = "support/pi.rs"]
mod pi;
#[path = "support/omp.rs"]
mod omp;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake::{secs, FAKE};
use omprpc::{Client, Status};
use serde_json::{json, Value};

/// A fresh directory for one test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("omprpc-launcher-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// An executable shell script `name` holding `body`.
    fn script(&self, name: &str, body: &str) -> String {
        let p = self.path(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    /// A launcher script that appends its arguments (one line per run) to `log`, then runs
    /// them: `exec`ed, or (`exec: false`) as its child, so the launcher stays the leader.
    fn recording_launcher(&self, name: &str, exec: bool) -> (String, PathBuf) {
        let log = self.path(&format!("{name}.log"));
        let run = if exec { "exec \"$@\"" } else { "\"$@\"" };
        (self.script(name, &format!("echo \"$*\" >> '{}'\n{run}", log.display())), log)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(opts: Value) -> Result<Client, omprpc::Error> {
    let mut o = json!({"startup_timeout_ms": 20000, "request_timeout_ms": 20000, "stop_grace_ms": 500, "kill_grace_ms": 500});
    for (k, v) in opts.as_object().unwrap() {
        o[k] = v.clone();
    }
    Client::start(&o.to_string())
}

fn info(c: &Client) -> Value {
    serde_json::from_str(&c.info()).unwrap()
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap_or_default().lines().map(str::to_string).collect()
}

/// The live processes of process group `pgid` (zombies count: they are not reaped yet).
fn group_members(pgid: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i64>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
        let Some(after) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        if after.split_whitespace().nth(2).and_then(|g| g.parse::<i64>().ok()) == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

/// Waits (bounded, to catch a hang) until group `pgid` is empty; what is left otherwise.
fn group_gone(pgid: i64) -> Vec<i64> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left = group_members(pgid);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A streamed turn: events pulled one by one as they come, until `agent_end`.
fn streamed_turn(c: &Client, message: &str) -> Vec<Value> {
    c.prompt("prompt", message, None, secs(20)).unwrap_or_else(|e| panic!("prompt {message:?}: {e}\nstderr: {}", c.stderr()));
    let mut seen = Vec::new();
    loop {
        let ev = c.next_events(1, secs(20)).unwrap_or_else(|e| panic!("events of {message:?}: {e}\nstderr: {}", c.stderr()));
        let v: Value = serde_json::from_slice(&ev[0]).unwrap();
        let end = v["type"] == "agent_end";
        seen.push(v);
        if end {
            return seen;
        }
    }
}

fn assistant_text(events: &[Value]) -> String {
    let end = events.iter().rev().find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant").expect("an assistant message_end");
    end["message"]["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect()
}

/// bwrap sharing this machine's filesystem, in its own pid namespace.
fn bwrap(extra: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid"].iter().map(|s| s.to_string()).collect();
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv.push("--".into());
    argv
}

#[test]
fn a_wrapper_script_runs_the_agent_probe_and_turns_through_it() {
    let d = Dir::new("wrapper");
    let (launcher, log) = d.recording_launcher("wrap", true);
    let env_file = d.path("agent-env.json");
    let c = start(json!({
        "launcher": [launcher],
        "command": [FAKE, "--mode", "rpc"],
        "env": {"OMPRPC_FAKE_VERSION": "18.1.0", "OMPRPC_FAKE_ENV_FILE": env_file.display().to_string()},
        "host_tools": [{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}],
    }))
    .unwrap();
    // The version probe ran through the launcher (the agent is on its far side), then the agent.
    assert_eq!(lines(&log), [format!("{FAKE} --version"), format!("{FAKE} --mode rpc")]);
    let i = info(&c);
    assert_eq!(i["agentVersion"], "18.1.0");
    assert_eq!(i["flavor"], "omp");
    assert_eq!(i["launcher"], json!([launcher]));
    assert_eq!(i["argv"], json!([launcher, FAKE, "--mode", "rpc"]));
    // The launcher hands its environment on (launcher_env "process" for a script).
    let agent_env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file).unwrap()).unwrap();
    assert_eq!(agent_env["OMPRPC_FAKE_VERSION"], "18.1.0");

    let events = streamed_turn(&c, "hello");
    assert!(events.iter().any(|e| e["type"] == "message_update"), "no streamed update: {events:?}");
    assert_eq!(assistant_text(&events), "pong");

    // A host tool, answered by us while the agent waits behind the launcher.
    std::thread::scope(|s| {
        let waiter = s.spawn(|| c.prompt_and_wait("needs host tool", None, secs(20)));
        let call = loop {
            let ev: Value = serde_json::from_slice(&c.next_events(1, secs(20)).unwrap()[0]).unwrap();
            if ev["type"] == "host_tool_call" {
                break ev;
            }
        };
        assert_eq!(call["toolName"], "echo_host");
        c.host_tool_result(call["id"].as_str().unwrap(), json!({"content": [{"type": "text", "text": "host:hi"}]}), false).unwrap();
        let t: Value = serde_json::from_str(&waiter.join().unwrap().unwrap()).unwrap();
        let end = t["events"].as_array().unwrap().iter().find(|e| e["type"] == "tool_execution_end").unwrap().clone();
        assert_eq!(end["result"]["content"][0]["text"], "host:hi");
    });
    let pid = i["pid"].as_i64().unwrap();
    c.close().unwrap();
    assert_eq!(group_gone(pid), Vec::<i64>::new(), "processes left in the launcher's group");
}

#[test]
fn the_flavour_comes_from_the_agents_argv_not_the_launchers() {
    let d = Dir::new("flavour");
    std::fs::create_dir_all(d.path("bin")).unwrap();
    // A launcher named `pi` in front of an omp-like agent: still omp (no --mode: not probed).
    let (pi_named_launcher, _) = d.recording_launcher("pi", true);
    let c = start(json!({"launcher": [pi_named_launcher], "command": [FAKE]})).unwrap();
    assert_eq!(info(&c)["flavor"], "omp");
    assert!(info(&c)["ready"].is_object(), "omp's ready frame arrived");
    c.close().unwrap();
    // An agent named `pi` behind a launcher named otherwise: pi (handshake by get_state).
    let agent = d.path("bin/pi");
    std::os::unix::fs::symlink(FAKE, &agent).unwrap();
    let (launcher, _) = d.recording_launcher("omp-wrap", true);
    let c = start(json!({"launcher": [launcher], "command": [agent], "env": {"OMPRPC_FAKE_FLAVOR": "pi"}})).unwrap();
    assert_eq!(info(&c)["flavor"], "pi");
    assert_eq!(c.prompt_and_wait("hello", None, secs(20)).map(|t| serde_json::from_str::<Value>(&t).unwrap()["assistantText"].clone()).unwrap(), "pong");
    c.close().unwrap();
}

#[test]
fn env_crosses_a_far_side_launcher_as_an_env_prefix_and_stays_redacted() {
    let d = Dir::new("far-env");
    // A launcher whose far side gets none of its environment (as ssh or docker exec): `env -i`.
    let (launcher, log) = d.recording_launcher("far", true);
    let far = d.script("far-side", &format!("exec env -i PATH=/usr/bin:/bin '{launcher}' \"$@\""));
    let env_file = d.path("agent-env.json");
    let record = d.path("record.jsonl");
    let c = start(json!({
        "launcher": [far],
        "launcher_env": "command",
        "executable": FAKE,
        "system_prompt": "do-not-show-the-prompt",
        "cwd": d.0.display().to_string(),
        "env": {"OMPRPC_FAKE_ENV_FILE": env_file.display().to_string(), "MY_SETTING": "value with spaces", "API_TOKEN": "tok-hidden-123"},
        "record_path": record.display().to_string(),
        "log_level": "debug",
    }))
    .unwrap();
    let agent_env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file).unwrap()).unwrap();
    assert_eq!(agent_env["MY_SETTING"], "value with spaces");
    assert_eq!(agent_env["API_TOKEN"], "tok-hidden-123");
    // The agent ran in `cwd` on the far side (`env -C`), with the prompt it was given.
    let ran = lines(&log);
    assert!(ran.iter().any(|l| l.starts_with(&format!("env -C {} ", d.0.display())) && l.contains("--system-prompt do-not-show-the-prompt")), "{ran:?}");
    let shown = info(&c)["argv"].to_string();
    c.prompt_and_wait("hello", None, secs(20)).unwrap();
    let logs = c.next_logs(10_000, secs(5)).unwrap().join("\n");
    c.close().unwrap();
    let header = std::fs::read_to_string(&record).unwrap().lines().next().unwrap().to_string();
    for (what, text) in [("info", &shown), ("record header", &header), ("logs", &logs)] {
        for secret in ["do-not-show-the-prompt", "value with spaces", "tok-hidden-123"] {
            assert!(!text.contains(secret), "{what} shows {secret:?}: {text}");
        }
    }
    assert!(logs.contains("agent spawned"), "the spawn was logged: {logs}");
    assert!(shown.contains("MY_SETTING=<redacted>") && shown.contains("\"env\""), "{shown}");
    assert!(header.contains(&far), "the record names the launcher: {header}");
}

/// A launcher named `ssh` that does what ssh and sshd do with a command: drop the options and
/// host, join the words with spaces, and run the line with `sh -c` in a fresh environment.
/// Detected by its name: the agent's env travels as an `env` prefix and each word is quoted.
#[test]
fn an_ssh_like_launcher_gets_shell_quoted_words_and_the_env_it_needs() {
    let d = Dir::new("ssh");
    std::fs::create_dir_all(d.path("bin")).unwrap();
    let ssh = d.script("bin/ssh", "shift 2\nexec env -i PATH=/usr/bin:/bin sh -c \"$*\"");
    let (argv_file, env_file) = (d.path("argv.json"), d.path("env.json"));
    let prompt = "it's a \"test\" of $HOME; `true` & * \\ ok";
    let c = start(json!({
        "launcher": [ssh, "-T", "somehost"],
        "executable": FAKE,
        "system_prompt": prompt,
        "model": "fake/model with space",
        "env": {"OMPRPC_FAKE_ARGV_FILE": argv_file.display().to_string(), "OMPRPC_FAKE_ENV_FILE": env_file.display().to_string(),
                "OMPRPC_FAKE_VERSION": "18.2.0", "SETTING": "a 'quoted' value"},
    }))
    .unwrap_or_else(|e| panic!("ssh-like: {e}"));
    let argv: Value = serde_json::from_str(&std::fs::read_to_string(&argv_file).unwrap()).unwrap();
    assert_eq!(argv, json!(["--mode", "rpc", "--model", "fake/model with space", "--system-prompt", prompt, "--no-title"]));
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file).unwrap()).unwrap();
    assert_eq!(env["SETTING"], "a 'quoted' value");
    let i = info(&c);
    assert_eq!(i["agentVersion"], "18.2.0", "the probe crossed the launcher too");
    let shown = i["argv"].to_string();
    assert!(!shown.contains("of $HOME") && !shown.contains("quoted") && shown.contains("SETTING=<redacted>"), "{shown}");
    assert_eq!(assistant_text(&streamed_turn(&c, "hello")), "pong");
    c.close().unwrap();
}

#[test]
fn bwrap_runs_the_agent_and_close_leaves_nothing() {
    let d = Dir::new("bwrap");
    let gc = d.path("gc");
    let c = start(json!({
        "launcher": bwrap(&[]),
        "command": [FAKE, "--mode", "rpc", "--scenario", "grandchild"],
        "env": {"OMPRPC_FAKE_GRANDCHILD": gc.display().to_string(), "OMPRPC_FAKE_VERSION": "18.0.0"},
    }))
    .unwrap_or_else(|e| panic!("bwrap: {e}"));
    let i = info(&c);
    assert_eq!(i["agentVersion"], "18.0.0", "the probe ran inside bwrap");
    assert_eq!(i["argv"][0], "bwrap");
    let events = streamed_turn(&c, "hello");
    assert_eq!(assistant_text(&events), "pong");
    let beat = gc.with_extension("beat");
    let until = Instant::now() + Duration::from_secs(10);
    while !beat.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(beat.exists(), "the agent's grandchild never started");
    let pid = i["pid"].as_i64().unwrap();
    assert!(group_members(pid).len() >= 3, "bwrap, the agent and its grandchild share our group: {:?}", group_members(pid));
    // The grandchild sleeps 30 s after EOF: close must end it by signalling the group.
    let t0 = Instant::now();
    c.close().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(8), "close took {:?}", t0.elapsed());
    assert_eq!(group_gone(pid), Vec::<i64>::new(), "left behind bwrap");
    let first = std::fs::read_to_string(&beat).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(std::fs::read_to_string(&beat).unwrap(), first, "the grandchild kept running");
}

/// `bwrap --new-session` moves the sandbox into a session (and process group) of its own, out of
/// reach of the group signals; with `--die-with-parent` and its own pid namespace the sandbox
/// still dies with bwrap, which is ours.
#[test]
fn bwrap_in_a_new_session_still_ends_with_die_with_parent() {
    let d = Dir::new("bwrap-session");
    let gc = d.path("gc");
    let c = start(json!({
        "launcher": bwrap(&["--new-session", "--die-with-parent"]),
        "command": [FAKE, "--scenario", "grandchild"],
        "env": {"OMPRPC_FAKE_GRANDCHILD": gc.display().to_string()},
    }))
    .unwrap_or_else(|e| panic!("bwrap: {e}"));
    let beat = gc.with_extension("beat");
    let until = Instant::now() + Duration::from_secs(10);
    while !beat.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(beat.exists(), "the agent's grandchild never started");
    let pid = info(&c)["pid"].as_i64().unwrap();
    c.close().unwrap();
    assert_eq!(group_gone(pid), Vec::<i64>::new());
    // Beats every 20 ms while alive: give a dying one a moment, then it must stand still.
    std::thread::sleep(Duration::from_millis(200));
    let first = std::fs::read_to_string(&beat).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&beat).unwrap(), first, "the sandboxed grandchild kept running");
}

#[test]
fn unshare_runs_the_agent_in_its_own_namespaces() {
    let c = start(json!({
        "launcher": ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--net"],
        "command": [FAKE, "--mode", "rpc"],
        "env": {"OMPRPC_FAKE_VERSION": "17.3.5"},
    }))
    .unwrap_or_else(|e| panic!("unshare: {e}"));
    assert_eq!(info(&c)["agentVersion"], "17.3.5");
    assert_eq!(assistant_text(&streamed_turn(&c, "hello")), "pong");
    let pid = info(&c)["pid"].as_i64().unwrap();
    c.close().unwrap();
    assert_eq!(group_gone(pid), Vec::<i64>::new());
}

#[test]
fn when_the_launcher_dies_its_agent_still_goes_at_close() {
    let d = Dir::new("launcher-dies");
    for (name, launcher) in [
        ("script", vec![d.recording_launcher("stays", false).0]),
        ("bwrap", bwrap(&[])),
    ] {
        let c = start(json!({"launcher": launcher, "command": [FAKE]})).unwrap_or_else(|e| panic!("{name}: {e}"));
        let pid = info(&c)["pid"].as_i64().unwrap();
        assert!(group_members(pid).len() >= 2, "{name}: the agent runs as the launcher's child");
        // The launcher alone: its child (the agent) is left an orphan in our group.
        let r = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
        assert!(r.success());
        // The agent outlives its launcher and keeps serving (it holds the pipes)…
        assert_eq!(c.prompt_and_wait("hello", None, secs(20)).map(|t| serde_json::from_str::<Value>(&t).unwrap()["assistantText"].clone()).unwrap(), "pong", "{name}");
        // …and is in our group still, so close ends it.
        c.close().unwrap();
        assert_eq!(group_gone(pid), Vec::<i64>::new(), "{name}: left behind");
    }
}

#[test]
fn a_missing_or_failing_launcher_is_a_clear_error_not_a_hang() {
    let t0 = Instant::now();
    let e = start(json!({"launcher": ["no-such-launcher-omprpc"], "command": [FAKE, "--mode", "rpc"]})).err().unwrap();
    assert_eq!(e.status, Status::Io);
    assert!(e.message.contains("launcher") && e.message.contains("no-such-launcher-omprpc") && e.message.contains("not found"), "{}", e.message);
    for launcher in [json!(["false"]), json!(["sh", "-c", "echo sandbox refused >&2; exit 7"])] {
        let e = start(json!({"launcher": launcher, "command": [FAKE, "--mode", "rpc"]})).err().unwrap();
        assert_eq!(e.status, Status::ProcessExited, "{launcher}: {e}");
        if launcher[0] == "sh" {
            assert!(e.message.contains("sandbox refused"), "the launcher's stderr is in the error: {}", e.message);
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(15), "took {:?}", t0.elapsed());
    for bad in [json!([]), json!("bwrap"), json!([""]), json!(["bwrap", 3])] {
        let e = start(json!({"launcher": bad, "command": [FAKE]})).err().unwrap();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("\"launcher\" must be a non-empty array of non-empty strings"), "{}", e.message);
    }
    let e = start(json!({"launcher": ["ssh", "host"], "command": [FAKE], "system_prompt": "x", "system_prompt_via_file": true})).err().unwrap();
    assert!(e.message.contains("system_prompt_via_file"), "{}", e.message);
}

/// The fake LLM's script of both real-agent cases: the model calls `host_add`, then answers.
fn add_numbers_script() -> Value {
    json!([{"match": "add numbers", "replies": [
        {"tool_call": {"name": "host_add", "arguments": {"a": 2, "b": 3}}},
        {"text": "sum is {{last_tool_result}}"}]}])
}

/// Starts a real `agent` from its suite's options behind `launcher`, with the host tool
/// `host_add` (plus `tool_extra`), flavour and version left to the probe through the launcher;
/// answers the tool call (`bridged`: it came through the tool bridge) and checks the answer,
/// then that nothing of the launcher's group is left after close.
fn add_numbers_behind(agent: &str, mut opts: Value, launcher: Value, tool_extra: Value, version: &str, bridged: bool) {
    let mut tool = json!({"name": "host_add", "description": "Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}});
    for (k, v) in tool_extra.as_object().unwrap() {
        tool[k] = v.clone();
    }
    opts["launcher"] = launcher;
    opts["host_tools"] = json!([tool]);
    opts.as_object_mut().unwrap().remove("flavor");
    let c = common::start_with(agent, opts, json!({}));
    let i = info(&c);
    assert_eq!((i["flavor"].as_str(), i["agentVersion"].as_str()), (Some(agent), Some(version)));
    assert_eq!(i["bridgeLoaded"], bridged);
    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = common::wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        assert_eq!((call["toolName"].as_str(), call["bridged"].as_bool().unwrap_or(false)), (Some("host_add"), bridged));
        c.host_tool_result(call["id"].as_str().unwrap(), json!("5"), false).unwrap();
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        assert_eq!(turn["assistantText"], "sum is 5");
    });
    let pid = i["pid"].as_i64().unwrap();
    c.close().unwrap();
    assert_eq!(group_gone(pid), Vec::<i64>::new());
}

/// The real pi behind bwrap (own pid namespace, same filesystem): a turn with its bridged host
/// tool, whose Unix socket the sandbox still reaches; nothing left after close.
#[test]
fn real_pi_behind_bwrap_calls_a_bridged_host_tool() {
    let Some(env) = pi::PiEnv::new("launcher_bwrap", add_numbers_script()) else { return };
    add_numbers_behind("pi", env.options(&[]), json!(bwrap(&["--die-with-parent"])), json!({}), &pi::pi_version(), true);
}

/// The real omp behind unshare (its own user, pid and mount namespaces; the same network, where
/// the fake LLM listens): the probe through the launcher, a native host tool, nothing left
/// after close. Runs with `OMPRPC_REAL_OMP=1` (make test-omp), like tests/real_omp.rs.
#[test]
fn real_omp_behind_unshare_calls_a_host_tool() {
    let Some(env) = omp::OmpEnv::new("launcher_unshare", add_numbers_script()) else { return };
    let launcher = json!(["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]);
    // omp offers a host tool to the model directly only with loadMode "essential" (docs/agents.md).
    add_numbers_behind("omp", env.options(&[]), launcher, json!({"loadMode": "essential"}), &omp::omp_version(), false);
}
