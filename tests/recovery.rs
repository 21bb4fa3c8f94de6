//! Failed LLM calls and what the agents do about them (issue 21), through the public Rust API
//! against the fake agent, as pi 0.73.1, pi 1.6.0 and omp 18.2.3 — whose recovery scenarios
//! reproduce the frames the real agents sent (src/bin/omprpc-fake-agent/agent/recovery.rs; the
//! drift tests at the end hold them to the committed real-pi recordings).
//!
//! For every scenario and agent: `prompt_and_wait` returns after the agent's last run with
//! the turn that says what happened (`outcome`, `attempts`, `settled`, `failedAttempts`,
//! `compactions`, `assistantText`), `wait_for_idle` agrees, the `prompt_complete` event says the
//! same with nobody waiting, `collect_events` ends at the same frame, a prompt right after is
//! accepted and the agent starts nothing after the end. An abort in a retry's delay (from
//! another thread, while prompt_and_wait waits) returns at once as `aborted`.

use std::path::Path;
use std::time::{Duration, Instant};

use omprpc::client::deadline_after;
use omprpc::Client;
use serde_json::{json, Value};

const FAKE: &str = env!("CARGO_BIN_EXE_omprpc-fake-agent");

fn secs(n: u64) -> Option<Instant> {
    deadline_after(Some(Duration::from_secs(n)))
}

fn parse(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(b)))
}

/// The agents the fake plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    /// pi 0.73.1: ends a prompt at an `agent_end` (retries announced after it).
    Pi073,
    /// pi 1.6.0: announces settling (`agent_settled`), dispositions.
    Pi160,
    /// omp 18.2.3: holds a failed run's `agent_end` back while it retries or compacts.
    Omp,
}

impl Agent {
    fn flavor(self) -> &'static str {
        match self {
            Agent::Omp => "omp",
            _ => "pi",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Agent::Pi073 => "0.73.1",
            Agent::Pi160 => "1.6.0",
            Agent::Omp => "18.2.3",
        }
    }

    fn settles(self) -> bool {
        self == Agent::Pi160
    }

    /// The outcome of a turn the agent ended by itself.
    fn outcome(self) -> &'static str {
        if self.settles() {
            "agent_settled"
        } else {
            "agent_end"
        }
    }

    /// The agent as `executable`: the library probes its version (`--version`) and knows from
    /// it whether it announces settling, as with the real agents.
    fn start(self) -> Client {
        let opts = json!({
            "executable": FAKE,
            "env": {"OMPRPC_FAKE_FLAVOR": self.flavor(), "OMPRPC_FAKE_VERSION": self.version()},
            "prompt_complete_events": true,
            "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500,
        });
        let c = Client::start(&opts.to_string()).unwrap_or_else(|e| panic!("{self:?}: start failed: {e}"));
        let info = parse(c.info().as_bytes());
        assert_eq!((info["flavor"].as_str(), info["agentVersion"].as_str()), (Some(self.flavor()), Some(self.version())), "{info}");
        c
    }
}

/// What a scenario's turn must say, per agent.
struct Expect {
    message: &'static str,
    outcome: &'static str,
    attempts: u64,
    /// Each failed attempt: (attempt, then, delayMs).
    failed: Vec<(u64, &'static str, Option<u64>)>,
    /// In every failed attempt's error.
    error: &'static str,
    compactions: Value,
    text: Option<&'static str>,
    /// The type of the frame the agent's work ends with.
    last: &'static str,
    /// The agent's own delays inside the turn: it cannot end sooner.
    min: Duration,
}

fn expect(agent: Agent, scenario: &str) -> Expect {
    let settled_or_end = if agent.settles() { "agent_settled" } else { "agent_end" };
    let e = |message, attempts, failed, error, text, last, min_ms| Expect {
        message,
        outcome: agent.outcome(),
        attempts,
        failed,
        error,
        compactions: json!([]),
        text,
        last,
        min: Duration::from_millis(min_ms),
    };
    match scenario {
        "retry once" => e("retry once 300", 2, vec![(1, "retry", Some(300))], "server had an error", Some("recovered"), settled_or_end, 300),
        "rate limited" => e("rate limited 300", 2, vec![(1, "retry", Some(300))], "Rate limit reached", Some("recovered"), settled_or_end, 300),
        "retries exhausted" => {
            // pi 0.73.1 says it gave up after the last failed run's agent_end.
            let last = match agent {
                Agent::Pi073 => "auto_retry_end",
                Agent::Pi160 => "agent_settled",
                Agent::Omp => "agent_end",
            };
            let failed = vec![(1, "retry", Some(100)), (2, "retry", Some(200)), (3, "gave_up", None)];
            e("retries exhausted", 3, failed, "server had an error", None, last, 300)
        }
        "overflow" => match agent {
            Agent::Pi073 => Expect {
                compactions: json!([{"reason": "overflow", "aborted": false, "willRetry": true, "errorMessage": null}]),
                ..e("overflow 300", 2, vec![(1, "compaction", None)], "maximum context length", Some("recovered"), "agent_end", 300)
            },
            // pi 1.x gives up on an overflow and settles.
            Agent::Pi160 => e("overflow 300", 1, vec![(1, "none", None)], "maximum context length", None, "agent_settled", 0),
            Agent::Omp => Expect {
                compactions: json!([
                    {"reason": "overflow", "aborted": false, "willRetry": false, "errorMessage": "Auto-shake found nothing eligible to drop; trying the next preferred compaction method."},
                    {"reason": "overflow", "aborted": false, "willRetry": true, "errorMessage": null},
                ]),
                ..e("overflow 300", 2, vec![(1, "compaction", None)], "maximum context length", Some("recovered"), "agent_end", 300)
            },
        },
        "failed call" => e("failed call", 1, vec![(1, "none", None)], "Invalid request: bad parameter", None, settled_or_end, 0),
        other => panic!("no scenario {other}"),
    }
}

/// Checks a turn against what the scenario must say.
fn check_turn(agent: Agent, x: &Expect, t: &Value) {
    let what = format!("{agent:?} {:?}", x.message);
    assert_eq!(t["outcome"], x.outcome, "{what}: outcome\n{t:#}");
    assert_eq!(t["attempts"], x.attempts, "{what}: attempts");
    assert_eq!(t["settled"], agent.settles(), "{what}: settled");
    let failed = t["failedAttempts"].as_array().unwrap_or_else(|| panic!("{what}: failedAttempts {t}"));
    let got: Vec<(u64, &str, Option<u64>)> =
        failed.iter().map(|f| (f["attempt"].as_u64().unwrap_or(0), f["then"].as_str().unwrap_or("?"), f["delayMs"].as_u64())).collect();
    assert_eq!(got, x.failed, "{what}: failedAttempts {failed:?}");
    for f in failed {
        let error = f["error"].as_str().unwrap_or_else(|| panic!("{what}: no error in {f}"));
        assert!(error.contains(x.error), "{what}: error {error:?} lacks {:?}", x.error);
    }
    assert_eq!(t["compactions"], x.compactions, "{what}: compactions");
    assert_eq!(t["assistantText"].as_str(), x.text, "{what}: assistantText");
    let stop = if x.text.is_some() { "stop" } else { "error" };
    assert_eq!(t["assistantMessage"]["stopReason"], stop, "{what}: the last assistant message");
    assert_eq!(last_agent_frame(t["events"].as_array().unwrap()), x.last, "{what}: the turn's last event");
}

/// The type of the last frame from the agent among `events` (the library's own events skipped).
fn last_agent_frame(events: &[Value]) -> String {
    events.iter().rev().find(|e| e["omprpc"] != true).map(|e| e["type"].as_str().unwrap_or("").to_string()).unwrap_or_default()
}

/// Every event queued within `wait`.
fn drain(c: &Client, wait: Duration) -> Vec<Value> {
    let until = Instant::now() + wait;
    let mut all = Vec::new();
    while let Ok(evs) = c.next_events(1024, Some(until)) {
        all.extend(evs.iter().map(|e| parse(e)));
    }
    all
}

/// Events until the first that `what` accepts (that one included).
fn events_until(c: &Client, mut what: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let deadline = secs(10);
    let mut seen = Vec::new();
    loop {
        let evs = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for an event (seen {:?}): {e}", types(&seen)));
        let v = parse(&evs[0]);
        let done = what(&v);
        seen.push(v);
        if done {
            return seen;
        }
    }
}

fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["type"].as_str().unwrap_or("").to_string()).filter(|t| t != "message_update").collect()
}

fn completion_of(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e| e["type"] == "prompt_complete" && e["requestId"] == id
}

/// After the work of prompt `id` ended (its `prompt_complete` is read from the queue first,
/// when given): the agent starts nothing by itself, and it takes the next prompt.
fn nothing_follows_and_the_next_prompt_is_accepted(agent: Agent, c: &Client, id: Option<&str>) {
    if let Some(id) = id {
        events_until(c, completion_of(id));
    }
    let later = drain(c, Duration::from_millis(400));
    assert!(!later.iter().any(|e| e["type"] == "agent_start"), "{agent:?}: the agent went on after the end: {:?}", types(&later));
    // At once when idle: the agent's own frames said so, no probe had to ask.
    let probes = || parse(c.counters().as_bytes())["activity_probes"].as_u64().unwrap();
    let before = probes();
    c.wait_for_idle(secs(10)).unwrap_or_else(|e| panic!("{agent:?}: wait_for_idle after the end: {e}"));
    assert_eq!(probes(), before, "{agent:?}: wait_for_idle had to ask the agent whether it is idle");
    let t = parse(c.prompt_and_wait("say hello", None, secs(10)).unwrap_or_else(|e| panic!("{agent:?}: the next prompt: {e}")).as_bytes());
    assert_eq!((t["assistantText"].as_str(), t["outcome"].as_str()), (Some("pong"), Some(agent.outcome())), "{agent:?}: {t}");
    events_until(c, completion_of(t["requestId"].as_str().unwrap()));
}

/// Every way of waiting, for one scenario and agent.
fn scenario(agent: Agent, name: &str) {
    let x = expect(agent, name);
    let c = agent.start();

    // prompt_and_wait returns after the agent's last run, with the turn that says so.
    let t0 = Instant::now();
    let t = parse(c.prompt_and_wait(x.message, None, secs(10)).unwrap_or_else(|e| panic!("{agent:?} {name}: {e}")).as_bytes());
    assert!(t0.elapsed() >= x.min, "{agent:?} {name}: returned after {:?}, before the agent's own delays", t0.elapsed());
    check_turn(agent, &x, &t);
    // Nothing after the end; the next prompt is accepted.
    nothing_follows_and_the_next_prompt_is_accepted(agent, &c, t["requestId"].as_str());

    // prompt_complete with nobody waiting: the same outcome, after the same last frame.
    let id = c.prompt("prompt", x.message, None, secs(10)).unwrap();
    let seen = events_until(&c, completion_of(&id));
    let done = seen.last().unwrap();
    assert_eq!((done["outcome"].as_str(), done["agentInvoked"].as_bool()), (Some(x.outcome), Some(true)), "{agent:?} {name}: {done}");
    assert_eq!(last_agent_frame(&seen[..seen.len() - 1]), x.last, "{agent:?} {name}: prompt_complete came after {:?}", types(&seen));
    nothing_follows_and_the_next_prompt_is_accepted(agent, &c, None);

    // wait_for_idle agrees: it returns once the agent's work ended, not at the failed run.
    let t0 = Instant::now();
    c.prompt("prompt", x.message, None, secs(10)).unwrap();
    c.wait_for_idle(secs(10)).unwrap_or_else(|e| panic!("{agent:?} {name}: wait_for_idle: {e}"));
    assert!(t0.elapsed() >= x.min, "{agent:?} {name}: idle after {:?}", t0.elapsed());
    let seen = drain(&c, Duration::from_millis(100));
    assert_eq!(last_agent_frame(&seen), x.last, "{agent:?} {name}: wait_for_idle returned before {:?}", types(&seen));
    let starts = seen.iter().filter(|e| e["type"] == "agent_start").count() as u64;
    assert_eq!(starts, x.attempts, "{agent:?} {name}: runs {:?}", types(&seen));
    nothing_follows_and_the_next_prompt_is_accepted(agent, &c, None);

    // collect_events, started before the prompt, ends at the same frame.
    std::thread::scope(|s| {
        let collector = s.spawn(|| c.collect_events(secs(10)));
        wait_for_operation(&c, "collect_events");
        let id = c.prompt("prompt", x.message, None, secs(10)).unwrap();
        let events = parse(collector.join().unwrap().unwrap_or_else(|e| panic!("{agent:?} {name}: collect_events: {e}")).as_bytes());
        let events = events.as_array().unwrap();
        assert_eq!(last_agent_frame(events), x.last, "{agent:?} {name}: collect_events ended after {:?}", types(events));
        let starts = events.iter().filter(|e| e["type"] == "agent_start").count() as u64;
        assert_eq!(starts, x.attempts, "{agent:?} {name}: runs {:?}", types(events));
        nothing_follows_and_the_next_prompt_is_accepted(agent, &c, Some(&id));
    });
    c.close().unwrap();
}

fn wait_for_operation(c: &Client, op: &str) {
    let until = Instant::now() + Duration::from_secs(5);
    while c.active_operation() != Some(op) {
        assert!(Instant::now() < until, "{op} never started");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The frame that says the agent is in a retry's delay.
fn retry_announced(e: &Value) -> bool {
    e["type"] == "auto_retry_start"
}

/// "retry until abort" (a 60 s delay), cancelled with `command` in the delay by another
/// thread while prompt_and_wait, nobody, or collect_events waits.
fn abort_in_the_retry_delay(agent: Agent, command: &str) {
    let c = agent.start();
    let cancel = |c: &Client| {
        events_until(c, retry_announced);
        let t0 = Instant::now();
        c.request(command, None, secs(10)).unwrap_or_else(|e| panic!("{agent:?}: {command}: {e}"));
        t0
    };
    // The agent's own last frame of the cancelled work.
    let last = match agent {
        Agent::Pi073 => "auto_retry_end",
        Agent::Pi160 => "agent_settled",
        Agent::Omp => "agent_end",
    };
    let what = format!("{agent:?} {command}");

    let t = std::thread::scope(|s| {
        let waiter = s.spawn(|| c.prompt_and_wait("retry until abort", None, secs(30)));
        let t0 = cancel(&c);
        let t = waiter.join().unwrap().unwrap_or_else(|e| panic!("{what}: prompt_and_wait: {e}"));
        assert!(t0.elapsed() < Duration::from_secs(2), "{what}: prompt_and_wait returned {:?} after the abort", t0.elapsed());
        parse(t.as_bytes())
    });
    assert_eq!(t["outcome"], "aborted", "{what}: {t:#}");
    assert_eq!((t["attempts"].as_u64(), t["settled"].as_bool()), (Some(1), Some(agent.settles())), "{what}");
    let failed = &t["failedAttempts"];
    assert_eq!((failed[0]["attempt"].as_u64(), failed[0]["then"].as_str(), failed[0]["delayMs"].as_u64()), (Some(1), Some("cancelled"), Some(60000)), "{what}: {failed}");
    assert_eq!(failed.as_array().map(Vec::len), Some(1), "{what}: {failed}");
    assert!(failed[0]["error"].as_str().unwrap_or("").contains("server had an error"), "{what}: {failed}");
    let events = t["events"].as_array().unwrap();
    assert_eq!(last_agent_frame(events), last, "{what}: {:?}", types(events));
    let end = events.iter().rev().find(|e| e["type"] == "auto_retry_end").expect("auto_retry_end");
    assert_eq!((end["success"].as_bool(), end["finalError"].as_str()), (Some(false), Some("Retry cancelled")), "{what}");
    nothing_follows_and_the_next_prompt_is_accepted(agent, &c, t["requestId"].as_str());

    // Nobody waiting: prompt_complete says aborted at once.
    let id = c.prompt("prompt", "retry until abort", None, secs(10)).unwrap();
    let t0 = cancel(&c);
    let seen = events_until(&c, completion_of(&id));
    assert!(t0.elapsed() < Duration::from_secs(2), "{what}: prompt_complete {:?} after the abort", t0.elapsed());
    assert_eq!(seen.last().unwrap()["outcome"], "aborted", "{what}: {:?}", seen.last());
    assert_eq!(last_agent_frame(&seen[..seen.len() - 1]), last, "{what}: {:?}", types(&seen));
    nothing_follows_and_the_next_prompt_is_accepted(agent, &c, None);

    // wait_for_idle and collect_events return at once too.
    for op in ["wait_for_idle", "collect_events"] {
        std::thread::scope(|s| {
            // collect_events from before the prompt; wait_for_idle once the agent is busy (it
            // returns at once while idle).
            let mut id = None;
            if op == "wait_for_idle" {
                id = Some(c.prompt("prompt", "retry until abort", None, secs(10)).unwrap());
            }
            let waiter = s.spawn(|| match op {
                "collect_events" => c.collect_events(secs(30)).map(Some),
                _ => c.wait_for_idle(secs(30)).map(|()| None),
            });
            wait_for_operation(&c, op);
            let id = id.unwrap_or_else(|| c.prompt("prompt", "retry until abort", None, secs(10)).unwrap());
            let t0 = cancel(&c);
            let got = waiter.join().unwrap().unwrap_or_else(|e| panic!("{what}: {op}: {e}"));
            assert!(t0.elapsed() < Duration::from_secs(2), "{what}: {op} returned {:?} after the abort", t0.elapsed());
            if let Some(events) = got {
                let events = parse(events.as_bytes());
                assert_eq!(last_agent_frame(events.as_array().unwrap()), last, "{what}: {op}");
            }
            nothing_follows_and_the_next_prompt_is_accepted(agent, &c, Some(&id));
        });
    }
    c.close().unwrap();
}

/// One test per agent for a scenario: `<scenario>::pi_0_73_1`, `::pi_1_6_0`, `::omp_18_2_3`
/// (optional attributes per agent, in that order).
macro_rules! per_agent {
    ($name:ident, |$agent:ident| $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn run($agent: Agent) {
                $body
            }
            #[test]
            fn pi_0_73_1() {
                run(Agent::Pi073)
            }
            #[test]
            fn pi_1_6_0() {
                run(Agent::Pi160)
            }
            #[test]
            fn omp_18_2_3() {
                run(Agent::Omp)
            }
        }
    };
}

per_agent!(retry_once, |agent| scenario(agent, "retry once"));
per_agent!(rate_limited, |agent| scenario(agent, "rate limited"));
per_agent!(retries_exhausted, |agent| scenario(agent, "retries exhausted"));
per_agent!(overflow, |agent| scenario(agent, "overflow"));
per_agent!(failed_call, |agent| scenario(agent, "failed call"));
per_agent!(retry_until_abort, |agent| abort_in_the_retry_delay(agent, "abort"));
// pi 1.6.0 answers abort_retry with `agent_settled {aborted:false}` (recorded); the retry the
// host cancelled still makes the outcome `aborted`, as on pi 0.73.1 and omp.
per_agent!(retry_until_abort_retry, |agent| abort_in_the_retry_delay(agent, "abort_retry"));

// The turn's messages are every run's messages in order: the prompt, the failed attempt's error,
// the answer (pi 1.x: the session's first run lists its system message first).
// omp's last agent_end lists only the last run's messages: the failed run's come from what it
// streamed.
per_agent!(retry_once_messages, |agent| {
    let c = agent.start();
    let t = parse(c.prompt_and_wait("retry once", None, secs(10)).unwrap().as_bytes());
    let roles: Vec<String> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m["role"].as_str().unwrap_or(""), m["stopReason"].as_str().unwrap_or("")))
        .collect();
    let mut want = vec!["user:", "assistant:error", "assistant:stop"];
    if agent.settles() {
        want.insert(0, "system:");
    }
    assert_eq!(roles, want, "{agent:?}: {t:#}");
});

// get_state in a retry's delay and during an overflow compaction answers as the agent does:
// pi 0.73.1 says it is not streaming in the delay, pi 1.6.0 streams until it settles, omp
// streams; a compaction is `isCompacting` (pi 0.73.1 not streaming, omp streaming).
per_agent!(get_state_while_the_agent_recovers, |agent| {
    let c = agent.start();
    let state = |c: &Client| -> (bool, bool) {
        let s = parse(c.request("get_state", None, secs(10)).unwrap().as_bytes());
        (s["isStreaming"] == true, s["isCompacting"] == true)
    };
    let id = c.prompt("prompt", "retry once 1500", None, secs(10)).unwrap();
    events_until(&c, retry_announced);
    assert_eq!(state(&c), (agent != Agent::Pi073, false), "{agent:?}: in the retry delay");
    events_until(&c, completion_of(&id));
    assert_eq!(state(&c), (false, false), "{agent:?}: after the retry");
    if agent == Agent::Pi160 {
        return; // pi 1.x does not compact for an overflow
    }
    let id = c.prompt("prompt", "overflow 1500", None, secs(10)).unwrap();
    events_until(&c, |e| e["type"] == "compaction_start" || (e["type"] == "auto_compaction_start" && e["action"] == "context-full"));
    assert_eq!(state(&c), (agent == Agent::Omp, true), "{agent:?}: compacting");
    events_until(&c, completion_of(&id));
    assert_eq!(state(&c), (false, false), "{agent:?}: after the compaction");
});

// pi 0.99 on answers with a disposition, and the library decides at once: "handled" completes
// with no run and no probe; a prompt "queued" into the live run ends with that run.
#[test]
fn dispositions_decide_at_once_pi_1_6_0() {
    let c = Agent::Pi160.start();
    let t = parse(c.prompt_and_wait("/noop", None, secs(10)).unwrap().as_bytes());
    assert_eq!((t["outcome"].as_str(), t["agentInvoked"].as_bool()), (Some("not_invoked"), Some(false)), "{t:#}");
    let counters = parse(c.counters().as_bytes());
    assert_eq!(counters["activity_probes"], 0, "a handled prompt needs no probe: {counters}");

    let first = c.prompt("prompt", "stream until abort", None, secs(10)).unwrap();
    events_until(&c, |e| e["type"] == "message_update");
    let opts = omprpc::client::parse_params(Some(r#"{"streamingBehavior":"followUp"}"#)).unwrap();
    let queued = c.prompt("prompt", "and then", opts, secs(10)).unwrap();
    let p = omprpc::client::parse_params(Some(r#"{"message":"finish"}"#)).unwrap();
    c.request("follow_up", p.as_ref(), secs(10)).unwrap();
    let mut done = Vec::new();
    let seen = events_until(&c, |e| {
        if e["type"] == "prompt_complete" {
            done.push(e["requestId"].as_str().unwrap_or("").to_string());
        }
        done.len() == 2
    });
    let completions: Vec<&Value> = seen.iter().filter(|e| e["type"] == "prompt_complete").collect();
    assert_eq!(completions.len(), 2, "{:?}", types(&seen));
    for (e, id) in completions.iter().zip([&first, &queued]) {
        assert_eq!((e["requestId"].as_str(), e["outcome"].as_str()), (Some(id.as_str()), Some("agent_settled")), "{e}");
    }
    assert_eq!(last_agent_frame(&seen[..seen.len() - 2]), "agent_settled", "{:?}", types(&seen));
    nothing_follows_and_the_next_prompt_is_accepted(Agent::Pi160, &c, None);
}

// --- Drift: the fake's scenarios held to the real pi recordings -------------------------------
//
// tests/real_pi.rs records real pi 1.6.0 and 0.73.1 (OMPRPC_UPDATE_RECORDINGS=1) failing a call
// and recovering: tests/fixtures/recordings/pi-<version>-<case>.jsonl, in the client's
// `record_path` format. The fake scenario is driven through a Client the same way and recorded
// too; per case the agent→host frames of the scenario's prompt (from its `prompt` up to the
// host's next get_state/prompt) must match, type by type, in the fields a client reads. And
// each recording, replayed (`omprpc-fake-agent --replay`), must end the turn as the fake does.

const RECORDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recordings");

/// A private directory for one test's files, removed on drop.
struct Dir(std::path::PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("omprpc-recovery-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A recorded case: the prompt the real pi got, the fake's scenario for it (the same retry
/// settings: maxRetries 3, a 300 ms first delay, 2 s where the host aborts in it).
struct Case {
    name: &'static str,
    /// A prompt before the scenario's (the overflow is the second prompt of its session).
    before: Option<&'static str>,
    recorded: &'static str,
    fake: &'static str,
    abort: bool,
}

fn case(name: &str) -> Case {
    match name {
        "retry-500" => Case { name: "retry-500", before: None, recorded: "flaky", fake: "retry once 300", abort: false },
        "retry-429" => Case { name: "retry-429", before: None, recorded: "flaky", fake: "rate limited 300", abort: false },
        "overflow" => Case { name: "overflow", before: Some("first"), recorded: "too long", fake: "overflow", abort: false },
        "abort-in-retry-delay" => Case { name: "abort-in-retry-delay", before: None, recorded: "flaky", fake: "retry until abort 2000", abort: true },
        other => panic!("no case {other}"),
    }
}

/// The calls real_pi.rs made: [a first prompt,] the prompt (aborted in its retry delay where the
/// case says), get_state, the next prompt. Returns the scenario prompt's turn.
fn drive(c: &Client, case: &Case, message: &str) -> Value {
    if let Some(before) = case.before {
        c.prompt_and_wait(before, None, secs(30)).unwrap_or_else(|e| panic!("{}: {before}: {e}", case.name));
    }
    let t = if case.abort {
        std::thread::scope(|s| {
            let waiter = s.spawn(|| c.prompt_and_wait(message, None, secs(30)));
            events_until(c, retry_announced);
            c.request("abort", None, secs(30)).unwrap();
            waiter.join().unwrap()
        })
    } else {
        c.prompt_and_wait(message, None, secs(30))
    };
    let t = parse(t.unwrap_or_else(|e| panic!("{}: {message}: {e}\nstderr: {}", case.name, c.stderr())).as_bytes());
    c.request("get_state", None, secs(30)).unwrap();
    c.prompt_and_wait("say hello", None, secs(30)).unwrap();
    t
}

/// What a client reads of one agent frame (the texts of messages aside: the prompts differ).
fn key(f: &Value) -> Value {
    let ty = f["type"].as_str().unwrap_or("");
    let message = |m: &Value| json!({"role": m["role"], "stopReason": m["stopReason"], "errorMessage": m["errorMessage"]});
    let mut k = json!({"type": ty});
    for field in ["willRetry", "attempt", "maxAttempts", "delayMs", "errorMessage", "success", "finalError", "reason", "aborted", "isTerminal"] {
        if let Some(v) = f.get(field) {
            k[field] = v.clone();
        }
    }
    if let Some(m) = f.get("message").filter(|m| m.is_object()) {
        k["message"] = message(m);
    }
    if let Some(ms) = f["messages"].as_array() {
        k["messages"] = ms.iter().map(message).collect();
    }
    match ty {
        "response" => {
            k["command"] = f["command"].clone();
            k["success"] = f["success"].clone();
            k["disposition"] = f["data"]["disposition"].clone();
        }
        "compaction_end" => k["result"] = json!(f.get("result").is_some()),
        "entry_appended" => k["entry"] = f["entry"]["type"].clone(),
        // Delta-only on pi 0.84+, with the partial message before.
        "message_update" => {
            k["event"] = f["assistantMessageEvent"]["type"].clone();
            k["cumulative"] = json!(f.get("message").is_some() || f["assistantMessageEvent"].get("partial").is_some());
        }
        _ => {}
    }
    k
}

/// The agent→host frames of the prompt `message` in a recording: from the host's `prompt` up
/// to its next `get_state` or `prompt`.
fn window(recording: &str, message: &str) -> Vec<Value> {
    let lines: Vec<Value> = recording.lines().skip(1).map(|l| parse(l.as_bytes())).collect();
    let start = lines
        .iter()
        .position(|l| l["dir"] == "out" && l["frame"]["type"] == "prompt" && l["frame"]["message"] == message)
        .unwrap_or_else(|| panic!("no prompt {message:?} in the recording"));
    lines[start + 1..]
        .iter()
        .take_while(|l| !(l["dir"] == "out" && matches!(l["frame"]["type"].as_str(), Some("get_state" | "prompt"))))
        .filter(|l| l["dir"] == "in" && l["frame"].is_object())
        .map(|l| key(&l["frame"]))
        .collect()
}

/// The turn fields both must agree on.
fn outcome_fields(t: &Value) -> Value {
    let mut o = json!({});
    for field in ["outcome", "attempts", "settled", "failedAttempts", "compactions", "assistantText"] {
        o[field] = t[field].clone();
    }
    o
}

fn drift(agent: Agent, name: &str) {
    let case = case(name);
    let fixture = Path::new(RECORDINGS).join(format!("pi-{}-{name}.jsonl", agent.version()));
    let Ok(recorded) = std::fs::read_to_string(&fixture) else {
        eprintln!("drift {agent:?} {name}: skipped, no {}", fixture.display());
        return;
    };
    let header = parse(recorded.lines().next().unwrap().as_bytes());
    assert_eq!((header["flavor"].as_str(), header["agentVersion"].as_str()), (Some("pi"), Some(agent.version())), "{header}");

    // The fake scenario, driven and recorded the same way.
    let dir = Dir::new(&format!("{name}-{}", agent.version()));
    let rec = dir.0.join("fake.jsonl");
    let opts = json!({
        "executable": FAKE,
        "env": {"OMPRPC_FAKE_FLAVOR": "pi", "OMPRPC_FAKE_VERSION": agent.version()},
        "record_path": rec.display().to_string(),
        "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500,
    });
    let c = Client::start(&opts.to_string()).unwrap();
    let fake_turn = drive(&c, &case, case.fake);
    c.close().unwrap();
    let fake = window(&std::fs::read_to_string(&rec).unwrap(), case.fake);
    let real = window(&recorded, case.recorded);
    assert!(real.iter().filter(|k| k["type"] == "agent_end").count() >= 1 && real.len() > 8, "{agent:?} {name}: too little recorded: {real:?}");
    if std::env::var_os("OMPRPC_SHOW_DRIFT").is_some() {
        eprintln!("{agent:?} {name}:\n  {}", real.iter().map(|k| k.to_string()).collect::<Vec<_>>().join("\n  "));
    }
    if fake != real {
        let show = |w: &[Value]| w.iter().map(|k| k.to_string()).collect::<Vec<_>>().join("\n  ");
        let first = fake.iter().zip(&real).position(|(a, b)| a != b).unwrap_or(fake.len().min(real.len()));
        panic!(
            "{agent:?} {name}: the fake's frames drift from real pi's at frame {first}\nfake:\n  {}\nreal pi:\n  {}",
            show(&fake),
            show(&real)
        );
    }

    // The recording replayed ends the turn as the fake scenario does.
    let argv = json!([FAKE, "--replay", fixture.display().to_string(), "--mode", "rpc"]);
    let r = Client::start(&json!({"command": argv, "flavor": "pi", "startup_timeout_ms": 10000, "request_timeout_ms": 10000}).to_string())
        .unwrap_or_else(|e| panic!("replaying {name}: {e}"));
    assert_eq!(parse(r.info().as_bytes())["agentVersion"], agent.version());
    let replayed = drive(&r, &case, case.recorded);
    r.close().unwrap();
    assert_eq!(outcome_fields(&replayed), outcome_fields(&fake_turn), "{agent:?} {name}: the replayed real turn vs the fake's");
}

/// Per pi version: `drift_<case>::pi_0_73_1`, `::pi_1_6_0`.
macro_rules! drift_case {
    ($name:ident, $case:literal) => {
        mod $name {
            use super::*;
            #[test]
            fn pi_0_73_1() {
                drift(Agent::Pi073, $case)
            }
            #[test]
            fn pi_1_6_0() {
                drift(Agent::Pi160, $case)
            }
        }
    };
}

drift_case!(drift_retry_500, "retry-500");
drift_case!(drift_retry_429, "retry-429");
drift_case!(drift_overflow, "overflow");
drift_case!(drift_abort_in_retry_delay, "abort-in-retry-delay");

// pi 0.79.8 – 0.80.3 gives up on an overflow (measured on real 0.79.8 and 0.79.10: no
// compaction, no new run) but does not announce settling yet: the failed run's agent_end ends
// the prompt — once a probe finds pi idle — with one failed attempt and no compaction.
#[test]
fn an_overflow_given_up_without_settling_ends_at_the_failed_run_pi_0_79_10() {
    let opts = json!({
        "executable": FAKE,
        "env": {"OMPRPC_FAKE_FLAVOR": "pi", "OMPRPC_FAKE_VERSION": "0.79.10"},
        "prompt_complete_events": true,
        "startup_timeout_ms": 10000, "request_timeout_ms": 10000, "stop_grace_ms": 500,
    });
    let c = Client::start(&opts.to_string()).unwrap();
    assert_eq!(parse(c.info().as_bytes())["agentVersion"], "0.79.10");
    let t = parse(c.prompt_and_wait("overflow 300", None, secs(10)).unwrap().as_bytes());
    assert_eq!((t["outcome"].as_str(), t["attempts"].as_u64(), t["settled"].as_bool()), (Some("agent_end"), Some(1), Some(false)), "{t:#}");
    assert_eq!((t["failedAttempts"][0]["then"].as_str(), t["compactions"].clone()), (Some("none"), json!([])), "{t:#}");
    assert!(t["failedAttempts"][0]["error"].as_str().is_some_and(|e| e.contains("maximum context length")), "{t:#}");
    events_until(&c, completion_of(t["requestId"].as_str().unwrap()));
    let later = drain(&c, Duration::from_millis(400));
    assert!(!later.iter().any(|e| e["type"] == "agent_start"), "pi went on after the end: {:?}", types(&later));
    let t = parse(c.prompt_and_wait("say hello", None, secs(10)).unwrap().as_bytes());
    assert_eq!(t["assistantText"], "pong");
    c.close().unwrap();
}
