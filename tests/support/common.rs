//! Helpers the real-agent suites share (tests/real_pi.rs, tests/real_omp.rs, tests/windows_real_pi.rs, …).

use std::time::{Duration, Instant};

use omprpc::client::{deadline_after, parse_params};
use omprpc::Client;
use serde_json::Value;

/// Generous: a real agent is slow to start on a loaded 2-core machine.
pub fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

pub fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

/// Starts `agent` with `opts` plus `extra_opts` on top.
pub fn start_with(agent: &str, mut opts: Value, extra_opts: Value) -> Client {
    for (k, v) in extra_opts.as_object().unwrap() {
        opts[k] = v.clone();
    }
    let started = Instant::now();
    let c = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("starting {agent} failed: {e}"));
    // Shown with --nocapture or on failure: the agent's start-up dominates these tests.
    eprintln!("{agent} was ready after {:.1}s", started.elapsed().as_secs_f64());
    c
}

/// Pulls queued events until one matches, returning it and the events it skipped (in order);
/// the events after it stay queued.
pub fn wait_event_after(c: &Client, what: &str, matches: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
    let deadline = secs(120);
    let mut skipped = Vec::new();
    loop {
        let evs = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for {what}: {e}\nstderr: {}", c.stderr()));
        let v = parse(&evs[0]);
        if matches(&v) {
            return (skipped, v);
        }
        skipped.push(v);
    }
}

/// [`wait_event_after`] without the skipped events.
pub fn wait_event(c: &Client, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
    wait_event_after(c, what, matches).1
}

pub fn turn(c: &Client, message: &str) -> Value {
    let started = Instant::now();
    let t = c.prompt_and_wait(message, None, secs(120)).unwrap_or_else(|e| panic!("{message}: {e}\nstderr: {}", c.stderr()));
    eprintln!("turn {:?} took {:.1}s", message.chars().take(40).collect::<String>(), started.elapsed().as_secs_f64());
    serde_json::from_str(&t).unwrap()
}

/// The fake LLM's script for `queued_follow_up_runs_before_idle`: a slow answer, then the
/// follow-up's.
pub fn follow_up_script() -> Value {
    serde_json::json!([
        {"match": "slow", "replies": [{"text": "one two three four", "chunk_delay_ms": 250}]},
        {"match": "follow me", "replies": [{"text": "followed ok"}]}])
}

/// A follow_up queued while the model streams runs in the same run, after the answer: the
/// agent is busy until that run's terminal agent_end, and wait_for_idle waits for it.
pub fn queued_follow_up_runs_before_idle(c: &Client) {
    c.prompt("prompt", "slow please", None, secs(60)).unwrap();
    let deadline = secs(120);
    loop {
        let e = parse(&c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for the first text delta: {e}"))[0]);
        if e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta" {
            break;
        }
    }
    let p = parse_params(Some(r#"{"message":"follow me"}"#)).unwrap();
    c.request("follow_up", p.as_ref(), secs(60)).unwrap();
    c.wait_for_idle(secs(120)).unwrap_or_else(|e| panic!("wait_for_idle: {e}\nstderr: {}", c.stderr()));
    let evs: Vec<Value> = c.next_events(4096, Some(Instant::now())).unwrap().iter().map(|e| parse(e)).collect();
    let end = evs.iter().rev().find(|e| e["type"] == "agent_end").expect("the run's agent_end, queued before wait_for_idle returned");
    let last = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"][0]["text"], "followed ok", "{end}");
}

/// After a turn returned: the agent starts nothing more (no LLM request — `requests` counts
/// them — and nothing streaming), and the next prompt is accepted at once and ends `outcome`.
pub fn nothing_after(c: &Client, agent: &str, requests: impl Fn() -> usize, outcome: &str) {
    let before = requests();
    let state = parse(c.request("get_state", None, secs(60)).unwrap().as_bytes());
    assert_eq!(state["isStreaming"], false, "{agent} still streams after the turn returned: {state}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(requests(), before, "{agent} called the model after the turn returned");
    let next = turn(c, "say hello");
    assert_eq!((next["assistantText"].as_str(), next["outcome"].as_str()), (Some("pong"), Some(outcome)), "{:#}", next["outcome"]);
}

/// The turn's events of type `ty`.
pub fn events<'a>(turn: &'a Value, ty: &str) -> Vec<&'a Value> {
    turn["events"].as_array().unwrap().iter().filter(|e| e["type"] == ty).collect()
}

/// The turn's one event of type `ty`; more or none fails the test.
pub fn one<'a>(turn: &'a Value, ty: &str) -> &'a Value {
    let evs = events(turn, ty);
    assert_eq!(evs.len(), 1, "expected one {ty} event, got {}: {:#}", evs.len(), turn["events"]);
    evs[0]
}

/// The names of the tools a model request offered.
pub fn tool_names(request: &Value) -> Vec<String> {
    request["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

/// A tool result's text: its text blocks, joined.
pub fn result_text(v: &Value) -> String {
    v["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("")
}

/// Answers `call` (a host_tool_call of the host_add tests) as a host does: a progress update,
/// which must reach the agent and come back as the call's tool_execution_update, then the
/// result "5".
pub fn answer_host_add(c: &Client, call: &Value) {
    let id = call["id"].as_str().unwrap();
    c.host_tool_update(id, serde_json::json!("adding…")).unwrap();
    let update = wait_event(c, "tool_execution_update", |e| e["type"] == "tool_execution_update");
    assert_eq!(update["toolCallId"], call["toolCallId"]);
    assert_eq!(result_text(&update["partialResult"]), "adding…");
    c.host_tool_result(id, serde_json::json!("5"), false).unwrap();
}
