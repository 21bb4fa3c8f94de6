//! The tool bridge against a live client: a raw socket acting as a hostile or honest
//! extension, and the generated extension itself run by node with a stand-in for pi's API.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
#[cfg(unix)]
use std::os::unix::net::UnixStream;
#[cfg(unix)]
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use omprpc::client::deadline_after;
use omprpc::{Client, Status};
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");
#[cfg(unix)]
const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bridge-harness.cjs");

fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

fn echo_tool() -> Value {
    json!({"name": "echo_host", "description": "Echo", "parameters": {"type": "object", "properties": {"message": {"type": "string"}}}})
}

fn start(extra: Value) -> Client {
    let mut opts = json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "host_tools": [echo_tool()], "stop_grace_ms": 300});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("start: {e}"))
}

/// The extension path from the agent's argv, and the CONFIG object embedded in it.
fn extension(c: &Client) -> (String, Value) {
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    let argv: Vec<String> = serde_json::from_value(info["argv"].clone()).unwrap();
    let i = argv.iter().position(|a| a == "--extension").expect("--extension in argv");
    let path = argv[i + 1].clone();
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().find(|l| l.starts_with("const CONFIG = ")).unwrap();
    let config: Value = serde_json::from_str(line.trim_start_matches("const CONFIG = ").trim_end_matches(';')).unwrap();
    (path, config)
}

fn wait_event(c: &Client, ty: &str) -> Value {
    let deadline = secs(10);
    loop {
        let evs = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for {ty}: {e}"));
        let v: Value = serde_json::from_slice(&evs[0]).unwrap();
        if v["type"] == ty {
            return v;
        }
    }
}

/// A raw connection to the bridge, as the extension makes: its Unix socket, or TCP (the
/// default on Windows).
struct Ext {
    stream: Box<dyn Write>,
    reader: BufReader<Box<dyn Read>>,
    config: Value,
}

impl Ext {
    fn connect(config: &Value) -> Ext {
        let timeout = Some(Duration::from_secs(10));
        let (stream, reader): (Box<dyn Write>, Box<dyn Read>) = match config["socket"].as_str() {
            #[cfg(unix)]
            Some(path) => {
                let s = UnixStream::connect(path).unwrap();
                s.set_read_timeout(timeout).unwrap();
                (Box::new(s.try_clone().unwrap()), Box::new(s))
            }
            #[cfg(windows)]
            Some(path) => panic!("a Unix socket ({path}) on Windows"),
            None => {
                let s = TcpStream::connect((config["host"].as_str().unwrap(), config["port"].as_u64().unwrap() as u16)).unwrap();
                s.set_read_timeout(timeout).unwrap();
                (Box::new(s.try_clone().unwrap()), Box::new(s))
            }
        };
        Ext { stream, reader: BufReader::new(reader), config: config.clone() }
    }

    fn send(&mut self, mut frame: Value, authentic: bool) {
        if authentic {
            frame["token"] = self.config["token"].clone();
            frame["client"] = self.config["client"].clone();
        }
        writeln!(self.stream, "{frame}").unwrap();
    }

    fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap()),
        }
    }
}

#[test]
#[cfg(unix)] // file modes and the Unix socket
fn files_are_private_and_tokens_differ_per_client() {
    use std::os::unix::fs::PermissionsExt;
    let a = start(json!({}));
    let b = start(json!({}));
    let (path_a, conf_a) = extension(&a);
    let (_, conf_b) = extension(&b);
    assert_eq!(conf_a["token"].as_str().unwrap().len(), 64);
    assert_ne!(conf_a["token"], conf_b["token"]);
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path_a), 0o600);
    assert_eq!(mode(conf_a["socket"].as_str().unwrap()), 0o600);
    let dir = std::path::Path::new(&path_a).parent().unwrap().to_path_buf();
    assert_eq!(mode(dir.to_str().unwrap()), 0o700);
    a.close().unwrap();
    assert!(!dir.exists(), "the bridge directory is removed at close");
}

/// A host that died without closing left its bridge directory behind: the next bridge made
/// on this machine removes it (its owner has ended); a live owner's directory stays, and so
/// does one whose owner file names no process id.
#[test]
fn bridge_directories_of_dead_hosts_are_swept() {
    // A process that has ended. Its handle (`child`, on Windows) is kept until the sweep ran,
    // so that Windows cannot give its id to a new process meanwhile (Wine does at once).
    let mut child = std::process::Command::new(FAKE).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    // Made as the library makes its own (private, owned by this user), so the owner check
    // holds on every platform.
    let [stale, alive, unreadable] = ["omprpc-bridge", "omprpc-bridge", "omprpc-bridge"].map(|p| omprpc::env::private_dir(p).unwrap());
    for (dir, owner) in [(&stale, dead.to_string()), (&alive, std::process::id().to_string()), (&unreadable, "not a pid".into())] {
        std::fs::write(dir.join("owner.pid"), owner).unwrap();
        std::fs::write(dir.join("bridge.sock"), "").unwrap();
    }
    let c = start(json!({}));
    let (ext, _) = extension(&c);
    let own = std::path::Path::new(&ext).parent().unwrap().to_path_buf();
    assert_eq!(std::fs::read_to_string(own.join("owner.pid")).unwrap(), std::process::id().to_string());
    assert!(!stale.exists(), "a dead host's bridge directory stayed");
    assert!(alive.exists(), "a live host's bridge directory was removed");
    assert!(unreadable.exists(), "a directory whose owner is unknown was removed");
    drop(child);
    c.close().unwrap();
    assert!(!own.exists(), "close removes the bridge's own directory");
    std::fs::remove_dir_all(&alive).unwrap();
    std::fs::remove_dir_all(&unreadable).unwrap();
}

#[test]
fn wrong_or_missing_tokens_never_reach_the_host() {
    let c = start(json!({}));
    let (_, config) = extension(&c);
    for frame in [
        json!({"id": "x1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {}}),
        json!({"id": "x2", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {}, "token": "0".repeat(64), "client": config["client"]}),
        json!({"id": "x3", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {}, "token": config["token"], "client": "someone-else"}),
    ] {
        let mut ext = Ext::connect(&config);
        ext.send(frame.clone(), false);
        let reply = ext.recv().unwrap();
        assert_eq!(reply["error"], "unauthorized", "{frame}");
        assert_eq!(reply["id"], frame["id"]);
        assert!(ext.recv().is_none(), "the connection is closed after an unauthorized request");
    }
    // Nothing reached the host: no host_tool_call event was queued.
    let evs = c.next_events(1000, deadline_after(Some(Duration::from_millis(200)))).unwrap_or_default();
    assert!(evs.iter().all(|e| !String::from_utf8_lossy(e).contains("host_tool_call")));
}

#[test]
fn bridged_calls_look_like_omp_host_calls_and_get_exactly_one_reply() {
    let c = start(json!({}));
    let (_, config) = extension(&c);
    let mut ext = Ext::connect(&config);
    ext.send(json!({"id": "call-1", "kind": "tool", "tool": "echo_host", "toolCallId": "toolu_1", "args": {"message": "hi"}}), true);
    let call = wait_event(&c, "host_tool_call");
    let id = call["id"].as_str().unwrap().to_string();
    assert!(id.ends_with(":call-1"), "the host sees a bridge-unique id: {id}");
    assert_eq!(call["toolName"], "echo_host");
    assert_eq!(call["toolCallId"], "toolu_1");
    assert_eq!(call["arguments"]["message"], "hi");
    c.host_tool_update(&id, json!("working")).unwrap();
    c.host_tool_result(&id, json!({"content": [{"type": "text", "text": "done"}], "details": {"n": 1}}), false).unwrap();
    let update = ext.recv().unwrap();
    assert_eq!(update["id"], "call-1", "replies carry the extension's own id");
    assert_eq!(update["update"]["content"][0]["text"], "working");
    let result = ext.recv().unwrap();
    assert_eq!(result["result"]["content"][0]["text"], "done");
    assert_eq!(result["isError"], false);
    assert_eq!(c.host_tool_result(&id, json!("again"), false).unwrap_err().status, Status::NotFound);
    // Unknown tools and bad arguments are answered by the library itself.
    ext.send(json!({"id": "call-2", "kind": "tool", "tool": "nope", "toolCallId": "t2", "args": {}}), true);
    let r = ext.recv().unwrap();
    assert_eq!(r["isError"], true);
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("not registered"));
    ext.send(json!({"id": "call-3", "kind": "tool", "tool": "echo_host", "toolCallId": "t3", "args": [1]}), true);
    assert_eq!(ext.recv().unwrap()["isError"], true);
    // Not JSON: an error frame, and the connection stays usable.
    writeln!(ext.stream, "not json").unwrap();
    assert!(ext.recv().unwrap()["error"].as_str().unwrap().contains("not a JSON object"));
    // A cancel from the extension reaches the host as host_tool_cancel, and the late result is dropped.
    ext.send(json!({"id": "call-4", "kind": "tool", "tool": "echo_host", "toolCallId": "t4", "args": {}}), true);
    let id4 = wait_event(&c, "host_tool_call")["id"].as_str().unwrap().to_string();
    ext.send(json!({"id": "call-4-cancel", "kind": "cancel", "target": "call-4"}), true);
    assert_eq!(wait_event(&c, "host_tool_cancel")["targetId"], id4.as_str());
    assert_eq!(c.host_tool_result(&id4, json!("late"), false).unwrap_err().status, Status::Cancelled);
    // A call open when the client closes gets an error reply.
    ext.send(json!({"id": "call-5", "kind": "tool", "tool": "echo_host", "toolCallId": "t5", "args": {}}), true);
    wait_event(&c, "host_tool_call");
    c.close().unwrap();
    let last = ext.recv().unwrap();
    assert_eq!(last["id"], "call-5");
    assert!(last["result"]["content"][0]["text"].as_str().unwrap().contains("closed"));
}

#[test]
fn disconnect_cancels_open_calls() {
    let c = start(json!({}));
    let (_, config) = extension(&c);
    let mut ext = Ext::connect(&config);
    ext.send(json!({"id": "d-1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {}}), true);
    let id = wait_event(&c, "host_tool_call")["id"].as_str().unwrap().to_string();
    drop(ext);
    assert_eq!(wait_event(&c, "host_tool_cancel")["targetId"], id.as_str());
}

#[test]
fn the_same_extension_id_on_two_connections_does_not_collide() {
    let c = start(json!({"tool_policy": {"mode": "host"}}));
    let (_, config) = extension(&c);
    let (mut a, mut b) = (Ext::connect(&config), Ext::connect(&config));
    for ext in [&mut a, &mut b] {
        ext.send(json!({"id": "x-1", "kind": "tool", "tool": "echo_host", "toolCallId": "t", "args": {}}), true);
    }
    let first = wait_event(&c, "host_tool_call")["id"].as_str().unwrap().to_string();
    let second = wait_event(&c, "host_tool_call")["id"].as_str().unwrap().to_string();
    assert_ne!(first, second);
    c.host_tool_result(&first, json!("one"), false).unwrap();
    c.host_tool_result(&second, json!("two"), false).unwrap();
    let got: Vec<String> = [a.recv().unwrap(), b.recv().unwrap()]
        .iter()
        .map(|r| r["result"]["content"][0]["text"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, ["one", "two"], "each connection gets exactly its own reply");
    for ext in [&mut a, &mut b] {
        ext.send(json!({"id": "p-1", "kind": "policy_eval", "tool": "bash", "toolCallId": "t", "args": {}}), true);
    }
    let q1 = wait_event(&c, "policy_eval")["id"].as_str().unwrap().to_string();
    let q2 = wait_event(&c, "policy_eval")["id"].as_str().unwrap().to_string();
    assert_ne!(q1, q2);
    c.policy_verdict(&q1, true, "").unwrap();
    c.policy_verdict(&q2, false, "no").unwrap();
    let blocks: Vec<bool> = [a.recv().unwrap(), b.recv().unwrap()].iter().map(|r| r["verdict"]["block"].as_bool().unwrap()).collect();
    assert!(blocks.contains(&true) && blocks.contains(&false), "{blocks:?}");
}

#[test]
fn policy_rules_answer_without_the_host() {
    let c = start(json!({"tool_policy": {"mode": "rules", "allow": ["read"], "block": {"bash": "no shell here"}}}));
    let (_, config) = extension(&c);
    let mut ext = Ext::connect(&config);
    ext.send(json!({"id": "p1", "kind": "policy_eval", "tool": "bash", "toolCallId": "tc", "args": {}}), true);
    assert_eq!(ext.recv().unwrap()["verdict"], json!({"block": true, "reason": "no shell here"}));
    ext.send(json!({"id": "p2", "kind": "policy_eval", "tool": "read", "toolCallId": "tc2", "args": {}}), true);
    assert_eq!(ext.recv().unwrap()["verdict"]["block"], false);
    ext.send(json!({"id": "p3", "kind": "policy_eval", "tool": "write", "toolCallId": "tc3", "args": {}}), true);
    assert_eq!(ext.recv().unwrap()["verdict"]["block"], true, "default block");
    // A note waits for its call's tool_execution_end (no agent plays pi here, so none comes);
    // closing delivers the notes still waiting: nothing is lost.
    c.close().unwrap();
    let blocked = wait_event(&c, "tool_blocked");
    assert_eq!(blocked["toolCallId"], "tc");
}

#[cfg(unix)]
fn node() -> Option<String> {
    Command::new("node").arg("--version").output().ok().filter(|o| o.status.success()).map(|_| "node".to_string())
}

/// Runs the harness on the generated extension while `serve` answers the host side.
#[cfg(unix)]
fn harness(c: &Client, scenario: &str, serve: impl FnOnce(&Client)) -> Value {
    let node = node().expect("node is needed to run the generated extension");
    let (path, _) = extension(c);
    let child = Command::new(node).args([HARNESS, &path, scenario]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    serve(c);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "harness failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
#[cfg(unix)] // the harness runs the Linux node
fn generated_extension_runs_tools_streams_updates_and_maps_errors() {
    let c = start(json!({"tool_policy": {"mode": "host", "timeout_ms": 500}}));
    let out = harness(&c, "tool", |c| {
        let call = wait_event(c, "host_tool_call");
        let id = call["id"].as_str().unwrap();
        c.host_tool_update(id, json!("wörking")).unwrap();
        c.host_tool_result(id, json!({"content": [{"type": "text", "text": "host: ✓ hello"}], "details": {"k": 1}}), false).unwrap();
    });
    assert_eq!(out["tools"], json!(["echo_host"]));
    assert_eq!(out["gate"], true);
    assert_eq!(out["updates"][0]["content"][0]["text"], "wörking");
    assert_eq!(out["result"]["content"][0]["text"], "host: ✓ hello");
    assert_eq!(out["result"]["details"]["k"], 1);
    let out = harness(&c, "tool-error", |c| {
        let call = wait_event(c, "host_tool_call");
        c.host_tool_result(call["id"].as_str().unwrap(), json!("it broke"), true).unwrap();
    });
    assert_eq!(out["error"], "it broke");
    let out = harness(&c, "abort", |c| {
        wait_event(c, "host_tool_call");
        let cancel = wait_event(c, "host_tool_cancel");
        assert!(cancel["targetId"].as_str().unwrap().len() > 2);
    });
    assert_eq!(out["error"], "cancelled");
}

#[test]
#[cfg(unix)] // the harness runs the Linux node
fn generated_gate_asks_the_host_and_fails_closed() {
    // Answered questions get a timeout no loaded machine reaches; the silent one its own client.
    let c = start(json!({"tool_policy": {"mode": "host", "timeout_ms": 10000}}));
    let out = harness(&c, "gate", |c| {
        let q = wait_event(c, "policy_eval");
        assert_eq!(q["toolName"], "bash");
        assert!(q.get("parentToolCallId").is_none(), "a call the model made has no parent: {q}");
        c.policy_verdict(q["id"].as_str().unwrap(), false, "not in tests").unwrap();
        let q = wait_event(c, "policy_eval");
        assert_eq!((&q["toolName"], &q["toolCallId"], &q["parentToolCallId"]), (&json!("read"), &json!("tc-2/1"), &json!("tc-2")), "{q}");
        c.policy_verdict(q["id"].as_str().unwrap(), true, "").unwrap();
    });
    assert_eq!(out["bash"], json!({"block": true, "reason": "not in tests"}));
    assert_eq!(out["read"], Value::Null, "allowed: no block");
    assert_eq!(out["bridged"], Value::Null, "bridged tools are not gated");
    // Nobody answers: blocked once the gate's timeout passes.
    let c = start(json!({"tool_policy": {"mode": "host", "timeout_ms": 400}}));
    let out = harness(&c, "gate-silent", |c| {
        wait_event(c, "policy_eval");
    });
    assert_eq!(out["verdict"]["block"], true);
    assert!(out["verdict"]["reason"].as_str().unwrap().contains("no verdict"));
    assert!(out["ms"].as_u64().unwrap() >= 350);
    // Fail-open is an explicit choice.
    let open = start(json!({"tool_policy": {"mode": "host", "timeout_ms": 200, "fail_open": true}}));
    let out = harness(&open, "gate-silent", |c| {
        wait_event(c, "policy_eval");
    });
    assert_eq!(out["verdict"], Value::Null);
}

#[test]
#[cfg(unix)] // the harness runs the Linux node
fn extension_settles_when_the_host_goes_away() {
    let c = start(json!({}));
    let out = harness(&c, "host-gone", |c| {
        wait_event(c, "host_tool_call");
        c.close().unwrap();
    });
    assert!(out["error"].as_str().unwrap().contains("closed"), "{out}");
}

#[test]
#[cfg(unix)] // the harness runs the Linux node
fn tcp_transport_works_too_and_load_mode_reaches_the_agent() {
    let mut tool = echo_tool();
    tool["loadMode"] = json!("essential");
    let c = start(json!({"bridge_transport": "tcp", "host_tools": [tool]}));
    let (_, config) = extension(&c);
    assert!(config["port"].as_u64().unwrap() > 0);
    let out = harness(&c, "tool", |c| {
        let call = wait_event(c, "host_tool_call");
        c.host_tool_result(call["id"].as_str().unwrap(), json!("over tcp"), false).unwrap();
    });
    assert_eq!(out["result"]["content"][0]["text"], "over tcp");
    assert_eq!(out["loadModes"], json!(["essential"]), "omp offers a tool directly only with loadMode essential");
}

/// Starting a bridged or gated client must prove the extension loaded: the agent that drops
/// `--extension` silently (pi before 0.35; the fake agent with OMPRPC_FAKE_DROP_EXTENSION=1)
/// makes start fail with PROTOCOL once the start-up timeout passes, and leaves nothing behind.
#[test]
fn an_agent_that_ignores_the_extension_fails_start() {
    for (what, extra) in [
        ("gate", json!({"tool_policy": {"mode": "rules", "block": {"bash": "no"}}, "host_tools": null})),
        ("host tools", json!({})),
        ("gate over tcp", json!({"tool_policy": {"mode": "host"}, "bridge_transport": "tcp"})),
    ] {
        let mut opts = json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "host_tools": [echo_tool()],
                              "env": {"OMPRPC_FAKE_DROP_EXTENSION": "1"}, "startup_timeout_ms": 1500, "stop_grace_ms": 300});
        for (k, v) in extra.as_object().unwrap() {
            opts[k] = v.clone();
        }
        let began = Instant::now();
        let err = match Client::start(&opts.to_string()) {
            Ok(_) => panic!("{what}: start succeeded although the agent never loaded the bridge extension"),
            Err(e) => e,
        };
        assert_eq!(err.status, Status::Protocol, "{what}: {err}");
        assert!(err.message.contains("did not load the omprpc bridge extension"), "{what}: {err}");
        assert!(err.message.contains("1500 ms"), "{what}: {err}");
        let took = began.elapsed();
        assert!(took >= Duration::from_millis(1400) && took < Duration::from_secs(10), "{what}: took {took:?}");
    }
    // The same agent without a bridge starts: only a requested bridge needs the hello.
    let opts = json!({"command": [FAKE, "--flavor", "pi"], "flavor": "pi", "env": {"OMPRPC_FAKE_DROP_EXTENSION": "1"}, "stop_grace_ms": 300});
    let c = Client::start(&opts.to_string()).unwrap();
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    assert_eq!(info["bridgeLoaded"], false);
}

#[test]
fn start_waits_for_the_hello_and_info_reports_it() {
    let c = start(json!({"tool_policy": {"mode": "host"}}));
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    assert_eq!(info["bridgeLoaded"], true, "start returned before the extension said hello: {info}");
}

/// The generated JavaScript's own hello: node loads it in a stand-in agent (no stdout at all,
/// so only the hello can let start succeed), with each module format.
#[test]
#[cfg(unix)] // the harness runs the Linux node
fn the_generated_extension_says_hello_when_loaded() {
    let node = node().expect("node is needed to run the generated extension");
    for (flavor, bridge) in [("pi", "auto"), ("omp", "always")] {
        let opts = json!({"command": [node, HARNESS, "agent"], "flavor": flavor, "bridge": bridge, "handshake": "none",
                          "negotiate_v2": false, "host_tools": [echo_tool()], "tool_policy": {"mode": "host"},
                          "startup_timeout_ms": 20000, "stop_grace_ms": 2000});
        let c = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("{flavor}: {e}"));
        let info: Value = serde_json::from_str(&c.info()).unwrap();
        assert_eq!(info["bridgeLoaded"], true, "{flavor}");
        c.close().unwrap();
    }
    // The same stand-in dropping --extension (as pi before 0.35 does): no hello, start fails.
    let opts = json!({"command": [node, HARNESS, "agent-without-extensions"], "flavor": "pi", "handshake": "none",
                      "host_tools": [echo_tool()], "startup_timeout_ms": 1000, "stop_grace_ms": 2000});
    let err = Client::start(&opts.to_string()).err().expect("start must fail without the hello");
    assert_eq!(err.status, Status::Protocol, "{err}");
}

#[test]
#[cfg(unix)] // the harness runs the Linux node
fn host_tools_work_with_the_pre_0_51_execute_signature() {
    let c = start(json!({}));
    let out = harness(&c, "tool-old-signature", |c| {
        let call = wait_event(c, "host_tool_call");
        let id = call["id"].as_str().unwrap();
        c.host_tool_update(id, json!("partial")).unwrap();
        c.host_tool_result(id, json!("done"), false).unwrap();
        wait_event(c, "host_tool_call");
        wait_event(c, "host_tool_cancel");
    });
    assert_eq!(out["updates"][0]["content"][0]["text"], "partial", "onUpdate found in third position: {out}");
    assert_eq!(out["result"]["content"][0]["text"], "done");
    assert_eq!(out["aborted"], "cancelled", "the AbortSignal found in fifth position: {out}");
}

// ---- The fake agent's "gated TOOL JSON-ARGS": one tool call through the gate, as pi runs it ----

const GATED_BASH: &str = r#"gated bash {"command":"echo hi"}"#;

/// The turn's events of one type.
fn of_type<'a>(turn: &'a Value, ty: &str) -> Vec<&'a Value> {
    turn["events"].as_array().unwrap().iter().filter(|e| e["type"] == ty).collect()
}

/// The types of the agent's frames in the turn, in order, without the streaming
/// message_update events and the library's own tool_blocked note (it comes from the bridge,
/// not from the agent's stdout, so its place among the agent's frames is not fixed).
fn frame_types(turn: &Value) -> Vec<String> {
    let types = turn["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_string());
    types.filter(|t| t != "message_update" && t != "tool_blocked").collect()
}

fn gated_turn(c: &Client, message: &str) -> Value {
    serde_json::from_str(&c.prompt_and_wait(message, None, secs(20)).unwrap_or_else(|e| panic!("{message}: {e}"))).unwrap()
}

/// The frames of one gated call, whichever way it went (agent/gate.rs; pi 0.73.1's, recorded):
/// the assistant's toolCall block, then tool_execution_start, then the run or the block.
fn assert_gated_call(t: &Value, ran: bool) -> (String, Value) {
    let mut expected = vec!["agent_start", "turn_start", "message_start", "message_end", "message_start", "message_end", "tool_execution_start"];
    if ran {
        expected.extend(["tool_execution_update", "tool_execution_update"]);
    }
    expected.extend(["tool_execution_end", "message_start", "message_end", "turn_end", "turn_start", "message_start", "message_end", "turn_end", "agent_end"]);
    assert_eq!(frame_types(t), expected);
    let asked = &t["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap()["content"][0];
    assert_eq!(asked["type"], "toolCall");
    assert_eq!((asked["name"].as_str(), &asked["arguments"]), (Some("bash"), &json!({"command": "echo hi"})));
    let start = of_type(t, "tool_execution_start")[0];
    assert_eq!(start["toolCallId"], asked["id"]);
    assert_eq!(start["args"], json!({"command": "echo hi"}));
    let end = of_type(t, "tool_execution_end")[0];
    assert_eq!((&end["toolCallId"], &end["toolName"]), (&asked["id"], &json!("bash")));
    assert_eq!(end["isError"], !ran);
    let result = of_type(t, "message_end").into_iter().find(|m| m["message"]["role"] == "toolResult").unwrap();
    assert_eq!(result["message"]["content"], end["result"]["content"]);
    (start["toolCallId"].as_str().unwrap().to_string(), end["result"].clone())
}

/// Every queued event until one of each of `types` has come (at most 10 s), then what follows
/// within 100 ms. The bridge's events come on the bridge's own thread, so they may trail the
/// turn's end that the agent wrote after them.
fn queued_through(c: &Client, types: &[&str]) -> Vec<Value> {
    let deadline = secs(10);
    let mut all: Vec<Value> = Vec::new();
    loop {
        let missing: Vec<&&str> = types.iter().filter(|t| !all.iter().any(|e| e["type"] == **t)).collect();
        let wait = if missing.is_empty() { deadline_after(Some(Duration::from_millis(100))) } else { deadline };
        match c.next_events(4096, wait) {
            Ok(evs) => all.extend(evs.iter().map(|e| serde_json::from_slice::<Value>(e).unwrap())),
            Err(_) if missing.is_empty() => return all,
            Err(e) => panic!("waiting for {missing:?}: {e}; queued: {all:#?}"),
        }
    }
}

#[test]
fn gated_call_rules_allow_and_the_tool_runs() {
    let c = start(json!({"tool_policy": {"mode": "rules", "allow": ["bash"]}}));
    let t = gated_turn(&c, GATED_BASH);
    let (_, result) = assert_gated_call(&t, true);
    assert_eq!(result, json!({"content": [{"type": "text", "text": "hi\n"}]}));
    let updates = of_type(&t, "tool_execution_update");
    assert_eq!(updates[0]["partialResult"], json!({"content": []}));
    assert_eq!(updates[1]["partialResult"], json!({"content": [{"type": "text", "text": "hi\n"}], "details": {}}));
    assert_eq!(t["assistantText"], "after: hi\n");
    assert!(of_type(&t, "tool_blocked").is_empty());
    c.close().unwrap();
}

#[test]
fn gated_call_rules_deny_and_the_model_gets_the_reason() {
    for transport in ["unix", "tcp"] {
        if cfg!(windows) && transport == "unix" {
            continue; // no Unix socket on Windows
        }
        gated_deny_over(transport);
    }
}

fn gated_deny_over(transport: &str) {
    let c = start(json!({"bridge_transport": transport, "tool_policy": {"mode": "rules", "block": {"bash": "no shell here"}, "default": "allow"}}));
    let t = gated_turn(&c, GATED_BASH);
    let (id, result) = assert_gated_call(&t, false);
    // pi's block: the reason verbatim, details {}, no update.
    assert_eq!(result, json!({"content": [{"type": "text", "text": "no shell here"}], "details": {}}));
    assert_eq!(t["assistantText"], "after: no shell here");
    let notes = of_type(&t, "tool_blocked");
    assert_eq!(notes.len(), 1, "the library notes the block among the turn's events");
    // …right before the end of the call it blocked, whichever thread read what first.
    let types: Vec<&str> = t["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = types.iter().position(|t| *t == "tool_blocked").unwrap();
    assert_eq!((types[at - 1], types[at + 1]), ("tool_execution_start", "tool_execution_end"), "{types:?}");
    let note = notes[0];
    assert_eq!((note["toolCallId"].as_str(), note["toolName"].as_str(), note["reason"].as_str()), (Some(id.as_str()), Some("bash"), Some("no shell here")));
    // The default decides tools the rules do not name: allowed here.
    let t = gated_turn(&c, r#"gated read {"path":"README.md"}"#);
    let end = of_type(&t, "tool_execution_end")[0];
    assert_eq!((end["isError"].as_bool(), end["result"]["content"][0]["text"].as_str()), (Some(false), Some("ran read")));
    c.close().unwrap();
}

#[test]
fn gated_call_asks_the_host_which_allows_then_denies() {
    let c = start(json!({"tool_policy": {"mode": "host"}}));
    for (allow, reason) in [(true, ""), (false, "not on my machine")] {
        std::thread::scope(|s| {
            let run = s.spawn(|| gated_turn(&c, GATED_BASH));
            let q = wait_event(&c, "policy_eval");
            assert_eq!((q["toolName"].as_str(), &q["arguments"]), (Some("bash"), &json!({"command": "echo hi"})));
            c.policy_verdict(q["id"].as_str().unwrap(), allow, reason).unwrap();
            let t = run.join().unwrap();
            let (id, result) = assert_gated_call(&t, allow);
            assert_eq!(q["toolCallId"], id.as_str(), "the question names the call pi is about to run");
            let text = if allow { "hi\n" } else { reason };
            assert_eq!(result["content"][0]["text"], text);
            assert_eq!(t["assistantText"], format!("after: {text}"));
        });
    }
    // An empty reason with a deny: the library's own reason reaches the model.
    std::thread::scope(|s| {
        let run = s.spawn(|| gated_turn(&c, GATED_BASH));
        let q = wait_event(&c, "policy_eval");
        c.policy_verdict(q["id"].as_str().unwrap(), false, "").unwrap();
        let (_, result) = assert_gated_call(&run.join().unwrap(), false);
        assert_eq!(result["content"][0]["text"], "blocked by the host's policy");
    });
    c.close().unwrap();
}

#[test]
fn gated_call_the_host_never_answers_and_the_timeout_blocks() {
    let c = start(json!({"tool_policy": {"mode": "host", "timeout_ms": 300}}));
    let t = gated_turn(&c, GATED_BASH);
    let (id, result) = assert_gated_call(&t, false);
    let reason = "blocked: the host's policy gave no verdict (omprpc bridge: no answer within 300 ms)";
    assert_eq!(result["content"][0]["text"], reason);
    // The question was asked once; when the gate gave up it told the library, which voided the
    // question (policy_eval_cancel) and noted the block with the gate's own words.
    // The queue holds every event: the turn's and the bridge's.
    let events = queued_through(&c, &["policy_eval_cancel", "tool_blocked"]);
    let of = |ty: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == ty).collect() };
    let questions = of("policy_eval");
    assert_eq!(questions.len(), 1, "the host was asked once");
    assert_eq!(questions[0]["toolCallId"], id.as_str());
    let question_id = questions[0]["id"].as_str().unwrap();
    let voided = of("policy_eval_cancel");
    assert_eq!(voided.len(), 1, "{events:#?}");
    assert_eq!((voided[0]["targetId"].as_str(), voided[0]["toolCallId"].as_str()), (Some(question_id), Some(id.as_str())));
    let blocked = of("tool_blocked");
    assert_eq!(blocked.len(), 1, "{events:#?}");
    assert_eq!((blocked[0]["toolCallId"].as_str(), blocked[0]["reason"].as_str()), (Some(id.as_str()), Some(reason)));
    // A verdict after the gate gave up reaches nobody: NOT_FOUND, not a silent OK.
    let late = c.policy_verdict(question_id, true, "").unwrap_err();
    assert_eq!(late.status, Status::NotFound, "{late}");
    c.close().unwrap();

    // Failing open, the timeout lets the tool run: the question is voided, nothing blocked.
    let c = start(json!({"tool_policy": {"mode": "host", "timeout_ms": 300, "fail_open": true}}));
    let t = gated_turn(&c, GATED_BASH);
    assert_gated_call(&t, true);
    let events = queued_through(&c, &["policy_eval_cancel"]);
    assert_eq!(events.iter().filter(|e| e["type"] == "policy_eval_cancel").count(), 1, "{events:#?}");
    assert_eq!(events.iter().filter(|e| e["type"] == "tool_blocked").count(), 0, "{events:#?}");
    c.close().unwrap();
}

#[test]
fn gated_call_without_a_gate_just_runs() {
    // The extension is loaded for a host tool, but the gate is off; then no extension at all.
    for opts in [json!({}), json!({"host_tools": []})] {
        let c = start(opts.clone());
        let (_, result) = assert_gated_call(&gated_turn(&c, GATED_BASH), true);
        assert_eq!(result["content"][0]["text"], "hi\n", "{opts}");
        c.close().unwrap();
    }
}
