//! The agent's activity (client::lifecycle) against the fake agent, whose scenarios reproduce
//! the frames real omp 18.2.3 and pi 0.73.1 sent (src/bin/omprpc-fake-agent/agent/activity.rs);
//! tests/real_omp.rs and tests/real_pi.rs run the same cases on the real agents.

#[path = "support/fake.rs"]
mod fake;

use std::time::{Duration, Instant};

use fake::{secs, start_with, FAKE};
use omprpc::client::parse_params;
use omprpc::{Client, Status};
use serde_json::{json, Value};

fn agent(flavor: &str, extra: Value) -> Client {
    let mut opts = json!({"command": [FAKE, "--flavor", flavor], "flavor": flavor});
    for (k, v) in extra.as_object().unwrap() {
        opts[k] = v.clone();
    }
    start_with(opts)
}

fn parse(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

/// Every event queued now (without waiting).
fn drain(c: &Client) -> Vec<Value> {
    let mut all = Vec::new();
    while let Ok(evs) = c.next_events(1024, Some(Instant::now())) {
        all.extend(evs.iter().map(|e| parse(e)));
    }
    all
}

fn wait_for(c: &Client, what: impl Fn(&Value) -> bool) -> Value {
    let deadline = secs(10);
    loop {
        let evs = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for an event: {e}"));
        let v = parse(&evs[0]);
        if what(&v) {
            return v;
        }
    }
}

fn steer_then_abort(c: &Client) {
    c.prompt("prompt", "stream until abort", None, secs(10)).unwrap();
    wait_for(c, |e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta");
    let p = parse_params(Some(r#"{"message":"steer me now"}"#)).unwrap();
    c.request("steer", p.as_ref(), secs(10)).unwrap();
    c.request("abort", None, secs(10)).unwrap();
}

#[test]
fn omp_steer_then_abort_wait_for_idle_waits_for_the_run_nobody_prompted() {
    let c = agent("omp", json!({}));
    steer_then_abort(&c);
    // The abort's response came before omp started the steer's run by itself.
    c.wait_for_idle(secs(10)).unwrap();
    let evs = drain(&c);
    let last_end = evs.iter().rev().find(|e| e["type"] == "agent_end").expect("an agent_end");
    assert_eq!(last_end["messages"][0]["content"][0]["text"], "steered ok", "wait_for_idle returned before the steered run ended");
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(10)).unwrap()).unwrap();
    assert_eq!(state["isStreaming"], false);
    // Idle now by every account: at once.
    let t = Instant::now();
    c.wait_for_idle(secs(10)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn pi_steer_then_abort_parks_the_steer_and_the_agent_is_idle() {
    let c = agent("pi", json!({}));
    steer_then_abort(&c);
    c.wait_for_idle(secs(10)).unwrap_or_else(|e| panic!("pi is idle with a parked steer: {e}"));
    let state: Value = serde_json::from_str(&c.request("get_state", None, secs(10)).unwrap()).unwrap();
    assert_eq!(state["pendingMessageCount"], 1);
    assert!(drain(&c).iter().any(|e| e["type"] == "queue_update"));
    let counters: Value = serde_json::from_str(&c.counters()).unwrap();
    assert!(counters["activity_probes"].as_u64().unwrap() >= 2, "{counters}");
}

#[test]
fn compaction_handoff_completes_the_turn() {
    let c = agent("omp", json!({}));
    let turn: Value = serde_json::from_str(&c.prompt_and_wait("handoff", None, secs(10)).unwrap()).unwrap();
    let evs = turn["events"].as_array().unwrap();
    assert!(evs.iter().any(|e| e["type"] == "auto_compaction_start"));
    let end = evs.last().unwrap();
    assert_eq!(end["type"], "agent_end");
    assert_eq!(end["isTerminal"], false);
    assert_eq!(turn["assistantText"], "got it");
    c.wait_for_idle(secs(10)).unwrap();
}

#[test]
fn extension_command_without_a_run_completes_on_both_agents() {
    for flavor in ["pi", "omp"] {
        let c = agent(flavor, json!({}));
        let turn: Value = serde_json::from_str(&c.prompt_and_wait("/noop", None, secs(10)).unwrap_or_else(|e| panic!("{flavor}: {e}"))).unwrap();
        assert_eq!(turn["agentInvoked"], false, "{flavor}: {turn}");
        c.wait_for_idle(secs(10)).unwrap();
    }
}

#[test]
fn a_host_tool_working_longer_than_the_idle_timeout_does_not_fail_the_turn() {
    let c = start_with(json!({
        "turn_idle_timeout_ms": 1000,
        "host_tools": [{"name": "echo_host", "description": "Echo", "parameters": {"type": "object"}}]}));
    std::thread::scope(|s| {
        let waiter = s.spawn(|| c.prompt_and_wait("needs host tool", None, secs(10)));
        let call = wait_for(&c, |e| e["type"] == "host_tool_call");
        // The host works silently for longer than the idle timeout.
        std::thread::sleep(Duration::from_millis(1500));
        c.host_tool_result(call["id"].as_str().unwrap(), json!({"content": [{"type": "text", "text": "done"}]}), false).unwrap();
        waiter.join().unwrap().unwrap_or_else(|e| panic!("the open host call should stop the idle clock: {e}"));
    });
    // Silence with nothing open still fails.
    let e = c.prompt_and_wait("hang", None, secs(10)).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    assert!(e.message.contains("turn_idle_timeout_ms"), "{e}");
}

#[test]
fn a_hanging_run_is_busy_by_the_agents_account() {
    let c = start_with(json!({}));
    c.prompt("prompt", "hang", None, secs(10)).unwrap();
    let e = c.wait_for_idle(Some(Instant::now() + Duration::from_millis(1200))).unwrap_err();
    assert_eq!(e.status, Status::Timeout, "{e}");
}

#[test]
fn probes_can_be_turned_off() {
    let c = agent("omp", json!({"activity_probe_ms": -1}));
    let e = c.prompt_and_wait("handoff", None, Some(Instant::now() + Duration::from_millis(1000))).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    let counters: Value = serde_json::from_str(&c.counters()).unwrap();
    assert_eq!(counters["activity_probes"], 0);
}

#[test]
fn waits_in_short_slices_lose_no_probe_answer() {
    // Node's waitForIdle waits in slices: a slice may end while its probe is in flight. The
    // answer is kept for the next slice; nothing is reported as a late response. The agent
    // answers get_state 50 ms late, so a zero-length slice ends with its probe in flight (an
    // agent that answers at once may settle it within the first slice).
    let c = agent("pi", json!({"activity_probe_ms": 0, "env": {"OMPRPC_FAKE_STATE_DELAY_MS": "50"}}));
    steer_then_abort(&c);
    let until = Instant::now() + Duration::from_secs(10);
    let mut slices = 0;
    loop {
        slices += 1;
        match c.wait_for_idle(Some(Instant::now())) {
            Ok(()) => break,
            Err(e) if e.status == Status::Timeout && Instant::now() < until => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("after {slices} slices: {e}"),
        }
    }
    assert!(slices > 1, "a zero-length slice cannot have waited for a probe's answer");
    assert_eq!(c.protocol_errors(), "[]");
}

#[test]
fn a_queued_follow_up_runs_before_the_agent_is_idle() {
    for flavor in ["omp", "pi"] {
        let c = agent(flavor, json!({}));
        c.prompt("prompt", "stream until abort", None, secs(10)).unwrap();
        wait_for(&c, |e| e["type"] == "message_update" && e["assistantMessageEvent"]["type"] == "text_delta");
        let p = parse_params(Some(r#"{"message":"follow me"}"#)).unwrap();
        c.request("follow_up", p.as_ref(), secs(10)).unwrap();
        c.wait_for_idle(secs(10)).unwrap();
        let evs = drain(&c);
        let end = evs.iter().rev().find(|e| e["type"] == "agent_end").unwrap_or_else(|| panic!("{flavor}: no agent_end before idle"));
        assert_eq!(end["messages"][1]["content"][0]["text"], "followed ok", "{flavor}");
        assert!(evs.iter().any(|e| e["type"] == "message_end" && e["message"]["content"][0]["text"] == "follow me"), "{flavor}");
    }
}
