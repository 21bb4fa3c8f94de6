//! The real pi on Windows (issue 25): pi 1.6.0 installed for win32 from npm, run by Node 22's
//! `node.exe`, started through the `pi.cmd` shim npm writes, driven by the Rust client — a text
//! turn, a host tool bridged over loopback TCP, and a close that leaves no process behind.
//! Built only for Windows; `make windows-real-pi` runs it under Wine
//! (tests/windows/real-pi/run.sh), which installs pi and Node once, starts the fake LLM as a
//! Linux program on 127.0.0.1 and says where everything is:
//!
//! * `OMPRPC_WIN_PI_DIR`: the npm prefix holding `pi.cmd` (written by npm's own cmd-shim) and
//!   `node_modules\@earendil-works\pi-coding-agent`;
//! * `OMPRPC_WIN_NODE_DIR`: the directory of `node.exe`, put on the agent's `PATH` (a user's
//!   Node install): the shim finds `node` there;
//! * `OMPRPC_FAKE_LLM_PORT`, `OMPRPC_FAKE_LLM_LOG`: the fake LLM (script:
//!   tests/windows/real-pi/llm-script.json) and the file it logs each request body to;
//! * `OMPRPC_WINE_NODE_PRELOAD`: under Wine only, a script Node loads first
//!   (tests/windows/real-pi/wine-keepalive.cjs): Wine 8.0 refuses the keep-alive socket options
//!   pi's HTTP client sets, and every model call would fail (docs/windows.md says how).
//!
//! What pi does under Wine: tests/support/PI-NOTES.md ("pi 1.6.0 on Windows, under Wine").
#![cfg(windows)]

#[path = "support/common.rs"]
#[allow(dead_code)] // shared with the real-agent suites; this one uses a few
mod common;
#[path = "support/fake.rs"]
#[allow(dead_code)] // the fake-agent suites' helpers; this one uses `under_wine`
mod fake;

use std::os::windows::io::RawHandle;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{answer_host_add, one, parse, result_text, secs, tool_names, turn, wait_event};
use omprpc::protocol::version::PI_NEWEST;
use omprpc::Client;
use serde_json::{json, Value};

#[link(name = "kernel32")]
extern "system" {
    fn CreateToolhelp32Snapshot(flags: u32, pid: u32) -> RawHandle;
    fn Process32FirstW(snapshot: RawHandle, entry: *mut ProcessEntry) -> i32;
    fn Process32NextW(snapshot: RawHandle, entry: *mut ProcessEntry) -> i32;
    fn OpenProcess(access: u32, inherit: i32, pid: u32) -> RawHandle;
    fn WaitForSingleObject(handle: RawHandle, milliseconds: u32) -> u32;
    fn CloseHandle(handle: RawHandle) -> i32;
    fn GetCurrentProcessId() -> u32;
}

/// PROCESSENTRY32W.
#[repr(C)]
struct ProcessEntry {
    size: u32,
    usage: u32,
    pid: u32,
    default_heap: usize,
    module: u32,
    threads: u32,
    parent: u32,
    priority: i32,
    flags: u32,
    exe: [u16; 260],
}

/// One process of the system's process list.
#[derive(Debug)]
struct Proc {
    pid: u32,
    parent: u32,
    exe: String,
}

/// Every process now running (a Toolhelp snapshot).
fn processes() -> Vec<Proc> {
    const TH32CS_SNAPPROCESS: u32 = 0x2;
    // SAFETY: a snapshot handle or INVALID_HANDLE_VALUE (checked); closed below.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    assert!(snap as isize != -1, "CreateToolhelp32Snapshot failed");
    let mut entry = ProcessEntry { size: std::mem::size_of::<ProcessEntry>() as u32, usage: 0, pid: 0, default_heap: 0, module: 0, threads: 0, parent: 0, priority: 0, flags: 0, exe: [0; 260] };
    let mut list = Vec::new();
    // SAFETY: the snapshot above and an entry whose `size` says what it is.
    let mut more = unsafe { Process32FirstW(snap, &mut entry) } != 0;
    while more {
        let len = entry.exe.iter().position(|&c| c == 0).unwrap_or(entry.exe.len());
        list.push(Proc { pid: entry.pid, parent: entry.parent, exe: String::from_utf16_lossy(&entry.exe[..len]) });
        // SAFETY: as above.
        more = unsafe { Process32NextW(snap, &mut entry) } != 0;
    }
    // SAFETY: the snapshot handle, closed once.
    unsafe { CloseHandle(snap) };
    list
}

/// A process held open by its handle (so its id cannot be reused while we look at it).
struct Held {
    proc: Proc,
    handle: RawHandle,
}

impl Held {
    /// None when the process is already gone (nothing left to check).
    fn open(proc: Proc) -> Option<Held> {
        const SYNCHRONIZE: u32 = 0x0010_0000;
        // SAFETY: a new handle or null (checked); closed on drop.
        let handle = unsafe { OpenProcess(SYNCHRONIZE, 0, proc.pid) };
        (!handle.is_null()).then_some(Held { proc, handle })
    }

    fn runs(&self) -> bool {
        // SAFETY: the handle this holds. WAIT_TIMEOUT (0x102): not signalled, still running.
        unsafe { WaitForSingleObject(self.handle, 0) == 0x102 }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: the handle opened in `open`, closed once.
        unsafe { CloseHandle(self.handle) };
    }
}

/// The agent and every process below it, held open.
fn tree(root: u32) -> Vec<Held> {
    let all = processes();
    let mut ids = vec![root];
    let mut i = 0;
    while i < ids.len() {
        let parent = ids[i];
        ids.extend(all.iter().filter(|p| p.parent == parent && p.pid != parent).map(|p| p.pid));
        i += 1;
    }
    all.into_iter().filter(|p| ids.contains(&p.pid)).filter_map(Held::open).collect()
}

fn var(name: &str) -> String {
    std::env::var(name).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| panic!("{name} is not set: run this suite with `make windows-real-pi`"))
}

/// One test's private directories (HOME, pi's agent dir with the provider, a working dir).
struct Env {
    root: PathBuf,
    home: PathBuf,
    agent_dir: PathBuf,
    work: PathBuf,
}

impl Env {
    fn new(test: &str) -> Env {
        let root = std::env::temp_dir().join(format!("omprpc-windows-real-pi-{test}-{}", std::process::id()));
        let (home, agent_dir, work) = (root.join("home"), root.join("agent"), root.join("work"));
        for d in [&home, &agent_dir, &work] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
        }
        let url = format!("http://127.0.0.1:{}/v1", var("OMPRPC_FAKE_LLM_PORT"));
        let models = json!({"providers": {"fake": {
            "baseUrl": url, "api": "openai-completions", "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "fake-model", "name": "Fake Model", "reasoning": false, "input": ["text"],
                        "contextWindow": 128000, "maxTokens": 4096}]}}});
        std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
        Env { root, home, agent_dir, work }
    }

    /// Start options as a Windows host would write them: `pi` by name, found on `PATH` (the
    /// npm prefix, then Node's directory, then the system's), the default environment
    /// allow-list with a private home and agent dir on top.
    fn options(&self, extra: Value) -> Value {
        let system_path = std::env::var("PATH").unwrap_or_default();
        let path = format!("{};{};{system_path}", var("OMPRPC_WIN_PI_DIR"), var("OMPRPC_WIN_NODE_DIR"));
        let mut env = json!({
            "HOME": self.home, "USERPROFILE": self.home, "PI_CODING_AGENT_DIR": self.agent_dir,
            "PI_OFFLINE": "1", "PATH": path,
        });
        if fake::under_wine() {
            // Quoted for a path with spaces; inside quotes NODE_OPTIONS takes `\` as an escape,
            // so the path goes with `/`, which Node takes on Windows too.
            let preload = var("OMPRPC_WINE_NODE_PRELOAD").replace('\\', "/");
            env["NODE_OPTIONS"] = json!(format!("--require \"{preload}\""));
        }
        let mut opts = json!({
            "executable": "pi", "model": "fake/fake-model", "no_session": true, "extra_args": ["--offline"],
            "cwd": self.work, "env": env,
            // pi under Wine takes 2–3 s to start on an idle 2-core machine, far longer on a busy one.
            "startup_timeout_ms": 120000, "request_timeout_ms": 60000, "stop_grace_ms": 5000,
        });
        for (k, v) in extra.as_object().unwrap() {
            opts[k] = v.clone();
        }
        opts
    }

    fn start(&self, extra: Value) -> Client {
        common::start_with("pi", self.options(extra), json!({}))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The request bodies the fake LLM logged whose last user message says `text`.
fn llm_requests_for(text: &str) -> Vec<Value> {
    let log = std::fs::read_to_string(var("OMPRPC_FAKE_LLM_LOG")).unwrap_or_default();
    log.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse(l.as_bytes()))
        .filter(|r| {
            let users: Vec<&Value> = r["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "user").collect();
            users.last().is_some_and(|m| m["content"].to_string().contains(text))
        })
        .collect()
}

/// The agent is pi on `node.exe`, started by this process directly: the library read npm's
/// `pi.cmd` and ran what it names, with no `cmd.exe` in between.
fn agent_process(c: &Client) -> Proc {
    let info = parse(c.info().as_bytes());
    assert_eq!(info["agentVersion"], PI_NEWEST.to_string(), "the version probe, through the shim: {info}");
    assert_eq!((info["flavor"].as_str(), info["argv"][0].as_str()), (Some("pi"), Some("pi")), "{info}");
    let pid = info["pid"].as_u64().unwrap() as u32;
    let agent = processes().into_iter().find(|p| p.pid == pid).unwrap_or_else(|| panic!("the agent (pid {pid}) is not running"));
    assert!(agent.exe.eq_ignore_ascii_case("node.exe"), "the agent runs {agent:?}, not node.exe");
    // SAFETY: no arguments; always succeeds.
    let me = unsafe { GetCurrentProcessId() };
    assert_eq!(agent.parent, me, "the agent was not started by this process: {agent:?}");
    agent
}

/// Closes the client and checks that the agent and everything below it (`held`, taken
/// before) are gone, whatever the agent left running.
fn close_leaves_nothing(c: &Client, held: &[Held]) {
    let t0 = Instant::now();
    c.close().unwrap();
    let took = t0.elapsed();
    let left: Vec<&Proc> = held.iter().filter(|h| h.runs()).map(|h| &h.proc).collect();
    assert!(left.is_empty(), "still running after close: {left:?}");
    assert!(took < Duration::from_secs(30), "close took {took:?}");
    eprintln!("close took {:.1}s and ended {:?}", took.as_secs_f64(), held.iter().map(|h| (h.proc.pid, &h.proc.exe)).collect::<Vec<_>>());
}

/// An extension that starts a long-lived child process and lets it be (as one starting a dev
/// server or a language server might): pi exits at the end of its input and leaves it behind.
/// Detached, because Node (libuv) puts every child that is not detached in a kill-on-close job
/// of its own, which ends it with pi; a detached one outlives pi (measured under Wine, without
/// the library's job), so here only the library's job can end it.
const CHILD_EXTENSION: &str = r#"
import { spawn } from "node:child_process";
export default function () {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore", detached: true });
  child.unref();
}
"#;

/// Start through `pi.cmd`, one text turn that ends at pi 1.x's `agent_settled`, and a close that
/// ends node.exe and the child an extension of it left running.
#[test]
fn a_text_turn_on_pi_started_through_its_npm_shim() {
    let env = Env::new("text");
    let ext = env.root.join("child.mjs");
    std::fs::write(&ext, CHILD_EXTENSION).unwrap();
    let c = env.start(json!({"extensions": [ext]}));
    let agent = agent_process(&c);
    // The extension's child: a node.exe below the agent, in its job. (Under Wine the tree also
    // holds the hidden console's conhost.exe, which Wine starts from inside the agent.)
    let child_of_agent = |held: &[Held]| held.iter().any(|h| h.proc.pid != agent.pid && h.proc.parent == agent.pid && h.proc.exe.eq_ignore_ascii_case("node.exe"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let held = tree(agent.pid);
        if child_of_agent(&held) || Instant::now() > deadline {
            break held;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(child_of_agent(&held), "no node.exe child of the agent: {:?}", held.iter().map(|h| &h.proc).collect::<Vec<_>>());

    let t = turn(&c, "say hello");
    assert_eq!(t["assistantText"], "Hello from the fake model", "{t:#}");
    assert_eq!(t["agentInvoked"], true);
    assert_eq!(t["assistantMessage"]["stopReason"], "stop");
    let deltas: Vec<&str> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hello ", "from ", "the ", "fake ", "model"]);
    // pi 1.x ends a prompt with agent_settled, as on Linux.
    let types: Vec<&str> = t["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!((types.first(), types.last()), (Some(&"agent_start"), Some(&"agent_settled")), "{types:?}");
    assert_eq!(t["outcome"], "agent_settled");
    let reqs = llm_requests_for("say hello");
    assert_eq!(reqs.len(), 1, "{reqs:#?}");
    assert_eq!((reqs[0]["model"].as_str(), reqs[0]["stream"].as_bool()), (Some("fake-model"), Some(true)));
    assert!(reqs[0]["messages"][0]["content"].as_str().unwrap_or_default().contains("running inside pi"), "{:#}", reqs[0]["messages"][0]);
    // pi 1.6.0's default tools on Windows, as on Linux.
    assert_eq!(tool_names(&reqs[0]), ["read", "bash", "edit", "write"]);
    let state = parse(c.request("get_state", None, secs(60)).unwrap().as_bytes());
    assert_eq!((state["model"]["id"].as_str(), state["isStreaming"].as_bool()), (Some("fake-model"), Some(false)), "{state}");

    close_leaves_nothing(&c, &held);
}

/// A host tool bridged into pi through the library's extension, over loopback TCP with the
/// token (the default on Windows): the model's call reaches the host, the host's answer
/// reaches the model.
#[test]
fn a_host_tool_bridged_over_tcp() {
    let env = Env::new("bridge");
    let tools = json!([{"name": "host_add", "description": "Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    let c = env.start(json!({"host_tools": tools}));
    let agent = agent_process(&c);
    let info = parse(c.info().as_bytes());
    assert_eq!(info["bridgeLoaded"], true, "{info}");
    assert_eq!(info["bridgedTools"], json!(["host_add"]));
    assert_eq!(info["bridgeEndpoint"]["transport"], "tcp", "{info}");
    assert!(info["bridgeEndpoint"]["listen"].as_str().is_some_and(|a| a.starts_with("127.0.0.1:")), "{info}");

    std::thread::scope(|s| {
        let t = s.spawn(|| c.prompt_and_wait("add numbers", None, secs(120)));
        let call = wait_event(&c, "host_tool_call", |e| e["type"] == "host_tool_call");
        assert_eq!((call["toolName"].as_str(), call["bridged"].as_bool()), (Some("host_add"), Some(true)), "{call}");
        assert_eq!(call["arguments"], json!({"a": 2, "b": 3}));
        answer_host_add(&c, &call);
        let turn: Value = serde_json::from_str(&t.join().unwrap().unwrap_or_else(|e| panic!("bridged turn: {e}\nstderr: {}", c.stderr()))).unwrap();
        let end = one(&turn, "tool_execution_end");
        assert_eq!((end["toolName"].as_str(), end["isError"].as_bool()), (Some("host_add"), Some(false)));
        assert_eq!(result_text(&end["result"]), "5");
        assert_eq!(turn["assistantText"], "sum is 5");
        assert_eq!(turn["outcome"], "agent_settled");
    });
    // pi offered the bridged tool next to its own, and sent the host's answer back as the tool result.
    let reqs = llm_requests_for("add numbers");
    assert_eq!(reqs.len(), 2, "{reqs:#?}");
    assert!(tool_names(&reqs[0]).contains(&"host_add".to_string()), "{:?}", tool_names(&reqs[0]));
    let last = reqs[1]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["role"].as_str(), last["content"].as_str()), (Some("tool"), Some("5")), "{last}");

    let held = tree(agent.pid);
    close_leaves_nothing(&c, &held);
}
