//! The crate's documented Rust API (src/lib.rs) against the fake agent: real processes, real
//! pipes. Only the re-exported surface is used here (plus the shared start helper), so what
//! passes is what a Rust user gets.

#[allow(dead_code)] // the helpers other suites use
#[path = "support/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "support/fake.rs"]
mod fake;
#[path = "support/pi.rs"]
mod pi;

/// The example the crate docs, docs/rust.md and the README show: run as it is.
#[allow(dead_code)] // its `main`
#[path = "../examples/stream.rs"]
mod example;

use std::time::{Duration, Instant};

use fake::{start_with, FAKE};
use omprpc::{Cancel, Client, Status, Stream, StreamItem, ToolOutcome, TurnComplete, TurnOutcome};
use serde_json::{json, Value};

/// Generous for a loaded machine; only there to turn a hang into a failure.
const HANG: Duration = Duration::from_secs(20);

fn start() -> Client {
    start_with(json!({}))
}

fn items(stream: Stream<'_>) -> Vec<StreamItem> {
    stream.map(|i| i.unwrap_or_else(|e| panic!("stream item: {e}"))).collect()
}

fn texts(items: &[StreamItem]) -> String {
    items.iter().filter_map(|i| if let StreamItem::Text(t) = i { Some(t.as_str()) } else { None }).collect()
}

fn complete(items: &[StreamItem]) -> &TurnComplete {
    match items.last() {
        Some(StreamItem::TurnComplete(done)) => done,
        other => panic!("the last item is not TurnComplete: {other:?}"),
    }
}

/// Events from the client's queue until one matches `until` (inclusive), in order.
fn events_until(c: &Client, until: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Some(Instant::now() + HANG);
    let mut seen = Vec::new();
    loop {
        let batch = c.next_events(1, deadline).unwrap_or_else(|e| panic!("waiting for an event: {e}; seen {seen:?}"));
        let ev: Value = serde_json::from_slice(&batch[0]).unwrap();
        let done = until(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

fn is_type(ty: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == ty
}

/// The aborted run's end reached the event queue: its assistant message stopped "aborted"
/// (what the fake agent writes when, and only when, an `abort` arrives mid-run).
fn assert_aborted(c: &Client) {
    let events = events_until(c, is_type("agent_end"));
    assert!(
        events.iter().any(|e| e["type"] == "message_end" && e["message"]["stopReason"] == "aborted"),
        "no aborted message_end before the run's end: {events:?}"
    );
}

/// The next turn on `c` is accepted and clean: only its own text.
fn assert_next_turn_works(c: &Client) {
    let next = items(c.stream("hello").expect("the next prompt is accepted"));
    assert_eq!(texts(&next), "pong");
    assert_eq!(complete(&next).outcome, TurnOutcome::AgentEnd);
    let state: Value = serde_json::from_str(&c.request("get_state", None, c.default_request_deadline()).unwrap()).unwrap();
    assert_eq!(state["isStreaming"], false);
}

#[test]
fn the_readme_example_streams_a_turn() {
    let options = json!({"command": [FAKE], "startup_timeout_ms": 10000}).to_string();
    assert_eq!(example::stream(&options, "say hello").unwrap(), "pong");
    // The docs show the example as it runs here.
    let example = include_str!("../examples/stream.rs");
    let start = example.find("// [stream]\n").unwrap() + "// [stream]\n".len();
    let end = example.find("    // [/stream]").unwrap();
    let lines: Vec<&str> = example[start..end].lines().map(|l| l.strip_prefix("    ").unwrap_or(l)).collect();
    for (doc, text) in [
        ("src/lib.rs", include_str!("../src/lib.rs").lines().filter_map(|l| l.strip_prefix("//!")).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect::<Vec<_>>().join("\n")),
        ("README.md", include_str!("../README.md").to_string()),
        ("docs/rust.md", include_str!("../docs/rust.md").to_string()),
    ] {
        assert!(text.contains(&lines.join("\n")), "{doc} does not show examples/stream.rs's code between its [stream] markers");
    }
}

#[test]
fn a_streamed_turn_yields_reasoning_and_text_apart_then_turn_complete() {
    let c = start();
    let turn = items(c.stream("thinking").unwrap());
    assert_eq!(turn[..2], [StreamItem::Reasoning("hmm".into()), StreamItem::Text("visible".into())]);
    assert_eq!(turn.len(), 3, "{turn:?}");
    let done = complete(&turn);
    assert_eq!((done.outcome, done.agent_invoked), (TurnOutcome::AgentEnd, true));
    assert_eq!((done.stop_reason.as_deref(), done.text.as_deref(), done.attempts), (Some("stop"), Some("visible"), 1));
    let usage = done.usage.as_ref().expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.calls), (1, 1, 2, 1));
    assert_eq!((done.summary["reasoning"].as_str(), done.summary["complete"].as_bool()), (Some("hmm"), Some(true)));
    // The event queue is left alone: the same turn's events are there for next_events.
    assert!(events_until(&c, is_type("agent_end")).iter().any(|e| e["type"] == "message_update"));
    // The next turn has only its own items; finish() returns its TurnComplete.
    let again = c.stream("hello").unwrap();
    let id = again.request_id().to_string();
    let done = again.finish().unwrap();
    assert_eq!((done.request_id.as_str(), done.text.as_deref(), done.summary["text"].as_str()), (id.as_str(), Some("pong"), Some("pong")));
    // A prompt that runs nothing completes too.
    assert_eq!(c.stream("local").unwrap().finish().unwrap().outcome, TurnOutcome::NotInvoked);
}

#[test]
fn tool_calls_are_requested_then_completed_and_their_json_is_not_text() {
    let c = start();
    let turn = items(c.stream("all events").unwrap());
    let requests: Vec<_> = turn.iter().enumerate().filter_map(|(i, t)| if let StreamItem::ToolCallRequest(r) = t { Some((i, r)) } else { None }).collect();
    assert!(!requests.is_empty(), "{turn:?}");
    for (at, request) in &requests {
        let (end_at, end) = turn
            .iter()
            .enumerate()
            .find_map(|(i, t)| match t {
                StreamItem::ToolCallComplete(c) if c.tool_call_id == request.tool_call_id => Some((i, c)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{} never completed: {turn:?}", request.tool_call_id));
        assert!(end_at > *at && end.tool_name == request.tool_name);
        assert_eq!(end.outcome, ToolOutcome::Success);
    }
    assert_eq!(texts(&turn), "pong");
    assert_eq!(complete(&turn).text.as_deref(), Some("pong"));
}

#[test]
fn dropping_a_stream_aborts_the_turn_and_the_next_prompt_is_accepted() {
    let c = start();
    let began = Instant::now();
    {
        let mut stream = c.stream("stream until abort").unwrap();
        assert_eq!(stream.next().unwrap().unwrap(), StreamItem::Text("thinking ".into()));
    } // dropped mid-turn: abort, then the turn's end
    assert!(began.elapsed() < HANG);
    assert_aborted(&c);
    assert_next_turn_works(&c);
}

#[test]
fn cancel_from_another_thread_ends_a_blocked_stream_with_cancelled() {
    let c = start();
    let mut stream = c.stream("stream until abort").unwrap();
    let cancel: Cancel = stream.cancel_handle();
    assert_eq!(stream.next().unwrap().unwrap(), StreamItem::Text("thinking ".into()));
    std::thread::scope(|s| {
        // The agent now waits for an abort: the next `next()` blocks until the cancel.
        s.spawn(|| {
            events_until(&c, |e| e["assistantMessageEvent"]["delta"] == "thinking ");
            assert!(cancel.cancel(), "a turn was running");
        });
        let began = Instant::now();
        let err = stream.next().expect("an item").unwrap_err();
        assert_eq!(err.status, Status::Cancelled, "{err}");
        assert!(began.elapsed() < HANG);
    });
    assert!(stream.next().is_none(), "nothing after the cancel");
    assert!(!cancel.cancel(), "that turn is over");
    drop(stream);
    assert_aborted(&c);
    assert_next_turn_works(&c);
}

#[test]
fn cancel_from_another_thread_ends_prompt_and_wait_with_cancelled() {
    let c = start();
    let cancel = c.cancel_handle();
    assert!(!cancel.cancel(), "no turn yet");
    std::thread::scope(|s| {
        s.spawn(|| {
            // The run streams its delta, then waits for an abort.
            events_until(&c, |e| e["assistantMessageEvent"]["delta"] == "thinking ");
            assert!(cancel.clone().cancel());
        });
        let err = c.prompt_and_wait("stream until abort", None, Some(Instant::now() + HANG)).unwrap_err();
        assert_eq!(err.status, Status::Cancelled, "{err}");
    });
    // Every event up to the aborted run's end was queued before prompt_and_wait returned.
    assert_aborted(&c);
    assert_next_turn_works(&c);
}

#[test]
fn one_stream_at_a_time() {
    let c = start();
    let mut first = c.stream("stream until abort").unwrap();
    assert!(matches!(first.next(), Some(Ok(StreamItem::Text(_)))));
    let second = c.stream("hello").unwrap_err();
    assert_eq!(second.status, Status::Concurrency, "{second}");
    assert!(second.message.contains("stream"), "{second}");
    assert_eq!(c.prompt_and_wait("hello", None, None).unwrap_err().status, Status::Concurrency);
    drop(first);
    assert_next_turn_works(&c);
}

#[test]
fn a_turn_that_fails_ends_the_stream_with_its_error() {
    let c = start();
    // Refused before anything is sent.
    let bad = c.stream_with("hi", Some(json!({"streamingBehavior": "later"}).as_object().unwrap().clone())).unwrap_err();
    assert_eq!(bad.status, Status::InvalidArgument);
    // The agent dies mid-turn: the stream says so, then ends.
    let mut stream = c.stream("crash").unwrap();
    let err = stream.find_map(Result::err).expect("an error");
    assert_eq!(err.status, Status::ProcessExited, "{err}");
    assert!(stream.next().is_none());
    drop(stream);
    assert_eq!(c.stream("hello").unwrap_err().status, Status::Closed);
}

#[test]
fn the_handles_are_thread_safe() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Client>();
    send_sync::<Cancel>();
    send::<Stream<'static>>();
    // A handle outliving its client cancels nothing.
    let c = start();
    let cancel = c.cancel_handle();
    drop(c);
    assert!(!cancel.cancel());
}

/// The same stream and cancel on the real pi (the newest supported, offline against the fake
/// LLM; tests/support/pi.rs): its own frames (delta-only updates, agent_settled) give the same items.
#[test]
fn real_pi_streams_a_turn_and_a_cancel_aborts_it() {
    let script = json!([
        {"match": "say hello", "replies": [{"text": "Hello from the fake model"}]},
        {"match": "hang", "replies": [{"text": "thinking about it", "hang": true}]}]);
    let Some(env) = pi::PiEnv::new("rust_api_stream", script) else { return };
    let c = common::start_with("pi", env.options(&[]), json!({}));
    let settled = if pi::pi_settles() { TurnOutcome::AgentSettled } else { TurnOutcome::AgentEnd };
    let turn = items(c.stream("say hello").unwrap());
    assert_eq!(texts(&turn), "Hello from the fake model");
    let done = complete(&turn);
    assert_eq!((done.outcome, done.stop_reason.as_deref()), (settled, Some("stop")));
    // A model that hangs after its first delta: cancelled from another thread.
    let mut stream = c.stream("hang please").unwrap();
    assert_eq!(stream.next().unwrap().unwrap(), StreamItem::Text("thinking ".into()));
    let cancel = stream.cancel_handle();
    let err = std::thread::scope(|s| {
        s.spawn(|| assert!(cancel.cancel()));
        stream.next().expect("an item").unwrap_err()
    });
    assert_eq!(err.status, Status::Cancelled, "{err}");
    drop(stream);
    let state: Value = serde_json::from_str(&c.request("get_state", None, c.default_request_deadline()).unwrap()).unwrap();
    assert_eq!(state["isStreaming"], false, "pi ended the aborted run");
    let again = items(c.stream("say hello").unwrap());
    assert_eq!((texts(&again), complete(&again).outcome), ("Hello from the fake model".to_string(), settled));
    assert_eq!(env.llm_requests().len(), 3);
    c.close().unwrap();
}
