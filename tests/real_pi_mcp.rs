//! The policy gate on the REAL pi 1.x: it sees every tool call pi runs — a direct call to an
//! MCP server's tool, and the calls a `codemode` script makes (bash, MCP) — and a blocked call
//! never reaches its tool (the MCP server, `omprpc-fake-mcp`, logs each call it gets). The
//! gate's hello (its proof of life) still arrives when argv disables pi's extensions.
//!
//! MCP and codemode are pi 0.99+: those tests skip on an older pi (OMPRPC_PI_VERSION).
//! Run: `cargo test --test real_pi_mcp`. What pi sends is in `tests/support/PI-NOTES.md`.

#[path = "support/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "support/pi.rs"]
mod pi;

use std::path::PathBuf;

use common::{secs, turn, wait_event};
use omprpc::Client;
use pi::PiEnv;
use serde_json::{json, Value};

const FAKE_MCP: &str = env!("CARGO_BIN_EXE_omprpc-fake-mcp");

/// A pi environment whose agent dir configures the fake MCP server `fake` (exposure `direct`:
/// its tools `mcp__fake__echo` and `mcp__fake__secret` are declared to the model and callable
/// from codemode), logging to `mcp_log`.
struct McpEnv {
    env: PiEnv,
    mcp_log: PathBuf,
}

impl McpEnv {
    fn new(test: &str, script: Value) -> Option<McpEnv> {
        let env = PiEnv::new(test, script)?;
        let mcp_log = env.root.join("mcp.jsonl");
        let config = json!({"mcpServers": {"fake": {
            "command": FAKE_MCP, "args": ["--log", mcp_log.display().to_string()], "exposure": "direct"}}});
        std::fs::write(env.agent_dir.join("mcp.json"), config.to_string()).unwrap();
        Some(McpEnv { env, mcp_log })
    }

    /// pi with MCP on (the library turns it off unless the `mcp` option says otherwise).
    fn start(&self, extra_args: &[&str], mut extra_opts: Value) -> Client {
        extra_opts["mcp"] = json!(true);
        common::start_with("pi", self.env.options(extra_args), extra_opts)
    }

    /// The `{"event":"call",…}` lines the MCP server logged (every server pi started so far).
    fn mcp_calls(&self) -> Vec<Value> {
        let events: Vec<Value> = std::fs::read_to_string(&self.mcp_log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("the MCP log holds JSON lines ({e}): {l}")))
            .collect();
        events.into_iter().filter(|e| e["event"] == "call").collect()
    }

    /// The MCP server logged its start: pi connected to it (the log is only ever appended to).
    fn mcp_started(&self) -> bool {
        std::fs::read_to_string(&self.mcp_log).unwrap_or_default().contains(r#""event":"started""#)
    }
}

fn needs_mcp(test: &str) -> bool {
    if pi::pi_at_least("0.99.0") {
        return true;
    }
    eprintln!("{test}: skipped: pi {} has neither MCP nor codemode (0.99.0 on)", pi::pi_version());
    false
}

fn events<'a>(turn: &'a Value, ty: &str) -> Vec<&'a Value> {
    turn["events"].as_array().unwrap().iter().filter(|e| e["type"] == ty).collect()
}

/// The `tool_execution_end` of the call named `tool` (exactly one).
fn end_of<'a>(turn: &'a Value, tool: &str) -> &'a Value {
    let ends: Vec<&Value> = events(turn, "tool_execution_end").into_iter().filter(|e| e["toolName"] == tool).collect();
    assert_eq!(ends.len(), 1, "expected one tool_execution_end of {tool}: {:#}", turn["events"]);
    ends[0]
}

fn result_text(v: &Value) -> String {
    v["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("")
}

/// The fake LLM's script: "secret please" calls the MCP tool `secret` directly, "echo please"
/// the MCP tool `echo`; "script please" answers with a codemode call running SCRIPT_BASH_AND_MCP.
fn script() -> Value {
    json!([
        {"match": "secret please", "replies": [
            {"tool_call": {"name": "mcp__fake__secret", "arguments": {}}},
            {"text": "after: {{last_tool_result}}"}]},
        {"match": "echo please", "replies": [
            {"tool_call": {"name": "mcp__fake__echo", "arguments": {"text": "hi there"}}},
            {"text": "after: {{last_tool_result}}"}]},
        {"match": "script please", "replies": [
            {"tool_call": {"name": "codemode", "arguments": {"code": SCRIPT_BASH_AND_MCP}}},
            {"text": "after: {{last_tool_result}}"}]}])
}

/// A codemode script that tries bash and then the MCP tool `secret`, each in its own try, and
/// returns what each call gave or how it was rejected.
const SCRIPT_BASH_AND_MCP: &str = r#"const out = [];
try { const r = await tools.bash({command: "touch ran-inner && echo inner-ran"}); out.push("bash ok: " + r.output.trim()); }
catch (e) { out.push("bash rejected: " + e.message); }
try { const r = await tools.mcp__fake__secret({}); out.push("secret ok: " + r.content[0].text); }
catch (e) { out.push("secret rejected: " + e.message); }
return out.join(" | ");"#;

// A direct call to an MCP tool goes through the gate: a rule blocks it before it reaches the
// server (whose log shows no call); an allowed one reaches it.
#[test]
fn a_direct_mcp_call_is_blocked_by_a_gate_rule() {
    if !needs_mcp("a_direct_mcp_call_is_blocked_by_a_gate_rule") {
        return;
    }
    let Some(env) = McpEnv::new("mcp_rule", script()) else { return };
    let c = env.start(&[], json!({"tool_policy": {"mode": "rules", "block": {"mcp__fake__secret": "no secrets"}, "default": "allow"}}));
    let t = turn(&c, "secret please");
    assert!(env.mcp_started(), "pi never started the MCP server\nstderr: {}", c.stderr());
    let end = end_of(&t, "mcp__fake__secret");
    assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(true), "no secrets".to_string()), "{end:#}");
    assert_eq!(t["assistantText"], "after: no secrets");
    let blocked = wait_event(&c, "tool_blocked", |e| e["type"] == "tool_blocked");
    assert_eq!((blocked["toolName"].as_str(), blocked["reason"].as_str()), (Some("mcp__fake__secret"), Some("no secrets")));
    assert_eq!(env.mcp_calls(), Vec::<Value>::new(), "the blocked call reached the MCP server");

    // Not blocked: the call reaches the server, with the model's arguments.
    let t = turn(&c, "echo please");
    let end = end_of(&t, "mcp__fake__echo");
    assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(false), "echo: hi there".to_string()), "{end:#}");
    assert_eq!(env.mcp_calls(), vec![json!({"event": "call", "tool": "echo", "arguments": {"text": "hi there"}})]);
    c.close().unwrap();
}

// The same call decided by the host: a policy_eval names the MCP tool; the host's block keeps it
// from the server, its allow lets it through.
#[test]
fn a_direct_mcp_call_is_blocked_by_a_host_verdict() {
    if !needs_mcp("a_direct_mcp_call_is_blocked_by_a_host_verdict") {
        return;
    }
    let Some(env) = McpEnv::new("mcp_verdict", script()) else { return };
    let c = env.start(&[], json!({"tool_policy": {"mode": "host"}}));
    for allow in [false, true] {
        let (end, question) = std::thread::scope(|s| {
            let t = s.spawn(|| c.prompt_and_wait("secret please", None, secs(120)));
            let q = wait_event(&c, "policy_eval", |e| e["type"] == "policy_eval");
            c.policy_verdict(q["id"].as_str().unwrap(), allow, if allow { "" } else { "host says no" }).unwrap();
            let t: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("gated turn: {e}\nstderr: {}", c.stderr()))).unwrap();
            (end_of(&t, "mcp__fake__secret").clone(), q)
        });
        assert_eq!((question["toolName"].as_str(), &question["arguments"]), (Some("mcp__fake__secret"), &json!({})), "{question}");
        assert_eq!(question["toolCallId"], end["toolCallId"]);
        assert!(question.get("parentToolCallId").is_none(), "a call the model made has no parent: {question}");
        if allow {
            assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(false), "the secret is 42".to_string()), "{end:#}");
            assert_eq!(env.mcp_calls(), vec![json!({"event": "call", "tool": "secret", "arguments": {}})]);
        } else {
            assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(true), "host says no".to_string()), "{end:#}");
            assert_eq!(env.mcp_calls(), Vec::<Value>::new(), "the blocked call reached the MCP server");
        }
    }
    c.close().unwrap();
}

// Inside a codemode script: the gate sees the script's bash and MCP calls (the codemode call
// itself too), each policy_eval naming the codemode call as its parent; the host blocks both,
// the script sees each rejection with the host's reason, and neither reaches its tool.
#[test]
fn codemode_inner_calls_are_gated() {
    if !needs_mcp("codemode_inner_calls_are_gated") {
        return;
    }
    let Some(env) = McpEnv::new("mcp_codemode", script()) else { return };
    let c = env.start(&["--tools", "+codemode"], json!({"tool_policy": {"mode": "host"}}));
    let (t, questions) = std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("script please", None, secs(120)));
        let mut questions = Vec::new();
        for _ in 0..3 {
            let q = wait_event(&c, "policy_eval", |e| e["type"] == "policy_eval");
            let (allow, reason) = match q["toolName"].as_str() {
                Some("codemode") => (true, ""),
                Some("bash") => (false, "no nested shell"),
                _ => (false, "no nested secret"),
            };
            c.policy_verdict(q["id"].as_str().unwrap(), allow, reason).unwrap();
            questions.push(q);
        }
        let t: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("gated turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        (t, questions)
    });
    eprintln!("policy_eval events: {questions:#?}");
    let names: Vec<&str> = questions.iter().map(|q| q["toolName"].as_str().unwrap()).collect();
    assert_eq!(names, ["codemode", "bash", "mcp__fake__secret"]);
    let parent = questions[0]["toolCallId"].as_str().unwrap();
    assert!(questions[0].get("parentToolCallId").is_none(), "{:#}", questions[0]);
    for q in &questions[1..] {
        assert_eq!(q["parentToolCallId"].as_str(), Some(parent), "{q:#}");
        assert!(q["toolCallId"].as_str().unwrap().starts_with(&format!("{parent}/")), "{q:#}");
    }
    assert_eq!(questions[1]["arguments"]["command"], "touch ran-inner && echo inner-ran");
    let code = end_of(&t, "codemode");
    let output = result_text(&code["result"]);
    // pi reports each inner call (start, end with its parent); the library's tool_blocked note
    // comes right before the end of the inner call it blocked.
    let evs = t["events"].as_array().unwrap();
    for (q, reason) in questions[1..].iter().zip(["no nested shell", "no nested secret"]) {
        let at = evs.iter().position(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == q["toolCallId"]).expect("the inner call's end");
        let end = &evs[at];
        assert_eq!((end["isError"].as_bool(), result_text(&end["result"]), &end["parentToolCallId"]), (Some(true), reason.to_string(), &json!(parent)), "{end:#}");
        let note = &evs[at - 1];
        assert_eq!((&note["type"], &note["toolCallId"], note["reason"].as_str()), (&json!("tool_blocked"), &q["toolCallId"], Some(reason)), "{note:#}");
    }
    assert!(output.contains("bash rejected: no nested shell"), "{output}");
    assert!(output.contains("secret rejected: no nested secret"), "{output}");
    assert!(!env.env.work.join("ran-inner").exists(), "the blocked bash ran");
    assert_eq!(env.mcp_calls(), Vec::<Value>::new(), "the blocked MCP call reached the server");
    c.close().unwrap();
}

// The same script under gate rules (the library decides, no host round trip): bash and the MCP
// tool blocked inside the script, and the MCP tool allowed when the rules allow it.
#[test]
fn codemode_inner_calls_are_blocked_by_gate_rules() {
    if !needs_mcp("codemode_inner_calls_are_blocked_by_gate_rules") {
        return;
    }
    let Some(env) = McpEnv::new("mcp_codemode_rules", script()) else { return };
    let rules = json!({"tool_policy": {"mode": "rules", "block": {"bash": "no shell", "mcp__fake__secret": "no secrets"}, "default": "allow"}});
    let c = env.start(&["--tools", "+codemode"], rules);
    let t = turn(&c, "script please");
    let output = result_text(&end_of(&t, "codemode")["result"]);
    assert!(output.contains("bash rejected: no shell"), "{output}");
    assert!(output.contains("secret rejected: no secrets"), "{output}");
    assert!(!env.env.work.join("ran-inner").exists(), "the blocked bash ran");
    assert_eq!(env.mcp_calls(), Vec::<Value>::new(), "the blocked MCP call reached the server");
    c.close().unwrap();

    // Only bash blocked: the script's MCP call reaches the server.
    let c = env.start(&["--tools", "+codemode"], json!({"tool_policy": {"mode": "rules", "block": {"bash": "no shell"}, "default": "allow"}}));
    let t = turn(&c, "script please");
    let output = result_text(&end_of(&t, "codemode")["result"]);
    assert!(output.contains("bash rejected: no shell") && output.contains("secret ok: the secret is 42"), "{output}");
    assert_eq!(env.mcp_calls(), vec![json!({"event": "call", "tool": "secret", "arguments": {}})]);
    c.close().unwrap();
}

// `--no-extensions` in argv turns off the extensions pi discovers (and, on 1.x, its built-in
// MCP support), not the one the library passes with --extension: the gate still says hello (start
// would fail without it) and still blocks. Any pi version (the suite runs on 1.6.0 and 0.73.1).
#[test]
fn the_gate_loads_despite_no_extensions() {
    let Some(env) = PiEnv::new("gate_no_extensions", json!([{"match": "run it", "replies": [
        {"tool_call": {"name": "bash", "arguments": {"command": "touch ran-bash"}}},
        {"text": "after: {{last_tool_result}}"}]}])) else { return };
    let opts = json!({"tool_policy": {"mode": "rules", "block": {"bash": "gated"}, "default": "allow"}});
    let c = common::start_with("pi", env.options(&["--no-extensions"]), opts);
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    assert_eq!(info["bridgeLoaded"], true, "{info:#}");
    let t = turn(&c, "run it");
    let end = end_of(&t, "bash");
    assert_eq!((end["isError"].as_bool(), result_text(&end["result"])), (Some(true), "gated".to_string()), "{end:#}");
    assert!(!env.work.join("ran-bash").exists(), "the blocked bash ran");
    c.close().unwrap();
}
