//! The scope options on the REAL pi (protocol::scope): what the agent loads and reaches beyond
//! what the host names. Each test holds the option to what it says on the pi under test
//! (OMPRPC_PI_VERSION: the newest by default; `make test-pi-previous` runs 0.73.1,
//! `make test-pi-versions` any list):
//!
//! - a repository's `.pi/extensions` does not load by default, even with a saved decision in
//!   the agent dir's `trust.json` that trusts the directory; it loads with `trust_project`;
//! - `tools: ["bash"]` starts no user-level MCP server and reaches none of its tools; with
//!   `mcp: true` the allow-list still holds (the server's tools are neither declared nor
//!   callable from a codemode script) unless it names them;
//! - `context_files: false` keeps `AGENTS.md` out; `exclude_tools` takes a tool away;
//! - what the running pi cannot honour is refused at start, naming the version.
//!
//! Run: `cargo test --test real_pi_scope`. Facts in `tests/support/PI-NOTES.md`.

#[path = "support/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "support/pi.rs"]
mod pi;

use std::path::{Path, PathBuf};

use common::turn;
use omprpc::Client;
use pi::{pi_at_least, PiEnv};
use serde_json::{json, Value};

const FAKE_MCP: &str = env!("CARGO_BIN_EXE_omprpc-fake-mcp");

/// Options that let the library build pi's argv (`executable`, so `tools` and the scope options
/// shape it): a launcher script runs the installed pi with its Node.
fn built_options(env: &PiEnv, extra: Value) -> Value {
    let launcher = env.write_file("pi.sh", &format!("#!/bin/sh\nexec '{}' '{}' \"$@\"\n", env.install.node.display(), env.install.cli.display()));
    std::fs::set_permissions(&launcher, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut opts = json!({"executable": launcher.display().to_string(), "flavor": "pi", "model": "fake/fake-model",
        "no_session": true, "cwd": env.work.display().to_string(), "env": env.env(json!({"PI_OFFLINE": "1"})),
        "inherit_env": false, "startup_timeout_ms": 120000, "request_timeout_ms": 60000, "stop_grace_ms": 3000});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    opts
}

fn start(env: &PiEnv, extra: Value) -> Client {
    let opts = built_options(env, extra);
    Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("start: {e}"))
}

fn argv(c: &Client) -> Vec<String> {
    let info: Value = serde_json::from_str(&c.info()).unwrap();
    serde_json::from_value(info["argv"].clone()).unwrap()
}

fn declared_tools(request: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        request["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default();
    names.sort();
    names
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

/// A working directory holding `.pi/extensions/marker.ts`, which writes `marker` when pi loads
/// it, and a decision saved in the agent dir's `trust.json` that trusts that directory (pi
/// 0.79 on follows it in RPC mode when nothing overrides it; older pi ignores the file).
fn repository_with_an_extension(env: &PiEnv) -> PathBuf {
    let marker = env.root.join("marker-loaded");
    let dir = env.work.join(".pi").join("extensions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("marker.ts"),
        format!("import {{ writeFileSync }} from \"node:fs\";\nexport default function () {{ writeFileSync({:?}, \"loaded\"); }}\n", marker.display().to_string()),
    )
    .unwrap();
    let work = env.work.canonicalize().unwrap();
    std::fs::write(env.agent_dir.join("trust.json"), json!({ work.display().to_string(): true }).to_string()).unwrap();
    marker
}

#[test]
fn a_repositorys_extension_does_not_load_by_default_even_with_a_saved_trust_decision() {
    let Some(env) = PiEnv::new("scope_trust_default", json!([{"match": "hello", "replies": [{"text": "hi"}]}])) else { return };
    let marker = repository_with_an_extension(&env);
    if !pi_at_least("0.48.0") {
        // No --no-extensions that works before 0.48 and no project trust: refused, not loaded.
        let e = Client::start(&built_options(&env, json!({})).to_string()).err().expect("start must be refused");
        assert!(e.message.contains(".pi/extensions") && e.message.contains("trust_project"), "{}", e.message);
        assert!(!marker.exists());
        return;
    }
    let c = start(&env, json!({}));
    let t = turn(&c, "hello");
    assert_eq!(t["assistantText"], "hi");
    let a = argv(&c);
    let want = if pi_at_least("0.79.0") { "--no-approve" } else { "--no-extensions" };
    assert!(a.iter().any(|w| w == want), "{a:?}");
    c.close().unwrap();
    assert!(!marker.exists(), "the repository's extension ran in the agent");
}

#[test]
fn a_repositorys_extension_loads_with_trust_project() {
    let Some(env) = PiEnv::new("scope_trust_on", json!([{"match": "hello", "replies": [{"text": "hi"}]}])) else { return };
    let marker = repository_with_an_extension(&env);
    let c = start(&env, json!({"trust_project": true}));
    assert_eq!(turn(&c, "hello")["assistantText"], "hi");
    if pi_at_least("0.79.0") {
        assert!(argv(&c).iter().any(|w| w == "--approve"), "{:?}", argv(&c));
    }
    c.close().unwrap();
    assert_eq!(std::fs::read_to_string(&marker).ok().as_deref(), Some("loaded"), "trust_project: the repository's extension loads");
}

#[test]
fn before_project_trust_a_repository_setting_that_no_flag_keeps_out_is_refused() {
    if pi_at_least("0.79.0") {
        return; // pi has project trust: --no-approve keeps .pi/settings.json out
    }
    let Some(env) = PiEnv::new("scope_settings", json!([{"match": "hello", "replies": [{"text": "hi"}]}])) else { return };
    std::fs::create_dir_all(env.work.join(".pi")).unwrap();
    std::fs::write(env.work.join(".pi/settings.json"), "{}").unwrap();
    let e = Client::start(&built_options(&env, json!({})).to_string()).err().expect("start must be refused");
    assert!(e.message.contains(".pi/settings.json") && e.message.contains(&pi::pi_version()), "{}", e.message);
    let c = start(&env, json!({"trust_project": true}));
    assert_eq!(turn(&c, "hello")["assistantText"], "hi");
    c.close().unwrap();
}

/// An environment whose agent dir configures the fake MCP server `fake` (exposure `direct`),
/// logging its start and calls to the returned path.
fn with_user_mcp_server(env: &PiEnv) -> PathBuf {
    let log = env.root.join("mcp.jsonl");
    let config = json!({"mcpServers": {"fake": {"command": FAKE_MCP, "args": ["--log", log.display().to_string()], "exposure": "direct"}}});
    std::fs::write(env.agent_dir.join("mcp.json"), config.to_string()).unwrap();
    log
}

fn mcp_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn tool_result_texts(t: &Value) -> Vec<String> {
    t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| e["result"]["content"].as_array().map(|c| c.iter().filter_map(|p| p["text"].as_str()).collect::<String>()).unwrap_or_default())
        .collect()
}

#[test]
fn an_allow_list_of_bash_starts_no_mcp_server_and_reaches_none_of_its_tools() {
    let script = json!([{"match": "secret", "replies": [
        {"tool_call": {"name": "mcp__fake__secret", "arguments": {}}},
        {"text": "done"}]}]);
    let Some(env) = PiEnv::new("scope_mcp_off", script) else { return };
    let log = with_user_mcp_server(&env);
    let c = start(&env, json!({"tools": ["bash"]}));
    let t = turn(&c, "tell me the secret");
    assert_eq!(t["assistantText"], "done");
    let results = tool_result_texts(&t);
    assert!(results.iter().all(|r| !r.contains("the secret is 42")), "{results:?}");
    assert_eq!(declared_tools(&env.llm_requests()[0]), ["bash"]);
    c.close().unwrap();
    assert!(mcp_log(&log).is_empty(), "pi started the MCP server: {:?}", mcp_log(&log));
    if pi_at_least("1.0.4") {
        assert!(argv(&c).iter().any(|w| w == "--no-mcp"));
    }
}

#[test]
fn with_mcp_on_the_allow_list_still_decides_which_mcp_tools_are_reachable() {
    if !pi_at_least("1.0.4") {
        // mcp: true before pi had MCP is refused (below); 0.99–1.0.3 cannot be installed here.
        return;
    }
    // The model calls the unnamed MCP tool directly, then from a codemode script.
    let script = json!([{"match": "secret", "replies": [
        {"tool_call": {"name": "mcp__fake__secret", "arguments": {}}},
        {"tool_call": {"name": "codemode", "arguments": {"code": "return await tools.mcp__fake__secret({});"}}},
        {"text": "done"}]},
        {"match": "echo", "replies": [{"tool_call": {"name": "mcp__fake__echo", "arguments": {"text": "hey"}}}, {"text": "echoed"}]}]);
    let Some(env) = PiEnv::new("scope_mcp_on", script) else { return };
    let log = with_user_mcp_server(&env);
    let c = start(&env, json!({"tools": ["bash", "codemode"], "mcp": true}));
    let t = turn(&c, "tell me the secret");
    assert_eq!(t["assistantText"], "done");
    let results = tool_result_texts(&t);
    assert!(results.iter().all(|r| !r.contains("the secret is 42")), "an MCP tool outside the allow-list answered: {results:?}");
    // The script ran and found only the allowed tools (pi 1.6.0: "tools.mcp__fake__secret does not exist. Available: bash").
    assert!(results.iter().any(|r| r.contains("mcp__fake__secret does not exist")), "{results:?}");
    assert_eq!(declared_tools(&env.llm_requests()[0]), ["bash", "codemode"]);
    c.close().unwrap();
    assert!(mcp_log(&log).iter().all(|e| e["event"] != "call"), "{:?}", mcp_log(&log));

    // Named, an MCP tool is declared and answers.
    let c = start(&env, json!({"tools": ["bash", "mcp__fake__echo"], "mcp": true}));
    let t = turn(&c, "echo please");
    assert_eq!(t["assistantText"], "echoed");
    assert!(tool_result_texts(&t).iter().any(|r| r.contains("echo: hey")), "{:?}", tool_result_texts(&t));
    let last = env.llm_requests();
    assert_eq!(declared_tools(last.last().unwrap()), ["bash", "mcp__fake__echo"]);
    c.close().unwrap();
    assert!(mcp_log(&log).iter().any(|e| e["event"] == "call" && e["tool"] == "echo"));
}

#[test]
fn context_files_off_keeps_agents_md_out_of_the_prompt() {
    let Some(env) = PiEnv::new("scope_context_files", json!([{"match": "hello", "replies": [{"text": "hi"}, {"text": "hi again"}]}])) else { return };
    std::fs::write(env.work.join("AGENTS.md"), "Always answer in the voice of omprpc-context-marker.\n").unwrap();
    let c = start(&env, json!({}));
    turn(&c, "hello");
    c.close().unwrap();
    // pi 0.79.0's project trust gated AGENTS.md too, so its --no-approve kept it out (measured;
    // 0.79.1 on load it whatever the trust, as pi's docs say).
    let by_default = pi::pi_version() != "0.79.0";
    assert_eq!(system_prompt(&env.llm_requests()[0]).contains("omprpc-context-marker"), by_default, "context files load by default");
    if !pi_at_least("0.67.4") {
        let e = Client::start(&built_options(&env, json!({"context_files": false})).to_string()).err().expect("refused");
        assert!(e.message.contains("context_files") && e.message.contains(&pi::pi_version()), "{}", e.message);
        return;
    }
    let c = start(&env, json!({"context_files": false}));
    turn(&c, "hello");
    c.close().unwrap();
    assert!(!system_prompt(env.llm_requests().last().unwrap()).contains("omprpc-context-marker"));
}

#[test]
fn exclude_tools_takes_a_tool_away_or_is_refused() {
    let Some(env) = PiEnv::new("scope_exclude", json!([{"match": "hello", "replies": [{"text": "hi"}]}])) else { return };
    if !pi_at_least("0.77.0") {
        let e = Client::start(&built_options(&env, json!({"exclude_tools": ["write"]})).to_string()).err().expect("refused");
        assert!(e.message.contains("exclude_tools") && e.message.contains(&pi::pi_version()), "{}", e.message);
        return;
    }
    let c = start(&env, json!({"exclude_tools": ["write"]}));
    turn(&c, "hello");
    c.close().unwrap();
    let tools = declared_tools(&env.llm_requests()[0]);
    assert!(tools.contains(&"bash".to_string()) && !tools.contains(&"write".to_string()), "{tools:?}");
}

#[test]
fn mcp_on_a_pi_without_mcp_is_refused_naming_the_version() {
    if pi_at_least("0.99.0") {
        return;
    }
    let Some(env) = PiEnv::new("scope_mcp_refused", json!([])) else { return };
    let e = Client::start(&built_options(&env, json!({"mcp": true})).to_string()).err().expect("refused");
    assert!(e.message.contains("\"mcp\"") && e.message.contains(&format!("pi {}", pi::pi_version())), "{}", e.message);
}

#[test]
fn a_bash_excluded_from_context_stays_out_of_what_the_model_sees() {
    let Some(env) = PiEnv::new("scope_bash_context", json!([{"match": "hello", "replies": [{"text": "hi"}]}])) else { return };
    let c = start(&env, json!({}));
    let params = |p: Value| omprpc::client::parse_params(Some(&p.to_string())).unwrap();
    let kept = params(json!({"command": "echo omprpc-kept-marker"}));
    c.request("bash", kept.as_ref(), common::secs(60)).unwrap();
    let hidden = params(json!({"command": "echo omprpc-hidden-marker", "excludeFromContext": true}));
    let sent = c.request("bash", hidden.as_ref(), common::secs(60));
    if !pi_at_least("0.76.0") {
        // pi before 0.76 would ignore the parameter and show the output: refused, unsent.
        let e = sent.unwrap_err();
        assert!(e.message.contains("excludeFromContext") && e.message.contains(&pi::pi_version()), "{}", e.message);
    } else {
        sent.unwrap();
    }
    turn(&c, "hello");
    c.close().unwrap();
    let request = env.llm_requests()[0].to_string();
    assert!(request.contains("omprpc-kept-marker"), "a plain bash's output reaches the model: {request}");
    assert!(!request.contains("omprpc-hidden-marker"), "the excluded output reached the model");
}
